//! The integration tests: the built `agent` binary driven as a user would, against the
//! loopback mock Anthropic server of `tests/support`.

// Tests and their support code assert with unwrap/expect: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod policy;
mod process_tree;
mod provider_gateway;
mod provider_hardening;
mod provider_http;
mod provider_servers;
#[path = "../support/mod.rs"]
mod support;

mod acp;
mod acp_fs;
// Pipe capacities and /proc: Linux only.
#[cfg(target_os = "linux")]
mod acp_slow_reader;
mod answer_continuation;
mod apply_patch;
mod atif;
mod background;
mod bad_input;
mod batch_scale;
mod bedrock;
mod cassette;
mod ci_action;
mod ci_batch;
mod ci_budget;
mod ci_files;
mod ci_jsonl;
mod ci_log;
mod ci_verify;
mod cli;
mod command_env;
mod compaction;
mod context;
mod docs;
mod durations;
// Network namespaces, seccomp and Landlock: Linux only (elsewhere the flag is refused).
#[cfg(target_os = "linux")]
mod egress;
mod exit_codes;
mod fallback;
mod faults;
mod foundry;
mod github;
mod gitlab;
mod golden;
mod images;
mod journal;
mod layers;
mod limits;
mod mcp;
mod mock_selftest;
mod openai;
mod otel;
mod plan;
mod previous_release;
mod proc_secrets;
mod prompt_input;
mod real_servers;
mod redaction;
mod release_install;
mod responses;
mod resume;
mod resume_input;
mod run_end;
mod schema;
mod session;
mod skills;
mod spill;
mod stdin;
mod stop_reasons;
mod subagents;
mod summary_cmd;
mod terminal;
mod thinking;
mod tool_flags;
mod transcript_schema;
mod typed_events;
mod vertex;
mod web_fetch;
