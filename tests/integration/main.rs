//! The integration tests: the built `agent` binary driven as a user would, against the
//! loopback mock Anthropic server of `tests/support`.

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod cli;
mod faults;
mod limits;
mod mock_selftest;
mod openai;
mod session;
mod stdin;
mod stop_reasons;
