//! The conversation as the run holds it. Each message is serialised once, when it enters
//! the history (`Entry`), and every request, checkpoint and transcript is assembled from
//! those bytes, so a turn's cost does not grow with the turns before it. An `Entry` is
//! shared (`Arc`) between the record (the transcript keeps the originals) and the
//! request history (`History`), which carries cleared copies of old tool results once
//! the context window fills (see `context.rs`). Thinking blocks are serialised from the
//! strings the stream delivered and copied as bytes from then on, so the API gets them
//! back exactly as it sent them (it rejects altered ones).

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::model::protocol::{ContentBlock, MediaSource, Message, Role};

#[path = "json_walk.rs"]
mod json_walk;
use crate::run::context::{
    ClearPlan, KEEP_RECENT_TURNS, MIN_CLEARABLE_BYTES, PLACEHOLDER, ResultSlot,
};

/// Messages serialised so far by this process (every path: `Message`'s `Serialize`
/// counts itself), for `-v`'s last line and the tests that each is serialised once.
pub(crate) fn serialisations() -> u64 {
    crate::model::protocol::message_serialisations()
}

/// The one place a history message is turned into JSON.
#[expect(clippy::expect_used, reason = "the fallback is a constant, valid JSON")]
fn encode(message: &Message) -> Box<RawValue> {
    // A Message is strings, numbers and JSON values: serialising it cannot fail.
    serde_json::value::to_raw_value(message).unwrap_or_else(|_| {
        RawValue::from_string("{\"role\":\"user\",\"content\":[]}".to_string())
            .expect("a valid constant")
    })
}

/// Block types that may carry a `cache_control` breakpoint.
const CACHEABLE_BLOCKS: &[&str] = &["text", "tool_result", "tool_use"];

/// What the newest message's last block gets: the prompt-cache breakpoint.
const BREAKPOINT: &str = ",\"cache_control\":{\"type\":\"ephemeral\"}";

/// One message of the conversation, held as its JSON only: the parsed `Message` is
/// made again on demand ([`Entry::message`]), which happens for the newest message once
/// a turn, for old results only when a clearing happens, and once per entry for the
/// OpenAI form. Holding both doubled the history's memory.
#[derive(Debug)]
pub(crate) struct Entry {
    role: Role,
    /// Compact JSON in the Anthropic wire form, which is also the transcript's form.
    json: Box<RawValue>,
    /// The whole message when the API form leaves part of it out (unsigned thinking,
    /// see [`api_form`]; rare): what [`Entry::message`] and the transcript read.
    record: Option<Box<RawValue>>,
    /// The transcript's form when it differs: redaction changed it (a tool printed a
    /// secret), or it names image files instead of holding their bytes.
    redacted: Option<Box<RawValue>>,
    /// Whether the message holds an image or a document (the loop may have to take
    /// them out for a model that refuses them).
    has_media: bool,
    /// Whether the last block may carry the prompt-cache breakpoint, decided once here
    /// so a request need not parse the message.
    last_block_cacheable: bool,
    /// (block, content bytes) of each tool result in a user message: what clearing
    /// looks at, without parsing.
    results: Box<[(usize, usize)]>,
    /// A provider's own wire form (the OpenAI chat messages), made once on first use.
    wire: OnceLock<Box<str>>,
}

/// Messages parsed back from an entry's JSON by this thread (unit tests: parsing on
/// demand must stay O(1) per turn, not grow with the history).
#[cfg(test)]
pub(crate) fn parses_here() -> u64 {
    PARSED_HERE.with(|c| c.get())
}

