//! The Anthropic Messages API wire (SPEC §3.1): `POST /v1/messages` with `x-api-key`
//! and `anthropic-version`, the request body with its prompt-cache breakpoints and
//! extended thinking, the error body, and the event-stream decoder (`decode`). The HTTP
//! shell does the rest.

pub(crate) mod decode;

use std::io::BufRead;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TurnRequest;
use super::http::{Body, HttpConfig, TurnResult, Wire};
use super::retry::OnNotice;
use crate::config::cli::{Effort, RequestArgs, ToolChoice};
use crate::model::protocol::ApiErrorBody;
use crate::record::history::BodySink;
use crate::util::sync::Locked;

/// The API version header every request carries.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The smallest `budget_tokens` the API takes.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

/// The beta that lets Claude 4 models think between tool calls (after each tool
/// result), not only once before their first call.
pub(crate) const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// The thinking budget of each `--effort` level. The request's max_tokens is the budget
/// plus `--max-tokens`, so with the default 8192 even `high` (24576 in all) stays within
/// the smallest output limit of the Claude 4 models (32000, Opus 4 and 4.1).
fn effort_budget(effort: Effort) -> u32 {
    match effort {
        Effort::Low => 4096,
        Effort::Medium => 8192,
        Effort::High => 16384,
    }
}

/// The thinking budget the requests carry: `--thinking-budget`, else `--effort`'s.
pub(crate) fn thinking_budget(request: &RequestArgs) -> Option<u32> {
    request
        .thinking_budget
        .or_else(|| request.effort.map(effort_budget))
}

/// Whether `model` thinks between tool calls with [`INTERLEAVED_THINKING_BETA`]: every
/// model but the Claude 3 family (3.7 Sonnet thinks only before its first call). Names
/// are matched anywhere, for gateways that prefix them (`anthropic/claude-…`).
pub(crate) fn interleaves_thinking(model: &str) -> bool {
    !model.to_ascii_lowercase().contains("claude-3")
}

/// The Anthropic Messages API.
#[derive(Default)]
pub(crate) struct AnthropicWire {
    /// The request's head (model, system prompt, tools …) as last serialised: the same
    /// every turn of a run, so each request copies these bytes instead of building and
    /// serialising it again (a third of a small turn's CPU before).
    head: std::sync::Mutex<Option<CachedHead>>,
    /// How the clouds that host the Messages API change its body (default: not at all).
    shape: BodyShape,
}

/// The Messages body as a cloud takes it (Bedrock, Vertex AI): the model is in the URL,
/// not the body; the version is a body field; Bedrock also takes the betas and the
/// streaming choice out of the headers and the body (the official SDK's `_prepare_options`).
#[derive(Clone, Copy, Default)]
pub(crate) struct BodyShape {
    /// `anthropic_version` in the body (`None`: the Anthropic API's header instead).
    pub version: Option<&'static str>,
    /// `model` is in the URL only.
    pub no_model: bool,
    /// `stream` is in the URL only (Bedrock's `invoke-with-response-stream`).
    pub no_stream: bool,
    /// The betas go in the body's `anthropic_beta` array instead of a header.
    pub betas_in_body: bool,
}

impl AnthropicWire {
    /// The Messages body with a cloud's changes (see [`BodyShape`]).
    pub(crate) fn shaped(shape: BodyShape) -> Self {
        AnthropicWire {
            head: std::sync::Mutex::default(),
            shape,
        }
    }

    /// The headers of a cloud that takes the Messages body: content type, and the betas
    /// when they stay a header (Vertex AI); no key or version header.
    pub(crate) fn cloud_headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        let mut headers = vec![("content-type", "application/json".to_string())];
        let betas = betas(config);
        if !betas.is_empty() && !self.shape.betas_in_body {
            headers.push(("anthropic-beta", betas.join(",")));
        }
        headers
    }
}

/// `--betas`, then the ones flags added (context-1m, interleaved thinking): each once.
fn betas(config: &HttpConfig) -> Vec<&str> {
    let mut betas: Vec<&str> = Vec::new();
    for beta in config.request.betas.iter().map(|b| b.trim()) {
        if !beta.is_empty() && !betas.contains(&beta) {
            betas.push(beta);
        }
    }
    betas
}

/// A serialised request head and what it was made from. The system prompt and the
/// tools are the run's own, alive and unchanged for the whole run, so their address
/// and length name them; the model changes once if `--fallback-model` takes over.
struct CachedHead {
    key: HeadKey,
    bytes: Vec<u8>,
}

#[derive(PartialEq)]
struct HeadKey {
    model: String,
    max_tokens: u32,
    system: (usize, usize),
    tools: (usize, usize),
    tool_choice: Option<ToolChoice>,
    thinking_budget: Option<u32>,
    /// In the body only with [`BodyShape::betas_in_body`].
    betas: Vec<String>,
}

