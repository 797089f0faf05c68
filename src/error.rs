//! Fatal errors and the one exit-code table: the ways a command cannot even start, or
//! must stop, and the status every command returns, mapped to its `ExitCode` here and
//! nowhere else (uv's `crates/uv/src/commands/mod.rs` `ExitStatus`). Tool failures are
//! not here: they are `ToolError`s and the run goes on.

use std::process::ExitCode;

/// A failure that ends the command before it does its work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// A bad flag, variable or file named on the command line: exit 2, before any request.
    Usage(String),
    /// An MCP server did not start (with `--strict-mcp`, or for `agent tools`): exit 2.
    McpStartup(String),
    /// A cloud provider's credentials were not found or not accepted (Bedrock, Vertex
    /// AI): exit 2, before the first model request.
    Credentials(String),
}

impl Error {
    /// The status this error ends its command with.
    pub(crate) fn status(&self) -> ExitStatus {
        match self {
            Error::Usage(_) | Error::McpStartup(_) | Error::Credentials(_) => ExitStatus::Usage,
        }
    }

    /// The exit code, for the unit tests that assert it.
    #[cfg(test)]
    pub(crate) fn exit_code(&self) -> u8 {
        self.status().code()
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(m) | Error::McpStartup(m) | Error::Credentials(m) => f.write_str(m),
        }
    }
}

/// How a command ended; `lib.rs` turns it into the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// Exit 0: the command did its work.
    Success,
    /// Exit 1: the command ran and failed (a merge, a report, `agent github` past its
    /// gate, a run that answered with an error).
    Failure,
    /// Exit 2: bad input (a flag, a variable, a file) or a fatal `Error` before the work.
    Usage,
    /// A code decided by a table of its own, passed on as is: a run's status (SPEC's
    /// exit codes, `record::outcome::Status::exit_code`) or a batch's verdict over its
    /// tasks.
    Code(u8),
}

impl ExitStatus {
    /// The status of a code from another table (a run's): 0, 1 and 2 are this table's.
    pub(crate) fn from_code(code: u8) -> ExitStatus {
        match code {
            0 => ExitStatus::Success,
            1 => ExitStatus::Failure,
            2 => ExitStatus::Usage,
            other => ExitStatus::Code(other),
        }
    }

    /// The exit-code table (a full match, no catch-all).
    pub(crate) fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Code(code) => code,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
