//! Cassettes (SPEC §3.3): record a live run's streamed responses as JSON lines, and
//! replay them through the same SSE decoder, accumulator and loop, so tools really run
//! with no key and no network.
//!
//! Format: the first line is a header `{"type":"header","format":1,"provider",
//! "model","agent_version","workspace","tools","session_id"}`; then one line per model turn,
//! `{"type":"turn","index":N,"request":{"messages":M,"tools":[..],"model":ID},"sse":"<raw SSE>"}`
//! (`model`: the model the request went to, the `--fallback-model` after a switch),
//! appended and flushed as each turn finishes, so a killed run leaves a usable prefix.
//! No headers and no key are ever written.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Provider, ProviderError, ProviderErrorKind, StreamFailure, TurnRequest};
use crate::config::cli::ProviderKind;
use crate::model::protocol::ContentBlock;
use crate::model::turn::{StreamNotice, Turn};

pub(crate) const CASSETTE_FORMAT: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Header {
        format: u32,
        provider: String,
        model: String,
        agent_version: String,
        /// The workspace root at recording time; replay rewrites it in tool inputs.
        workspace: String,
        tools: Vec<String>,
        /// The recording run's `session_id` (absent in cassettes from before it existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
    },
    Turn {
        index: u32,
        request: RequestSummary,
        sse: String,
        /// Set when `sse` is not the raw response but a re-encoding of it in this format
        /// (a secret had to be removed from a value the stream split across events).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encoding: Option<String>,
    },
}

/// What a recorded turn answered: enough to see a replay drift, nothing secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct RequestSummary {
    messages: usize,
    tools: Vec<String>,
    /// The model asked (absent in cassettes from before it was recorded): on replay, the
    /// model of a turn whose stream names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// The SHA-256 of each image and PDF the request carried, in order: a replay must
    /// send the same bytes (a file changed since the recording is a drift it names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    media: Vec<String>,
}

fn summarize(request: &TurnRequest<'_>) -> RequestSummary {
    RequestSummary {
        messages: request.messages.len(),
        tools: tool_names(request.tools),
        model: Some(request.model.to_string()),
        media: media_digests(request),
    }
}

/// The SHA-256 of the base64 text of each image and PDF of the request, in order.
fn media_digests(request: &TurnRequest<'_>) -> Vec<String> {
    use crate::model::protocol::MediaSource;
    let mut out = Vec::new();
    let mut add = |b: &ContentBlock| {
        if let ContentBlock::Image { source } | ContentBlock::Document { source, .. } = b
            && let MediaSource::Base64 { data, .. } = source
        {
            out.push(crate::model::media::sha256_hex(data.as_bytes()));
        }
    };
    for entry in request.messages.iter().filter(|e| e.has_media()) {
        for block in &entry.message().content {
            match block {
                ContentBlock::ToolResult { content, .. } => content.media.iter().for_each(&mut add),
                other => add(other),
            }
        }
    }
    out
}

/// One recorded turn as replay needs it.
struct Recording {
    sse: String,
    /// Set when `sse` was re-encoded (see `Line::Turn`).
    encoding: Option<String>,
    /// The model the request went to, when recorded.
    model: Option<String>,
    /// The digests of the images and PDFs it carried (`RequestSummary::media`).
    media: Vec<String>,
}

fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// Appends turns to a cassette as a live run goes.
pub(crate) struct CassetteWriter {
    file: File,
    turns: u32,
    provider: String,
    /// Values that must never reach the file (the API key), replaced if ever present.
    secrets: Vec<String>,
    /// A turn could not be recorded safely: the cassette ends before it, so a replay
    /// never answers a request with a later turn's response.
    stopped: bool,
}