impl HeadKey {
    fn of(request: &TurnRequest<'_>, choice: Option<ToolChoice>, budget: Option<u32>) -> Self {
        HeadKey {
            betas: Vec::new(),
            model: request.model.to_string(),
            max_tokens: request.max_tokens,
            system: (request.system.as_ptr() as usize, request.system.len()),
            tools: (request.tools.as_ptr() as usize, request.tools.len()),
            tool_choice: choice,
            thinking_budget: budget,
        }
    }
}

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
        let betas = betas(config);
        if !betas.is_empty() {
            headers.push(("anthropic-beta", betas.join(",")));
        }
        headers
    }

    fn body<'a>(
        &self,
        request: &TurnRequest<'a>,
        config: &HttpConfig,
        out: &mut Body<'a>,
    ) -> serde_json::Result<()> {
        let choice = config
            .request
            .tool_choice
            .filter(|_| !request.tools.is_empty());
        let budget = thinking_budget(&config.request);
        let mut key = HeadKey::of(request, choice, budget);
        if self.shape.betas_in_body {
            key.betas = betas(config).into_iter().map(String::from).collect();
        }
        let mut cached = self.head.locked();
        if cached.as_ref().is_none_or(|c| c.key != key) {
            let bytes = shaped_head_bytes(request, choice, budget, self.shape, &key.betas)?;
            *cached = Some(CachedHead { key, bytes });
        }
        #[expect(clippy::expect_used, reason = "set just above when it was None")]
        let head = &cached.as_ref().expect("the head was just made").bytes;
        write_messages_after(head, request, out);
        Ok(())
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
    #[serde(skip_serializing_if = "Option::is_none")]
    anthropic_version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    anthropic_beta: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Value; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
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
/// spliced into it (`history::write_messages`), so thinking blocks go back exactly as
/// they came. With a thinking budget, max_tokens (which counts the thinking too) is the
/// budget plus the request's own: the API wants it above the budget, and the answer
/// keeps the room `--max-tokens` gives it.
/// Into `out`, which borrows the messages' JSON.
#[cfg(test)]
fn write_body<'a>(
    request: &TurnRequest<'a>,
    tool_choice: Option<ToolChoice>,
    thinking_budget: Option<u32>,
    out: &mut impl BodySink<'a>,
) -> serde_json::Result<()> {
    let head = head_bytes(request, tool_choice, thinking_budget)?;
    write_messages_after(&head, request, out);
    Ok(())
}

/// The body: `head` (from [`head_bytes`]), the stored messages, the closing brace.
fn write_messages_after<'a>(head: &[u8], request: &TurnRequest<'a>, out: &mut impl BodySink<'a>) {
    out.own(head);
    crate::record::history::write_messages(request.messages, true, out);
    out.own(b"}");
}

#[cfg(test)]
thread_local! {
    /// Request heads serialised on this thread (tests: the cache keeps it to one a run).
    static HEADS_MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The body up to its messages: the head object without its closing brace, then
/// `,"messages":`.
#[cfg(test)]
fn head_bytes(
    request: &TurnRequest<'_>,
    tool_choice: Option<ToolChoice>,
    thinking_budget: Option<u32>,
) -> serde_json::Result<Vec<u8>> {
    shaped_head_bytes(
        request,
        tool_choice,
        thinking_budget,
        BodyShape::default(),
        &[],
    )
}

/// [`head_bytes`] with a cloud's changes; `betas` go in the body when `shape` says so.
fn shaped_head_bytes(
    request: &TurnRequest<'_>,
    tool_choice: Option<ToolChoice>,
    thinking_budget: Option<u32>,
    shape: BodyShape,
    betas: &[String],
) -> serde_json::Result<Vec<u8>> {
    #[cfg(test)]
    HEADS_MADE.with(|n| n.set(n.get() + 1));
    let tools = api_tools(request.tools);
    let system = (!request.system.is_empty()).then(|| {
        [serde_json::json!({"type": "text", "text": request.system, "cache_control": ephemeral()})]
    });
    let head = RequestHead {
        anthropic_version: shape.version,
        anthropic_beta: (shape.betas_in_body && !betas.is_empty()).then_some(betas),
        model: (!shape.no_model).then_some(request.model),
        max_tokens: match thinking_budget {
            Some(budget) => request.max_tokens.saturating_add(budget),
            None => request.max_tokens,
        },
        thinking: thinking_budget
            .map(|budget| serde_json::json!({"type": "enabled", "budget_tokens": budget})),
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
        stream: (!shape.no_stream).then_some(true),
    };
    let mut head = serde_json::to_vec(&head)?;
    head.pop(); // the closing brace: the messages follow
    head.extend_from_slice(b",\"messages\":");
    Ok(head)
}

/// An HTTP error body: `{"type":"error","error":{"type","message"},"request_id"?}`.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiErrorBody,
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
