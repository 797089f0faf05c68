//! The Responses API stream decoder: typed events (`response.output_item.added`/`.done`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`/`.done`,
//! `response.reasoning_summary_text.delta`, …) read by the shared SSE reader and folded
//! by output item into the same `Turn` the other decoders produce, until
//! `response.completed` or `response.incomplete`. A function call is announced
//! (`ToolReady`) as soon as its arguments are done, in output order. A reasoning item is
//! kept as the exact JSON text `response.output_item.done` carried, so the next request
//! returns it byte for byte. `response.failed` and `error` become stream failures of the
//! retry classes the shell knows; events this decoder does not know are skipped.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::model::protocol::{ContentBlock, StopReason, Usage};
use crate::model::provider::decoding::{
    CUT_OFF_BY_MAX_TOKENS, MAX_BLOCK_BYTES, assistant_turn, parse_tool_input, tool_use_block,
};
use crate::model::provider::sse::SseReader;
use crate::model::provider::{BeforeFirstEvent, StreamFailure};
use crate::model::turn::{PendingCall, StreamNotice, Turn};
use crate::util::output;
use crate::util::text::ellipsis;

/// How much of an undecodable event is quoted in an error, in chars.
const MAX_QUOTED_EVENT_CHARS: usize = 300;

/// Most output items one response may open: far above any real turn, and it keeps a
/// broken server's stream of new items from growing memory without bound.
const MAX_OUTPUT_ITEMS: usize = 1_024;

/// Between two parts of a reasoning summary, as the summary text shows them.
const SUMMARY_PART_SEPARATOR: &str = "\n\n";

