//! The OpenAI-compatible chat-completions provider (SPEC §9, issue 8): the same agent on
//! OpenAI, vLLM, llama.cpp, Ollama and other vendors. Three jobs live here:
//!
//! - translation out: the history stays in Anthropic wire format (the transcript's one
//!   documented message format); each request translates it to chat messages (system,
//!   user, assistant with `tool_calls`, `role: "tool"` results) and the registry's tools
//!   to `{"type":"function","function":{..}}`;
//! - decoding in: `data:` chunks read by the shared SSE reader, `delta.tool_calls[]`
//!   fragments assembled by `index`, `finish_reason` and the final usage chunk folded
//!   into the same `Turn` the Anthropic path produces, until `data: [DONE]`;
//! - the HTTP attempt, with retries, backoff and error mapping shared through `retry`.
//!
//! The API key (optional: local servers need none) goes only into the `Authorization`
//! header, never into an error or a log.

use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::anthropic::Recorder;
use super::retry::{
    self, AttemptError, DEFAULT_BACKOFF_BASE, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RETRIES,
    RetryPolicy,
};
use super::sse::SseReader;
use super::{Provider, ProviderError, ProviderErrorKind, StreamNotice, TurnRequest};
use crate::config::Config;
use crate::output;
use crate::protocol::{ContentBlock, Message, Role, StopReason, Usage};
use crate::turn::{
    CUT_OFF_BY_MAX_TOKENS, MAX_BLOCK_BYTES, PendingCall, StreamFailure, Turn, parse_tool_input,
    quote,
};

/// Where `--provider openai` goes without `--base-url` / `OPENAI_BASE_URL`.
pub(crate) const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// How much of an undecodable chunk is quoted in an error, in chars.
const MAX_QUOTED_CHUNK_CHARS: usize = 300;

/// Most tool calls one response may open: far above any real parallel batch, and it
/// keeps a broken server's stream of new indexes from growing memory without bound.
const MAX_TOOL_CALLS_PER_TURN: usize = 1_024;

/// Hosts that take `max_completion_tokens` (OpenAI's reasoning models reject
/// `max_tokens`); every other server gets the older `max_tokens`, which the local
/// servers (vLLM, llama.cpp, Ollama) all understand.
const MAX_COMPLETION_TOKENS_HOSTS: &[&str] = &["api.openai.com"];

/// Prefix of a failed tool's result: chat messages have no `is_error` flag.
const TOOL_ERROR_PREFIX: &str = "Error: ";

/// How to reach the server and how hard to try.
#[derive(Clone)]
pub(crate) struct OpenAiConfig {
    /// e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1` (a trailing `/`
    /// is fine); requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    /// `None` (or empty): no `Authorization` header, as local servers expect.
    pub api_key: Option<String>,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// A stream (or a response) silent longer than this counts as dropped.
    pub idle_timeout: Duration,
    /// First backoff delay (tests make it tiny).
    pub backoff_base: Duration,
}

impl OpenAiConfig {
    /// The defaults of SPEC §2 and §3.1 for this endpoint and key.
    pub(crate) fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: api_key.filter(|k| !k.is_empty()),
            max_retries: DEFAULT_MAX_RETRIES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            backoff_base: DEFAULT_BACKOFF_BASE,
        }
    }

    /// The settings of this run (`--base-url`/`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
    /// retries, idle timeout, verbosity).
    pub(crate) fn from_config(config: &Config) -> Self {
        OpenAiConfig {
            max_retries: config.max_retries,
            idle_timeout: config.idle_timeout,
            ..OpenAiConfig::new(config.base_url.clone(), Some(config.api_key.clone()))
        }
    }
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("max_retries", &self.max_retries)
            .field("idle_timeout", &self.idle_timeout)
            .field("backoff_base", &self.backoff_base)
            .finish()
    }
}

pub(crate) struct OpenAiProvider {
    config: OpenAiConfig,
    url: String,
    agent: ureq::Agent,
    recorder: Option<Recorder>,
}

impl OpenAiProvider {
    pub(crate) fn new(config: OpenAiConfig) -> Self {
        let agent = retry::http_agent(config.idle_timeout);
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        OpenAiProvider {
            config,
            url,
            agent,
            recorder: None,
        }
    }

    /// Tee the raw SSE bytes of each successful turn to `recorder` (failed attempts are
    /// not recorded).
    pub(crate) fn set_recorder(&mut self, recorder: Recorder) {
        self.recorder = Some(recorder);
    }

