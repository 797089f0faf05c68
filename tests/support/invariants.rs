//! What the real Messages API would reject, checked on every request the mock receives:
//! the headers and body shape of SPEC §3.1 and, above all, the tool_use/tool_result
//! pairing of SPEC §3.2 (each assistant tool_use answered by one tool_result in the next
//! user message, tool_results first and in the same order, none orphaned). A violation is
//! a bug of the binary even when the test's own assertions pass.

use serde_json::Value;
use std::collections::HashSet;

/// The API version SPEC §3.1 requires.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The value of header `name` (lower-case).
fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| value.as_str())
}

/// What both wires ask of a request head: a POST of JSON.
fn check_post_json(method: &str, headers: &[(String, String)], v: &mut Vec<String>) {
    if method != "POST" {
        v.push(format!("method is {method}, want POST"));
    }
    let content_type = header(headers, "content-type");
    if !content_type.is_some_and(|c| c.starts_with("application/json")) {
        v.push(format!(
            "content-type is {content_type:?}, want application/json"
        ));
    }
}

/// What both wires ask of a body: an object that streams from a named model. False
/// when it is not an object (nothing else can be checked).
fn check_stream_and_model(body: &Value, v: &mut Vec<String>) -> bool {
    if !body.is_object() {
        v.push(format!("body is not a JSON object: {body}"));
        return false;
    }
    if body["stream"] != Value::Bool(true) {
        v.push(format!("stream is {}, want true", body["stream"]));
    }
    if body["model"].as_str().is_none_or(str::is_empty) {
        v.push(format!(
            "model is {}, want a non-empty string",
            body["model"]
        ));
    }
    true
}

/// The non-empty `messages` array of a body, or a violation.
fn messages_of<'a>(body: &'a Value, v: &mut Vec<String>) -> Option<&'a [Value]> {
    match body["messages"].as_array() {
        None => v.push("messages is not an array".into()),
        Some(m) if m.is_empty() => v.push("messages is empty".into()),
        Some(m) => return Some(m),
    }
    None
}

/// Checks the request line and headers. `headers` are (lower-case name, value).
pub(crate) fn check_head(method: &str, path: &str, headers: &[(String, String)]) -> Vec<String> {
    let mut v = Vec::new();
    let get = |name: &str| header(headers, name);
    check_post_json(method, headers, &mut v);
    if path != "/v1/messages" {
        v.push(format!("path is {path}, want /v1/messages"));
    }
    match get("x-api-key") {
        Some(k) if !k.is_empty() => {}
        _ => v.push("missing x-api-key header".into()),
    }
    if get("anthropic-version") != Some(ANTHROPIC_VERSION) {
        v.push(format!(
            "anthropic-version is {:?}, want {ANTHROPIC_VERSION}",
            get("anthropic-version")
        ));
    }
    v
}

/// Checks the JSON body: stream/model/max_tokens, non-empty content, tool blocks, tools
/// array, and the pairing invariant.
pub(crate) fn check_body(body: &Value) -> Vec<String> {
    let mut v = Vec::new();
    if !check_stream_and_model(body, &mut v) {
        return v;
    }
    if body["max_tokens"].as_u64().is_none_or(|n| n == 0) {
        v.push(format!("max_tokens is {}", body["max_tokens"]));
    }
    check_tools(&body["tools"], &mut v);
    check_thinking(body, &mut v);
    let Some(messages) = messages_of(body, &mut v) else {
        return v;
    };
    if messages[0]["role"] != "user" {
        v.push(format!("first message role is {}", messages[0]["role"]));
    }
    let mut seen_ids = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        check_message(i, m, &mut seen_ids, &mut v);
    }
    check_pairing(messages, &mut v);
    v
}

/// Extended thinking: a budget of at least 1024 below max_tokens, and none of what the
/// API refuses beside it (forced tool use, a changed temperature or top_k).
fn check_thinking(body: &Value, v: &mut Vec<String>) {
    let thinking = &body["thinking"];
    if thinking.is_null() {
        return;
    }
    if thinking["type"] != "enabled" {
        v.push(format!(
            "thinking type is {}, want enabled",
            thinking["type"]
        ));
        return;
    }
    let budget = thinking["budget_tokens"].as_u64().unwrap_or(0);
    if budget < 1024 {
        v.push(format!("thinking budget_tokens {budget} is below 1024"));
    }
    if body["max_tokens"].as_u64().is_some_and(|m| m <= budget) {
        v.push(format!(
            "max_tokens {} does not exceed the thinking budget {budget}",
            body["max_tokens"]
        ));
    }
    let choice = &body["tool_choice"]["type"];
    if !choice.is_null() && choice != "auto" && choice != "none" {
        v.push(format!("tool_choice {choice} with thinking on"));
    }
    for key in ["temperature", "top_k"] {
        if !body[key].is_null() {
            v.push(format!("{key} sent with thinking on"));
        }
    }
}

