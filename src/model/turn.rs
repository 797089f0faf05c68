//! The loop's view of one assistant turn, whatever provider streamed it: the finished
//! `Turn`, its tool calls (`PendingCall`) and what the loop hears while it streams in
//! (`StreamNotice`). Only wire types below this; the decoders that build a `Turn` live
//! with their providers.

use std::time::Duration;

use serde_json::Value;

use crate::model::protocol::{Message, StopReason, Usage};

/// A tool call as the model made it. `input` is `Err(message)` when the input could not
/// be had (malformed JSON, cut off by `max_tokens`): the call then gets an error result
/// quoting that message and the history carries `input: {}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PendingCall {
    pub id: String,
    pub name: String,
    pub input: Result<Value, String>,
}

/// One complete assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    pub id: String,
    pub model: String,
    /// The assistant message to append to the history (tool_use inputs are `{}` where the
    /// input could not be parsed).
    pub message: Message,
    /// The tool calls in the order the model made them.
    pub calls: Vec<PendingCall>,
    pub stop_reason: StopReason,
    /// This turn's usage (message_delta counts overwrite message_start ones).
    pub usage: Usage,
}

/// Things the loop hears about while a turn streams in.
#[derive(Debug)]
pub(crate) enum StreamNotice<'a> {
    /// A piece of assistant text.
    TextDelta(&'a str),
    /// A tool call is complete (Anthropic: its `content_block_stop` arrived).
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
    /// The model's retries ended overloaded: the request goes to `to` (`--fallback-model`),
    /// which answers this turn and the rest of the run.
    Fallback {
        from: &'a str,
        to: &'a str,
        reason: &'a str,
    },
}
