//! Wire types of the Anthropic Messages API, with no logic: the conversation history
//! (which is also the transcript's `messages`) and the streamed events.
//!
//! Unknown block and event types must never be fatal: they deserialise into `Unknown`
//! variants and are skipped by the accumulator.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    User,
    Assistant,
}

/// One message of the conversation, in Anthropic wire format. Serialising one is
/// counted (`message_serialisations`): the history serialises each message once
/// (`history.rs`), and a test holds every other path to that.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

/// Messages serialised by this process so far.
static MESSAGE_SERIALISATIONS: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
thread_local! {
    /// The same count for this thread only: unit tests run in parallel.
    static SERIALISED_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times a `Message` was serialised by this process.
pub(crate) fn message_serialisations() -> u64 {
    MESSAGE_SERIALISATIONS.load(Ordering::Relaxed)
}

/// The same, counted on this thread only (unit tests).
#[cfg(test)]
pub(crate) fn message_serialisations_here() -> u64 {
    SERIALISED_HERE.with(|c| c.get())
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            role: Role,
            content: &'a [ContentBlock],
        }
        MESSAGE_SERIALISATIONS.fetch_add(1, Ordering::Relaxed);
        #[cfg(test)]
        SERIALISED_HERE.with(|c| c.set(c.get() + 1));
        Wire {
            role: self.role,
            content: &self.content,
        }
        .serialize(serializer)
    }
}

impl Message {
    pub(crate) fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A content block as sent to and received from the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: ToolContent,
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// A reasoning item of OpenAI's Responses API: `item` is its JSON exactly as the
    /// stream delivered it (sent back byte for byte, `encrypted_content` included, so the
    /// reasoning survives with `store: false`), `summary` its summary text for readers.
    /// Only the Responses wire sends it; the other wires leave it out.
    Reasoning {
        #[serde(default)]
        summary: String,
        item: String,
    },
    /// A picture (PNG, JPEG, GIF, WebP) the user attached or a tool returned.
    Image {
        source: MediaSource,
    },
    /// A PDF the user attached or ReadFile returned. `title`: its file's name (the
    /// Messages API shows it to the model; OpenAI's file parts need a `filename`).
    Document {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

/// A tool result's content: its text and the images or documents it returned. On the
/// wire a result without media is a plain string (as before images existed); one with
/// media is the Messages API's array of blocks, the text first.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolContent {
    pub text: String,
    /// Only `Image` and `Document` blocks.
    pub media: Vec<ContentBlock>,
}

impl ToolContent {
    /// A text-only result.
    pub(crate) fn text(text: impl Into<String>) -> Self {
        ToolContent {
            text: text.into(),
            media: Vec::new(),
        }
    }

    /// Bytes of text and media (base64) the result holds: what context clearing weighs.
    pub(crate) fn len(&self) -> usize {
        self.text.len() + self.media.iter().map(media_len).sum::<usize>()
    }
}

fn media_len(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Image { source } | ContentBlock::Document { source, .. } => match source {
            MediaSource::Base64 { data, .. } => data.len(),
            MediaSource::Reference(r) => r.bytes as usize,
        },
        _ => 0,
    }
}

/// A text-only content equals its text.
impl PartialEq<str> for ToolContent {
    fn eq(&self, other: &str) -> bool {
        self.media.is_empty() && self.text == other
    }
}

impl PartialEq<&str> for ToolContent {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl From<String> for ToolContent {
    fn from(text: String) -> Self {
        ToolContent::text(text)
    }
}

impl From<&str> for ToolContent {
    fn from(text: &str) -> Self {
        ToolContent::text(text)
    }
}

impl Serialize for ToolContent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if self.media.is_empty() {
            return serializer.serialize_str(&self.text);
        }
        let text = (!self.text.is_empty()).then(|| ContentBlock::Text {
            text: self.text.clone(),
        });
        let mut seq = serializer.serialize_seq(Some(self.media.len() + 1))?;
        for block in text.iter().chain(&self.media) {
            seq.serialize_element(block)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for ToolContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Blocks(Vec<ContentBlock>),
        }
        Ok(match Form::deserialize(deserializer)? {
            Form::Text(text) => ToolContent::text(text),
            Form::Blocks(blocks) => {
                let mut content = ToolContent::default();
                for block in blocks {
                    match block {
                        ContentBlock::Text { text } => {
                            if !content.text.is_empty() {
                                content.text.push('\n');
                            }
                            content.text.push_str(&text);
                        }
                        other @ (ContentBlock::Image { .. } | ContentBlock::Document { .. }) => {
                            content.media.push(other)
                        }
                        _ => {}
                    }
                }
                content
            }
        })
    }
}

/// Where an image's or a document's bytes are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MediaSource {
    /// The bytes themselves, as every API takes them. `origin`, never serialised, is the
    /// file they came from: the transcript writes the reference instead of the bytes.
    Base64 {
        media_type: String,
        data: String,
        #[serde(skip)]
        origin: Option<MediaRef>,
    },
    /// The transcript's form of a file's image: `--resume` reads the file again and
    /// checks its hash. Never sent to an API.
    Reference(MediaRef),
}