impl CassetteWriter {
    pub(crate) fn create(
        path: &Path,
        provider: &str,
        model: &str,
        workspace: &Path,
        tools: &[String],
        session_id: &str,
        secrets: Vec<String>,
    ) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let mut w = CassetteWriter {
            file,
            turns: 0,
            provider: provider.to_string(),
            secrets,
            stopped: false,
        };
        w.write_line(&Line::Header {
            format: CASSETTE_FORMAT,
            provider: provider.to_string(),
            model: model.to_string(),
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            workspace: workspace.display().to_string(),
            tools: tools.to_vec(),
            session_id: Some(session_id.to_string()),
        })?;
        Ok(w)
    }

    /// Records one successful turn: the raw SSE bytes and what they answered.
    ///
    /// A secret the model echoed may be split across several deltas, where redacting
    /// the raw text cannot see it. So the turn is decoded first; if any secret is in it,
    /// the line holds the redacted turn re-encoded as a canonical Anthropic stream. A
    /// turn that does not decode again cannot be checked that way: with secrets to keep
    /// out, it is not recorded (with a warning), and neither is any turn after it.
    pub(crate) fn append(&mut self, request: &TurnRequest<'_>, sse: &[u8]) -> std::io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.turns += 1;
        let raw = String::from_utf8_lossy(sse).into_owned();
        let (sse, encoding) = match decode(&self.provider, &raw) {
            // A Responses turn stays one (its reasoning items have no Anthropic form).
            Ok(turn) if self.holds_secret(&turn) && self.provider == "openai-responses" => (
                super::openai_responses::decode::encode(&self.redacted(turn)),
                Some(self.provider.clone()),
            ),
            Ok(turn) if self.holds_secret(&turn) => (
                super::anthropic::decode::encode(&self.redacted(turn)),
                Some("anthropic".to_string()),
            ),
            Ok(_) => (raw, None),
            Err(e) if self.has_secrets() => {
                self.stopped = true;
                crate::util::output::warn(&format!(
                    "--record: turn {} does not decode again ({e}), so a secret split across \
                     its deltas could not be removed: the cassette ends before it (a replay \
                     runs the turns before it, then stops with \"the cassette ran out\")",
                    self.turns
                ));
                return Ok(());
            }
            Err(_) => (raw, None),
        };
        let line = Line::Turn {
            index: self.turns,
            request: summarize(request),
            sse,
            encoding,
        };
        self.write_line(&line)
    }

    /// Whether any secret is one redaction replaces (very short values are not).
    fn has_secrets(&self) -> bool {
        self.secrets
            .iter()
            .any(|s| crate::util::secrets::redact(s, &self.secrets) != *s)
    }

    fn holds_secret(&self, turn: &Turn) -> bool {
        let text = serde_json::to_string(&turn.message).unwrap_or_default();
        crate::util::secrets::redact(&text, &self.secrets) != text
    }

    fn redacted(&self, mut turn: Turn) -> Turn {
        let redact = |s: &mut String| *s = crate::util::secrets::redact(s, &self.secrets);
        for block in &mut turn.message.content {
            match block {
                ContentBlock::Text { text } => redact(text),
                ContentBlock::Thinking { thinking, .. } => redact(thinking),
                ContentBlock::ToolUse { input, .. } => redact_value(input, &self.secrets),
                ContentBlock::ToolResult { content, .. } => redact(&mut content.text),
                ContentBlock::RedactedThinking { .. }
                | ContentBlock::Image { .. }
                | ContentBlock::Document { .. } => {}
                ContentBlock::Reasoning { summary, item } => {
                    redact(summary);
                    redact(item);
                }
            }
        }
        turn
    }

    fn write_line(&mut self, line: &Line) -> std::io::Result<()> {
        let text = serde_json::to_string(line).map_err(std::io::Error::other)?;
        let text = crate::util::secrets::redact(&text, &self.secrets);
        self.file.write_all(text.as_bytes())?;
        self.file.write_all(b"\n")?;
        self.file.flush()
    }
}

/// Answers each request with the next recorded turn.
pub(crate) struct ReplayProvider {
    path: PathBuf,
    /// The recording's provider: it picks the decoder.
    provider: String,
    turns: Vec<Recording>,
    next: usize,
    recorded_workspace: String,
    workspace: String,
    recorded_tools: Vec<String>,
    warned_tools: bool,
}

impl ReplayProvider {
    /// Opens and checks a cassette; the error says what is wrong with it.
    pub(crate) fn open(path: &Path, workspace: &Path) -> Result<Self, String> {
        let shown = path.display();
        let file = File::open(path).map_err(|e| format!("--replay {shown}: {e}"))?;
        let mut lines = BufReader::new(file).lines();
        let header = match lines.next() {
            Some(Ok(l)) => l,
            Some(Err(e)) => return Err(format!("--replay {shown}: {e}")),
            None => return Err(format!("--replay {shown}: the cassette is empty")),
        };
        let (provider, recorded_workspace, recorded_tools) = match serde_json::from_str(&header) {
            Ok(Line::Header {
                format,
                provider,
                workspace,
                tools,
                ..
            }) if format == CASSETTE_FORMAT => (provider, workspace, tools),
            Ok(Line::Header { format, .. }) => {
                return Err(format!(
                    "--replay {shown}: cassette format {format} is not supported \
                     (this agent reads format {CASSETTE_FORMAT})"
                ));
            }
            _ => return Err(format!("--replay {shown}: line 1 is not a cassette header")),
        };
        if provider_kind(&provider).is_none() {
            let known: Vec<&str> = ProviderKind::value_variants()
                .iter()
                .map(|k| k.as_str())
                .collect();
            return Err(format!(
                "--replay {shown}: the cassette was recorded with provider {provider:?}; \
                 this agent replays {}",
                known.join(", ")
            ));
        }
        let mut turns = Vec::new();
        for (i, line) in lines.enumerate() {
            let line = line.map_err(|e| format!("--replay {shown}: {e}"))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(&line) {
                Ok(Line::Turn {
                    sse,
                    encoding,
                    request,
                    ..
                }) => turns.push(Recording {
                    sse,
                    encoding,
                    model: request.model,
                    media: request.media,
                }),
                Ok(Line::Header { .. }) => {
                    return Err(format!(
                        "--replay {shown}: line {} is a second header",
                        i + 2
                    ));
                }
                Err(e) => return Err(format!("--replay {shown}: line {}: {e}", i + 2)),
            }
        }
        Ok(ReplayProvider {
            path: path.to_path_buf(),
            provider,
            turns,
            next: 0,
            recorded_workspace,
            workspace: workspace.display().to_string(),
            recorded_tools,
            warned_tools: false,
        })
    }

