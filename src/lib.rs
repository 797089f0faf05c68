//! `agent`: a synchronous, non-interactive coding agent for CI and scripts.
//!
//! The module list follows DESIGN.md's layers. This file parses the arguments and hands
//! each subcommand to its module: `run` (set up and run the agent loop, with `finish`
//! owning the ways out), `tools_command`, `batch`, `summary`.
#![deny(clippy::print_stdout)]

pub(crate) mod agent;
pub(crate) mod batch;
pub(crate) mod budget;
pub(crate) mod changes;
pub(crate) mod ci;
pub(crate) mod cli;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod dispatch;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod finish;
pub(crate) mod history;
pub(crate) mod journal;
pub(crate) mod mcp;
pub(crate) mod output;
pub(crate) mod policy;
pub(crate) mod process;
pub(crate) mod protocol;
pub(crate) mod provider;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod sandbox;
pub(crate) mod scheduler;
pub(crate) mod secrets;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod shell_words;
pub(crate) mod structured;
pub(crate) mod summary;
pub(crate) mod tools;
pub(crate) mod tools_command;
pub(crate) mod transcript;
pub(crate) mod turn;
pub(crate) mod verify;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::Error;

/// Parses the arguments and runs the command.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print(); // help and version go to stdout, usage errors to stderr
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
    };
    match cli.command {
        Command::Run(args) => run::run_command(&args),
        Command::Tools(args) => tools_command::tools_command(&args),
        Command::Batch(args) => batch::batch_command(&args),
        Command::Summary(args) => summary::summary_command(&args),
    }
}

/// Reports an error found before the run starts and gives its exit code.
pub(crate) fn usage_failure(e: &Error) -> ExitCode {
    output::error(&e.to_string());
    ExitCode::from(e.exit_code())
}
