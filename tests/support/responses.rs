//! The OpenAI Responses wire of the mock (`…/responses`): a `Turn` (the builder
//! vocabulary of `sse.rs`) rendered as the typed events OpenAI streams, and the checks
//! of a Responses request body. Text becomes a message item in two deltas, a thinking
//! block a reasoning item (its text the summary, its signature the
//! `encrypted_content`), each tool call a function_call item with its arguments in small
//! deltas and its `.done` events; the response ends `response.completed`, or
//! `response.incomplete` (`max_output_tokens`) for a `max_tokens` stop.

use super::sse::{Block, Turn};
use serde_json::{Value, json};
use std::collections::HashSet;

/// Model id the mock claims.
pub(crate) const RESPONSES_MODEL: &str = "gpt-mock";
/// Arguments are cut into deltas of this many chars.
const ARGUMENT_DELTA_CHARS: usize = 5;

/// One event frame: `event: TYPE` and its JSON payload.
pub(crate) fn event(data: &Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or("")
    )
}

/// A keep-alive comment (OpenAI sends none; proxies do).
pub(crate) fn ping() -> String {
    ": keep-alive\n\n".to_string()
}

/// A mid-stream `error` event.
pub(crate) fn error_event(code: &str, message: &str) -> String {
    event(&json!({"type": "error", "code": code, "message": message, "param": null}))
}

/// The reasoning item the mock streams for a thinking block, as its exact text (key
/// order and spacing of its own, so a client that re-serialises it is caught).
pub(crate) fn reasoning_item(index: usize, summary: &str, encrypted: &str) -> String {
    format!(
        "{{\"type\":\"reasoning\", \"id\":\"rs_mock_{index}\",\"summary\":[{{\"type\":\"summary_text\",\"text\":{}}}],\"encrypted_content\":{}}}",
        json!(summary),
        json!(encrypted)
    )
}

fn response(status: &str, usage: Value, extra: Value) -> Value {
    let mut r = json!({"id": "resp_mock", "object": "response", "status": status,
                       "model": RESPONSES_MODEL, "output": [], "usage": usage});
    if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            r.insert(k.clone(), v.clone());
        }
    }
    r
}

/// Every frame of `turn` before its end event.
pub(crate) fn body_frames(turn: &Turn) -> Vec<String> {
    let mut frames = vec![event(&json!({"type": "response.created",
        "response": response("in_progress", Value::Null, json!({}))}))];
    for (index, block) in turn.blocks.iter().enumerate() {
        match block {
            Block::Text(t) => {
                let id = format!("msg_mock_{index}");
                frames.push(event(&json!({"type": "response.output_item.added",
                    "output_index": index, "item": {"id": id, "type": "message",
                    "role": "assistant", "status": "in_progress", "content": []}})));
                let mid = t
                    .char_indices()
                    .nth(t.chars().count() / 2)
                    .map_or(0, |(i, _)| i);
                for piece in [&t[..mid], &t[mid..]] {
                    if !piece.is_empty() {
                        frames.push(event(&json!({"type": "response.output_text.delta",
                            "output_index": index, "item_id": id, "content_index": 0,
                            "delta": piece})));
                    }
                }
                frames.push(event(&json!({"type": "response.output_item.done",
                    "output_index": index, "item": {"id": id, "type": "message",
                    "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": t, "annotations": []}]}})));
            }
            Block::Thinking(t, signature) => {
                let id = format!("rs_mock_{index}");
                frames.push(event(&json!({"type": "response.output_item.added",
                    "output_index": index, "item": {"id": id, "type": "reasoning",
                    "summary": []}})));
                frames.push(event(
                    &json!({"type": "response.reasoning_summary_text.delta",
                    "output_index": index, "item_id": id, "summary_index": 0, "delta": t}),
                ));
                frames.push(format!(
                    "event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"output_index\":{index},\"item\":{}}}\n\n",
                    reasoning_item(index, t, signature)
                ));
            }
            Block::Tool { id, name, raw }
            | Block::CutTool {
                id,
                name,
                partial: raw,
            } => {
                let cut = matches!(block, Block::CutTool { .. });
                let item_id = format!("fc_mock_{index}");
                frames.push(event(&json!({"type": "response.output_item.added",
                    "output_index": index, "item": {"id": item_id, "type": "function_call",
                    "status": "in_progress", "call_id": id, "name": name, "arguments": ""}})));
                let chars: Vec<char> = raw.chars().collect();
                for piece in chars.chunks(ARGUMENT_DELTA_CHARS) {
                    let piece: String = piece.iter().collect();
                    frames.push(event(
                        &json!({"type": "response.function_call_arguments.delta",
                        "output_index": index, "item_id": item_id, "delta": piece}),
                    ));
                }
                if !cut {
                    frames.push(event(
                        &json!({"type": "response.function_call_arguments.done",
                        "output_index": index, "item_id": item_id, "arguments": raw}),
                    ));
                    frames.push(event(&json!({"type": "response.output_item.done",
                        "output_index": index, "item": {"id": item_id,
                        "type": "function_call", "status": "completed", "call_id": id,
                        "name": name, "arguments": raw}})));
                }
            }
        }
    }
    turn.rename_model(frames, RESPONSES_MODEL)
}

