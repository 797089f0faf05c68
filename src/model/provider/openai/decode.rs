//! The OpenAI chat-completions stream decoder: `data:` chunks read by the shared SSE
//! reader, `delta.tool_calls[]` fragments assembled by `index`, `finish_reason` and the
//! final usage chunk folded into the same `Turn` the Anthropic decoder produces, until
//! `data: [DONE]`. A server's reasoning text (`reasoning_content`, as DeepSeek's API and
//! llama.cpp send it, or its newer name `reasoning`) becomes the turn's first block, a
//! thinking block without a signature: kept for the transcript, never shown as the
//! answer, never sent back.

use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::Value;

use super::error_fields;
use crate::model::protocol::{ContentBlock, StopReason, Usage};
use crate::model::provider::decoding::{
    CUT_OFF_BY_MAX_TOKENS, MAX_BLOCK_BYTES, assistant_turn, parse_tool_input, tool_use_block,
};
use crate::model::provider::sse::SseReader;
use crate::model::provider::{BeforeFirstEvent, StreamFailure};
use crate::model::turn::{PendingCall, StreamNotice, Turn};
use crate::util::output;
use crate::util::text::ellipsis;

/// How much of an undecodable chunk is quoted in an error, in chars.
const MAX_QUOTED_CHUNK_CHARS: usize = 300;

/// What a 200 whose stream ends without a single chunk usually means, for its error.
const EMPTY_STREAM_HINT: &str = "the server answered 200 and closed the stream without a \
     chunk: it probably failed after sending its headers (its log says why). \
     llama-cpp-python's chatml-function-calling does this for --tool-choice auto and \
     required, which it cannot stream: see docs/guide/providers.md (OpenAI-compatible servers)";

/// Most tool calls one response may open: far above any real parallel batch, and it
/// keeps a broken server's stream of new indexes from growing memory without bound.
const MAX_TOOL_CALLS_PER_TURN: usize = 1_024;

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
    /// Reasoning text; any other shape is ignored rather than failing the chunk.
    #[serde(default)]
    reasoning_content: Option<Value>,
    /// The newer name of the same; a server sending both repeats the text in each.
    #[serde(default)]
    reasoning: Option<Value>,
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
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
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
    /// The server's reasoning text, in the order it came.
    thinking: String,
    refused: bool,
    /// In the order they started (the model's order: servers open them by rising index).
    calls: Vec<CallBuf>,
    finish_reason: Option<String>,
    usage: Usage,
    /// A usage chunk came (llama-cpp-python sends none).
    usage_seen: bool,
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
            if let Some(r) = u.completion_tokens_details.and_then(|d| d.reasoning_tokens) {
                self.usage.reasoning_output_tokens = r;
            }
            self.usage_seen |= u.prompt_tokens.is_some() || u.completion_tokens.is_some();
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
        let reasoning = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find_map(|v| match v {
                Value::String(s) if !s.is_empty() => Some(s),
                _ => None,
            });
        if let Some(piece) = reasoning {
            if self.thinking.len() + piece.len() > MAX_BLOCK_BYTES {
                return Err(StreamFailure::Malformed {
                    detail: format!("the reasoning text grew past {MAX_BLOCK_BYTES} bytes"),
                });
            }
            self.thinking.push_str(&piece);
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
                        ellipsis(&fragment, MAX_QUOTED_CHUNK_CHARS)
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
        for position in 0..self.calls.len() {
            let (earlier, rest) = self.calls.split_at_mut(position);
            let call = &mut rest[0];
            if call.done.is_some() {
                continue;
            }
            if !ready(call) {
                break; // announced in order, as the loop's early start expects
            }
            if call.name.is_empty() {
                // Not a failed turn: the dispatcher answers an unknown (empty) tool name
                // with an error result listing the tools, and the model can call again.
                output::debug(&format!("tool call {} came without a name", call.index));
            }
            // Calls are told apart by index here; each needs its own id, or their
            // results could not be told apart (and APIs reject repeated ids).
            let taken = |id: &str| earlier.iter().any(|c| c.id == id);
            if call.id.is_empty() || taken(&call.id) {
                let n = SYNTHETIC_IDS.fetch_add(1, Ordering::Relaxed) + 1;
                let id = format!("call_agent_{n}");
                output::debug(&format!(
                    "tool call {} came with the id {:?}, which is empty or taken; using {id}",
                    call.index, call.id
                ));
                call.id = id;
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
                let mut detail = format!(
                    "the stream ended before a finish_reason or [DONE] (after {} chunks)",
                    self.chunks
                );
                if self.chunks == 0 {
                    detail = format!("{detail}; {EMPTY_STREAM_HINT}");
                }
                return Err(StreamFailure::Incomplete { detail });
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
        let mut content = Vec::with_capacity(self.calls.len() + 2);
        if !self.thinking.is_empty() {
            // No signature: no server of this wire can verify one.
            content.push(ContentBlock::Thinking {
                thinking: self.thinking,
                signature: String::new(),
            });
        }
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        let mut calls = Vec::with_capacity(self.calls.len());
        for call in self.calls {
            let Some(pending) = call.done else {
                continue; // unreachable: complete_calls closed every call
            };
            content.push(tool_use_block(&pending));
            calls.push(pending);
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
            Err(e) if acc.chunks == 0 => return Err(StreamFailure::Io(BeforeFirstEvent::wrap(e))),
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
                return Err(stream_error_event(&Value::String(ellipsis(
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
                        ellipsis(data, MAX_QUOTED_CHUNK_CHARS)
                    ),
                });
            }
        }
    }
    acc.finish(on_notice)
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
