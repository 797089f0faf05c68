//! The `Provider` trait: one call streams one assistant turn. The HTTP shell (`http`)
//! over a provider's wire (Anthropic, OpenAI-compatible) and cassette replay implement
//! it, so the agent loop never knows where a turn came from. [`wire`] is the one list of
//! the HTTP providers.

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod cassette;
pub(crate) mod connection;
pub(crate) mod decoding;
pub(crate) mod foundry;
pub(crate) mod http;
pub(crate) mod openai;
pub(crate) mod openai_responses;
pub(crate) mod retry;
pub(crate) mod sse;
pub(crate) mod token_http;
pub(crate) mod vertex;

use std::io;

use serde_json::Value;

use std::sync::Arc;

use crate::config::cli::ProviderKind;
pub(crate) use crate::model::turn::StreamNotice;
use crate::model::turn::Turn;
use crate::record::history::Entry;

/// The wire of each HTTP provider: adding a provider is a folder beside `anthropic/`
/// and one arm here.
pub(crate) fn wire(kind: ProviderKind) -> Box<dyn http::Wire> {
    match kind {
        ProviderKind::Anthropic => Box::new(anthropic::AnthropicWire::default()),
        ProviderKind::Openai => Box::new(openai::OpenAiWire),
        // Without credentials: this wire decodes cassettes; `agent run` connects its own.
        ProviderKind::Bedrock => Box::new(bedrock::BedrockWire::decoder()),
        ProviderKind::Vertex => Box::new(vertex::VertexWire::decoder()),
        ProviderKind::Foundry => Box::new(foundry::FoundryWire::default()),
        ProviderKind::OpenaiResponses => Box::new(openai_responses::ResponsesWire),
    }
}

/// What the loop asks for: everything of the request body except `stream`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnRequest<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub system: &'a str,
    /// The history as the request carries it, each message already serialised.
    pub messages: &'a [Arc<Entry>],
    /// The registry's `to_api_format()`.
    pub tools: &'a [Value],
}

/// Error types of an `error` event that retrying cannot fix; every other type
/// (overloaded_error, api_error, rate_limit_error, timeout_error, new ones) is retried.
const PERMANENT_ERROR_TYPES: &[&str] = &[
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "billing_error",
];

/// Why a streamed turn could not be completed.
#[derive(Debug)]
pub(crate) enum StreamFailure {
    /// The stream carried an `error` event.
    Api { error_type: String, message: String },
    /// The stream ended (EOF) before `message_stop`.
    Incomplete { detail: String },
    /// Reading the body failed: connection reset, idle timeout, oversized line. Before
    /// the first event (pings aside) the error wraps a [`BeforeFirstEvent`].
    Io(io::Error),
    /// A known event that could not be decoded (a broken server, not a transient fault).
    Malformed { detail: String },
    /// The stream contradicts itself (a tool_use id used for two calls): none of its
    /// calls may run, and a fresh attempt may be clean.
    Inconsistent { detail: String },
}

impl StreamFailure {
    /// Whether a fresh attempt may succeed.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            StreamFailure::Api { error_type, .. } => {
                !PERMANENT_ERROR_TYPES.contains(&error_type.as_str())
            }
            StreamFailure::Incomplete { .. } => true,
            StreamFailure::Io(e) => e.kind() != io::ErrorKind::InvalidData,
            StreamFailure::Malformed { .. } => false,
            StreamFailure::Inconsistent { .. } => true,
        }
    }
}

impl std::fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamFailure::Api {
                error_type,
                message,
            } => {
                write!(f, "stream error {error_type}: {message}")
            }
            StreamFailure::Incomplete { detail } => f.write_str(detail),
            StreamFailure::Io(e) => write!(f, "reading the response failed: {e}"),
            StreamFailure::Malformed { detail } | StreamFailure::Inconsistent { detail } => {
                f.write_str(detail)
            }
        }
    }
}

/// A read failure before the response's first event (keep-alive pings aside): the
/// server answered 200 and then produced nothing. Carried inside an `io::Error` of the
/// same kind, so that the failure is classified as any other read failure.
#[derive(Debug)]
pub(crate) struct BeforeFirstEvent(pub io::Error);

impl BeforeFirstEvent {
    pub(crate) fn wrap(e: io::Error) -> io::Error {
        io::Error::new(e.kind(), BeforeFirstEvent(e))
    }
}

impl std::fmt::Display for BeforeFirstEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BeforeFirstEvent {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Why a turn could not be had. `retries` is how many retries were spent before giving up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProviderErrorKind {
    /// The API answered with an error status (after retries, or a non-retryable one).
    Http { status: u16, error_type: String },
    /// An `error` event in the stream (after retries).
    StreamError { error_type: String },
    /// Connection failures, idle timeouts, streams that ended early (after retries).
    Transport,
    /// The cassette has no more turns, or is unreadable.
    Cassette,
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One streamed assistant turn per call, retries included.
pub(crate) trait Provider: Send {
    fn stream_turn(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError>;
}
