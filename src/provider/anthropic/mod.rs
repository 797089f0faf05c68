//! The Anthropic Messages API wire (SPEC §3.1): `POST /v1/messages` with `x-api-key`
//! and `anthropic-version`, the request body with its prompt-cache breakpoints, the
//! error body, and the event-stream decoder (`decode`). The HTTP shell does the rest.

pub(crate) mod decode;

use std::io::BufRead;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TurnRequest;
use super::http::{HttpConfig, TurnResult, Wire};
use super::retry::OnNotice;
use crate::cli::ToolChoice;
use crate::protocol::ApiErrorBody;

/// The API version header every request carries.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic Messages API.
pub(crate) struct AnthropicWire;

impl Wire for AnthropicWire {
    fn path(&self) -> &'static str {
        "/v1/messages"
    }

    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        let credential = match &config.gateway.auth_token {
            Some(token) => ("authorization", format!("Bearer {token}")),
            None => ("x-api-key", config.api_key.clone()),
        };
        let mut headers = vec![
            credential,
            ("anthropic-version", ANTHROPIC_VERSION.to_string()),
            ("content-type", "application/json".to_string()),
        ];
        if !config.request.betas.is_empty() {
            headers.push(("anthropic-beta", config.request.betas.join(",")));
        }
        headers
    }

    fn body(&self, request: &TurnRequest<'_>, config: &HttpConfig) -> serde_json::Result<Vec<u8>> {
        let choice = config
            .request
            .tool_choice
            .filter(|_| !request.tools.is_empty());
        request_body(request, choice)
    }

    fn request_id_header(&self) -> &'static str {
        "request-id"
    }

    /// The `(type, message)` of an Anthropic error body.
    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)> {
        let env = serde_json::from_slice::<ErrorEnvelope>(raw).ok()?;
        Some((env.error.kind, env.error.message))
    }

    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult {
        decode::read_turn(reader, on_notice)
    }
}

/// The request body of SPEC §3.1, all but `messages`, which are spliced in as stored.
#[derive(Serialize)]
struct RequestHead<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Value; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    stream: bool,
}

/// Prompt caching (SPEC §9): the marker every breakpoint carries.
fn ephemeral() -> Value {
    serde_json::json!({"type": "ephemeral"})
}

/// The `tools` array exactly as sent: the registry's definitions with the prompt-cache
/// breakpoint on the last one (`agent tools` prints this too).
pub(crate) fn api_tools(tools: &[Value]) -> Vec<Value> {
    let mut tools = tools.to_vec();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    tools
}

/// The request body with prompt-cache breakpoints on the last tool definition, the
/// system prompt and the newest message. The prefix order is tools → system → messages,
/// so the first two cache everything a run re-sends every turn. The messages are not
/// serialised again: their stored JSON is copied in, the newest message's breakpoint
/// spliced into it (`history::write_messages`).
fn request_body(
    request: &TurnRequest<'_>,
    tool_choice: Option<ToolChoice>,
) -> serde_json::Result<Vec<u8>> {
    let tools = api_tools(request.tools);
    let system = (!request.system.is_empty()).then(|| {
        [serde_json::json!({"type": "text", "text": request.system, "cache_control": ephemeral()})]
    });
    let head = serde_json::to_vec(&RequestHead {
        model: request.model,
        max_tokens: request.max_tokens,
        system,
        tools,
        tool_choice: tool_choice.map(|c| {
            let kind = match c {
                ToolChoice::Auto => "auto",
                ToolChoice::Required => "any",
                ToolChoice::None => "none",
            };
            serde_json::json!({"type": kind})
        }),
        stream: true,
    })?;
    let messages: usize = request.messages.iter().map(|m| m.json().len() + 1).sum();
    let mut body = Vec::with_capacity(head.len() + messages + 64);
    body.extend_from_slice(&head[..head.len() - 1]); // all but the closing brace
    body.extend_from_slice(b",\"messages\":");
    crate::history::write_messages(request.messages, true, &mut body);
    body.push(b'}');
    Ok(body)
}

/// An HTTP error body: `{"type":"error","error":{"type","message"},"request_id"?}`.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiErrorBody,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Entry;
    use crate::protocol::{ContentBlock, Message, Role};
    use serde_json::json;

    #[test]
    fn breakpoints_only_on_last_tool_and_newest_message() {
        let messages: Vec<_> = [
            Message::user_text("task"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "ReadFile".into(),
                    input: json!({"path": "a"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "x".into(),
                    is_error: false,
                }],
            },
        ]
        .into_iter()
        .map(Entry::new)
        .collect();
        let tools = vec![json!({"name": "A"}), json!({"name": "B"})];
        let req = TurnRequest {
            model: "m",
            max_tokens: 1,
            system: "",
            messages: &messages,
            tools: &tools,
        };
        let body: Value = serde_json::from_slice(&request_body(&req, None).unwrap()).unwrap();
        assert!(body.get("system").is_none());
        assert_eq!(body["stream"], true);
        assert_eq!(body["max_tokens"], 1);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert!(
            body["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert!(
            body["messages"][1]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        // The history itself is untouched.
        assert_eq!(
            serde_json::from_str::<Value>(messages[2].json()).unwrap()["content"][0]
                .get("cache_control"),
            None
        );
    }
}