#[cfg(test)]
thread_local! {
    static PARSED_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Entry {
    pub(crate) fn new(message: Message) -> Arc<Entry> {
        let (json, record) = match api_form(&message) {
            Some(api) => (encode(&api), Some(encode(&message))),
            None => (encode(&message), None),
        };
        let full = record.as_deref().unwrap_or(&json).get();
        let referenced = by_reference(&message).map(|m| encode(&m));
        let shown = referenced.as_deref().map_or(full, RawValue::get);
        let redacted = crate::util::output::redact(shown);
        let redacted = if redacted != shown {
            RawValue::from_string(redacted).ok()
        } else {
            referenced
        };
        let has_media = message.content.iter().any(|b| {
            matches!(
                b,
                ContentBlock::Image { .. } | ContentBlock::Document { .. }
            ) || matches!(b, ContentBlock::ToolResult { content, .. } if !content.media.is_empty())
        });
        let last_block_cacheable = message
            .content
            .last()
            .is_some_and(|b| CACHEABLE_BLOCKS.contains(&block_type(b)));
        let results = match message.role {
            Role::User => message
                .content
                .iter()
                .enumerate()
                .filter_map(|(b, block)| match block {
                    // A loaded skill's instructions hold for the whole run: never cleared.
                    ContentBlock::ToolResult { content, .. }
                        if !crate::skills::is_skill_content(&content.text) =>
                    {
                        Some((b, content.len()))
                    }
                    _ => None,
                })
                .collect(),
            Role::Assistant => Box::default(),
        };
        Arc::new(Entry {
            role: message.role,
            json,
            record,
            redacted,
            has_media,
            last_block_cacheable,
            results,
            wire: OnceLock::new(),
        })
    }

    /// The message, parsed from the stored JSON (the whole form, unsigned thinking
    /// included). Our own serialisation of a `Message` parses back to an equal one
    /// (`float_roundtrip` keeps every float's digits).
    pub(crate) fn message(&self) -> Message {
        #[cfg(test)]
        PARSED_HERE.with(|c| c.set(c.get() + 1));
        let full = self.record.as_deref().unwrap_or(&self.json).get();
        // Only `encode` made these bytes, from a `Message`: parsing them cannot fail.
        serde_json::from_str(full).unwrap_or_else(|_| Message {
            role: Role::User,
            content: Vec::new(),
        })
    }

    /// Whether the message holds an image or a document.
    pub(crate) fn has_media(&self) -> bool {
        self.has_media
    }

    /// Who sent the message, without parsing it.
    pub(crate) fn role(&self) -> Role {
        self.role
    }

    /// The message as sent to the Anthropic API.
    pub(crate) fn json(&self) -> &str {
        self.json.get()
    }

    /// The message as the transcript shows it (secrets redacted).
    pub(crate) fn transcript_json(&self) -> &str {
        self.transcript_raw().get()
    }

    fn transcript_raw(&self) -> &RawValue {
        self.redacted
            .as_deref()
            .or(self.record.as_deref())
            .unwrap_or(&self.json)
    }

    /// A provider's own encoding of this message, computed on first use and kept.
    pub(crate) fn wire(&self, encode: impl FnOnce(&Message) -> String) -> &str {
        self.wire
            .get_or_init(|| encode(&self.message()).into_boxed_str())
    }
}

/// The message as the Messages API may get it, when that differs: without its unsigned
/// thinking blocks and Responses reasoning items. Those hold an OpenAI server's
/// reasoning (a transcript of one can be resumed with the Anthropic API), and the API
/// rejects a thinking block whose signature it cannot verify. `None`: the message goes
/// as it is.
fn api_form(message: &Message) -> Option<Message> {
    let unsigned = |b: &ContentBlock| {
        matches!(b, ContentBlock::Thinking { signature, .. } if signature.is_empty())
            || matches!(b, ContentBlock::Reasoning { .. })
    };
    message.content.iter().any(unsigned).then(|| Message {
        role: message.role,
        content: message
            .content
            .iter()
            .filter(|b| !unsigned(b))
            .cloned()
            .collect(),
    })
}

/// The message as the transcript keeps it when that differs: each image or PDF read from
/// a file named by a `MediaSource::Reference` instead of its bytes. `None`: as it is.
fn by_reference(message: &Message) -> Option<Message> {
    fn referenced(block: &ContentBlock) -> Option<ContentBlock> {
        let source = match block {
            ContentBlock::Image { source } | ContentBlock::Document { source, .. } => source,
            _ => return None,
        };
        let MediaSource::Base64 {
            origin: Some(r), ..
        } = source
        else {
            return None;
        };
        let source = MediaSource::Reference(r.clone());
        Some(match block {
            ContentBlock::Image { .. } => ContentBlock::Image { source },
            ContentBlock::Document { title, .. } => ContentBlock::Document {
                source,
                title: title.clone(),
            },
            _ => return None,
        })
    }
    let mut changed = false;
    let mut content = message.content.clone();
    for block in &mut content {
        match block {
            ContentBlock::ToolResult { content, .. } => {
                for m in &mut content.media {
                    if let Some(r) = referenced(m) {
                        *m = r;
                        changed = true;
                    }
                }
            }
            other => {
                if let Some(r) = referenced(other) {
                    *other = r;
                    changed = true;
                }
            }
        }
    }
    changed.then_some(Message {
        role: message.role,
        content,
    })
}

/// Serialised as its transcript JSON, verbatim.
impl Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.transcript_raw().serialize(serializer)
    }
}

