//! What every provider's stream decoder shares: the bound on one block's size, the
//! parsing of a tool call's input (with the error result the model sees when it is
//! broken), quoting of bad input in messages, and the turn a decoder ends with.

use serde_json::{Map, Value};

use crate::model::protocol::{ContentBlock, Message, Role, StopReason, Usage};
use crate::model::turn::{PendingCall, Turn};
use crate::util::text::ellipsis;

/// Largest text, thinking or tool-input buffer of one block, in bytes. A request body
/// is capped at 32 MB by the API, so a larger block could never be sent back anyway;
/// past this the server is broken, and memory stays bounded.
pub(crate) const MAX_BLOCK_BYTES: usize = 32 * 1024 * 1024;

/// How much of an unparsable tool input is quoted back to the model, in chars: enough
/// to show where it went wrong without echoing a whole file.
const MAX_QUOTED_INPUT_CHARS: usize = 200;

/// The error result of a tool call that `max_tokens` cut off mid-input.
pub(crate) const CUT_OFF_BY_MAX_TOKENS: &str = "the output was cut off by max_tokens before this tool \
     call's input was complete; the call was not run. Retry with a smaller input (for \
     example, write a large file in several steps).";

/// The call's input: the joined fragments parsed, `{}` for none, or the start input of
/// a call made from code execution (which arrives whole, without fragments).
pub(crate) fn parse_tool_input(buf: &str, start_input: &Value) -> Result<Value, String> {
    if buf.trim().is_empty() {
        return Ok(match start_input {
            Value::Object(m) if !m.is_empty() => start_input.clone(),
            _ => Value::Object(Map::new()),
        });
    }
    match serde_json::from_str::<Value>(buf) {
        Ok(Value::Object(_)) if let Some(n) = wide_integer(buf) => Err(format!(
            "the tool input has the integer {}, which does not fit in 64 bits and would \
             not keep its exact value; the call was not run. Send such a number as a string.",
            ellipsis(n, MAX_QUOTED_INPUT_CHARS)
        )),
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "the tool input must be a JSON object, got {}; the call was not run.",
            ellipsis(&other.to_string(), MAX_QUOTED_INPUT_CHARS)
        )),
        Err(e) => Err(format!(
            "the tool input is not valid JSON ({e}); the call was not run. Input received \
             ({} bytes): {}",
            buf.len(),
            ellipsis(buf, MAX_QUOTED_INPUT_CHARS)
        )),
    }
}

/// The first integer literal of the JSON text `json` that fits neither i64 nor u64 (it
/// would parse as a float and lose digits). Only numbers outside strings count.
fn wide_integer(json: &str) -> Option<&str> {
    let bytes = json.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let token = &json[start..i];
                let integer = !token.contains(['.', 'e', 'E']);
                if integer && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                    return Some(token);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The history's `tool_use` block for a decoded call: an input that did not parse is
/// `{}` there (the call itself carries the error the model is told).
pub(crate) fn tool_use_block(call: &PendingCall) -> ContentBlock {
    ContentBlock::ToolUse {
        id: call.id.clone(),
        name: call.name.clone(),
        input: call
            .input
            .clone()
            .unwrap_or_else(|_| Value::Object(Map::new())),
    }
}

/// The assistant turn a decoder ends with; its usage is `unknown` when the stream never
/// reported any (`usage_seen`).
pub(crate) fn assistant_turn(
    (id, model): (String, String),
    content: Vec<ContentBlock>,
    calls: Vec<PendingCall>,
    stop_reason: StopReason,
    usage: Usage,
    usage_seen: bool,
) -> Turn {
    Turn {
        id,
        model,
        message: Message {
            role: Role::Assistant,
            content,
        },
        calls,
        stop_reason,
        usage: Usage {
            unknown: !usage_seen,
            ..usage
        },
    }
}

#[cfg(test)]
#[path = "decoding_tests.rs"]
mod tests;
