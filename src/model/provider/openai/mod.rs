//! The OpenAI-compatible chat-completions wire (SPEC §9): the same agent on
//! OpenAI, vLLM, llama.cpp, Ollama and other vendors. Translation out lives here: the
//! history stays in Anthropic wire format (the transcript's one documented message
//! format); each message is translated once (kept beside it, `Entry::wire`) to chat messages (system, user, assistant with
//! `tool_calls`, `role: "tool"` results) and the registry's tools to
//! `{"type":"function","function":{..}}`. Decoding in is `decode`. The API key
//! (optional: local servers need none) goes only into the `Authorization` header.

pub(crate) mod decode;

use std::io::BufRead;

use serde_json::{Map, Value, json};

use super::TurnRequest;
use super::http::{Body, HttpConfig, TurnResult, Wire};
use super::retry::OnNotice;
use crate::config::cli::{Effort, ToolChoice};
use crate::model::protocol::{ContentBlock, MediaSource, Message, Role};
use crate::record::history::BodySink;

/// Hosts that take `max_completion_tokens` (OpenAI's reasoning models reject
/// `max_tokens`); every other server gets the older `max_tokens`, which the local
/// servers (vLLM, llama.cpp, Ollama) all understand.
const MAX_COMPLETION_TOKENS_HOSTS: &[&str] = &["api.openai.com"];

/// Prefix of a failed tool's result: chat messages (and the Responses API's
/// `function_call_output`) have no `is_error` flag.
const TOOL_ERROR_PREFIX: &str = "Error: ";

/// A tool result's text as OpenAI's APIs take it: a failure says so in the text.
/// A file's name for a document part, which OpenAI requires: the document's title (its
/// file's name), else the file's.
pub(crate) fn media_filename(source: &MediaSource, title: Option<&str>) -> String {
    let path = match (title, source) {
        (Some(t), _) => t,
        (
            None,
            MediaSource::Base64 {
                origin: Some(r), ..
            }
            | MediaSource::Reference(r),
        ) => r.path.as_str(),
        (None, MediaSource::Base64 { origin: None, .. }) => "",
    };
    match path.rsplit(['/', '\\']).next() {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => "document.pdf".to_string(),
    }
}

/// `data:<media type>;base64,<data>`, how OpenAI's APIs take inline bytes.
pub(crate) fn data_url(source: &MediaSource) -> Option<String> {
    match source {
        MediaSource::Base64 {
            media_type, data, ..
        } => Some(format!("data:{media_type};base64,{data}")),
        MediaSource::Reference(_) => None,
    }
}

/// An image or a PDF as a chat content part: `image_url` with a data URL, or `file`.
fn chat_media_part(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Image { source } => {
            Some(json!({"type": "image_url", "image_url": {"url": data_url(source)?}}))
        }
        ContentBlock::Document { source, title } => Some(json!({"type": "file", "file": {
            "filename": media_filename(source, title.as_deref()), "file_data": data_url(source)?}})),
        _ => None,
    }
}

/// Tells the model whose images follow in a user message (a tool message cannot hold one).
pub(crate) fn media_caption(tool_use_id: &str) -> String {
    format!("The images or documents the tool call {tool_use_id} returned:")
}

pub(crate) fn tool_result_text(content: &str, is_error: bool) -> String {
    if is_error {
        format!("{TOOL_ERROR_PREFIX}{content}")
    } else {
        content.to_string()
    }
}

/// An OpenAI-compatible chat-completions server.
pub(crate) struct OpenAiWire;

impl Wire for OpenAiWire {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        let api_key = &config.api_key;
        let mut headers = vec![
            ("content-type", "application/json".to_string()),
            ("accept", "text/event-stream".to_string()),
        ];
        if !api_key.is_empty() {
            headers.push(("authorization", format!("Bearer {api_key}")));
        }
        headers
    }

    fn body<'a>(
        &self,
        request: &TurnRequest<'a>,
        config: &HttpConfig,
        out: &mut Body<'a>,
    ) -> serde_json::Result<()> {
        write_body(
            request,
            &config.base_url,
            config.request.tool_choice,
            config.request.effort,
            out,
        );
        Ok(())
    }

    fn request_id_header(&self) -> &'static str {
        "x-request-id"
    }

    /// `(type, message)` of an error body: `{"error":{"message","type","code"}}` (OpenAI,
    /// Ollama, llama.cpp), `{"error":"text"}`, or a bare `{"message","type"}` (older vLLM).
    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)> {
        let v: Value = serde_json::from_slice(raw).ok()?;
        match v.get("error") {
            Some(e @ Value::Object(_)) => Some(error_fields(e)),
            Some(Value::String(s)) => Some((String::new(), s.clone())),
            _ if v.get("message").is_some() => Some(error_fields(&v)),
            _ => None,
        }
    }

    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult {
        decode::read_chat_turn(reader, on_notice)
    }
}

