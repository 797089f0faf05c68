//! `agent`: a synchronous, non-interactive coding agent for CI and scripts.
//!
//! The modules are folders by job (DESIGN.md, "Layout"); the layers they keep to are
//! DESIGN.md's table, which `tests/integration/layers.rs` checks. This file parses the
//! arguments and hands each subcommand to its module in `commands`: `commands::run` (set
//! up and run the agent loop, with `run::finish` owning the ways out), `commands::tools`,
//! `commands::batch`, `commands::summary`, `commands::github`, `commands::gitlab`.
#![deny(clippy::print_stdout)]

pub(crate) mod commands;
pub(crate) mod config;
pub(crate) mod error;
/// The fuzz targets' entry points (`fuzz/`): hidden, not an API.
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod mcp;
pub(crate) mod model;
pub(crate) mod net;
pub(crate) mod otel;
pub(crate) mod policy;
pub(crate) mod process;
pub(crate) mod record;
pub(crate) mod run;
pub(crate) mod skills;
pub(crate) mod tools;
pub(crate) mod util;

/// The generated pages of docs/reference/, checked (`AGENT_BLESS=1` rewrites them).
#[cfg(test)]
#[path = "reference_tests.rs"]
mod reference_tests;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::config::cli::{Cli, Command};

/// Parses the arguments and runs the command.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    // `--allow-domain`'s user-namespace helper: a fresh image of the binary that reads
    // nothing (no settings, no environment, no key) before it does its one job.
    #[cfg(target_os = "linux")]
    if args
        .get(1)
        .is_some_and(|a| a == process::userns::HELPER_ARG)
    {
        process::userns::helper_main();
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let status = if e.exit_code() == 0 {
                error::ExitStatus::Success // --help, --version
            } else {
                error::ExitStatus::Usage
            };
            let _ = e.print(); // help and version go to stdout, usage errors to stderr
            return ExitCode::from(status);
        }
    };
    // Before anything else (no thread exists yet): the key is then beyond the reach of a
    // command the model runs, even one of the same user reading /proc.
    util::secrets::hide_from_other_processes(&secrets_in_args(&cli.command));
    let status = match cli.command {
        Command::Run(args) => commands::run::run_command(*args),
        Command::Tools(args) => commands::tools::tools_command(&args),
        Command::Batch(args) => commands::batch::batch_command(&args),
        Command::Summary(args) => commands::summary::summary_command(&args),
        Command::Github(args) => commands::github::github_command(*args),
        Command::Gitlab(args) => commands::gitlab::gitlab_command(*args),
        Command::Skills(args) => commands::skills::skills_command(&args),
        Command::Export(args) => commands::export::export_command(&args),
    };
    ExitCode::from(status)
}

/// The credentials given on the command line (`--header` values whose names say so),
/// which `/proc/PID/cmdline` would show to anyone.
fn secrets_in_args(command: &Command) -> Vec<String> {
    match command {
        Command::Run(args) => {
            crate::model::provider::http::Gateway::new(None, &args.request.headers, None)
                .map(|g| g.secret_values())
                .unwrap_or_default()
        }
        Command::Github(args) => {
            crate::model::provider::http::Gateway::new(None, &args.run.request.headers, None)
                .map(|g| g.secret_values())
                .unwrap_or_default()
        }
        Command::Gitlab(args) => {
            crate::model::provider::http::Gateway::new(None, &args.run.request.headers, None)
                .map(|g| g.secret_values())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}