    fn attempt(
        &mut self,
        body: &[u8],
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, AttemptError> {
        let mut post = self
            .agent
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        if let Some(key) = &self.config.api_key {
            post = post.header("authorization", &format!("Bearer {key}"));
        }
        retry::receive(
            post.send(body),
            retry::Exchange {
                base_url: &self.config.base_url,
                idle_timeout: self.config.idle_timeout,
                request_id_header: "x-request-id",
                parse_error_body,
                decode: |r, n| read_chat_turn(r, n),
                recorder: self.recorder.as_mut(),
            },
            request,
            on_notice,
        )
    }
}

impl Provider for OpenAiProvider {
    fn stream_turn(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let body =
            serde_json::to_vec(&request_body(request, &self.config.base_url)).map_err(|e| {
                ProviderError {
                    kind: ProviderErrorKind::Transport,
                    message: format!("could not serialise the request: {e}"),
                }
            })?;
        let secrets: Vec<String> = self.config.api_key.iter().cloned().collect();
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            backoff_base: self.config.backoff_base,
        };
        retry::with_retries(policy, &secrets, on_notice, &mut |on_notice| {
            retry::log_request(&self.url, request, body.len());
            self.attempt(&body, request, on_notice)
        })
    }
}

// ---------------------------------------------------------------------------------
// Translation out: Anthropic-format history → chat-completions request.

/// The request body: `stream` with the final usage chunk, tools only when there are any.
pub(crate) fn request_body(request: &TurnRequest<'_>, base_url: &str) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": chat_messages(request.system, request.messages),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let tokens_field = if uses_max_completion_tokens(base_url) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[tokens_field] = json!(request.max_tokens);
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(chat_tools(request.tools));
    }
    body
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
/// API requires that); its text follows as one user message. Thinking blocks are left
/// out: chat servers have no way to take them back.
pub(crate) fn chat_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message.role {
            Role::User => {
                let mut texts = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            let content = if *is_error {
                                format!("{TOOL_ERROR_PREFIX}{content}")
                            } else {
                                content.clone()
                            };
                            out.push(json!({"role": "tool", "tool_call_id": tool_use_id,
                                            "content": content}));
                        }
                        ContentBlock::Text { text } => texts.push(text.as_str()),
                        _ => {}
                    }
                }
                if !texts.is_empty() {
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
                let mut m = json!({"role": "assistant"});
                m["content"] = if text.is_empty() && !calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(text)
                };
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                out.push(m);
            }
        }
    }
    out
}

/// `(type, message)` of an error body: `{"error":{"message","type","code"}}` (OpenAI,
/// Ollama, llama.cpp), `{"error":"text"}`, or a bare `{"message","type"}` (older vLLM).
fn parse_error_body(raw: &[u8]) -> Option<(String, String)> {
    let v: Value = serde_json::from_slice(raw).ok()?;
    match v.get("error") {
        Some(e @ Value::Object(_)) => Some(error_fields(e)),
        Some(Value::String(s)) => Some((String::new(), s.clone())),
        _ if v.get("message").is_some() => Some(error_fields(&v)),
        _ => None,
    }
}

