//! SSE frame builders that look like the real Anthropic stream:
//! `event: X\ndata: {json}\n\n`, JSON sometimes padded with
//! trailing spaces, text split over several `text_delta`s, tool input split into
//! `input_json_delta` fragments whose first one is `""`, cumulative usage in
//! `message_delta`. `Turn` builds one whole model response; the free functions build
//! single frames for the odd cases (errors, truncation, malformed JSON). `Turn` is also
//! the wire-neutral vocabulary: `chat.rs` renders the same turn as OpenAI chunks.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// Model id the mock claims in `message_start`.
pub(crate) const MOCK_MODEL: &str = "claude-mock-1";
/// Default usage of one turn, so that tests can check the run's sums.
pub(crate) const DEFAULT_INPUT_TOKENS: u64 = 100;
pub(crate) const DEFAULT_OUTPUT_TOKENS: u64 = 20;
/// Tool input is cut into fragments of about this many chars, like the real API.
const JSON_FRAGMENT_CHARS: usize = 7;
/// Text is streamed in this many `text_delta`s (at most).
const TEXT_DELTAS: usize = 3;

static NEXT_MESSAGE: AtomicU64 = AtomicU64::new(1);

/// One SSE frame. The JSON is padded with 0..4 trailing spaces depending on its length,
/// as the real API does (a decoder must not care).
pub(crate) fn frame(event: &str, data: &Value) -> String {
    let json = data.to_string();
    let pad = " ".repeat(json.len() % 5);
    format!("event: {event}\ndata: {json}{pad}\n\n")
}

/// A frame whose data is given verbatim (for malformed payloads).
pub(crate) fn raw_frame(event: &str, data: &str) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

pub(crate) fn ping() -> String {
    // The real API writes pings with a space after the colons.
    raw_frame("ping", r#"{"type": "ping"}"#)
}

pub(crate) fn message_start(input_tokens: u64, cache_creation: u64, cache_read: u64) -> String {
    let id = format!(
        "msg_mock_{:04}",
        NEXT_MESSAGE.fetch_add(1, Ordering::Relaxed)
    );
    frame(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": MOCK_MODEL,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens,
                      "cache_creation_input_tokens": cache_creation,
                      "cache_read_input_tokens": cache_read,
                      "output_tokens": 1, "service_tier": "standard"}}}),
    )
}

pub(crate) fn block_start(index: usize, block: Value) -> String {
    frame(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

pub(crate) fn block_delta(index: usize, delta: Value) -> String {
    frame(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

pub(crate) fn block_stop(index: usize) -> String {
    frame(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// `message_delta` with cumulative usage, as the live API sends it.
pub(crate) fn message_delta(stop_reason: &str, usage: &Usage) -> String {
    frame(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"input_tokens": usage.input,
                          "cache_creation_input_tokens": usage.cache_creation,
                          "cache_read_input_tokens": usage.cache_read,
                          "output_tokens": usage.output}}),
    )
}

pub(crate) fn message_stop() -> String {
    frame("message_stop", &json!({"type": "message_stop"}))
}

/// A mid-stream `error` event (the shape seen in the wild, with `details: null`).
pub(crate) fn error_event(kind: &str, message: &str) -> String {
    frame(
        "error",
        &json!({"type": "error", "error": {"details": null, "type": kind, "message": message}}),
    )
}

/// Splits `s` into about `n` pieces on char boundaries (never an empty piece unless `s`
/// is empty).
pub(crate) fn split_chars(s: &str, piece_chars: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars
        .chunks(piece_chars.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The frames of a text block: start, a few `text_delta`s, stop.
pub(crate) fn text_block(index: usize, text: &str) -> Vec<String> {
    let piece = text.chars().count().div_ceil(TEXT_DELTAS).max(1);
    let mut frames = vec![block_start(index, json!({"type": "text", "text": ""}))];
    for part in split_chars(text, piece) {
        frames.push(block_delta(
            index,
            json!({"type": "text_delta", "text": part}),
        ));
    }
    frames.push(block_stop(index));
    frames
}

/// The frames of a tool_use block whose input JSON text is `raw` (need not be valid
/// JSON): start, an empty fragment, fragments of `raw`, and stop unless `cut`.
pub(crate) fn tool_block(index: usize, id: &str, name: &str, raw: &str, cut: bool) -> Vec<String> {
    let mut frames = vec![block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {},
               "caller": {"type": "direct"}}),
    )];
    let mut fragments = vec![String::new()];
    if !raw.is_empty() {
        fragments.extend(split_chars(raw, JSON_FRAGMENT_CHARS));
    }
    for f in fragments {
        frames.push(block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": f}),
        ));
    }
    if !cut {
        frames.push(block_stop(index));
    }
    frames
}

pub(crate) fn thinking_block(index: usize, thinking: &str, signature: &str) -> Vec<String> {
    let mut frames = vec![block_start(
        index,
        json!({"type": "thinking", "thinking": "", "signature": ""}),
    )];
    for part in split_chars(thinking, 11) {
        frames.push(block_delta(
            index,
            json!({"type": "thinking_delta", "thinking": part}),
        ));
    }
    frames.push(block_delta(
        index,
        json!({"type": "signature_delta", "signature": signature}),
    ));
    frames.push(block_stop(index));
    frames
}

/// Token counts of one turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input: DEFAULT_INPUT_TOKENS,
            output: DEFAULT_OUTPUT_TOKENS,
            cache_creation: 0,
            cache_read: 0,
        }
    }
}

