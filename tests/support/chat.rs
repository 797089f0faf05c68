//! The OpenAI-compatible chat-completions wire of the mock: chunk frames
//! (`data: {json}\n\n`) in the shape real servers send, and a `Turn` (the one builder
//! vocabulary of `sse.rs`) rendered as such a stream: a first delta with the role, text
//! in two pieces, each tool call opened with its id and name and its arguments in small
//! fragments, a finish delta, a usage chunk with empty `choices`, then `data: [DONE]`.

use super::sse::{Block, Turn, Usage};
use serde_json::{Value, json};

/// Model id the mock claims in every chunk.
pub(crate) const CHAT_MODEL: &str = "mock-model";
/// Tool arguments are cut into fragments of this many chars, as servers stream them.
const ARGUMENT_FRAGMENT_CHARS: usize = 4;

/// One chunk frame with these `choices` and `usage` (`null` on all but the last chunk,
/// as OpenAI sends it with `stream_options.include_usage`).
pub(crate) fn chunk(choices: Value, usage: Value) -> String {
    let c = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
                   "created": 1_760_000_000, "model": CHAT_MODEL,
                   "system_fingerprint": "fp_mock", "choices": choices, "usage": usage});
    format!("data: {c}\n\n")
}

/// A chunk whose one choice carries `delta` (and a finish reason, on the last).
pub(crate) fn delta(d: Value, finish: Option<&str>) -> String {
    chunk(
        json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]),
        Value::Null,
    )
}

/// The usage chunk: no choices, the counts of the whole response. OpenAI's
/// `prompt_tokens` includes cached tokens, Anthropic's `input_tokens` does not.
pub(crate) fn usage_chunk(usage: &Usage) -> String {
    let prompt = usage.input + usage.cache_read + usage.cache_creation;
    chunk(
        json!([]),
        json!({"prompt_tokens": prompt, "completion_tokens": usage.output,
               "total_tokens": prompt + usage.output,
               "prompt_tokens_details": {"cached_tokens": usage.cache_read}}),
    )
}

pub(crate) fn done() -> String {
    "data: [DONE]\n\n".to_string()
}

/// A keep-alive comment, as llama-cpp-python's server writes it between chunks.
pub(crate) fn ping() -> String {
    ": ping - 2026-01-01 00:00:00.000000+00:00\n\n".to_string()
}

/// A mid-stream error, the shape OpenAI-compatible servers send inside a 200 stream.
pub(crate) fn error_chunk(kind: &str, message: &str) -> String {
    let e = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    format!("data: {e}\n\n")
}

/// An error body in OpenAI's shape.
pub(crate) fn error_body(kind: &str, message: &str) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}}).to_string()
}

/// Anthropic's stop reason in OpenAI's vocabulary.
pub(crate) fn finish_reason(stop_reason: &str) -> &str {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        other => other,
    }
}

/// Splits `s` in two on a char boundary (one piece when it is empty).
fn halves(s: &str) -> Vec<&str> {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    if mid == 0 || mid == s.len() {
        return vec![s];
    }
    vec![&s[..mid], &s[mid..]]
}

/// The frames of a tool call: opened with id, name and empty arguments, then fragments.
fn tool_call(index: usize, id: &str, name: &str, raw: &str) -> Vec<String> {
    let mut frames = vec![delta(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                               "function": {"name": name, "arguments": ""}}]}),
        None,
    )];
    let chars: Vec<char> = raw.chars().collect();
    for piece in chars.chunks(ARGUMENT_FRAGMENT_CHARS) {
        let piece: String = piece.iter().collect();
        frames.push(delta(
            json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    frames
}

/// Every frame of `turn` before its finish: the role delta and the content.
pub(crate) fn body_frames(turn: &Turn) -> Vec<String> {
    // Servers open with `content: ""` before text and `content: null` before tool calls.
    let first_is_text = matches!(turn.blocks.first(), Some(Block::Text(_)));
    let content = if first_is_text {
        json!("")
    } else {
        Value::Null
    };
    let mut frames = vec![delta(
        json!({"role": "assistant", "content": content}),
        None,
    )];
    let mut calls = 0;
    for block in &turn.blocks {
        match block {
            Block::Text(t) => {
                for piece in halves(t) {
                    frames.push(delta(json!({"content": piece}), None));
                }
            }
            // The field llama-server, vLLM and DeepSeek use for reasoning text.
            Block::Thinking(t, _) => {
                frames.push(delta(json!({"reasoning_content": t}), None));
            }
            Block::Tool { id, name, raw } => {
                frames.extend(tool_call(calls, id, name, raw));
                calls += 1;
            }
            Block::CutTool { id, name, partial } => {
                frames.extend(tool_call(calls, id, name, partial));
                calls += 1;
            }
        }
    }
    turn.rename_model(frames, CHAT_MODEL)
}

/// The whole stream of `turn`: content, finish delta, usage chunk, `[DONE]`.
pub(crate) fn frames(turn: &Turn) -> Vec<String> {
    let mut frames = body_frames(turn);
    let stop = turn.get_stop_reason();
    frames.push(delta(json!({}), Some(finish_reason(&stop))));
    frames.push(usage_chunk(&turn.usage));
    frames.push(done());
    turn.rename_model(frames, CHAT_MODEL)
}