    /// The provider the cassette was recorded with.
    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    fn rewrite(&self, value: &mut Value) {
        if self.recorded_workspace.is_empty() || self.recorded_workspace == self.workspace {
            return;
        }
        rewrite_paths(value, &self.recorded_workspace, &self.workspace);
    }
}

/// The provider a cassette header names (as `--provider` spells it).
fn provider_kind(name: &str) -> Option<ProviderKind> {
    ProviderKind::value_variants()
        .iter()
        .copied()
        .find(|k| k.as_str() == name)
}

/// Decodes one recorded response with the decoder of the format it was recorded in
/// (an unknown one, which `open` refuses, reads as the Anthropic stream).
fn decode(format: &str, sse: &str) -> Result<Turn, StreamFailure> {
    let wire = super::wire(provider_kind(format).unwrap_or(ProviderKind::Anthropic));
    wire.decode(&mut sse.as_bytes(), &mut |_| {})
}

fn redact_value(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(s) => *s = crate::util::secrets::redact(s, secrets),
        Value::Array(a) => a.iter_mut().for_each(|v| redact_value(v, secrets)),
        Value::Object(o) => o.values_mut().for_each(|v| redact_value(v, secrets)),
        _ => {}
    }
}

/// Replaces the recorded workspace root by the replay's in every string of `value`.
fn rewrite_paths(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(s) if s.contains(from) => *s = s.replace(from, to),
        Value::Array(a) => a.iter_mut().for_each(|v| rewrite_paths(v, from, to)),
        Value::Object(o) => o.values_mut().for_each(|v| rewrite_paths(v, from, to)),
        _ => {}
    }
}

impl Provider for ReplayProvider {
    fn stream_turn(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let offered = tool_names(request.tools);
        if !self.warned_tools && offered != self.recorded_tools {
            self.warned_tools = true;
            crate::util::output::warn(&format!(
                "the tools offered ({}) differ from those recorded in the cassette ({})",
                offered.join(", "),
                self.recorded_tools.join(", ")
            ));
        }
        let Some(recorded) = self.turns.get(self.next) else {
            return Err(ProviderError {
                kind: ProviderErrorKind::Cassette,
                message: format!(
                    "the cassette {} ran out after {} turns before the model stopped",
                    self.path.display(),
                    self.turns.len()
                ),
            });
        };
        if media_digests(request) != recorded.media {
            return Err(ProviderError {
                kind: ProviderErrorKind::Cassette,
                message: format!(
                    "turn {} of the cassette {}: the request's images or PDFs differ from \
                     the recorded ones (a file changed or is missing since the recording)",
                    self.next + 1,
                    self.path.display()
                ),
            });
        }
        self.next += 1;
        on_notice(StreamNotice::TurnStarted);
        // Decode the whole turn first, so that paths are rewritten before anything (a
        // streaming executor included) sees a tool call.
        let format = recorded.encoding.as_deref().unwrap_or(&self.provider);
        let mut turn = decode(format, &recorded.sse).map_err(|e| ProviderError {
            kind: ProviderErrorKind::Cassette,
            message: format!(
                "turn {} of the cassette {}: {e}",
                self.next,
                self.path.display()
            ),
        })?;
        if turn.model.is_empty() {
            // As live: the model asked for answers when the stream names none.
            turn.model = recorded
                .model
                .as_deref()
                .unwrap_or(request.model)
                .to_string();
        }
        for call in &mut turn.calls {
            if let Ok(input) = &mut call.input {
                self.rewrite(input);
            }
        }
        for block in &mut turn.message.content {
            match block {
                ContentBlock::ToolUse { input, .. } => self.rewrite(input),
                ContentBlock::Text { text } => on_notice(StreamNotice::TextDelta(text)),
                _ => {}
            }
        }
        for call in &turn.calls {
            on_notice(StreamNotice::ToolReady(call));
        }
        Ok(turn)
    }
}

#[cfg(test)]
#[path = "cassette_tests.rs"]
mod tests;
