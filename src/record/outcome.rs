//! How a run ends: its `Status` and exit code (SPEC §2), the transcript's `error` object
//! and the `Outcome` the loop hands to the finisher.

use serde::Serialize;

use crate::model::provider::ProviderErrorKind;

/// How a run ended; each maps to one exit code (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
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
    pub(crate) fn exit_code(self) -> u8 {
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

    pub(crate) fn as_str(self) -> &'static str {
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

/// The transcript's `error.kind`: the complete list (docs/reference/exit-codes.md, generated from it). Each kind
/// ends a run with one status (`status`), so an outcome is built from its kind alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorKind {
    /// The API answered with an HTTP error.
    ApiError,
    /// The stream broke off or carried an error event.
    StreamError,
    /// No answer: connection, TLS, timeout.
    TransportError,
    /// `--replay`: the cassette has no (matching) response.
    CassetteError,
    /// A tool failed in a way that ends the run (not an error result the model sees).
    ToolFatal,
    /// The model stopped for `tool_use` without a tool call.
    Protocol,
    /// The model stopped with a stop reason the loop does not know.
    StopReason,
    /// The transcript itself could not be serialised.
    Internal,
    Refusal,
    MaxTurns,
    Budget,
    VerifyFailed,
    Denied,
    Timeout,
    Interrupted,
    ContextExceeded,
    MaxTokens,
    SchemaFailed,
}

impl ErrorKind {
    /// The status a run ended by this kind has (a full match: a new kind must pick one).
    pub(crate) fn status(self) -> Status {
        match self {
            ErrorKind::ApiError
            | ErrorKind::StreamError
            | ErrorKind::TransportError
            | ErrorKind::CassetteError
            | ErrorKind::ToolFatal
            | ErrorKind::Protocol
            | ErrorKind::StopReason
            | ErrorKind::Internal => Status::Error,
            ErrorKind::Refusal => Status::Refusal,
            ErrorKind::MaxTurns => Status::MaxTurns,
            ErrorKind::Budget => Status::Budget,
            ErrorKind::VerifyFailed => Status::VerifyFailed,
            ErrorKind::Denied => Status::Denied,
            ErrorKind::Timeout => Status::Timeout,
            ErrorKind::Interrupted => Status::Interrupted,
            ErrorKind::ContextExceeded => Status::ContextExceeded,
            ErrorKind::MaxTokens => Status::MaxTokens,
            ErrorKind::SchemaFailed => Status::SchemaFailed,
        }
    }

    /// The kind of a failed model request.
    pub(crate) fn of_provider(kind: &ProviderErrorKind) -> Self {
        match kind {
            ProviderErrorKind::Http { .. } => ErrorKind::ApiError,
            ProviderErrorKind::StreamError { .. } => ErrorKind::StreamError,
            ProviderErrorKind::Transport => ErrorKind::TransportError,
            ProviderErrorKind::Cassette => ErrorKind::CassetteError,
        }
    }
}

/// The transcript's `error` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ErrorInfo {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

/// How a run ended: its status and, unless it succeeded, the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) status: Status,
    pub(crate) error: Option<ErrorInfo>,
}

impl Outcome {
    pub(crate) fn success() -> Self {
        Outcome {
            status: Status::Success,
            error: None,
        }
    }

    /// A failed run: its status follows from the kind.
    pub(crate) fn fail(kind: ErrorKind, message: impl Into<String>) -> Self {
        Outcome {
            status: kind.status(),
            error: Some(ErrorInfo {
                kind,
                message: message.into(),
            }),
        }
    }
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