/// Where a request's bytes go: its own (brackets, separators, the breakpoint) and the
/// history's stored JSON, which a request body may borrow rather than copy.
pub(crate) trait BodySink<'a> {
    fn own(&mut self, bytes: &[u8]);
    fn history(&mut self, bytes: &'a [u8]);
}

/// Everything copied in.
impl<'a> BodySink<'a> for Vec<u8> {
    fn own(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn history(&mut self, bytes: &'a [u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Appends `entries` as a JSON array of Anthropic messages, with the prompt-cache
/// breakpoint on the newest message's last block when `breakpoint` is set (and the
/// block can carry one). Nothing is serialised: the stored JSON goes to `out` as it is.
pub(crate) fn write_messages<'a>(
    entries: &'a [Arc<Entry>],
    breakpoint: bool,
    out: &mut impl BodySink<'a>,
) {
    out.own(b"[");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.own(b",");
        }
        let json = e.json();
        let last = i + 1 == entries.len();
        let cacheable = e.last_block_cacheable;
        // `{"role":…,"content":[…,{…}]}`: the last block's object closes right before
        // the closing `]}`.
        match json.strip_suffix("}]}") {
            Some(head) if last && breakpoint && cacheable => {
                out.history(head.as_bytes());
                out.own(BREAKPOINT.as_bytes());
                out.own(b"}]}");
            }
            _ => out.history(json.as_bytes()),
        }
    }
    out.own(b"]");
}

fn block_type(b: &ContentBlock) -> &'static str {
    match b {
        ContentBlock::Text { .. } => "text",
        ContentBlock::ToolUse { .. } => "tool_use",
        ContentBlock::ToolResult { .. } => "tool_result",
        ContentBlock::Thinking { .. } => "thinking",
        ContentBlock::RedactedThinking { .. } => "redacted_thinking",
        ContentBlock::Reasoning { .. } => "reasoning",
        ContentBlock::Image { .. } => "image",
        ContentBlock::Document { .. } => "document",
    }
}

/// What the next request carries: the record's entries, old tool results possibly
/// replaced by cleared copies. Clearing only ever grows, so once the cache has been
/// rebuilt after a clearing, later requests share its prefix again.
#[derive(Debug, Default)]
pub(crate) struct History {
    sent: Vec<Arc<Entry>>,
    /// (message, block) of every cleared result.
    cleared: BTreeSet<(usize, usize)>,
    bytes: usize,
}

impl History {
    pub(crate) fn new() -> Self {
        History::default()
    }

    pub(crate) fn push(&mut self, entry: Arc<Entry>) {
        self.bytes += entry.json().len() + 1;
        self.sent.push(entry);
    }

    /// Replaces each message `f` changes (the loop taking images out for a model that
    /// refuses them); returns how many changed.
    pub(crate) fn rewrite(&mut self, f: impl Fn(&Message) -> Option<Message>) -> usize {
        let mut changed = 0;
        for entry in &mut self.sent {
            if !entry.has_media() {
                continue;
            }
            if let Some(m) = f(&entry.message()) {
                let new = Entry::new(m);
                self.bytes = self.bytes - entry.json().len() + new.json().len();
                *entry = new;
                changed += 1;
            }
        }
        changed
    }

    /// Takes the newest message back out (an empty answer that must not be re-sent).
    pub(crate) fn pop(&mut self) -> Option<Arc<Entry>> {
        let e = self.sent.pop()?;
        self.bytes -= e.json().len() + 1;
        let n = self.sent.len();
        self.cleared.retain(|(m, _)| *m < n);
        Some(e)
    }

    pub(crate) fn entries(&self) -> &[Arc<Entry>] {
        &self.sent
    }

    /// The newest message, parsed (once a turn; see [`Entry::message`]).
    pub(crate) fn last(&self) -> Option<Message> {
        self.sent.last().map(|e| e.message())
    }

    /// Bytes of the messages array as sent.
    pub(crate) fn json_bytes(&self) -> usize {
        self.bytes + 1
    }

