//! The integration tests: the built `agent` binary driven as a user would, against the
//! loopback mock Anthropic server of `tests/support`.

mod policy;
#[path = "../support/mod.rs"]
mod support;

mod openai;
