//! How a run ends: its `Status` and exit code (SPEC §2), the transcript's `error` object
//! and the `Outcome` the loop hands to the finisher.

use serde::Serialize;

/// How a run ended; each maps to one exit code (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Only in `-o` checkpoints written while the run is still going: a file left with
    /// this status belongs to a run that was killed (SIGKILL) before it could finish.
    Running,
    Success,
    Error,
    Refusal,
    MaxTurns,
    Budget,
    VerifyFailed,
    Denied,
    Timeout,
    Interrupted,
    /// The conversation no longer fits in the model's context window, even with every
    /// old tool result cleared.
    ContextExceeded,
    /// The final answer was still cut off by `--max-tokens` after its continuations.
    MaxTokens,
    /// `--output-schema`: no valid answer within `--max-schema-retries` corrections.
    SchemaFailed,
}

impl Status {
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Error
            | Status::Refusal
            | Status::Running
            | Status::ContextExceeded
            | Status::MaxTokens => 1,
            Status::MaxTurns | Status::Budget => 3,
            Status::VerifyFailed => 4,
            Status::Denied => 5,
            Status::SchemaFailed => 6,
            Status::Timeout => 124,
            Status::Interrupted => 130,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Success => "success",
            Status::Error => "error",
            Status::Refusal => "refusal",
            Status::MaxTurns => "max_turns",
            Status::Budget => "budget",
            Status::VerifyFailed => "verify_failed",
            Status::Denied => "denied",
            Status::Timeout => "timeout",
            Status::Interrupted => "interrupted",
            Status::ContextExceeded => "context_exceeded",
            Status::MaxTokens => "max_tokens",
            Status::SchemaFailed => "schema_failed",
        }
    }
}

/// The transcript's `error` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    pub kind: String,
    pub message: String,
}

impl ErrorInfo {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        ErrorInfo {
            kind: kind.to_string(),
            message: message.into(),
        }
    }
}

/// How a run ended: its status and, unless it succeeded, the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub error: Option<ErrorInfo>,
}

impl Outcome {
    pub(crate) fn ok(status: Status) -> Self {
        Outcome {
            status,
            error: None,
        }
    }

    pub(crate) fn fail(status: Status, kind: &str, message: impl Into<String>) -> Self {
        Outcome {
            status,
            error: Some(ErrorInfo::new(kind, message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(Status::Success.exit_code(), 0);
        assert_eq!(Status::Refusal.exit_code(), 1);
        assert_eq!(Status::MaxTurns.exit_code(), 3);
        assert_eq!(Status::SchemaFailed.exit_code(), 6);
        assert_eq!(Status::Timeout.exit_code(), 124);
        assert_eq!(Status::Interrupted.exit_code(), 130);
    }
}
