//! The Anthropic stream decoder: a stream of `StreamEvent`s into one assistant message
//! plus its tool calls: text, thinking and tool_use blocks in order, tool input JSON
//! assembled from `input_json_delta` fragments and parsed at `content_block_stop`.
//! `read_turn` runs the SSE decoder, the event parsing and the accumulator over any
//! body, live or replayed.

use std::io::BufRead;

use serde_json::Value;

use crate::model::protocol::{ContentBlock, Delta, DeltaUsage, StopReason, StreamEvent, Usage};
use crate::model::provider::decoding::{
    CUT_OFF_BY_MAX_TOKENS, MAX_BLOCK_BYTES, assistant_turn, parse_tool_input, tool_use_block,
};
use crate::model::provider::sse::{SseEvent, SseReader};
use crate::model::provider::{BeforeFirstEvent, StreamFailure};
use crate::model::turn::{PendingCall, StreamNotice, Turn};
use crate::util::text::ellipsis;

/// Largest tool input kept, in bytes: generous, since a WriteFile `content` can be a
/// large file, yet bounded, so a hostile or runaway stream cannot exhaust memory. A
/// larger input is dropped and the call gets an error result; the stream goes on.
const MAX_TOOL_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// How much of an undecodable event is quoted in an error, in chars.
const MAX_QUOTED_EVENT_CHARS: usize = 300;

/// The error result of a tool call whose block never closed for another reason.
const CUT_OFF_UNCLOSED: &str = "the response ended before this tool call's input was \
     complete; the call was not run. Send the call again.";

/// The event types the Anthropic stream defines; any other type is skipped.
const KNOWN_EVENTS: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

/// Skipped stream content is logged with -v only; the message is built only then.
fn debug(message: impl FnOnce() -> String) {
    if crate::util::output::debug_enabled() {
        crate::util::output::debug(&message());
    }
}

/// A content block as it streams in.
#[derive(Debug)]
enum Block {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        signature: String,
        closed: bool,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        buf: String,
        start_input: Value,
        done: Option<PendingCall>,
        /// Bytes of input received in all: past `MAX_TOOL_INPUT_BYTES` `buf` is emptied
        /// and stays empty, and the call gets an error result.
        input_bytes: usize,
        /// Its `content_block_stop` arrived. A closed block whose input is not yet a
        /// whole JSON object waits (`done` stays `None`): the next block may continue it.
        closed: bool,
    },
    /// A tool_use block that repeats the id of the tool_use block just before it, which
    /// was closed with an incomplete input: a gateway that opens a block per argument
    /// fragment (LiteLLM). Its deltas go to that block, at `blocks[of]`.
    Continuation {
        of: usize,
    },
    /// A block type we do not know (server tools, future types): skipped.
    Ignored,
}

/// Folds the events of one streamed response into a [`Turn`]. Feed every event to
/// [`TurnAccumulator::push`], then call [`TurnAccumulator::finish`].
#[derive(Debug, Default)]
pub(crate) struct TurnAccumulator {
    id: String,
    model: String,
    /// Blocks by their stream `index`, in the order they started.
    blocks: Vec<(usize, Block)>,
    stop_reason: Option<StopReason>,
    usage: Usage,
    /// Some event carried a usage count.
    usage_seen: bool,
    events: usize,
    stopped: bool,
}

