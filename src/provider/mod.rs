//! The `Provider` trait: one call streams one assistant turn. Anthropic over HTTP,
//! cassette replay and (later) OpenAI-compatible servers implement it, so the agent loop
//! never knows where a turn came from.

pub(crate) mod anthropic;
pub(crate) mod cassette;
pub(crate) mod openai;
pub(crate) mod retry;
pub(crate) mod sse;

use std::time::Duration;

use serde_json::Value;

use crate::protocol::Message;
use crate::turn::{PendingCall, Turn};

/// What the loop asks for: everything of the request body except `stream`.
#[derive(Debug, Clone, Copy)]
pub struct TurnRequest<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub system: &'a str,
    pub messages: &'a [Message],
    /// The registry's `to_api_format()`.
    pub tools: &'a [Value],
}

/// Things the loop hears about while a turn streams in.
#[derive(Debug)]
pub enum StreamNotice<'a> {
    /// A piece of assistant text.
    TextDelta(&'a str),
    /// A tool_use block finished (its `content_block_stop` arrived).
    ToolReady(&'a PendingCall),
    /// The attempt failed and will be retried after `delay`: everything heard since the
    /// last `TurnStarted` belongs to a discarded partial turn.
    Retry {
        attempt: u32,
        reason: &'a str,
        delay: Duration,
    },
    /// An attempt's response started streaming.
    TurnStarted,
}

/// Why a turn could not be had. `retries` is how many retries were spent before giving up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderErrorKind {
    /// The API answered with an error status (after retries, or a non-retryable one).
    Http { status: u16, error_type: String },
    /// An `error` event in the stream (after retries).
    StreamError { error_type: String },
    /// Connection failures, idle timeouts, streams that ended early (after retries).
    Transport,
    /// The cassette has no more turns, or is unreadable.
    Cassette,
}

impl ProviderError {
    /// The `error.kind` string of the transcript.
    pub fn kind_str(&self) -> &'static str {
        match self.kind {
            ProviderErrorKind::Http { .. } => "api_error",
            ProviderErrorKind::StreamError { .. } => "stream_error",
            ProviderErrorKind::Transport => "transport_error",
            ProviderErrorKind::Cassette => "cassette_error",
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One streamed assistant turn per call, retries included.
pub trait Provider: Send {
    fn stream_turn(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError>;
}
