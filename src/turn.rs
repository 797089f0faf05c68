//! Turns a stream of `StreamEvent`s into one assistant message plus its tool calls:
//! text, thinking and tool_use blocks in order, tool input JSON assembled from
//! `input_json_delta` fragments and parsed at `content_block_stop`.

use serde_json::Value;

use crate::protocol::{Message, StopReason, Usage};

/// A tool call as the model made it. `input` is `Err(message)` when the input could not
/// be had (malformed JSON, cut off by `max_tokens`): the call then gets an error result
/// quoting that message and the history carries `input: {}`.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub input: Result<Value, String>,
}

/// One complete assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
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