impl TurnAccumulator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether `message_stop` has arrived (nothing more is expected).
    pub(crate) fn is_complete(&self) -> bool {
        self.stopped
    }

    /// Applies one event. An `error` event, or a block that outgrows its bound, ends
    /// the turn with the returned failure.
    pub(crate) fn push(
        &mut self,
        event: StreamEvent,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<(), StreamFailure> {
        self.events += 1;
        match event {
            StreamEvent::MessageStart { message } => {
                self.id = message.id;
                self.model = message.model;
                if let Some(u) = message.usage {
                    self.usage_seen |= reports_usage(&u);
                    apply_usage(&mut self.usage, &u);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = start_block(index, &content_block)?;
                if let Block::ToolUse { id, .. } = &block {
                    if let Some(of) = self.continued(id) {
                        debug(|| format!("tool_use block {index} continues the call {id}"));
                        self.blocks.push((index, Block::Continuation { of }));
                        return Ok(());
                    }
                    if self.has_call(id) {
                        return Err(StreamFailure::Inconsistent {
                            detail: format!(
                                "the response used the tool_use id {} for two calls",
                                ellipsis(id, MAX_QUOTED_EVENT_CHARS)
                            ),
                        });
                    }
                }
                self.announce_waiting(on_notice);
                if let Block::Text { text } = &block
                    && !text.is_empty()
                {
                    on_notice(StreamNotice::TextDelta(text));
                }
                self.blocks.push((index, block));
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                self.apply_delta(index, delta, on_notice)?;
            }
            StreamEvent::ContentBlockStop { index } => self.stop_block(index, on_notice),
            StreamEvent::MessageDelta { delta, usage } => {
                self.announce_waiting(on_notice);
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(StopReason::parse(&reason));
                }
                if let Some(u) = usage {
                    self.usage_seen |= reports_usage(&u);
                    apply_usage(&mut self.usage, &u);
                }
            }
            StreamEvent::MessageStop => self.stopped = true,
            StreamEvent::Ping => {}
            StreamEvent::Error { error } => {
                return Err(StreamFailure::Api {
                    error_type: error.kind,
                    message: error.message,
                });
            }
            StreamEvent::Unknown => debug(|| "skipped an unknown stream event".to_string()),
        }
        Ok(())
    }

    /// The block with this stream index (a continuation's: the block it continues).
    fn block_mut(&mut self, index: usize) -> Option<&mut Block> {
        let position = self.blocks.iter().rposition(|(i, _)| *i == index)?;
        let position = match self.blocks[position].1 {
            Block::Continuation { of } => of,
            _ => position,
        };
        Some(&mut self.blocks[position].1)
    }

    /// Where the call `id` is, if a new block with this id continues it: the latest
    /// block is that call (or continues it), closed and still waiting for input.
    fn continued(&self, id: &str) -> Option<usize> {
        let last = self.blocks.len().checked_sub(1)?;
        let position = match self.blocks[last].1 {
            Block::Continuation { of } => of,
            _ => last,
        };
        match &self.blocks[position].1 {
            Block::ToolUse {
                id: other,
                closed: true,
                done: None,
                ..
            } if other == id => Some(position),
            _ => None,
        }
    }

    fn has_call(&self, id: &str) -> bool {
        self.blocks
            .iter()
            .any(|(_, b)| matches!(b, Block::ToolUse { id: other, .. } if other == id))
    }

    /// Announces the closed calls that waited for a continuation, in order: a new block
    /// (or the end of the message) means none will come.
    fn announce_waiting(&mut self, on_notice: &mut dyn FnMut(StreamNotice<'_>)) {
        for (_, block) in &mut self.blocks {
            if let Block::ToolUse {
                id,
                name,
                buf,
                start_input,
                done: done @ None,
                input_bytes,
                closed: true,
            } = block
            {
                let call = PendingCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: closed_input(buf, start_input, *input_bytes),
                };
                on_notice(StreamNotice::ToolReady(done.insert(call)));
            }
        }
    }

    fn apply_delta(
        &mut self,
        index: usize,
        delta: Delta,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<(), StreamFailure> {
        let Some(block) = self.block_mut(index) else {
            debug(|| format!("skipped a delta for block {index}, which never started"));
            return Ok(());
        };
        let (buf, piece) = match (block, &delta) {
            (Block::Text { text }, Delta::TextDelta { text: piece }) => (text, piece),
            (Block::Thinking { thinking, .. }, Delta::ThinkingDelta { thinking: piece }) => {
                (thinking, piece)
            }
            (Block::Thinking { signature, .. }, Delta::SignatureDelta { signature: piece }) => {
                (signature, piece)
            }
            (
                Block::ToolUse {
                    buf, input_bytes, ..
                },
                Delta::InputJsonDelta { partial_json },
            ) => {
                *input_bytes = input_bytes.saturating_add(partial_json.len());
                if *input_bytes > MAX_TOOL_INPUT_BYTES {
                    *buf = String::new(); // frees the memory; the call is refused at stop
                    return Ok(());
                }
                (buf, partial_json)
            }
            (Block::Ignored, _) => return Ok(()),
            (block, delta) => {
                debug(|| format!("skipped delta {delta:?} for block {index} ({block:?})"));
                return Ok(());
            }
        };
        if buf.len() + piece.len() > MAX_BLOCK_BYTES {
            return Err(StreamFailure::Malformed {
                detail: format!("content block {index} grew past {MAX_BLOCK_BYTES} bytes"),
            });
        }
        buf.push_str(piece);
        if let Delta::TextDelta { text } = &delta {
            on_notice(StreamNotice::TextDelta(text));
        }
        Ok(())
    }

    fn stop_block(&mut self, index: usize, on_notice: &mut dyn FnMut(StreamNotice<'_>)) {
        match self.block_mut(index) {
            Some(Block::Thinking { closed, .. }) => *closed = true,
            Some(Block::ToolUse {
                id,
                name,
                buf,
                start_input,
                done,
                input_bytes,
                closed,
            }) => {
                *closed = true;
                if done.is_some() {
                    return;
                }
                // A call is ready at once when its input is a whole JSON object or too
                // large to keep; otherwise it waits, as the next block may continue it.
                let input = closed_input(buf, start_input, *input_bytes);
                let whole = !buf.trim().is_empty() && input.is_ok();
                if whole || *input_bytes > MAX_TOOL_INPUT_BYTES {
                    let call = PendingCall {
                        id: id.clone(),
                        name: name.clone(),
                        input,
                    };
                    on_notice(StreamNotice::ToolReady(done.insert(call)));
                }
            }
            Some(_) => {}
            None => debug(|| format!("skipped a stop for block {index}, which never started")),
        }
    }

    /// The finished turn. Fails when `message_stop` (or the stop reason) never came.
    /// Tool calls whose block never closed become calls with an error input, so the
    /// loop answers them with an error result.
    pub(crate) fn finish(
        self,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, StreamFailure> {
        if !self.stopped {
            return Err(StreamFailure::Incomplete {
                detail: format!(
                    "the stream ended before message_stop (after {} events)",
                    self.events
                ),
            });
        }
        let Some(stop_reason) = self.stop_reason else {
            return Err(StreamFailure::Incomplete {
                detail: "the stream reached message_stop without a stop_reason".to_string(),
            });
        };
        let mut content = Vec::new();
        let mut calls = Vec::new();
        for (index, block) in self.blocks {
            match block {
                // The API rejects empty text blocks in history (a refusal starts one).
                Block::Text { text } if text.is_empty() => {}
                Block::Text { text } => content.push(ContentBlock::Text { text }),
                Block::Thinking {
                    thinking,
                    signature,
                    closed: true,
                } => content.push(ContentBlock::Thinking {
                    thinking,
                    signature,
                }),
                Block::Thinking { closed: false, .. } => {
                    // Without its signature the API would reject it in history.
                    debug(|| format!("dropped thinking block {index}: it never closed"));
                }
                Block::RedactedThinking { data } => {
                    content.push(ContentBlock::RedactedThinking { data })
                }
                Block::ToolUse {
                    id,
                    name,
                    done,
                    closed,
                    buf,
                    start_input,
                    input_bytes,
                } => {
                    let call = match done {
                        Some(call) => call,
                        None if closed => {
                            let call = PendingCall {
                                id,
                                name,
                                input: closed_input(&buf, &start_input, input_bytes),
                            };
                            on_notice(StreamNotice::ToolReady(&call));
                            call
                        }
                        None => {
                            let why = if stop_reason == StopReason::MaxTokens {
                                CUT_OFF_BY_MAX_TOKENS
                            } else {
                                CUT_OFF_UNCLOSED
                            };
                            let call = PendingCall {
                                id,
                                name,
                                input: Err(why.to_string()),
                            };
                            on_notice(StreamNotice::ToolReady(&call));
                            call
                        }
                    };
                    content.push(tool_use_block(&call));
                    calls.push(call);
                }
                Block::Continuation { .. } | Block::Ignored => {}
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

/// The input of a closed tool_use block: parsed, or the error result of one too large.
fn closed_input(buf: &str, start_input: &Value, input_bytes: usize) -> Result<Value, String> {
    if input_bytes > MAX_TOOL_INPUT_BYTES {
        return Err(format!(
            "the tool input was {input_bytes} bytes, more than the limit of \
             {MAX_TOOL_INPUT_BYTES} bytes; the call was not run. Split the work \
             into smaller calls (for example write a large file in parts)."
        ));
    }
    parse_tool_input(buf, start_input)
}

/// Whether `u` reports any count at all.
fn reports_usage(u: &DeltaUsage) -> bool {
    u.input_tokens.is_some()
        || u.output_tokens.is_some()
        || u.cache_creation_input_tokens.is_some()
        || u.cache_read_input_tokens.is_some()
        || u.reasoning_output_tokens.is_some()
}

/// Usage counts in `u` overwrite ours (message_delta counts are cumulative), except a
/// zero: some gateways (LiteLLM's `/v1/messages`) send 0 input tokens in message_start
/// and the real counts in message_delta, or the other way round; the latest non-zero
/// figure wins.
fn apply_usage(usage: &mut Usage, u: &DeltaUsage) {
    let fields = [
        (&mut usage.input_tokens, u.input_tokens),
        (&mut usage.output_tokens, u.output_tokens),
        (
            &mut usage.cache_creation_input_tokens,
            u.cache_creation_input_tokens,
        ),
        (
            &mut usage.cache_read_input_tokens,
            u.cache_read_input_tokens,
        ),
        (
            &mut usage.reasoning_output_tokens,
            u.reasoning_output_tokens,
        ),
    ];
    for (ours, theirs) in fields {
        if let Some(v) = theirs.filter(|v| *v > 0) {
            *ours = v;
        }
    }
}

fn str_field(block: &Value, key: &str) -> Option<String> {
    block.get(key).and_then(Value::as_str).map(str::to_string)
}

fn start_block(index: usize, block: &Value) -> Result<Block, StreamFailure> {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    Ok(match kind {
        "text" => Block::Text {
            text: str_field(block, "text").unwrap_or_default(),
        },
        "thinking" => Block::Thinking {
            thinking: str_field(block, "thinking").unwrap_or_default(),
            signature: str_field(block, "signature").unwrap_or_default(),
            closed: false,
        },
        "redacted_thinking" => Block::RedactedThinking {
            data: str_field(block, "data").unwrap_or_default(),
        },
        "tool_use" => {
            let (Some(id), Some(name)) = (str_field(block, "id"), str_field(block, "name")) else {
                return Err(StreamFailure::Malformed {
                    detail: format!(
                        "tool_use block {index} has no id or name: {}",
                        ellipsis(&block.to_string(), MAX_QUOTED_EVENT_CHARS)
                    ),
                });
            };
            let start_input = block.get("input").cloned().unwrap_or(Value::Null);
            Block::ToolUse {
                id,
                name,
                buf: String::new(),
                start_input,
                done: None,
                input_bytes: 0,
                closed: false,
            }
        }
        other => {
            debug(|| format!("skipped content block {index} of type {other:?}"));
            Block::Ignored
        }
    })
}

/// The event a dispatched SSE event carries, `None` for one we skip. Events are named by
/// their data's `type`; the SSE `event:` name stands in when `type` is absent.
fn decode_event(sse: &SseEvent) -> Result<Option<StreamEvent>, StreamFailure> {
    let err = match serde_json::from_str::<StreamEvent>(&sse.data) {
        Ok(StreamEvent::Unknown) => {
            debug(|| format!("skipped stream event {:?}", ellipsis(&sse.data, 80)));
            return Ok(None);
        }
        Ok(event) => return Ok(Some(event)),
        Err(e) => e,
    };
    let value = serde_json::from_str::<Value>(&sse.data).ok();
    let named = value
        .as_ref()
        .and_then(|v| v.get("type"))
        .and_then(Value::as_str);
    let kind = named.unwrap_or(&sse.event).to_string();
    if !KNOWN_EVENTS.contains(&kind.as_str()) {
        debug(|| format!("skipped undecodable stream event {kind:?}"));
        return Ok(None);
    }
    if named.is_none()
        && let Some(Value::Object(mut map)) = value
    {
        map.insert("type".to_string(), Value::String(kind.clone()));
        if let Ok(event) = serde_json::from_value::<StreamEvent>(Value::Object(map)) {
            return Ok(Some(event));
        }
    }
    if kind == "error" {
        // Still an error from the server, whatever its shape.
        return Err(StreamFailure::Api {
            error_type: "unknown_error".to_string(),
            message: ellipsis(&sse.data, MAX_QUOTED_EVENT_CHARS),
        });
    }
    Err(StreamFailure::Malformed {
        detail: format!(
            "could not decode a {kind} event ({err}): {}",
            ellipsis(&sse.data, MAX_QUOTED_EVENT_CHARS)
        ),
    })
}

/// Reads one streamed turn from an SSE body: decoder, event parsing and accumulator.
/// Returns at `message_stop` without waiting for the end of the body. No HTTP here, so
/// cassette replay uses it too.
pub(crate) fn read_turn<R: BufRead>(
    reader: R,
    on_notice: &mut dyn FnMut(StreamNotice<'_>),
) -> Result<Turn, StreamFailure> {
    let mut sse = SseReader::new(reader);
    let mut acc = TurnAccumulator::new();
    // Whether anything but a keep-alive ping came: a failure before that is `Silent`.
    let mut heard = false;
    while !acc.is_complete() {
        match sse.next_event() {
            Ok(Some(event)) => {
                if let Some(event) = decode_event(&event)? {
                    heard |= event != StreamEvent::Ping;
                    acc.push(event, on_notice)?;
                }
            }
            Ok(None) => break,
            Err(e) if !heard => return Err(StreamFailure::Io(BeforeFirstEvent::wrap(e))),
            Err(e) => return Err(StreamFailure::Io(e)),
        }
    }
    acc.finish(on_notice)
}

/// A turn as a canonical Anthropic event stream: one delta per block (cassettes re-encode
/// a redacted turn of every wire but Responses so; `read_turn` reads it back).
pub(crate) fn encode(turn: &Turn) -> String {
    use serde_json::json;
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let u = &turn.usage;
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": turn.id, "type": "message",
               "role": "assistant", "model": turn.model, "content": [],
               // An unknown usage stays unknown on replay: no counts at all.
               "usage": (!u.unknown).then(|| json!({"input_tokens": u.input_tokens,
                         "output_tokens": 0,
                         "cache_creation_input_tokens": u.cache_creation_input_tokens,
                         "cache_read_input_tokens": u.cache_read_input_tokens}))}}),
    );
    for (index, block) in turn.message.content.iter().enumerate() {
        let (start, deltas) = match block {
            ContentBlock::Text { text } => (
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": text})],
            ),
            ContentBlock::ToolUse { id, name, input } => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                vec![json!({"type": "input_json_delta", "partial_json": input.to_string()})],
            ),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": thinking}),
                    json!({"type": "signature_delta", "signature": signature}),
                ],
            ),
            ContentBlock::RedactedThinking { data } => {
                (json!({"type": "redacted_thinking", "data": data}), vec![])
            }
            ContentBlock::ToolResult { .. } => continue, // never in an assistant turn
            ContentBlock::Reasoning { .. } => continue,  // Responses turns are encoded as such
            ContentBlock::Image { .. } | ContentBlock::Document { .. } => continue, // never sent by a model
        };
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        for delta in deltas {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": turn.stop_reason.as_str()},
        // `reasoning_output_tokens` is not Anthropic's: an OpenAI turn's count,
        // kept so that its replay reports it.
        "usage": (!u.unknown).then(|| if u.reasoning_output_tokens > 0 {
            json!({"output_tokens": u.output_tokens,
                   "reasoning_output_tokens": u.reasoning_output_tokens})
        } else {
            json!({"output_tokens": u.output_tokens})
        })}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