/// One content block of a `Turn` (the wire renderers read them).
#[derive(Clone, Debug)]
pub(super) enum Block {
    Text(String),
    Thinking(String, String),
    Tool {
        id: String,
        name: String,
        raw: String,
    },
    CutTool {
        id: String,
        name: String,
        partial: String,
    },
}

/// One model response, built block by block:
/// `Turn::new().text("Reading").tool("toolu_1", "ReadFile", json!({"path": "a"})).frames()`.
/// The stop reason defaults to `tool_use` when there is a tool block, `max_tokens` after
/// a cut tool, else `end_turn`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Turn {
    pub(super) blocks: Vec<Block>,
    pub(super) stop_reason: Option<String>,
    pub(super) usage: Usage,
    /// The model the stream says answered (default: `MOCK_MODEL`, `chat::CHAT_MODEL`).
    pub(super) model: Option<String>,
}

impl Turn {
    pub(crate) fn new() -> Self {
        Turn::default()
    }

    pub(crate) fn text(mut self, text: &str) -> Self {
        self.blocks.push(Block::Text(text.to_string()));
        self
    }

    pub(crate) fn thinking(mut self, thinking: &str, signature: &str) -> Self {
        self.blocks
            .push(Block::Thinking(thinking.to_string(), signature.to_string()));
        self
    }

    pub(crate) fn tool(self, id: &str, name: &str, input: Value) -> Self {
        self.tool_raw(id, name, &input.to_string())
    }

    /// A tool block whose input text is streamed verbatim (malformed JSON allowed).
    pub(crate) fn tool_raw(mut self, id: &str, name: &str, raw: &str) -> Self {
        self.blocks.push(Block::Tool {
            id: id.to_string(),
            name: name.to_string(),
            raw: raw.to_string(),
        });
        self
    }

    /// A tool block cut off by `max_tokens`: no `content_block_stop`; must be last.
    pub(crate) fn cut_tool(mut self, id: &str, name: &str, partial: &str) -> Self {
        self.blocks.push(Block::CutTool {
            id: id.to_string(),
            name: name.to_string(),
            partial: partial.to_string(),
        });
        self
    }

    /// The model this response claims to come from (`message_start.message.model`, each
    /// chunk's `model`).
    pub(crate) fn model(mut self, id: &str) -> Self {
        self.model = Some(id.to_string());
        self
    }

    /// `frames` with the default model id `default` replaced by this turn's model.
    pub(super) fn rename_model(&self, frames: Vec<String>, default: &str) -> Vec<String> {
        let Some(model) = &self.model else {
            return frames;
        };
        let from = format!("\"model\":{}", json!(default));
        let to = format!("\"model\":{}", json!(model));
        frames.into_iter().map(|f| f.replace(&from, &to)).collect()
    }

    pub(crate) fn stop_reason(mut self, reason: &str) -> Self {
        self.stop_reason = Some(reason.to_string());
        self
    }

    pub(crate) fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage.input = input;
        self.usage.output = output;
        self
    }

    pub(crate) fn cache(mut self, creation: u64, read: u64) -> Self {
        self.usage.cache_creation = creation;
        self.usage.cache_read = read;
        self
    }

    pub(crate) fn get_usage(&self) -> Usage {
        self.usage
    }

    /// The stop reason in Anthropic's vocabulary: the one set, else the default.
    pub(crate) fn get_stop_reason(&self) -> String {
        self.stop_reason
            .clone()
            .unwrap_or_else(|| self.default_stop_reason().to_string())
    }

    fn default_stop_reason(&self) -> &'static str {
        if self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::CutTool { .. }))
        {
            "max_tokens"
        } else if self.blocks.iter().any(|b| matches!(b, Block::Tool { .. })) {
            "tool_use"
        } else {
            "end_turn"
        }
    }

    /// Every frame up to (not including) `message_delta`.
    pub(crate) fn body_frames(&self) -> Vec<String> {
        let mut frames = vec![message_start(
            self.usage.input,
            self.usage.cache_creation,
            self.usage.cache_read,
        )];
        for (i, block) in self.blocks.iter().enumerate() {
            frames.extend(match block {
                Block::Text(t) => text_block(i, t),
                Block::Thinking(t, s) => thinking_block(i, t, s),
                Block::Tool { id, name, raw } => tool_block(i, id, name, raw, false),
                Block::CutTool { id, name, partial } => tool_block(i, id, name, partial, true),
            });
        }
        self.rename_model(frames, MOCK_MODEL)
    }

    /// The whole response, `message_start` to `message_stop`.
    pub(crate) fn frames(&self) -> Vec<String> {
        let mut frames = self.body_frames();
        frames.push(message_delta(&self.get_stop_reason(), &self.usage));
        frames.push(message_stop());
        frames
    }
}

/// A final answer: one text block, `end_turn`.
pub(crate) fn turn_text(text: &str) -> Vec<String> {
    Turn::new().text(text).frames()
}

/// A turn asking for the given tool calls (in order), `stop_reason: tool_use`.
pub(crate) fn turn_tools(calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut turn = Turn::new();
    for (id, name, input) in calls {
        turn = turn.tool(id, name, input.clone());
    }
    turn.frames()
}

/// Some text, then a tool call cut off mid-input by `max_tokens`.
pub(crate) fn turn_max_tokens_cut_tool(
    text: &str,
    id: &str,
    name: &str,
    partial: &str,
) -> Vec<String> {
    Turn::new().text(text).cut_tool(id, name, partial).frames()
}

/// A tool call whose streamed input is the given raw (possibly malformed) text.
pub(crate) fn turn_raw_tool(id: &str, name: &str, raw: &str) -> Vec<String> {
    Turn::new().tool_raw(id, name, raw).frames()
}