/// The type (or, without one, the code) and the message of an error object; a code
/// beside a type is appended to the message.
fn error_fields(e: &Value) -> (String, String) {
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

// ---------------------------------------------------------------------------------
// Decoding in: chat-completion chunks → one Turn.

/// One `data:` chunk. Every field is optional and nullable: servers differ.
#[derive(Debug, Default, Deserialize)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<ChoiceDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A string fragment; a few servers send the whole object instead.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A tool call as its fragments arrive.
#[derive(Debug)]
struct CallBuf {
    index: usize,
    id: String,
    name: String,
    args: String,
    /// Set once the call is complete and announced with `ToolReady`.
    done: Option<PendingCall>,
}

/// Numbers the ids made up for calls a server sent without one, unique within the run.
static SYNTHETIC_IDS: AtomicU64 = AtomicU64::new(0);

/// Folds the chunks of one response into a [`Turn`].
#[derive(Debug, Default)]
struct ChatAccumulator {
    id: String,
    model: String,
    text: String,
    refused: bool,
    /// In the order they started (the model's order: servers open them by rising index).
    calls: Vec<CallBuf>,
    finish_reason: Option<String>,
    usage: Usage,
    chunks: usize,
    /// `data: [DONE]` arrived.
    done: bool,
}

impl ChatAccumulator {
    fn push(
        &mut self,
        chunk: Chunk,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<(), StreamFailure> {
        self.chunks += 1;
        if let Some(error) = chunk.error {
            return Err(stream_error_event(&error));
        }
        if self.id.is_empty()
            && let Some(id) = chunk.id
        {
            self.id = id;
        }
        if self.model.is_empty()
            && let Some(model) = chunk.model
        {
            self.model = model;
        }
        if let Some(u) = chunk.usage {
            // Counts are cumulative (some servers send usage on every chunk): overwrite.
            // Anthropic's input_tokens excludes cache reads, OpenAI's prompt_tokens
            // includes them: subtract, so that sums and budgets mean the same for both.
            let cached = u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            if let Some(p) = u.prompt_tokens {
                self.usage.input_tokens = p.saturating_sub(cached);
                self.usage.cache_read_input_tokens = cached;
            }
            if let Some(c) = u.completion_tokens {
                self.usage.output_tokens = c;
            }
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue; // we ask for one choice (n = 1)
            }
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, on_notice)?;
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
                self.complete_calls(on_notice, |_| true)?;
            }
        }
        Ok(())
    }

    fn apply_delta(
        &mut self,
        delta: ChoiceDelta,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<(), StreamFailure> {
        for (piece, refusal) in [(delta.content, false), (delta.refusal, true)] {
            let Some(piece) = piece.filter(|p| !p.is_empty()) else {
                continue;
            };
            if self.text.len() + piece.len() > MAX_BLOCK_BYTES {
                return Err(StreamFailure::Malformed {
                    detail: format!("the response text grew past {MAX_BLOCK_BYTES} bytes"),
                });
            }
            self.refused |= refusal;
            self.text.push_str(&piece);
            on_notice(StreamNotice::TextDelta(&piece));
        }
        for (position, tc) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            let index = tc.index.unwrap_or(position);
            let (name, fragment) = match tc.function {
                Some(f) => (f.name, f.arguments),
                None => (None, None),
            };
            let fragment = match fragment {
                Some(Value::String(s)) => s,
                Some(Value::Null) | None => String::new(),
                Some(whole) => whole.to_string(),
            };
            // Ollama sends every call whole with `index: 0`: a fragment with a new id, for
            // an index whose arguments are already a whole JSON object, is a new call.
            let new_id = tc.id.as_deref().filter(|i| !i.is_empty());
            let existing = self
                .calls
                .iter()
                .rposition(|c| c.index == index)
                .filter(|&p| {
                    let c = &self.calls[p];
                    !(new_id.is_some_and(|id| !c.id.is_empty() && c.id != id)
                        && !c.args.trim().is_empty()
                        && parse_tool_input(&c.args, &Value::Null).is_ok())
                });
            let position = match existing {
                Some(p) => p,
                None => {
                    // A new call starts: the ones before it whose arguments already
                    // form a whole JSON object are complete.
                    self.complete_calls(on_notice, |c| {
                        !c.args.trim().is_empty() && parse_tool_input(&c.args, &Value::Null).is_ok()
                    })?;
                    if self.calls.len() >= MAX_TOOL_CALLS_PER_TURN {
                        return Err(StreamFailure::Malformed {
                            detail: format!(
                                "the response opened more than {MAX_TOOL_CALLS_PER_TURN} tool calls"
                            ),
                        });
                    }
                    self.calls.push(CallBuf {
                        index,
                        id: String::new(),
                        name: String::new(),
                        args: String::new(),
                        done: None,
                    });
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[position];
            if call.id.is_empty()
                && let Some(id) = tc.id.filter(|i| !i.is_empty())
            {
                call.id = id;
            }
            if call.name.is_empty()
                && let Some(name) = name.filter(|n| !n.is_empty())
            {
                call.name = name;
            }
            if call.done.is_some() {
                if fragment.trim().is_empty() {
                    continue;
                }
                return Err(StreamFailure::Malformed {
                    detail: format!(
                        "tool call {index} received more arguments after its JSON object was \
                         complete: {}",
                        quote(&fragment, MAX_QUOTED_CHUNK_CHARS)
                    ),
                });
            }
            if call.args.len() + fragment.len() > MAX_BLOCK_BYTES {
                return Err(StreamFailure::Malformed {
                    detail: format!("tool call {index} grew past {MAX_BLOCK_BYTES} bytes"),
                });
            }
            call.args.push_str(&fragment);
        }
        Ok(())
    }

    /// Completes (and announces) the open calls in order, up to the first one `ready`
    /// does not accept: `ToolReady` order is always the turn's call order.
    fn complete_calls(
        &mut self,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
        ready: impl Fn(&CallBuf) -> bool,
    ) -> Result<(), StreamFailure> {
        let cut_by_length = self.finish_reason.as_deref() == Some("length");
        for call in &mut self.calls {
            if call.done.is_some() {
                continue;
            }
            if !ready(call) {
                break; // announced in order, as the loop's early start expects
            }
            if call.name.is_empty() {
                return Err(StreamFailure::Malformed {
                    detail: format!("tool call {} has no function name", call.index),
                });
            }
            if call.id.is_empty() {
                let n = SYNTHETIC_IDS.fetch_add(1, Ordering::Relaxed) + 1;
                call.id = format!("call_agent_{n}");
                output::debug(&format!(
                    "tool call {} came without an id; using {}",
                    call.index, call.id
                ));
            }
            let input = match parse_tool_input(&call.args, &Value::Null) {
                Err(_) if cut_by_length => Err(CUT_OFF_BY_MAX_TOKENS.to_string()),
                other => other,
            };
            let pending = PendingCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input,
            };
            on_notice(StreamNotice::ToolReady(call.done.insert(pending)));
        }
        Ok(())
    }

    /// The finished turn. Fails (retryably) when neither a `finish_reason` nor
    /// `[DONE]` came: the stream was dropped.
    fn finish(
        mut self,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, StreamFailure> {
        let reason = match self.finish_reason.clone() {
            Some(r) => r,
            None if self.done => {
                // A server that never says why it stopped: infer it.
                output::debug("the stream reached [DONE] without a finish_reason");
                if self.calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                }
                .to_string()
            }
            None => {
                return Err(StreamFailure::Incomplete {
                    detail: format!(
                        "the stream ended before a finish_reason or [DONE] (after {} chunks)",
                        self.chunks
                    ),
                });
            }
        };
        self.complete_calls(on_notice, |_| true)?;
        let stop_reason = match reason.as_str() {
            // Some servers say "stop" although the model called tools.
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "stop" if !self.calls.is_empty() => StopReason::ToolUse,
            "stop" if self.refused => StopReason::Refusal,
            "stop" | "eos" => StopReason::EndTurn,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Refusal,
            other => StopReason::Other(other.to_string()),
        };
        let mut content = Vec::with_capacity(self.calls.len() + 1);
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        let mut calls = Vec::with_capacity(self.calls.len());
        for call in self.calls {
            let Some(pending) = call.done else {
                continue; // unreachable: complete_calls closed every call
            };
            content.push(ContentBlock::ToolUse {
                id: pending.id.clone(),
                name: pending.name.clone(),
                input: pending
                    .input
                    .clone()
                    .unwrap_or_else(|_| Value::Object(Map::new())),
            });
            calls.push(pending);
        }
        Ok(Turn {
            id: self.id,
            model: self.model,
            message: Message {
                role: Role::Assistant,
                content,
            },
            calls,
            stop_reason,
            usage: self.usage,
        })
    }
}