/// The request body: `stream` with the final usage chunk, tools only when there are any,
/// `reasoning_effort` with `--effort`. Each history message's chat form is made once and
/// kept (`Entry::wire`), so a request copies the history's bytes rather than translating
/// and serialising it again. Into `out`, which borrows those bytes.
fn write_body<'a>(
    request: &TurnRequest<'a>,
    base_url: &str,
    tool_choice: Option<ToolChoice>,
    effort: Option<Effort>,
    out: &mut impl BodySink<'a>,
) {
    let mut head = json!({
        "model": request.model,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let tokens_field = if uses_max_completion_tokens(base_url) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    head[tokens_field] = json!(request.max_tokens);
    if let Some(effort) = effort {
        head["reasoning_effort"] = json!(effort.as_str());
    }
    if !request.tools.is_empty() {
        head["tools"] = Value::Array(chat_tools(request.tools));
        if let Some(choice) = tool_choice {
            head["tool_choice"] = json!(match choice {
                ToolChoice::Auto => "auto",
                ToolChoice::Required => "required",
                ToolChoice::None => "none",
            });
        }
    }
    let head = head.to_string();
    let wire: Vec<&str> = request
        .messages
        .iter()
        .map(|e| e.wire(chat_json))
        .filter(|w| !w.is_empty())
        .collect();
    out.own(&head.as_bytes()[..head.len() - 1]); // all but the closing brace
    out.own(b",\"messages\":[");
    if !request.system.is_empty() {
        out.own(
            json!({"role": "system", "content": request.system})
                .to_string()
                .as_bytes(),
        );
    }
    for (i, part) in wire.into_iter().enumerate() {
        if i > 0 || !request.system.is_empty() {
            out.own(b",");
        }
        out.history(part.as_bytes());
    }
    out.own(b"]}");
}

/// One history message as the comma-separated chat messages it becomes.
fn chat_json(message: &Message) -> String {
    chat_messages("", std::slice::from_ref(message))
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn uses_max_completion_tokens(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(base_url);
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = host.split(':').next().unwrap_or("");
    MAX_COMPLETION_TOKENS_HOSTS
        .iter()
        .any(|h| host.eq_ignore_ascii_case(h))
}

/// The registry's tools (`{name, description, input_schema}`) as chat functions.
pub(crate) fn chat_tools(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut function = Map::new();
            function.insert("name".into(), t.get("name").cloned().unwrap_or(Value::Null));
            if let Some(d) = t.get("description") {
                function.insert("description".into(), d.clone());
            }
            let parameters = t
                .get("input_schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            function.insert("parameters".into(), parameters);
            json!({"type": "function", "function": function})
        })
        .collect()
}

/// The history as chat messages. A user message's tool_results become one `role: "tool"`
/// message each, in order, directly after the assistant message that called them (the
/// API requires that); its text follows as one user message. Thinking blocks (Anthropic's,
/// or a server's own reasoning) are left out: chat servers have no way to take them back.
pub(crate) fn chat_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message.role {
            Role::User => {
                let mut texts = Vec::new();
                let mut parts = Vec::new();
                // A tool message holds text only: a result's images follow all the
                // tool messages (which must come first) in one user message, as codex does.
                let mut returned = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            let text = tool_result_text(&content.text, *is_error);
                            out.push(json!({"role": "tool", "tool_call_id": tool_use_id,
                                            "content": text}));
                            let media: Vec<Value> =
                                content.media.iter().filter_map(chat_media_part).collect();
                            if !media.is_empty() {
                                returned.push(json!({"type": "text",
                                                     "text": media_caption(tool_use_id)}));
                                returned.extend(media);
                            }
                        }
                        ContentBlock::Text { text } => texts.push(text.as_str()),
                        other => parts.extend(chat_media_part(other)),
                    }
                }
                if !returned.is_empty() {
                    out.push(json!({"role": "user", "content": returned}));
                }
                if !parts.is_empty() {
                    let mut content = Vec::new();
                    if !texts.is_empty() {
                        content.push(json!({"type": "text", "text": texts.join("\n\n")}));
                    }
                    content.extend(parts);
                    out.push(json!({"role": "user", "content": content}));
                } else if !texts.is_empty() {
                    out.push(json!({"role": "user", "content": texts.join("\n\n")}));
                }
            }
            Role::Assistant => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text: t } => text.push_str(t),
                        ContentBlock::ToolUse { id, name, input } => calls.push(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": input.to_string()},
                        })),
                        _ => {}
                    }
                }
                // `""` even beside tool calls, where OpenAI's spec allows `null`:
                // llama-cpp-python answers `null` with a 500 and LiteLLM drops the key.
                let mut m = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                out.push(m);
            }
        }
    }
    out
}

/// The type (or, without one, the code) and the message of an error object; a code
/// beside a type is appended to the message.
pub(crate) fn error_fields(e: &Value) -> (String, String) {
    let text = |key: &str| match e.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let message = text("message").unwrap_or_default();
    match (text("type"), text("code")) {
        (Some(t), Some(c)) if c != t => (t, format!("{message} (code {c})")),
        (Some(t), _) => (t, message),
        (None, Some(c)) => (c, message),
        (None, None) => (String::new(), message),
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