/// An image or a PDF the transcript names instead of holding: the file as it was read
/// (`path`, `sha256`, `bytes`, `media_type`, `width` × `height` pixels, 0 for a PDF) and,
/// when it was downscaled to fit the APIs' limits, what was sent instead (`sent`).
/// Public and flat so that other formats (trajectories) can map it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MediaRef {
    /// Absolute, or as given on the command line.
    pub path: String,
    /// Of the file's bytes, lower-case hex.
    pub sha256: String,
    pub media_type: String,
    pub bytes: u64,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<SentMedia>,
}

/// What was sent when it differs from the file (downscaled, re-encoded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SentMedia {
    pub media_type: String,
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
}

/// Token usage. Every field is optional on the wire; absent means "not reported".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    /// Of `output_tokens`, those spent reasoning (OpenAI reports them; written only when
    /// not 0, as `reasoning_output_tokens`).
    pub reasoning_output_tokens: u64,
    /// A turn came with no usage at all (llama-cpp-python sends none): the counts are
    /// not known, so they are written as `null` and no cost is computed from them.
    pub unknown: bool,
}

impl Serialize for Usage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let count = |n: u64| (!self.unknown).then_some(n);
        let mut s = serializer.serialize_struct("Usage", 4)?;
        s.serialize_field("input_tokens", &count(self.input_tokens))?;
        s.serialize_field("output_tokens", &count(self.output_tokens))?;
        s.serialize_field(
            "cache_creation_input_tokens",
            &count(self.cache_creation_input_tokens),
        )?;
        s.serialize_field(
            "cache_read_input_tokens",
            &count(self.cache_read_input_tokens),
        )?;
        if self.reasoning_output_tokens > 0 && !self.unknown {
            s.serialize_field("reasoning_output_tokens", &self.reasoning_output_tokens)?;
        }
        s.end()
    }
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Counts {
            #[serde(default)]
            input_tokens: Option<u64>,
            #[serde(default)]
            output_tokens: Option<u64>,
            #[serde(default)]
            cache_creation_input_tokens: Option<u64>,
            #[serde(default)]
            cache_read_input_tokens: Option<u64>,
            #[serde(default)]
            reasoning_output_tokens: Option<u64>,
        }
        let c = Counts::deserialize(deserializer)?;
        let counts = [
            c.input_tokens,
            c.output_tokens,
            c.cache_creation_input_tokens,
            c.cache_read_input_tokens,
        ];
        Ok(Usage {
            input_tokens: c.input_tokens.unwrap_or(0),
            output_tokens: c.output_tokens.unwrap_or(0),
            cache_creation_input_tokens: c.cache_creation_input_tokens.unwrap_or(0),
            cache_read_input_tokens: c.cache_read_input_tokens.unwrap_or(0),
            reasoning_output_tokens: c.reasoning_output_tokens.unwrap_or(0),
            unknown: counts.iter().any(Option::is_none),
        })
    }
}

/// The transcript's `usage` as its JSON Schema describes it: each count null when the
/// server reported none (`unknown`), `reasoning_output_tokens` only when not 0.
impl schemars::JsonSchema for Usage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Usage".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let count = schemars::json_schema!({"type": ["integer", "null"], "minimum": 0});
        schemars::json_schema!({
            "description": "Token counts; each is null when the server reported no usage.",
            "type": "object",
            "properties": {
                "input_tokens": count,
                "output_tokens": count,
                "cache_creation_input_tokens": count,
                "cache_read_input_tokens": count,
                "reasoning_output_tokens": {"type": "integer", "minimum": 0}
            }
        })
    }
}

impl Usage {
    /// Every input token, cached or not: what the logs and the summary line show.
    pub(crate) fn input_total(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }

    /// "N in / M out tokens" for logs and the summary line; unknown counts are not 0.
    pub(crate) fn tokens_line(&self) -> String {
        if self.unknown {
            "tokens not reported".to_string()
        } else {
            format!(
                "{} in / {} out tokens",
                self.input_total(),
                self.output_tokens
            )
        }
    }

    pub(crate) fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.reasoning_output_tokens += other.reasoning_output_tokens;
        self.unknown |= other.unknown;
    }
}

/// Why the model stopped. Unknown values are kept verbatim (forward compatible).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    PauseTurn,
    Refusal,
    Other(String),
}

impl StopReason {
    pub(crate) fn parse(s: &str) -> Self {
        match s {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            other => StopReason::Other(other.to_string()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::Other(s) => s,
        }
    }
}

/// One decoded `data:` payload of the Anthropic stream.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        /// Kept as a raw value: new block types must not break decoding.
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<DeltaUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ApiErrorBody,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct MessageStart {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub usage: Option<DeltaUsage>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the wire's own names: text_delta, input_json_delta …
pub(crate) enum Delta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// Usage as streamed: every count nullable. `message_delta` counts are cumulative, so the
/// accumulator overwrites (rather than adds) the ones that are present.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct DeltaUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    /// Not Anthropic's: a cassette's re-encoded turn of an OpenAI model carries its
    /// reasoning tokens here (`anthropic::decode::encode`).
    #[serde(default)]
    pub reasoning_output_tokens: Option<u64>,
}

/// The `error` object of an HTTP error body or an `error` stream event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ApiErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