/// The tools array: each tool named once, described, with an object schema. `shape`
/// gives a tool's `(name, schema)` in its wire and pushes what the wire itself requires.
fn check_tool_list<'a>(
    tools: &'a Value,
    v: &mut Vec<String>,
    shape: impl Fn(&'a Value, &mut Vec<String>) -> (&'a str, &'a Value),
) {
    if tools.is_null() {
        return;
    }
    let Some(tools) = tools.as_array() else {
        v.push("tools is not an array".into());
        return;
    };
    let mut names = HashSet::new();
    for t in tools {
        let (name, schema) = shape(t, v);
        if name.is_empty() {
            v.push(format!("tool without a name: {}", compact(t)));
        }
        if !names.insert(name.to_string()) {
            v.push(format!("tool {name} sent twice"));
        }
        if schema["type"] != "object" {
            v.push(format!("tool {name} schema type is not object"));
        }
    }
}

/// Anthropic tools: `{name, description, input_schema}`.
fn check_tools(tools: &Value, v: &mut Vec<String>) {
    check_tool_list(tools, v, |t, v| {
        let name = t["name"].as_str().unwrap_or("");
        if t["description"].as_str().is_none_or(str::is_empty) {
            v.push(format!("tool {name} has no description"));
        }
        (name, &t["input_schema"])
    });
}

fn check_message(i: usize, m: &Value, seen_ids: &mut HashSet<String>, v: &mut Vec<String>) {
    let role = m["role"].as_str().unwrap_or("");
    if role != "user" && role != "assistant" {
        v.push(format!("messages[{i}] has role {:?}", m["role"]));
    }
    let content = &m["content"];
    if let Some(s) = content.as_str() {
        if s.is_empty() {
            v.push(format!("messages[{i}] has empty string content"));
        }
        return;
    }
    let Some(blocks) = content.as_array() else {
        v.push(format!("messages[{i}] content is neither string nor array"));
        return;
    };
    if blocks.is_empty() {
        v.push(format!("messages[{i}] has an empty content array"));
    }
    for (j, b) in blocks.iter().enumerate() {
        let at = format!("messages[{i}].content[{j}]");
        match b["type"].as_str().unwrap_or("") {
            "text" => {
                if b["text"].as_str().is_none_or(str::is_empty) {
                    v.push(format!("{at}: text block with empty text"));
                }
            }
            "tool_use" => {
                if role != "assistant" {
                    v.push(format!("{at}: tool_use in a {role} message"));
                }
                let id = b["id"].as_str().unwrap_or("");
                if id.is_empty() || b["name"].as_str().is_none_or(str::is_empty) {
                    v.push(format!("{at}: tool_use without id or name"));
                }
                if !seen_ids.insert(id.to_string()) {
                    v.push(format!("{at}: tool_use id {id} used twice"));
                }
                if !b["input"].is_object() {
                    v.push(format!(
                        "{at}: tool_use input is not an object: {}",
                        b["input"]
                    ));
                }
            }
            "tool_result" => {
                if role != "user" {
                    v.push(format!("{at}: tool_result in a {role} message"));
                }
                if !b["is_error"].is_null() && !b["is_error"].is_boolean() {
                    v.push(format!("{at}: is_error is not a boolean"));
                }
            }
            kind @ ("thinking" | "redacted_thinking") => {
                // Only the model's own blocks, unchanged, go back: signed, never cached.
                if role != "assistant" {
                    v.push(format!("{at}: {kind} in a {role} message"));
                }
                let field = if kind == "thinking" {
                    "signature"
                } else {
                    "data"
                };
                if b[field].as_str().is_none_or(str::is_empty) {
                    v.push(format!("{at}: {kind} block without its {field}"));
                }
                if kind == "thinking" && !b["thinking"].is_string() {
                    v.push(format!("{at}: thinking block without its text"));
                }
                if !b["cache_control"].is_null() {
                    v.push(format!("{at}: cache_control on a {kind} block"));
                }
            }
            "image" | "document" => {}
            other => v.push(format!("{at}: unknown block type {other:?}")),
        }
    }
}