/// A mid-stream `{"error": …}` (or an `event: error`) as a stream failure.
fn stream_error_event(error: &Value) -> StreamFailure {
    let (error_type, message) = match error {
        Value::Object(_) => error_fields(error),
        Value::String(s) => (String::new(), s.clone()),
        other => (String::new(), other.to_string()),
    };
    StreamFailure::Api {
        error_type: if error_type.is_empty() {
            "unknown_error".to_string()
        } else {
            error_type
        },
        message,
    }
}

/// Reads one streamed chat completion: SSE decoder, chunk parsing and accumulator.
/// Returns at `data: [DONE]` without waiting for the end of the body. No HTTP here, so
/// cassette replay uses it too.
pub(crate) fn read_chat_turn<R: BufRead>(
    reader: R,
    on_notice: &mut dyn FnMut(StreamNotice<'_>),
) -> Result<Turn, StreamFailure> {
    let mut sse = SseReader::new(reader);
    let mut acc = ChatAccumulator::default();
    loop {
        let event = match sse.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(e) => return Err(StreamFailure::Io(e)),
        };
        let data = event.data.trim();
        if data.starts_with("[DONE]") {
            acc.done = true;
            break;
        }
        if data.is_empty() {
            continue;
        }
        match serde_json::from_str::<Chunk>(data) {
            Ok(chunk) if event.event == "error" && chunk.error.is_none() => {
                return Err(stream_error_event(
                    &serde_json::from_str(data).unwrap_or(Value::Null),
                ));
            }
            Ok(chunk) => acc.push(chunk, on_notice)?,
            Err(_) if event.event == "error" => {
                return Err(stream_error_event(&Value::String(quote(
                    data,
                    MAX_QUOTED_CHUNK_CHARS,
                ))));
            }
            Err(_) if event.event != "message" => {
                output::debug(&format!("skipped stream event {:?}", event.event));
            }
            Err(e) => {
                return Err(StreamFailure::Malformed {
                    detail: format!(
                        "could not decode a chat completion chunk ({e}): {}",
                        quote(data, MAX_QUOTED_CHUNK_CHARS)
                    ),
                });
            }
        }
    }
    acc.finish(on_notice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sse::tests::{Heard, PiecesReader, fixture, listen, shared_fixture_dir};
    use std::io;

    fn read_with_notices(reader: impl BufRead) -> (Result<Turn, StreamFailure>, Heard) {
        listen(|on_notice| read_chat_turn(reader, on_notice))
    }

    fn read(bytes: &[u8]) -> Result<Turn, StreamFailure> {
        read_with_notices(bytes).0
    }

    /// A stream of `data:` chunks from JSON texts, `[DONE]` appended when `done`.
    fn stream(chunks: &[Value], done: bool) -> Vec<u8> {
        let mut out = String::new();
        for c in chunks {
            out.push_str(&format!("data: {c}\n\n"));
        }
        if done {
            out.push_str("data: [DONE]\n\n");
        }
        out.into_bytes()
    }

    fn delta(d: Value) -> Value {
        json!({"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": d,
               "finish_reason": null}], "usage": null})
    }

    fn finish(reason: &str) -> Value {
        json!({"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {},
               "finish_reason": reason}], "usage": null})
    }

    fn call_start(index: usize, id: &str, name: &str, args: &str) -> Value {
        delta(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                     "function": {"name": name, "arguments": args}}]}),
        )
    }

    fn args(index: usize, fragment: &str) -> Value {
        delta(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
    }

    fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> Value {
        json!({"id": "chatcmpl-1", "model": "m", "choices": [], "usage": {
            "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}})
    }

    fn text_of(turn: &Turn) -> String {
        turn.message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn text_only_fixture() {
        let (turn, heard) = read_with_notices(&fixture("openai_text_stop.sse")[..]);
        let turn = turn.unwrap();
        assert_eq!(turn.id, "chatcmpl-text-0001");
        assert_eq!(turn.model, "gpt-test-text");
        assert_eq!(turn.stop_reason, StopReason::EndTurn);
        assert_eq!(
            turn.message,
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: "All four checks pass — naïve fix applied.".into()
                }]
            }
        );
        assert!(turn.calls.is_empty());
        assert_eq!(heard.text, "All four checks pass — naïve fix applied.");
        assert_eq!(heard.order, "TTTTT");
        // prompt 120 of which 64 cached: Anthropic semantics keep them apart.
        assert_eq!(
            turn.usage,
            Usage {
                input_tokens: 56,
                output_tokens: 11,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 64
            }
        );
    }

    /// Ollama sends each call whole, every one with `index: 0` and its own id.
    #[test]
    fn calls_sharing_index_zero_with_new_ids_are_separate_calls() {
        let bytes = stream(
            &[
                call_start(0, "call_1", "ReadFile", r#"{"path":"a.txt"}"#),
                call_start(0, "call_2", "Glob", r#"{"pattern":"*.txt"}"#),
                finish("tool_calls"),
            ],
            true,
        );
        let (turn, heard) = read_with_notices(&bytes[..]);
        let turn = turn.unwrap();
        let calls: Vec<_> = turn
            .calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.input.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_1", "ReadFile", Ok(json!({"path": "a.txt"}))),
                ("call_2", "Glob", Ok(json!({"pattern": "*.txt"}))),
            ]
        );
        assert_eq!(heard.ready.len(), 2);
        // A repeated id on every fragment (llama.cpp) is still one call.
        let bytes = stream(
            &[
                call_start(0, "call_9", "ReadFile", r#"{"path":"#),
                call_start(0, "call_9", "", r#""b.txt"}"#),
                finish("tool_calls"),
            ],
            true,
        );
        let turn = read(&bytes).unwrap();
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.calls[0].input, Ok(json!({"path": "b.txt"})));
    }

    #[test]
    fn parallel_tool_calls_fixture() {
        let (turn, heard) = read_with_notices(&fixture("openai_parallel_tool_calls.sse")[..]);
        let turn = turn.unwrap();
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
        let expected = vec![
            PendingCall {
                id: "call_read_a".into(),
                name: "ReadFile".into(),
                input: Ok(json!({"path": "src/a.rs"})),
            },
            PendingCall {
                id: "call_glob_b".into(),
                name: "Glob".into(),
                input: Ok(json!({"pattern": "**/*.toml"})),
            },
            PendingCall {
                id: "call_grep_c".into(),
                name: "Grep".into(),
                input: Ok(json!({})),
            },
        ];
        assert_eq!(turn.calls, expected);
        assert_eq!(heard.ready, expected);
        // Each call is announced as the next one starts, the last at the finish.
        assert_eq!(heard.order, "TRRR");
        assert_eq!(
            turn.message.content,
            vec![
                ContentBlock::Text {
                    text: "Reading both files.".into()
                },
                ContentBlock::ToolUse {
                    id: "call_read_a".into(),
                    name: "ReadFile".into(),
                    input: json!({"path": "src/a.rs"})
                },
                ContentBlock::ToolUse {
                    id: "call_glob_b".into(),
                    name: "Glob".into(),
                    input: json!({"pattern": "**/*.toml"})
                },
                ContentBlock::ToolUse {
                    id: "call_grep_c".into(),
                    name: "Grep".into(),
                    input: json!({})
                },
            ]
        );
        assert_eq!(
            (turn.usage.input_tokens, turn.usage.output_tokens),
            (900, 57)
        );
    }

    #[test]
    fn fragmented_arguments_fixture() {
        let turn = read(&fixture("openai_tool_call_fragmented_args.sse")).unwrap();
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.calls[0].id, "call_bash_1");
        assert_eq!(turn.calls[0].name, "Bash");
        assert_eq!(
            turn.calls[0].input,
            Ok(json!({"command": "echo \"café\" && printf 'a\\nb'", "timeout": 5}))
        );
        assert!(text_of(&turn).is_empty());
        assert_eq!(
            turn.usage,
            Usage {
                input_tokens: 322,
                output_tokens: 30,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 128
            }
        );
    }

    /// Every fixture decodes the same whatever byte offset the reads split at.
    #[test]
    fn fixtures_split_at_every_byte_offset() {
        for name in [
            "openai_text_stop.sse",
            "openai_parallel_tool_calls.sse",
            "openai_tool_call_fragmented_args.sse",
        ] {
            let bytes = fixture(name);
            let (whole, whole_heard) = read_with_notices(&bytes[..]);
            let whole = whole.unwrap();
            for cut in 1..bytes.len() {
                let (turn, heard) = read_with_notices(PiecesReader::split_at(&bytes, &[cut]));
                assert_eq!(turn.unwrap(), whole, "{name} split at {cut}");
                assert_eq!(heard, whole_heard, "{name} split at {cut}");
            }
            let (turn, _) = read_with_notices(PiecesReader::chunks(&bytes, 1));
            assert_eq!(turn.unwrap(), whole, "{name} byte by byte");
        }
    }

    #[test]
    fn interleaved_fragments_are_assembled_by_index() {
        let bytes = stream(
            &[
                call_start(0, "c0", "ReadFile", ""),
                call_start(1, "c1", "ReadFile", "{\"path\""),
                args(0, "{\"path\": \"a\""),
                args(1, ": \"b\"}"),
                args(0, "}"),
                finish("tool_calls"),
            ],
            true,
        );
        let (turn, heard) = read_with_notices(&bytes[..]);
        let turn = turn.unwrap();
        let inputs: Vec<_> = turn.calls.iter().map(|c| c.input.clone()).collect();
        assert_eq!(
            inputs,
            vec![Ok(json!({"path": "a"})), Ok(json!({"path": "b"}))]
        );
        // Neither was whole when the other started: both announced at the finish.
        assert_eq!(heard.ready, turn.calls);
    }

    #[test]
    fn calls_are_announced_in_order_even_when_a_later_one_is_whole_first() {
        let bytes = stream(
            &[
                call_start(0, "c0", "ReadFile", "{\"path\":"),
                call_start(1, "c1", "Glob", "{}"),
                call_start(2, "c2", "Glob", "{}"),
                args(0, "\"a\"}"),
                finish("tool_calls"),
            ],
            true,
        );
        let (turn, heard) = read_with_notices(&bytes[..]);
        let ids: Vec<_> = heard.ready.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c0", "c1", "c2"]);
        assert_eq!(heard.ready, turn.unwrap().calls);
    }

    #[test]
    fn a_call_is_announced_when_the_next_starts_and_before_the_finish() {
        let bytes = stream(
            &[
                call_start(0, "c0", "Glob", "{\"pattern\": \"*\"}"),
                call_start(1, "c1", "Glob", "{}"),
            ],
            false,
        );
        let mut order = Vec::new();
        let err = read_chat_turn(&bytes[..], &mut |n| {
            if let StreamNotice::ToolReady(c) = n {
                order.push(c.id.clone())
            }
        })
        .unwrap_err();
        assert_eq!(order, vec!["c0"], "c0 was complete when c1 started");
        assert!(matches!(err, StreamFailure::Incomplete { .. }), "{err:?}");
    }

    #[test]
    fn more_arguments_after_an_announced_call_are_malformed() {
        let bytes = stream(
            &[
                call_start(0, "c0", "Glob", "{}"),
                call_start(1, "c1", "Glob", "{}"),
                args(0, "{\"x\":1}"),
                finish("tool_calls"),
            ],
            true,
        );
        let err = read(&bytes).unwrap_err();
        assert!(matches!(err, StreamFailure::Malformed { .. }), "{err:?}");
        assert!(!err.is_retryable());
    }

    #[test]
    fn unparseable_arguments_are_an_error_input_and_empty_in_history() {
        let bytes = stream(
            &[
                call_start(0, "c0", "Bash", "{\"command\": oops}"),
                finish("tool_calls"),
                usage_chunk(10, 2, 0),
            ],
            true,
        );
        let turn = read(&bytes).unwrap();
        let err = turn.calls[0].input.clone().unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        assert_eq!(
            turn.message.content,
            vec![ContentBlock::ToolUse {
                id: "c0".into(),
                name: "Bash".into(),
                input: json!({})
            }]
        );
    }

    #[test]
    fn length_cuts_a_call_with_the_max_tokens_message() {
        let bytes = stream(
            &[
                delta(json!({"role": "assistant", "content": "Writing."})),
                call_start(
                    0,
                    "c0",
                    "WriteFile",
                    "{\"path\": \"big\", \"content\": \"aaa",
                ),
                finish("length"),
            ],
            true,
        );
        let (turn, heard) = read_with_notices(&bytes[..]);
        let turn = turn.unwrap();
        assert_eq!(turn.stop_reason, StopReason::MaxTokens);
        assert_eq!(turn.calls[0].input, Err(CUT_OFF_BY_MAX_TOKENS.to_string()));
        assert_eq!(heard.ready, turn.calls);
        assert_eq!(text_of(&turn), "Writing.");
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        for (reason, calls, expected) in [
            ("stop", false, StopReason::EndTurn),
            ("length", false, StopReason::MaxTokens),
            ("content_filter", false, StopReason::Refusal),
            ("tool_calls", true, StopReason::ToolUse),
            ("stop", true, StopReason::ToolUse),
            ("weird", false, StopReason::Other("weird".into())),
        ] {
            let mut chunks = vec![delta(json!({"content": "x"}))];
            if calls {
                chunks.push(call_start(0, "c0", "Glob", "{}"));
            }
            chunks.push(finish(reason));
            let turn = read(&stream(&chunks, true)).unwrap();
            assert_eq!(turn.stop_reason, expected, "{reason}");
        }
        // A refusal delta is shown as text and ends the run as a refusal.
        let turn = read(&stream(
            &[
                delta(json!({"refusal": "I can't help with that."})),
                finish("stop"),
            ],
            true,
        ))
        .unwrap();
        assert_eq!(turn.stop_reason, StopReason::Refusal);
        assert_eq!(text_of(&turn), "I can't help with that.");
    }

    #[test]
    fn done_without_a_finish_reason_is_inferred_and_eof_without_either_is_dropped() {
        let turn = read(&stream(&[delta(json!({"content": "hi"}))], true)).unwrap();
        assert_eq!(turn.stop_reason, StopReason::EndTurn);
        let turn = read(&stream(&[call_start(0, "c0", "Glob", "{}")], true)).unwrap();
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
        assert_eq!(turn.calls.len(), 1);

        // A finish_reason and no [DONE] (the connection closed after it): accepted.
        let turn = read(&stream(
            &[delta(json!({"content": "hi"})), finish("stop")],
            false,
        ));
        assert_eq!(turn.unwrap().stop_reason, StopReason::EndTurn);

        // Neither: a dropped stream, retried.
        for bytes in [
            stream(&[delta(json!({"content": "hi"}))], false),
            Vec::new(),
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut".to_vec(),
        ] {
            let err = read(&bytes).unwrap_err();
            assert!(matches!(err, StreamFailure::Incomplete { .. }), "{err:?}");
            assert!(err.is_retryable());
        }
    }

    #[test]
    fn reading_stops_at_done() {
        let mut bytes = stream(&[delta(json!({"content": "hi"})), finish("stop")], true);
        bytes.extend_from_slice(b"data: {not json}\n\n");
        assert_eq!(text_of(&read(&bytes).unwrap()), "hi");
    }

    #[test]
    fn mid_stream_errors_fail_the_turn() {
        let bytes = stream(
            &[
                delta(json!({"content": "par"})),
                json!({"error": {"message": "The server had an error", "type": "server_error",
                                 "param": null, "code": null}}),
            ],
            false,
        );
        let err = read(&bytes).unwrap_err();
        assert!(err.is_retryable());
        assert_eq!(
            err.to_string(),
            "stream error server_error: The server had an error"
        );
        let bad = stream(
            &[json!({"error": {"message": "bad", "type": "invalid_request_error"}})],
            false,
        );
        assert!(!read(&bad).unwrap_err().is_retryable());
        let named = read(b"event: error\ndata: upstream exploded\n\n").unwrap_err();
        assert!(
            matches!(&named, StreamFailure::Api { message, .. } if message == "upstream exploded"),
            "{named:?}"
        );
    }

    #[test]
    fn undecodable_chunks_fail_clearly_and_foreign_events_are_skipped() {
        let err = read(b"data: {oops\n\n").unwrap_err();
        assert!(matches!(err, StreamFailure::Malformed { .. }), "{err:?}");
        assert!(err.to_string().contains("{oops"), "{err}");
        let mut bytes = b": keep-alive\n\nevent: ping\ndata: not json\n\n".to_vec();
        bytes.extend(stream(
            &[delta(json!({"content": "ok"})), finish("stop")],
            true,
        ));
        assert_eq!(text_of(&read(&bytes).unwrap()), "ok");
        // A call without a name cannot be run.
        let nameless = stream(
            &[
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]}),
                ),
                finish("tool_calls"),
            ],
            true,
        );
        assert!(matches!(
            read(&nameless),
            Err(StreamFailure::Malformed { .. })
        ));
    }

    #[test]
    fn lenient_shapes_of_other_servers() {
        // No index (position stands in), no id (one is made up), arguments as an object,
        // finish_reason together with content, usage on every chunk (cumulative).
        let bytes = stream(
            &[
                json!({"choices": [{"delta": {"role": "assistant", "content": "Sure."}}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
                json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "Glob",
                       "arguments": {"pattern": "*.rs"}}}]}, "finish_reason": "tool_calls"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 9}}),
                json!({"choices": [{"index": 1, "delta": {"content": "other choice"}}]}),
            ],
            true,
        );
        let turn = read(&bytes).unwrap();
        assert_eq!(text_of(&turn), "Sure.");
        assert_eq!(turn.calls[0].input, Ok(json!({"pattern": "*.rs"})));
        assert!(
            turn.calls[0].id.starts_with("call_agent_"),
            "{}",
            turn.calls[0].id
        );
        assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (5, 9));
    }

    #[test]
    fn read_errors_are_io_failures() {
        struct Reset;
        impl io::Read for Reset {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let err = read_chat_turn(io::BufReader::new(Reset), &mut |_| {}).unwrap_err();
        assert!(matches!(&err, StreamFailure::Io(_)));
        assert!(err.is_retryable());
    }

    /// The recorded real streams beside the repository (skipped when absent).
    #[test]
    fn shared_recorded_streams_decode_as_documented() {
        let Some(dir) = shared_fixture_dir() else {
            return;
        };
        let load = |name: &str| std::fs::read(dir.join(name)).unwrap();
        let t = read(&load("openai_parallel_tool_calls.sse")).unwrap();
        let names: Vec<_> = t.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["get_country", "get_product_name"]);
        assert!(t.calls.iter().all(|c| c.input == Ok(json!({}))));
        assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (364, 40));
        let t = read(&load("openai_tool_call_fragmented_args.sse")).unwrap();
        assert_eq!(t.calls[0].input, Ok(json!({"city": "Mexico City"})));
        assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (423, 15));
        let t = read(&load("openai_text_stop.sse")).unwrap();
        assert_eq!(text_of(&t), "The capital of the UK is London.");
        assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (78, 9));
    }

    // -----------------------------------------------------------------------------
    // Translation out.

    #[test]
    fn history_translates_to_chat_messages() {
        let history = vec![
            Message::user_text("fix it"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "hm".into(),
                        signature: "s".into(),
                    },
                    ContentBlock::Text {
                        text: "Looking.".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "c1".into(),
                        name: "ReadFile".into(),
                        input: json!({"path": "a"}),
                    },
                    ContentBlock::ToolUse {
                        id: "c2".into(),
                        name: "Bash".into(),
                        input: json!({}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "c1".into(),
                        content: "1\tx".into(),
                        is_error: false,
                    },
                    ContentBlock::ToolResult {
                        tool_use_id: "c2".into(),
                        content: "bad input".into(),
                        is_error: true,
                    },
                    ContentBlock::Text {
                        text: "the tests still fail".into(),
                    },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "c3".into(),
                    name: "Glob".into(),
                    input: json!({"pattern": "*"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c3".into(),
                    content: "a".into(),
                    is_error: false,
                }],
            },
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: "Done.".into(),
                }],
            },
        ];
        assert_eq!(
            Value::Array(chat_messages("be brief", &history)),
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "fix it"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "ReadFile", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "c2", "type": "function",
                     "function": {"name": "Bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "1\tx"},
                {"role": "tool", "tool_call_id": "c2", "content": "Error: bad input"},
                {"role": "user", "content": "the tests still fail"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c3", "type": "function",
                     "function": {"name": "Glob", "arguments": "{\"pattern\":\"*\"}"}}]},
                {"role": "tool", "tool_call_id": "c3", "content": "a"},
                {"role": "assistant", "content": "Done."}
            ])
        );
        assert!(chat_messages("", &[]).is_empty());
    }

    #[test]
    fn request_body_has_functions_stream_options_and_the_right_token_field() {
        let messages = vec![Message::user_text("hi")];
        let tools = vec![json!({"name": "Glob", "description": "find files",
                                "input_schema": {"type": "object", "properties": {}}})];
        let request = TurnRequest {
            model: "qwen",
            max_tokens: 100,
            system: "",
            messages: &messages,
            tools: &tools,
        };
        assert_eq!(
            request_body(&request, "http://localhost:11434/v1"),
            json!({
                "model": "qwen",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "tools": [{"type": "function", "function": {"name": "Glob",
                    "description": "find files",
                    "parameters": {"type": "object", "properties": {}}}}]
            })
        );
        let body = request_body(
            &TurnRequest {
                tools: &[],
                ..request
            },
            "https://API.openai.com/v1/",
        );
        assert_eq!(body["max_completion_tokens"], 100);
        assert!(body.get("max_tokens").is_none() && body.get("tools").is_none());
        assert!(!uses_max_completion_tokens(
            "https://api.openai.com.evil.test/v1"
        ));
        assert!(!uses_max_completion_tokens("http://user@127.0.0.1:8000/v1"));
    }

    #[test]
    fn error_bodies_of_the_usual_servers() {
        let p = |s: &str| parse_error_body(s.as_bytes());
        assert_eq!(
            p(
                r#"{"error":{"message":"Invalid model","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#
            ),
            Some((
                "invalid_request_error".into(),
                "Invalid model (code model_not_found)".into()
            ))
        );
        assert_eq!(
            p(r#"{"error":{"code":500,"message":"boom","type":"server_error"}}"#),
            Some(("server_error".into(), "boom (code 500)".into()))
        );
        assert_eq!(
            p(r#"{"error":{"message":"slow down","type":null,"code":"rate_limit_exceeded"}}"#),
            Some(("rate_limit_exceeded".into(), "slow down".into()))
        );
        assert_eq!(
            p(r#"{"error":"model 'x' not found"}"#),
            Some((String::new(), "model 'x' not found".into()))
        );
        assert_eq!(
            p(r#"{"object":"error","message":"too long","type":"BadRequestError","code":400}"#),
            Some(("BadRequestError".into(), "too long (code 400)".into()))
        );
        assert_eq!(p("<html>bad gateway</html>"), None);
        assert_eq!(p(r#"{"detail":"x"}"#), None);
    }

    #[test]
    fn the_key_is_redacted_from_debug_output() {
        let c = OpenAiConfig::new("http://x", Some("sk-proj-secret-123".into()));
        assert!(!format!("{c:?}").contains("sk-proj-secret-123"));
        assert_eq!(
            OpenAiConfig::new("http://x", Some(String::new())).api_key,
            None
        );
    }
}