/// One event's payload. Every field is optional: each event type uses a few.
#[derive(Debug, Default, Deserialize)]
struct Event {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    response: Option<ResponseObject>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    item_id: Option<String>,
    /// Kept as text: a reasoning item goes back exactly as it came.
    #[serde(default)]
    item: Option<Box<RawValue>>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    summary_index: Option<usize>,
    /// `error` events: `code`, `message` at the top (or in an `error` object).
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct ResponseObject {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct ResponseUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// The fields of an output item this decoder reads.
#[derive(Debug, Default, Deserialize)]
struct ItemHead {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    /// A message's parts (`output_text`, `refusal`).
    #[serde(default)]
    content: Option<Vec<Part>>,
    /// A reasoning item's summary parts.
    #[serde(default)]
    summary: Option<Vec<Part>>,
}

#[derive(Debug, Default, Deserialize)]
struct Part {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    FunctionCall,
    Reasoning,
    /// Anything else (a hosted tool's call): not part of the turn.
    Other,
}

/// One output item as its events arrive.
#[derive(Debug)]
struct ItemBuf {
    output_index: usize,
    kind: Kind,
    id: String,
    /// A message's text (refusals included).
    text: String,
    refused: bool,
    call_id: String,
    name: String,
    args: String,
    /// The arguments are whole (`function_call_arguments.done` or the item's `.done`).
    args_done: bool,
    /// A reasoning item's summary text, and the part it is in.
    summary: String,
    summary_part: Option<usize>,
    /// The item's JSON as `response.output_item.done` carried it.
    raw_done: Option<String>,
    /// Set once the call is announced with `ToolReady`.
    call: Option<PendingCall>,
}

impl ItemBuf {
    fn new(output_index: usize, kind: Kind, id: String) -> Self {
        ItemBuf {
            output_index,
            kind,
            id,
            text: String::new(),
            refused: false,
            call_id: String::new(),
            name: String::new(),
            args: String::new(),
            args_done: false,
            summary: String::new(),
            summary_part: None,
            raw_done: None,
            call: None,
        }
    }
}

/// How a response ended.
#[derive(Debug)]
enum End {
    Completed,
    Incomplete(String),
}

/// Numbers the ids made up for calls a server sent without one, unique within the run.
static SYNTHETIC_IDS: AtomicU64 = AtomicU64::new(0);

/// Folds the events of one response into a [`Turn`].
#[derive(Debug, Default)]
struct ResponsesAccumulator {
    id: String,
    model: String,
    /// In the order they were added (the output order).
    items: Vec<ItemBuf>,
    usage: Usage,
    usage_seen: bool,
    events: usize,
    end: Option<End>,
}

fn kind_of(name: &str) -> Kind {
    match name {
        "message" => Kind::Message,
        "function_call" => Kind::FunctionCall,
        "reasoning" => Kind::Reasoning,
        _ => Kind::Other,
    }
}

fn too_big(what: &str) -> StreamFailure {
    StreamFailure::Malformed {
        detail: format!("{what} grew past {MAX_BLOCK_BYTES} bytes"),
    }
}

fn push_bounded(buf: &mut String, piece: &str, what: &str) -> Result<(), StreamFailure> {
    if buf.len() + piece.len() > MAX_BLOCK_BYTES {
        return Err(too_big(what));
    }
    buf.push_str(piece);
    Ok(())
}

impl ResponsesAccumulator {
    fn push(
        &mut self,
        kind: &str,
        event: Event,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<(), StreamFailure> {
        self.events += 1;
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(r) = event.response {
                    self.response_head(r);
                }
            }
            "response.output_item.added" => {
                let head = parse_head(event.item.as_deref())?;
                let index = event.output_index.unwrap_or(self.items.len());
                let position = self.item_at(index, kind_of(&head.kind), head.id.clone())?;
                let item = &mut self.items[position];
                if let Some(c) = head.call_id.filter(|c| !c.is_empty()) {
                    item.call_id = c;
                }
                if let Some(n) = head.name.filter(|n| !n.is_empty()) {
                    item.name = n;
                }
                if let Some(a) = head.arguments {
                    item.args = a;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let Some(piece) = delta_text(&event) else {
                    return Ok(());
                };
                let position = self.item_for(&event, Kind::Message)?;
                let item = &mut self.items[position];
                push_bounded(&mut item.text, &piece, "the response text")?;
                item.refused |= kind == "response.refusal.delta";
                on_notice(StreamNotice::TextDelta(&piece));
            }
            "response.function_call_arguments.delta" => {
                let Some(piece) = delta_text(&event) else {
                    return Ok(());
                };
                let position = self.item_for(&event, Kind::FunctionCall)?;
                let item = &mut self.items[position];
                if item.args_done {
                    return Err(StreamFailure::Malformed {
                        detail: format!(
                            "function call {} received more arguments after they were done",
                            item.output_index
                        ),
                    });
                }
                push_bounded(&mut item.args, &piece, "a function call's arguments")?;
            }
            "response.function_call_arguments.done" => {
                let position = self.item_for(&event, Kind::FunctionCall)?;
                let item = &mut self.items[position];
                if let Some(a) = event.arguments {
                    item.args = a;
                }
                item.args_done = true;
                self.announce(on_notice, false);
            }
            "response.reasoning_summary_text.delta" => {
                let Some(piece) = delta_text(&event) else {
                    return Ok(());
                };
                let position = self.item_for(&event, Kind::Reasoning)?;
                let item = &mut self.items[position];
                let part = event.summary_index.unwrap_or(0);
                if item.summary_part.is_some_and(|p| p != part) && !item.summary.is_empty() {
                    push_bounded(&mut item.summary, SUMMARY_PART_SEPARATOR, "a summary")?;
                }
                item.summary_part = Some(part);
                push_bounded(&mut item.summary, &piece, "a reasoning summary")?;
            }
            "response.output_item.done" => {
                let Some(raw) = event.item else {
                    return Err(StreamFailure::Malformed {
                        detail: "response.output_item.done carried no item".into(),
                    });
                };
                let head = parse_head(Some(&raw))?;
                let index = event.output_index.unwrap_or(self.items.len());
                let position = self.item_at(index, kind_of(&head.kind), head.id.clone())?;
                self.item_done(position, head, raw.get());
                self.announce(on_notice, false);
            }
            "response.completed" => {
                if let Some(r) = event.response {
                    self.response_head(r);
                }
                self.end = Some(End::Completed);
            }
            "response.incomplete" => {
                let reason = event
                    .response
                    .as_ref()
                    .and_then(|r| r.incomplete_details.as_ref())
                    .and_then(|d| d.reason.clone())
                    .unwrap_or_else(|| "incomplete".to_string());
                if let Some(r) = event.response {
                    self.response_head(r);
                }
                self.end = Some(End::Incomplete(reason));
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error).unwrap_or(Value::Null);
                return Err(failure_of(&error));
            }
            "error" => {
                let error = match event.error {
                    Some(e @ Value::Object(_)) => e,
                    _ => serde_json::json!({"code": event.code, "message": event.message}),
                };
                return Err(failure_of(&error));
            }
            other => output::debug(&format!("skipped stream event {other:?}")),
        }
        Ok(())
    }

    fn response_head(&mut self, r: ResponseObject) {
        if self.id.is_empty()
            && let Some(id) = r.id
        {
            self.id = id;
        }
        if let Some(model) = r.model.filter(|m| !m.is_empty()) {
            self.model = model;
        }
        if let Some(u) = r.usage {
            // Like chat completions, input_tokens counts the cached ones: subtract, so
            // sums and budgets mean what Anthropic's counts mean.
            let cached = u
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            if let Some(i) = u.input_tokens {
                self.usage.input_tokens = i.saturating_sub(cached);
                self.usage.cache_read_input_tokens = cached;
            }
            if let Some(o) = u.output_tokens {
                self.usage.output_tokens = o;
            }
            self.usage.reasoning_output_tokens = u
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0);
            self.usage_seen |= u.input_tokens.is_some() || u.output_tokens.is_some();
        }
    }