fn blocks(m: &Value) -> &[Value] {
    m["content"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn tool_use_ids(m: &Value) -> Vec<&str> {
    blocks(m)
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap_or(""))
        .collect()
}

/// SPEC §3.2: every assistant message's tool_use ids are answered, in order, by the
/// leading tool_result blocks of the next user message, and nothing else; no user
/// message holds a tool_result that does not answer the assistant message before it.
fn check_pairing(messages: &[Value], v: &mut Vec<String>) {
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "assistant" {
            let uses = tool_use_ids(m);
            if uses.is_empty() {
                continue;
            }
            let Some(next) = messages.get(i + 1) else {
                v.push(format!(
                    "messages[{i}]: tool_use {uses:?} is the last message, never answered"
                ));
                continue;
            };
            if next["role"] != "user" {
                v.push(format!(
                    "messages[{}] after tool_use is not a user message",
                    i + 1
                ));
                continue;
            }
            let nb = blocks(next);
            for (k, id) in uses.iter().enumerate() {
                match nb.get(k) {
                    Some(b) if b["type"] == "tool_result" && b["tool_use_id"] == *id => {}
                    Some(b) => v.push(format!(
                        "messages[{}].content[{k}] should be the tool_result for {id}, is {}",
                        i + 1,
                        compact(b)
                    )),
                    None => v.push(format!(
                        "messages[{}]: no tool_result for {id} (only {} blocks)",
                        i + 1,
                        nb.len()
                    )),
                }
            }
            for (k, b) in nb.iter().enumerate().skip(uses.len()) {
                if b["type"] == "tool_result" {
                    v.push(format!(
                        "messages[{}].content[{k}]: extra tool_result {}",
                        i + 1,
                        b["tool_use_id"]
                    ));
                }
            }
        } else {
            let has_results = blocks(m).iter().any(|b| b["type"] == "tool_result");
            let prev_uses = i
                .checked_sub(1)
                .map(|p| tool_use_ids(&messages[p]))
                .unwrap_or_default();
            if has_results && prev_uses.is_empty() {
                v.push(format!(
                    "messages[{i}]: tool_result without a tool_use in the message before"
                ));
            }
        }
    }
}

/// A block shown short in a violation message.
fn compact(b: &Value) -> String {
    let s = b.to_string();
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------
// The OpenAI-compatible chat-completions wire: the same promises in its shape (tool
// calls on the assistant message, answered by `role: "tool"` messages by id).

/// Checks the request line and headers of a chat-completions request. A key, when
/// sent, goes as `authorization: Bearer`; the Anthropic header must never reach this
/// server (it would hand one provider's key to another).
pub(crate) fn check_chat_head(method: &str, headers: &[(String, String)]) -> Vec<String> {
    let mut v = Vec::new();
    let get = |name: &str| header(headers, name);
    check_post_json(method, headers, &mut v);
    if get("x-api-key").is_some() {
        v.push("x-api-key header sent to an OpenAI-compatible server".into());
    }
    if let Some(auth) = get("authorization")
        && auth.strip_prefix("Bearer ").is_none_or(str::is_empty)
    {
        v.push("authorization is not `Bearer <key>`".into());
    }
    v
}

/// Checks a chat-completions body: stream/model, messages and their roles, the tools
/// array, and the pairing of tool calls with tool messages.
pub(crate) fn check_chat_body(body: &Value) -> Vec<String> {
    let mut v = Vec::new();
    if !check_stream_and_model(body, &mut v) {
        return v;
    }
    check_chat_tools(&body["tools"], &mut v);
    let Some(messages) = messages_of(body, &mut v) else {
        return v;
    };
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if !["system", "user", "assistant", "tool"].contains(&role) {
            v.push(format!("messages[{i}] has role {:?}", m["role"]));
        }
    }
    check_chat_pairing(messages, &mut v);
    v
}

/// OpenAI tools: `{type: "function", function: {name, description, parameters}}`.
fn check_chat_tools(tools: &Value, v: &mut Vec<String>) {
    check_tool_list(tools, v, |t, v| {
        if t["type"] != "function" {
            v.push(format!("tool is not a function: {}", compact(t)));
        }
        (
            t["function"]["name"].as_str().unwrap_or(""),
            &t["function"]["parameters"],
        )
    });
}