    /// Tool results that clearing may replace, oldest first: not yet cleared, big
    /// enough to be worth it, and not in the last `KEEP_RECENT_TURNS` messages of
    /// tool results.
    pub(crate) fn clearable(&self) -> Vec<ResultSlot> {
        let result_messages: Vec<usize> = self
            .sent
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.results.is_empty())
            .map(|(i, _)| i)
            .collect();
        let old = result_messages.len().saturating_sub(KEEP_RECENT_TURNS);
        let mut slots = Vec::new();
        for &m in &result_messages[..old] {
            for &(b, bytes) in &self.sent[m].results {
                if bytes >= MIN_CLEARABLE_BYTES && !self.cleared.contains(&(m, b)) {
                    slots.push(ResultSlot {
                        message: m,
                        block: b,
                        bytes,
                    });
                }
            }
        }
        slots
    }

    /// Replaces the planned results' content with the placeholder (each changed message
    /// is copied once more: its stored JSON with the results' values swapped, see
    /// [`Entry::cleared`]). Returns how many results were cleared.
    pub(crate) fn apply(&mut self, plan: &ClearPlan) -> usize {
        let mut cleared = 0;
        let mut i = 0;
        while i < plan.slots.len() {
            let m = plan.slots[i].message;
            let mut blocks = Vec::new();
            while i < plan.slots.len() && plan.slots[i].message == m {
                let b = plan.slots[i].block;
                let is_result = self.sent[m].results.iter().any(|&(rb, _)| rb == b);
                if is_result && self.cleared.insert((m, b)) {
                    blocks.push(b);
                    cleared += 1;
                }
                i += 1;
            }
            if blocks.is_empty() {
                continue;
            }
            let entry = self.sent[m].cleared(&blocks);
            self.bytes = self.bytes - self.sent[m].json().len() + entry.json().len();
            self.sent[m] = entry;
        }
        cleared
    }
}

/// `json` with the `content` value of each tool result in `blocks` (ascending block
/// indexes) replaced by `value` (JSON): the bytes around them copied as they are. None
/// when a block is not a tool result with a content, or the JSON not a message.
fn splice_results(json: &str, blocks: &[usize], value: &str) -> Option<String> {
    let contents = json_walk::result_contents(json)?;
    let mut out = String::with_capacity(json.len());
    let mut at = 0;
    for &b in blocks {
        let (start, end) = (*contents.get(b)?)?;
        if start < at {
            return None;
        }
        out.push_str(&json[at..start]);
        out.push_str(value);
        at = end;
    }
    out.push_str(&json[at..]);
    Some(out)
}

impl Entry {
    /// A copy with the content of the tool results in `blocks` (ascending) replaced by
    /// the placeholder, for the request history. Made from the stored JSON: only the
    /// replaced values change, so a clearing costs a copy of each message, not a parse
    /// and a serialisation of it (the same bytes either way; the tests compare them).
    fn cleared(&self, blocks: &[usize]) -> Arc<Entry> {
        let placeholder = serde_json::Value::from(PLACEHOLDER).to_string();
        // A message with images or PDFs is parsed: its media move with the results.
        let spliced = (self.record.is_none() && !self.has_media)
            .then(|| splice_results(self.json(), blocks, &placeholder))
            .flatten()
            .and_then(|json| RawValue::from_string(json).ok());
        let Some(json) = spliced else {
            return self.cleared_by_parsing(blocks);
        };
        let redacted = crate::util::output::redact(json.get());
        let redacted = (redacted != json.get())
            .then(|| RawValue::from_string(redacted).ok())
            .flatten();
        let results = self
            .results
            .iter()
            .map(|&(b, bytes)| {
                let now = if blocks.contains(&b) {
                    PLACEHOLDER.len()
                } else {
                    bytes
                };
                (b, now)
            })
            .collect();
        Arc::new(Entry {
            role: self.role,
            json,
            record: None,
            redacted,
            last_block_cacheable: self.last_block_cacheable,
            results,
            has_media: false,
            wire: OnceLock::new(),
        })
    }

    /// The same copy by parsing the message and serialising it again.
    fn cleared_by_parsing(&self, blocks: &[usize]) -> Arc<Entry> {
        let mut message = self.message();
        for &b in blocks {
            if let Some(ContentBlock::ToolResult { content, .. }) = message.content.get_mut(b) {
                *content = PLACEHOLDER.into();
            }
        }
        Entry::new(message)
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