    /// The item at `output_index`, opened if new.
    fn item_at(
        &mut self,
        output_index: usize,
        kind: Kind,
        id: Option<String>,
    ) -> Result<usize, StreamFailure> {
        if let Some(p) = self
            .items
            .iter()
            .position(|i| i.output_index == output_index)
        {
            return Ok(p);
        }
        if self.items.len() >= MAX_OUTPUT_ITEMS {
            return Err(StreamFailure::Malformed {
                detail: format!("the response opened more than {MAX_OUTPUT_ITEMS} output items"),
            });
        }
        self.items
            .push(ItemBuf::new(output_index, kind, id.unwrap_or_default()));
        // Kept in output order, whatever order the items were opened in.
        self.items.sort_by_key(|i| i.output_index);
        Ok(self
            .items
            .iter()
            .position(|i| i.output_index == output_index)
            .unwrap_or(0))
    }

    /// The item a delta event names: by `item_id`, else by `output_index` (a server
    /// that skipped `output_item.added` gets the item opened here).
    fn item_for(&mut self, event: &Event, kind: Kind) -> Result<usize, StreamFailure> {
        if let Some(id) = event.item_id.as_deref().filter(|i| !i.is_empty())
            && let Some(p) = self.items.iter().position(|i| i.id == id)
        {
            return Ok(p);
        }
        let index = event
            .output_index
            .or_else(|| self.items.last().map(|i| i.output_index))
            .unwrap_or(0);
        self.item_at(index, kind, event.item_id.clone())
    }

    /// Takes what the finished item says: the arguments, the text when no delta came,
    /// the reasoning item's exact JSON.
    fn item_done(&mut self, position: usize, head: ItemHead, raw: &str) {
        let item = &mut self.items[position];
        match item.kind {
            Kind::FunctionCall => {
                if let Some(c) = head.call_id.filter(|c| !c.is_empty()) {
                    item.call_id = c;
                }
                if let Some(n) = head.name.filter(|n| !n.is_empty()) {
                    item.name = n;
                }
                if let Some(a) = head.arguments {
                    item.args = a;
                }
                item.args_done = true;
            }
            Kind::Message if item.text.is_empty() => {
                for part in head.content.unwrap_or_default() {
                    match part.kind.as_str() {
                        "output_text" => item.text.push_str(part.text.as_deref().unwrap_or("")),
                        "refusal" => {
                            item.refused = true;
                            item.text.push_str(part.refusal.as_deref().unwrap_or(""));
                        }
                        _ => {}
                    }
                }
            }
            Kind::Reasoning => {
                if item.summary.is_empty() {
                    let parts: Vec<&str> = head
                        .summary
                        .iter()
                        .flatten()
                        .filter_map(|p| p.text.as_deref())
                        .collect();
                    item.summary = parts.join(SUMMARY_PART_SEPARATOR);
                }
                item.raw_done = Some(raw.to_string());
            }
            Kind::Message | Kind::Other => {}
        }
    }