/// Every assistant message's tool calls are answered, in order, by the `tool` messages
/// right after it, one per call and no more; no `tool` message stands anywhere else;
/// call ids are unique and each call's arguments are a string.
fn check_chat_pairing(messages: &[Value], v: &mut Vec<String>) {
    let mut seen_ids = HashSet::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        i += 1;
        if m["role"] == "tool" {
            v.push(format!(
                "messages[{}]: tool message {} answers no tool call",
                i - 1,
                m["tool_call_id"]
            ));
            continue;
        }
        let calls = m["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if m["role"] != "assistant" || calls.is_empty() {
            continue;
        }
        for c in calls {
            let id = c["id"].as_str().unwrap_or("");
            if id.is_empty() || !seen_ids.insert(id.to_string()) {
                v.push(format!(
                    "messages[{}]: tool call id {id:?} empty or reused",
                    i - 1
                ));
            }
            if c["type"] != "function" || c["function"]["name"].as_str().is_none_or(str::is_empty) {
                v.push(format!(
                    "messages[{}]: call without a name: {}",
                    i - 1,
                    compact(c)
                ));
            }
            if !c["function"]["arguments"].is_string() {
                v.push(format!("messages[{}]: arguments are not a string", i - 1));
            }
        }
        for c in calls {
            match messages.get(i) {
                Some(t) if t["role"] == "tool" && t["tool_call_id"] == c["id"] => {
                    if !t["content"].is_string() && !t["content"].is_array() {
                        v.push(format!("messages[{i}]: tool content is {}", t["content"]));
                    }
                    i += 1;
                }
                other => {
                    v.push(format!(
                        "messages[{i}] should be the tool message for {}, is {}",
                        c["id"],
                        other.map_or("nothing".to_string(), compact)
                    ));
                    break;
                }
            }
        }
    }
}

/// The Anthropic version Bedrock's body carries (the agent's choice, DESIGN.md).
pub(crate) const BEDROCK_VERSION: &str = "bedrock-2023-05-31";

/// A Bedrock request: a signed (or Bearer) JSON POST to a model's stream path, whose
/// body is the Messages body with `anthropic_version`, without `model` and `stream`.
pub(crate) fn check_bedrock(
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Vec<String> {
    let mut v = Vec::new();
    check_post_json(method, headers, &mut v);
    if !(path.starts_with("/model/") && path.ends_with("/invoke-with-response-stream")) {
        v.push(format!(
            "path is {path}, want /model/ID/invoke-with-response-stream"
        ));
    }
    match header(headers, "authorization") {
        Some(a) if a.starts_with("AWS4-HMAC-SHA256 Credential=") => {
            if header(headers, "x-amz-date").is_none() {
                v.push("signed without x-amz-date".into());
            }
        }
        Some(a) if a.starts_with("Bearer ") => {}
        other => v.push(format!("authorization is {other:?}, want SigV4 or Bearer")),
    }
    if header(headers, "x-api-key").is_some() {
        v.push("x-api-key sent to Bedrock".into());
    }
    if body["anthropic_version"] != BEDROCK_VERSION {
        v.push(format!(
            "anthropic_version is {}",
            body["anthropic_version"]
        ));
    }
    for gone in ["model", "stream"] {
        if body.get(gone).is_some() {
            v.push(format!("the body has {gone} (it is in the URL)"));
        }
    }
    let mut as_messages = body.clone();
    if let Some(o) = as_messages.as_object_mut() {
        o.insert("model".into(), Value::String("in-the-url".into()));
        o.insert("stream".into(), Value::Bool(true));
    }
    v.extend(check_body(&as_messages));
    v
}

/// The Anthropic version Vertex AI's body carries (the agent's choice, DESIGN.md).
pub(crate) const VERTEX_VERSION: &str = "vertex-2023-10-16";

/// A Vertex AI request: a Bearer JSON POST whose body is the Messages body with
/// `anthropic_version` and `stream`, without `model` (it is in the URL).
pub(crate) fn check_vertex(
    method: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Vec<String> {
    let mut v = Vec::new();
    check_post_json(method, headers, &mut v);
    if !header(headers, "authorization").is_some_and(|a| a.starts_with("Bearer ")) {
        v.push("no Bearer authorization".into());
    }
    if header(headers, "x-api-key").is_some() || header(headers, "anthropic-version").is_some() {
        v.push("x-api-key or anthropic-version sent to Vertex AI".into());
    }
    if body["anthropic_version"] != VERTEX_VERSION {
        v.push(format!(
            "anthropic_version is {}",
            body["anthropic_version"]
        ));
    }
    if body.get("model").is_some() {
        v.push("the body has model (it is in the URL)".into());
    }
    let mut as_messages = body.clone();
    if let Some(o) = as_messages.as_object_mut() {
        o.insert("model".into(), Value::String("in-the-url".into()));
    }
    v.extend(check_body(&as_messages));
    v
}