/// The whole stream: the body and `response.completed` (or `.incomplete`).
pub(crate) fn frames(turn: &Turn) -> Vec<String> {
    let mut frames = body_frames(turn);
    let u = turn.get_usage();
    let usage = json!({"input_tokens": u.input + u.cache_read + u.cache_creation,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input + u.cache_read + u.cache_creation + u.output});
    let end = match turn.get_stop_reason().as_str() {
        "max_tokens" => json!({"type": "response.incomplete", "response": response(
            "incomplete", usage, json!({"incomplete_details": {"reason": "max_output_tokens"}}))}),
        _ => json!({"type": "response.completed",
                    "response": response("completed", usage, json!({}))}),
    };
    frames.push(event(&end));
    turn.rename_model(frames, RESPONSES_MODEL)
}

/// Checks a Responses request body: stream, `store: false`, model, the flat function
/// tools, input items of known types, and every `function_call_output` answering a
/// `function_call` made before it (each call answered once).
pub(crate) fn check_body(body: &Value) -> Vec<String> {
    let mut v = Vec::new();
    if !body.is_object() {
        return vec![format!("body is not a JSON object: {body}")];
    }
    if body["stream"] != true {
        v.push(format!("stream is {}, want true", body["stream"]));
    }
    if body["store"] != false {
        v.push(format!("store is {}, want false", body["store"]));
    }
    if body["model"].as_str().is_none_or(str::is_empty) {
        v.push(format!("model is {}", body["model"]));
    }
    if body.get("messages").is_some() {
        v.push("a Responses request has `messages`".into());
    }
    if let Some(tools) = body["tools"].as_array() {
        for t in tools {
            if t["type"] != "function" || t["name"].as_str().is_none_or(str::is_empty) {
                v.push(format!("tool is not a flat function: {t}"));
            }
            if t["parameters"]["type"] != "object" {
                v.push(format!("tool parameters are not an object schema: {t}"));
            }
        }
    }
    let Some(input) = body["input"].as_array() else {
        v.push("input is not an array".into());
        return v;
    };
    if input.is_empty() {
        v.push("input is empty".into());
    }
    let mut calls = HashSet::new();
    let mut answered = HashSet::new();
    for (i, item) in input.iter().enumerate() {
        match item["type"].as_str().unwrap_or("") {
            "message" => {
                let role = item["role"].as_str().unwrap_or("");
                let part = if role == "user" {
                    "input_text"
                } else {
                    "output_text"
                };
                if !["user", "assistant"].contains(&role) || item["content"][0]["type"] != part {
                    v.push(format!(
                        "input[{i}] is not a {role} message of {part}: {item}"
                    ));
                }
            }
            "function_call" => {
                let id = item["call_id"].as_str().unwrap_or("");
                if id.is_empty() || !calls.insert(id.to_string()) {
                    v.push(format!("input[{i}] call_id {id:?} is empty or repeated"));
                }
                if !item["arguments"].is_string() {
                    v.push(format!("input[{i}] arguments are not a string"));
                }
            }
            "function_call_output" => {
                let id = item["call_id"].as_str().unwrap_or("");
                if !calls.contains(id) || !answered.insert(id.to_string()) {
                    v.push(format!("input[{i}] answers {id:?}, no open call"));
                }
                if !item["output"].is_string() {
                    v.push(format!("input[{i}] output is not a string"));
                }
            }
            "reasoning" => {
                if item["encrypted_content"].as_str().is_none() {
                    v.push(format!("input[{i}] reasoning without encrypted_content"));
                }
            }
            other => v.push(format!("input[{i}] has type {other:?}")),
        }
    }
    for id in calls.difference(&answered) {
        // The newest call may be unanswered only if nothing follows it; a request is
        // sent after results, so every call is answered.
        v.push(format!("function_call {id} is never answered"));
    }
    v
}