    /// Announces the calls whose arguments are done, in output order, up to the first
    /// that is not (`all`: every call, at the end of the response).
    fn announce(&mut self, on_notice: &mut dyn FnMut(StreamNotice<'_>), all: bool) {
        let cut_by_length =
            matches!(&self.end, Some(End::Incomplete(r)) if r == "max_output_tokens");
        for position in 0..self.items.len() {
            let (earlier, rest) = self.items.split_at_mut(position);
            let item = &mut rest[0];
            if item.kind != Kind::FunctionCall || item.call.is_some() {
                continue;
            }
            if !item.args_done && !all {
                break; // in order, as the loop's early start expects
            }
            let taken = |id: &str| earlier.iter().any(|c| c.call_id == id);
            if item.call_id.is_empty() || taken(&item.call_id) {
                let n = SYNTHETIC_IDS.fetch_add(1, Ordering::Relaxed) + 1;
                let id = format!("call_agent_{n}");
                output::debug(&format!(
                    "function call {} came with the call_id {:?}, which is empty or taken; \
                     using {id}",
                    item.output_index, item.call_id
                ));
                item.call_id = id;
            }
            let input = match parse_tool_input(&item.args, &Value::Null) {
                Err(_) if cut_by_length => Err(CUT_OFF_BY_MAX_TOKENS.to_string()),
                other => other,
            };
            let pending = PendingCall {
                id: item.call_id.clone(),
                name: item.name.clone(),
                input,
            };
            on_notice(StreamNotice::ToolReady(item.call.insert(pending)));
        }
    }

    /// The finished turn; a stream that ended before `response.completed` or
    /// `response.incomplete` fails retryably.
    fn finish(
        mut self,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, StreamFailure> {
        let Some(end) = self.end.take() else {
            return Err(StreamFailure::Incomplete {
                detail: format!(
                    "the stream ended before response.completed (after {} events)",
                    self.events
                ),
            });
        };
        self.end = Some(end);
        self.announce(on_notice, true);
        let refused = self.items.iter().any(|i| i.refused);
        let has_calls = self.items.iter().any(|i| i.call.is_some());
        let stop_reason = match self.end.take() {
            Some(End::Incomplete(reason)) => match reason.as_str() {
                "max_output_tokens" => StopReason::MaxTokens,
                "content_filter" => StopReason::Refusal,
                _ => StopReason::Other(reason),
            },
            _ if has_calls => StopReason::ToolUse,
            _ if refused => StopReason::Refusal,
            _ => StopReason::EndTurn,
        };
        let mut content = Vec::with_capacity(self.items.len());
        let mut calls = Vec::new();
        for item in self.items {
            match item.kind {
                Kind::Reasoning => {
                    // An item that never finished cannot be sent back: left out.
                    if let Some(raw) = item.raw_done {
                        content.push(ContentBlock::Reasoning {
                            summary: item.summary,
                            item: raw,
                        });
                    }
                }
                Kind::Message if !item.text.is_empty() => {
                    content.push(ContentBlock::Text { text: item.text });
                }
                Kind::FunctionCall => {
                    if let Some(pending) = item.call {
                        content.push(tool_use_block(&pending));
                        calls.push(pending);
                    }
                }
                Kind::Message | Kind::Other => {}
            }
        }
        Ok(assistant_turn(
            (self.id, self.model),
            content,
            calls,
            stop_reason,
            self.usage,
            self.usage_seen,
        ))
    }
}

/// The text of a delta event (`delta` is a string; anything else is skipped).
fn delta_text(event: &Event) -> Option<String> {
    match &event.delta {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn parse_head(raw: Option<&RawValue>) -> Result<ItemHead, StreamFailure> {
    let Some(raw) = raw else {
        return Ok(ItemHead::default());
    };
    serde_json::from_str(raw.get()).map_err(|e| StreamFailure::Malformed {
        detail: format!(
            "could not decode an output item ({e}): {}",
            ellipsis(raw.get(), MAX_QUOTED_EVENT_CHARS)
        ),
    })
}

/// The retry class of a Responses error code: the shell retries every class but the
/// permanent ones (`invalid_request_error`, `authentication_error`, `billing_error` …),
/// and sends an `overloaded_error` to `--fallback-model`. Unknown codes are kept (and
/// retried).
fn error_class(code: &str) -> &str {
    match code {
        "server_error" | "internal_error" | "api_error" => "api_error",
        "rate_limit_exceeded" | "rate_limit_error" => "rate_limit_error",
        "server_is_overloaded" | "overloaded" | "overloaded_error" | "slow_down" => {
            "overloaded_error"
        }
        "insufficient_quota" | "billing_error" => "billing_error",
        "invalid_api_key" | "authentication_error" => "authentication_error",
        "context_length_exceeded" | "invalid_prompt" | "invalid_request_error" => {
            "invalid_request_error"
        }
        c if c.starts_with("invalid_") => "invalid_request_error",
        "" => "api_error",
        other => other,
    }
}

/// A `response.failed` error or an `error` event as a stream failure.
fn failure_of(error: &Value) -> StreamFailure {
    let text = |key: &str| match error.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let code = text("code").or_else(|| text("type")).unwrap_or_default();
    let message = text("message").unwrap_or_else(|| "the response failed".to_string());
    let class = error_class(&code).to_string();
    let message = if code.is_empty() || code == class {
        message
    } else {
        format!("{message} (code {code})")
    };
    StreamFailure::Api {
        error_type: class,
        message,
    }
}

/// Reads one streamed response: SSE decoder, event parsing and accumulator. Returns at
/// `response.completed` (or `.incomplete`) without waiting for the end of the body. No
/// HTTP here, so cassette replay uses it too.
pub(crate) fn read_responses_turn<R: std::io::BufRead>(
    reader: R,
    on_notice: &mut dyn FnMut(StreamNotice<'_>),
) -> Result<Turn, StreamFailure> {
    let mut sse = SseReader::new(reader);
    let mut acc = ResponsesAccumulator::default();
    loop {
        let event = match sse.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(e) if acc.events == 0 => return Err(StreamFailure::Io(BeforeFirstEvent::wrap(e))),
            Err(e) => return Err(StreamFailure::Io(e)),
        };
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        let parsed: Event = match serde_json::from_str(data) {
            Ok(parsed) => parsed,
            Err(e) => {
                return Err(StreamFailure::Malformed {
                    detail: format!(
                        "could not decode a Responses stream event ({e}): {}",
                        ellipsis(data, MAX_QUOTED_EVENT_CHARS)
                    ),
                });
            }
        };
        // The payload's `type` names the event; the SSE `event:` line, when there is
        // no type.
        let kind = parsed.kind.clone().unwrap_or_else(|| event.event.clone());
        acc.push(&kind, parsed, on_notice)?;
        if acc.end.is_some() {
            break;
        }
    }
    acc.finish(on_notice)
}

/// A turn as a canonical Responses stream (cassettes re-encode a redacted turn so).
pub(crate) fn encode(turn: &Turn) -> String {
    use serde_json::json;
    let mut out = String::new();
    let event = |out: &mut String, data: Value| {
        let name = data["type"].as_str().unwrap_or("").to_string();
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        &mut out,
        json!({"type": "response.created",
                 "response": {"id": turn.id, "model": turn.model, "status": "in_progress"}}),
    );
    let mut index = 0;
    for block in &turn.message.content {
        // The item's text as it is: a reasoning item keeps its bytes.
        let item = match block {
            ContentBlock::Reasoning { item, .. } => item.clone(),
            ContentBlock::Text { text } => json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]})
            .to_string(),
            ContentBlock::ToolUse { id, name, input } => json!({"type": "function_call",
                "call_id": id, "name": name, "arguments": input.to_string()})
            .to_string(),
            _ => continue,
        };
        out.push_str(&format!(
            "event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\
             \"output_index\":{index},\"item\":{item}}}\n\n"
        ));
        index += 1;
    }
    let u = &turn.usage;
    let usage = (!u.unknown).then(|| {
        json!({"input_tokens": u.input_tokens + u.cache_read_input_tokens,
               "input_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
               "output_tokens": u.output_tokens,
               "output_tokens_details": {"reasoning_tokens": u.reasoning_output_tokens}})
    });
    // The end event the decoder maps back to the same stop reason: `incomplete` with
    // the reason it came with (`max_output_tokens`, `content_filter` for a refusal, any
    // other as given); `completed` otherwise, where the items decide (`tool_use` when
    // there is a call, `end_turn` when not). A refusal is written as `content_filter`:
    // its text is an `output_text` here, so a completed stream would replay `end_turn`.
    // `stop_sequence` and `pause_turn` are not Responses stop reasons.
    let incomplete = match &turn.stop_reason {
        StopReason::MaxTokens => Some("max_output_tokens"),
        StopReason::Refusal => Some("content_filter"),
        StopReason::Other(reason) => Some(reason.as_str()),
        StopReason::EndTurn
        | StopReason::ToolUse
        | StopReason::StopSequence
        | StopReason::PauseTurn => None,
    };
    match incomplete {
        Some(reason) => event(
            &mut out,
            json!({"type": "response.incomplete",
            "response": {"status": "incomplete", "usage": usage,
                         "incomplete_details": {"reason": reason}}}),
        ),
        None => event(
            &mut out,
            json!({"type": "response.completed",
            "response": {"status": "completed", "usage": usage}}),
        ),
    }
    out
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
