//! The public JSON transcript (SPEC §7): the run's record, kept up to date as the run
//! goes, and its serialisation. Field names only ever get added within a `version`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use std::sync::Arc;

use crate::model::protocol::{ContentBlock, Role, Usage};
use crate::record::history::Entry;
use crate::run::budget::{Prices, round_usd};
use crate::run::context::Clearing;

pub const TRANSCRIPT_VERSION: u32 = 1;

/// How a run ended; each maps to one exit code (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Only in `-o` checkpoints written while the run is still going: a file left with
    /// this status belongs to a run that was killed (SIGKILL) before it could finish.
    Running,
    Success,
    Error,
    Refusal,
    MaxTurns,
    Budget,
    VerifyFailed,
    Denied,
    Timeout,
    Interrupted,
    /// The conversation no longer fits in the model's context window, even with every
    /// old tool result cleared.
    ContextExceeded,
    /// The final answer was still cut off by `--max-tokens` after its continuations.
    MaxTokens,
    /// `--output-schema`: no valid answer within `--max-schema-retries` corrections.
    SchemaFailed,
}

impl Status {
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Error
            | Status::Refusal
            | Status::Running
            | Status::ContextExceeded
            | Status::MaxTokens => 1,
            Status::MaxTurns | Status::Budget => 3,
            Status::VerifyFailed => 4,
            Status::Denied => 5,
            Status::SchemaFailed => 6,
            Status::Timeout => 124,
            Status::Interrupted => 130,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Success => "success",
            Status::Error => "error",
            Status::Refusal => "refusal",
            Status::MaxTurns => "max_turns",
            Status::Budget => "budget",
            Status::VerifyFailed => "verify_failed",
            Status::Denied => "denied",
            Status::Timeout => "timeout",
            Status::Interrupted => "interrupted",
            Status::ContextExceeded => "context_exceeded",
            Status::MaxTokens => "max_tokens",
            Status::SchemaFailed => "schema_failed",
        }
    }
}

/// The transcript's `error` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    pub kind: String,
    pub message: String,
}

impl ErrorInfo {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        ErrorInfo {
            kind: kind.to_string(),
            message: message.into(),
        }
    }
}

/// One executed (or refused) tool call, in the order the model made it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub is_error: bool,
    pub batch: u32,
    pub duration_ms: u64,
    /// Milliseconds from the start of the run to the start of the call.
    pub started_ms: u64,
    pub turn: u32,
    /// The model that made the call (the one the API reported for its turn).
    pub model: String,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// A call refused by a permission rule or a hook.
#[derive(Debug, Clone, Serialize)]
pub struct DenialRecord {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
    pub reason: String,
}

/// One run of the `--verify` command (SPEC §9).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerificationRecord {
    /// 1, 2, 3 … in the order they ran.
    pub round: u32,
    pub command: String,
    /// None when the command timed out, was killed by a signal or could not start.
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last characters of its output (the model saw up to the runner's head + tail).
    pub output_tail: String,
}

/// One model of the run (`models_used`): the turns it answered and what they cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelUse {
    pub model: String,
    pub turns: u32,
    /// None when the model has no price or a response came without usage.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    pub path: String,
    pub change: String,
}

/// Everything the run has done so far. Shared (behind a mutex) with the signal and
/// deadline threads, so that every way out can write it.
#[derive(Debug)]
pub struct RunRecord {
    pub started: Instant,
    pub model: String,
    /// Every model that answered, in the order each first did (`--fallback-model`).
    pub models_used: Vec<ModelUse>,
    pub workspace: PathBuf,
    pub tools: Vec<String>,
    /// Every message as it happened (the requests may carry cleared copies), each
    /// serialised once (`history.rs`).
    pub messages: Vec<Arc<Entry>>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: Usage,
    pub num_turns: u32,
    pub api_duration: Duration,
    pub retries: u32,
    pub stop_reason: Option<String>,
    pub permission_denials: Vec<DenialRecord>,
    /// Path → "created" | "modified" | "deleted", first change kind wins for "created".
    pub files_changed: BTreeMap<String, String>,
    /// USD so far; None when the model's price is unknown.
    pub cost_usd: Option<f64>,
    pub verifications: Vec<VerificationRecord>,
    /// `git diff --stat` at the end of the run; None outside a git repository.
    pub git_diff_stat: Option<String>,
    /// The directory of saved outputs, when it is kept (`-o`, `--keep-spill`) and exists.
    pub spill_dir: Option<PathBuf>,
    /// The MCP servers of the run, connected or failed.
    pub mcp_servers: Vec<crate::mcp::ServerReport>,
    /// The last request's input size in tokens (input + cache read + cache creation).
    pub context_tokens: Option<u64>,
    /// The context window the run worked with, when known.
    pub context_window: Option<u64>,
    /// Each clearing of old tool results.
    pub context_clearings: Vec<Clearing>,
    /// The earlier parts of a final answer cut off by `max_tokens` and continued: the
    /// result is these, then the last assistant message's text.
    pub answer_parts: Vec<String>,
    /// A random UUID per run (`session_id`).
    pub session_id: String,
    /// `--output-schema`: the accepted answer (the run's `result`, serialised).
    pub structured_output: Option<Value>,
    /// `--resume`: `{path, session_id, num_turns, status, usage, cost_usd}` of the
    /// transcript this run continues.
    pub resumed_from: Option<Value>,
}

impl RunRecord {
    pub fn new(model: &str, workspace: PathBuf, tools: Vec<String>) -> Self {
        RunRecord {
            started: Instant::now(),
            model: model.to_string(),
            models_used: Vec::new(),
            workspace,
            tools,
            messages: Vec::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            num_turns: 0,
            api_duration: Duration::ZERO,
            retries: 0,
            stop_reason: None,
            permission_denials: Vec::new(),
            files_changed: BTreeMap::new(),
            cost_usd: None,
            verifications: Vec::new(),
            git_diff_stat: None,
            spill_dir: None,
            mcp_servers: Vec::new(),
            context_tokens: None,
            context_window: None,
            context_clearings: Vec::new(),
            answer_parts: Vec::new(),
            session_id: crate::record::session::new_session_id(),
            structured_output: None,
            resumed_from: None,
        }
    }

    /// Adds one response's usage, priced by the model that gave it, to the run's totals
    /// and to that model's `models_used` entry. `turn` is false for a response that is
    /// billed but is no model turn (one cut off at the context window).
    pub fn add_response(&mut self, model: &str, usage: &Usage, prices: &Prices, turn: bool) {
        self.usage.add(usage);
        let cost = prices.cost(model, usage);
        let entry = match self.models_used.iter().position(|u| u.model == model) {
            Some(i) => &mut self.models_used[i],
            None => {
                self.models_used.push(ModelUse {
                    model: model.to_string(),
                    turns: 0,
                    cost_usd: Some(0.0),
                });
                let last = self.models_used.len() - 1;
                &mut self.models_used[last]
            }
        };
        entry.turns += u32::from(turn);
        entry.cost_usd = entry.cost_usd.zip(cost).map(|(a, b)| round_usd(a + b));
        self.cost_usd = self
            .models_used
            .iter()
            .try_fold(0.0, |sum, u| u.cost_usd.map(|c| sum + c))
            .map(round_usd);
    }

    /// The first model whose cost could not be computed, if any.
    pub fn unpriced_model(&self) -> Option<&str> {
        self.models_used
            .iter()
            .find(|u| u.cost_usd.is_none())
            .map(|u| u.model.as_str())
    }

    /// Notes a file change reported by a tool's metadata (`path`, `change`).
    pub fn note_file_change(&mut self, metadata: &Map<String, Value>) {
        let (Some(path), Some(change)) = (
            metadata.get("path").and_then(Value::as_str),
            metadata.get("change").and_then(Value::as_str),
        ) else {
            return;
        };
        let merged = match (self.files_changed.get(path).map(String::as_str), change) {
            (Some("created"), "deleted") => None, // created then deleted: no net change
            (Some("created"), _) => Some("created"),
            (Some("deleted"), "created") => Some("modified"),
            (_, c) => Some(c),
        };
        match merged {
            Some(c) => {
                self.files_changed.insert(path.to_string(), c.to_string());
            }
            None => {
                self.files_changed.remove(path);
            }
        }
    }

    /// The run's answer: the accepted structured output as one line of JSON, else the
    /// text of the last assistant message.
    pub fn final_text(&self) -> String {
        if let Some(v) = &self.structured_output {
            return v.to_string();
        }
        let last = self
            .messages
            .iter()
            .rev()
            .find(|e| e.role() == Role::Assistant)
            .map(|e| message_text(&e.message()))
            .unwrap_or_default();
        self.answer_parts.concat() + &last
    }

    /// The transcript as a JSON document, unredacted (tests).
    #[cfg(test)]
    pub fn to_json(&self, status: Status, error: Option<&ErrorInfo>) -> String {
        self.render(status, error, true, &|s| s.to_string(), Part::Whole)
    }

    /// The transcript on one line (for the `run.finished` event of `--jsonl`).
    pub fn to_json_line(&self, status: Status, error: Option<&ErrorInfo>) -> String {
        self.render(status, error, false, &|s| s.to_string(), Part::Whole)
    }

    /// The transcript as a JSON document with `redact` applied. The messages were
    /// redacted once as they entered (`Entry`), so only the rest of the document is
    /// redacted here: a checkpoint costs a copy of the history, not a scan of it.
    pub fn to_json_redacted(
        &self,
        status: Status,
        error: Option<&ErrorInfo>,
        redact: &dyn Fn(&str) -> String,
    ) -> String {
        self.render(status, error, true, redact, Part::Whole)
    }

    /// The `-o` file at the run's first checkpoint: the whole transcript so far (status
    /// `running`) naming the journal that the later checkpoints go to (`journal.rs`).
    pub fn to_json_journaled(&self, journal: &str, redact: &dyn Fn(&str) -> String) -> String {
        self.render(Status::Running, None, true, redact, Part::Naming(journal))
    }

    /// A journal's checkpoint: the transcript on one line, status `running`, with empty
    /// `messages` and `tool_calls` (the journal's own lines hold those), redacted.
    pub fn to_json_head(&self, redact: &dyn Fn(&str) -> String) -> String {
        self.render(Status::Running, None, false, redact, Part::Head)
    }

    /// The document without its messages (an empty array in their place) goes through
    /// `redact`, then the messages' stored JSON is spliced in.
    fn render(
        &self,
        status: Status,
        error: Option<&ErrorInfo>,
        pretty: bool,
        redact: &dyn Fn(&str) -> String,
        part: Part<'_>,
    ) -> String {
        let files_changed: Vec<FileChange> = self
            .files_changed
            .iter()
            .map(|(p, c)| FileChange {
                path: p.clone(),
                change: c.clone(),
            })
            .collect();
        let t = Transcript {
            version: TRANSCRIPT_VERSION,
            status: status.as_str(),
            is_error: status != Status::Success,
            subtype: crate::record::session::subtype(status.as_str()),
            journal: match part {
                Part::Naming(name) => Some(name),
                _ => None,
            },
            session_id: &self.session_id,
            result: self.final_text(),
            error,
            model: &self.model,
            models_used: &self.models_used,
            stop_reason: self.stop_reason.as_deref(),
            num_turns: self.num_turns,
            duration_ms: self.started.elapsed().as_millis() as u64,
            api_duration_ms: self.api_duration.as_millis() as u64,
            usage: &self.usage,
            cost_usd: self.cost_usd,
            total_cost_usd: self.cost_usd,
            retries: self.retries,
            messages: [],
            structured_output: self.structured_output.as_ref(),
            tool_calls: match part {
                Part::Head => &[],
                _ => &self.tool_calls,
            },
            workspace: self.workspace.display().to_string(),
            tools: &self.tools,
            permission_denials: &self.permission_denials,
            files_changed,
            verifications: &self.verifications,
            git_diff_stat: self.git_diff_stat.as_deref(),
            spill_dir: self.spill_dir.as_ref().map(|d| d.display().to_string()),
            mcp_servers: &self.mcp_servers,
            context_tokens: self.context_tokens,
            context_window: self.context_window,
            context_clearings: &self.context_clearings,
            resumed_from: self.resumed_from.as_ref(),
        };
        let text = if pretty {
            serde_json::to_string_pretty(&t)
        } else {
            serde_json::to_string(&t)
        };
        match text {
            Ok(text) if part == Part::Head => redact(&text),
            Ok(text) => splice_messages(&redact(&text), &self.messages, pretty),
            Err(e) => format!(
                "{{\"version\":{TRANSCRIPT_VERSION},\"status\":\"error\",\"is_error\":true,\
                 \"error\":{{\"kind\":\"internal\",\"message\":{:?}}}}}",
                e.to_string()
            ),
        }
    }
}

/// Which form of the transcript `render` makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part<'a> {
    /// The whole document.
    Whole,
    /// The whole document, naming the journal (`-o`'s first checkpoint).
    Naming(&'a str),
    /// Everything but the messages and the tool calls (a journal's checkpoint line).
    Head,
}

/// `doc` with its empty top-level `messages` array replaced by the messages' JSON. The
/// key is found as the first `"messages":` followed by `[]`: every field before it is a
/// fixed-shape value (numbers, strings, `usage`, `error`), and a `"` inside a string is
/// always escaped, so the first match is the key itself.
fn splice_messages(doc: &str, messages: &[Arc<Entry>], pretty: bool) -> String {
    let key = if pretty {
        "\"messages\": []"
    } else {
        "\"messages\":[]"
    };
    let Some(at) = doc.find(key) else {
        return doc.to_string();
    };
    let (head, tail) = (&doc[..at + key.len() - 1], &doc[at + key.len() - 1..]);
    let bytes: usize = messages.iter().map(|m| m.transcript_json().len() + 6).sum();
    let mut out = String::with_capacity(doc.len() + bytes);
    out.push_str(head);
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if pretty {
            out.push_str("\n    ");
        }
        out.push_str(m.transcript_json());
    }
    if pretty && !messages.is_empty() {
        out.push_str("\n  ");
    }
    out.push_str(tail);
    out
}

/// Field order here is the document's key order: `version` first.
#[derive(Serialize)]
struct Transcript<'a> {
    version: u32,
    status: &'a str,
    /// Only in the `-o` file of a run still going (or killed): the journal beside it that
    /// holds the later checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    journal: Option<&'a str>,
    is_error: bool,
    /// claude's name for the status (`session::subtype`).
    subtype: &'static str,
    session_id: &'a str,
    result: String,
    error: Option<&'a ErrorInfo>,
    model: &'a str,
    /// Every model that answered: `{model, turns, cost_usd}` in order of first use.
    models_used: &'a [ModelUse],
    stop_reason: Option<&'a str>,
    num_turns: u32,
    duration_ms: u64,
    api_duration_ms: u64,
    usage: &'a Usage,
    cost_usd: Option<f64>,
    /// The same as `cost_usd`, under claude's name.
    total_cost_usd: Option<f64>,
    retries: u32,
    /// Always empty here: `splice_messages` puts the stored JSON in its place.
    messages: [(); 0],
    /// After `messages`: a value of any shape (it may hold `"messages":[]`) must not come
    /// before the key `splice_messages` looks for.
    structured_output: Option<&'a Value>,
    tool_calls: &'a [ToolCallRecord],
    workspace: String,
    tools: &'a [String],
    permission_denials: &'a [DenialRecord],
    files_changed: Vec<FileChange>,
    verifications: &'a [VerificationRecord],
    git_diff_stat: Option<&'a str>,
    spill_dir: Option<String>,
    mcp_servers: &'a [crate::mcp::ServerReport],
    context_tokens: Option<u64>,
    context_window: Option<u64>,
    context_clearings: &'a [Clearing],
    resumed_from: Option<&'a Value>,
}

/// The text blocks of a message, joined.
pub fn message_text(m: &crate::model::protocol::Message) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// How a run ended: its status and, unless it succeeded, the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub error: Option<ErrorInfo>,
}

impl Outcome {
    pub(crate) fn ok(status: Status) -> Self {
        Outcome {
            status,
            error: None,
        }
    }

    pub(crate) fn fail(status: Status, kind: &str, message: impl Into<String>) -> Self {
        Outcome {
            status,
            error: Some(ErrorInfo::new(kind, message)),
        }
    }
}

/// Locks the record even if a panicking thread poisoned it: the record is plain data.
pub fn lock(record: &Mutex<RunRecord>) -> std::sync::MutexGuard<'_, RunRecord> {
    record.lock().unwrap_or_else(|p| p.into_inner())
}

/// Tool calls that started and have not finished. A run that ends while some still run
/// (timeout, signal) lists them in `tool_calls` too, so CI can see which command hung.
#[derive(Debug, Default)]
pub struct InFlight(Mutex<Vec<Unfinished>>);

#[derive(Debug, Clone)]
struct Unfinished {
    id: String,
    name: String,
    input: Value,
    started: Instant,
    turn: u32,
}

impl InFlight {
    pub fn start(&self, id: &str, name: &str, input: Value, turn: u32) {
        let call = Unfinished {
            id: id.to_string(),
            name: name.to_string(),
            input,
            started: Instant::now(),
            turn,
        };
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(call);
    }

    pub fn end(&self, id: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|c| c.id != id);
    }

    /// Adds the calls still running to `record.tool_calls`, marked `unfinished` (batch 0:
    /// their batch never completed).
    pub fn settle(&self, record: &mut RunRecord) {
        let calls = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        for c in calls {
            if record.tool_calls.iter().any(|t| t.id == c.id) {
                continue;
            }
            let mut metadata = Map::new();
            metadata.insert("unfinished".into(), Value::Bool(true));
            record.tool_calls.push(ToolCallRecord {
                id: c.id,
                name: c.name,
                input: c.input,
                is_error: true,
                batch: 0,
                duration_ms: c.started.elapsed().as_millis() as u64,
                started_ms: c
                    .started
                    .saturating_duration_since(record.started)
                    .as_millis() as u64,
                turn: c.turn,
                // The calls in flight belong to the newest turn, whose model this is.
                model: record.model.clone(),
                metadata,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::Message;
    use serde_json::json;

    #[test]
    fn version_first_and_fields_present() {
        let mut r = RunRecord::new("m", PathBuf::from("/w"), vec!["ReadFile".into()]);
        r.messages.push(Entry::new(Message::user_text("hi")));
        r.messages.push(Entry::new(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "done".into(),
            }],
        }));
        let s = r.to_json(Status::Success, None);
        assert!(s.trim_start().starts_with("{\n  \"version\": 1,"), "{s}");
        let v: Value = serde_json::from_str(&s).unwrap();
        for k in [
            "status",
            "is_error",
            "result",
            "error",
            "model",
            "stop_reason",
            "num_turns",
            "duration_ms",
            "api_duration_ms",
            "usage",
            "messages",
            "tool_calls",
            "workspace",
            "tools",
            "permission_denials",
            "files_changed",
            "retries",
            "cost_usd",
            "verifications",
            "git_diff_stat",
            "spill_dir",
            "context_tokens",
            "context_window",
            "context_clearings",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["result"], "done");
        assert_eq!(v["is_error"], false);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 0);
        assert_eq!(v["messages"][1]["content"][0]["text"], "done");
        assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn messages_are_spliced_in_both_layouts_and_only_the_rest_is_redacted() {
        let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
        let empty: Value = serde_json::from_str(&r.to_json(Status::Running, None)).unwrap();
        assert_eq!(empty["messages"], json!([]));
        // A tool input with a "messages" key comes after the top-level one.
        r.tool_calls.push(ToolCallRecord {
            id: "t".into(),
            name: "X".into(),
            input: json!({"messages": []}),
            is_error: false,
            batch: 1,
            duration_ms: 0,
            started_ms: 0,
            turn: 1,
            model: "m".into(),
            metadata: Map::new(),
        });
        for text in ["one \"messages\": [] two", "secret-ish"] {
            r.messages.push(Entry::new(Message::user_text(text)));
        }
        let upper = |s: &str| s.replace("\"X\"", "\"Y\"").replace("secret-ish", "nope");
        for doc in [
            r.to_json_redacted(Status::Running, None, &upper),
            r.to_json_line(Status::Running, None),
        ] {
            let v: Value = serde_json::from_str(&doc).unwrap();
            assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{doc}");
            assert_eq!(
                v["messages"][0]["content"][0]["text"],
                "one \"messages\": [] two"
            );
            assert_eq!(v["messages"][1]["content"][0]["text"], "secret-ish");
            assert_eq!(v["tool_calls"][0]["input"], json!({"messages": []}));
        }
        let v: Value =
            serde_json::from_str(&r.to_json_redacted(Status::Running, None, &upper)).unwrap();
        assert_eq!(
            v["tool_calls"][0]["name"], "Y",
            "the rest went through redact"
        );
    }

    #[test]
    fn claude_compatible_fields_and_structured_output() {
        let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
        r.messages.push(Entry::new(Message::user_text("hi")));
        r.messages.push(Entry::new(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "prose".into(),
            }],
        }));
        r.cost_usd = Some(0.25);
        let v: Value = serde_json::from_str(&r.to_json(Status::MaxTurns, None)).unwrap();
        assert_eq!(v["total_cost_usd"], 0.25);
        assert_eq!(v["cost_usd"], 0.25);
        assert_eq!(v["subtype"], "error_max_turns");
        assert_eq!(v["session_id"], r.session_id.as_str());
        assert_eq!(v["structured_output"], Value::Null);
        assert_eq!(v["resumed_from"], Value::Null);
        assert_eq!(v["result"], "prose");
        // The accepted answer is the result, as one line of JSON.
        r.structured_output = Some(json!({"ok": true, "n": [1, 2]}));
        r.resumed_from = Some(json!({"path": "/t.json", "num_turns": 3}));
        let v: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
        assert_eq!(v["structured_output"], json!({"ok": true, "n": [1, 2]}));
        assert_eq!(v["result"], r#"{"n":[1,2],"ok":true}"#);
        assert_eq!(v["subtype"], "success");
        assert_eq!(v["resumed_from"]["num_turns"], 3);
        let v: Value = serde_json::from_str(&r.to_json(Status::SchemaFailed, None)).unwrap();
        assert_eq!(v["status"], "schema_failed");
        assert_eq!(v["subtype"], "error_max_structured_output_retries");
        // An answer holding `"messages":[]` does not confuse the splice.
        r.structured_output = Some(json!({"messages": []}));
        for text in [
            r.to_json(Status::Success, None),
            r.to_json_line(Status::Success, None),
        ] {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{text}");
            assert_eq!(v["structured_output"], json!({"messages": []}));
        }
        // Each run gets its own id.
        assert_ne!(
            RunRecord::new("m", PathBuf::from("/w"), vec![]).session_id,
            r.session_id
        );
    }

    #[test]
    fn each_response_is_priced_by_its_own_model() {
        let mut r = RunRecord::new("claude-sonnet-4-5", PathBuf::from("/w"), vec![]);
        let prices = Prices::default();
        let million_in = Usage {
            input_tokens: 1_000_000,
            ..Usage::default()
        };
        r.add_response("claude-sonnet-4-5", &million_in, &prices, true);
        r.add_response("claude-haiku-4-5", &million_in, &prices, true);
        r.add_response("claude-haiku-4-5", &million_in, &prices, false);
        // Sonnet 3 $/MTok once, Haiku 1 $/MTok twice: not 9 (all at one price).
        assert_eq!(r.cost_usd, Some(5.0));
        assert_eq!(r.usage.input_tokens, 3_000_000);
        let v: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
        assert_eq!(
            v["models_used"],
            json!([{"model": "claude-sonnet-4-5", "turns": 1, "cost_usd": 3.0},
                   {"model": "claude-haiku-4-5", "turns": 1, "cost_usd": 2.0}])
        );
        assert_eq!(r.unpriced_model(), None);
        r.add_response("local-model", &million_in, &prices, true);
        assert_eq!(
            r.cost_usd, None,
            "one unpriced model makes the total unknown"
        );
        assert_eq!(r.unpriced_model(), Some("local-model"));
        assert_eq!(
            r.models_used[0].cost_usd,
            Some(3.0),
            "the others keep theirs"
        );
    }

    #[test]
    fn costs_add_up_without_float_noise() {
        let mut r = RunRecord::new("claude-haiku-4-5", PathBuf::from("/w"), vec![]);
        let hundred_in = Usage {
            input_tokens: 100,
            ..Usage::default()
        };
        for _ in 0..3 {
            r.add_response("claude-haiku-4-5", &hundred_in, &Prices::default(), true);
        }
        // 0.0001 three times is 0.00030000000000000003 in floats.
        let v: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
        assert_eq!(v["cost_usd"].to_string(), "0.0003");
        assert_eq!(v["models_used"][0]["cost_usd"].to_string(), "0.0003");
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Status::Success.exit_code(), 0);
        assert_eq!(Status::Refusal.exit_code(), 1);
        assert_eq!(Status::MaxTurns.exit_code(), 3);
        assert_eq!(Status::SchemaFailed.exit_code(), 6);
        assert_eq!(Status::Timeout.exit_code(), 124);
        assert_eq!(Status::Interrupted.exit_code(), 130);
    }

    #[test]
    fn file_changes_merge() {
        let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
        let meta = |p: &str, c: &str| json!({"path": p, "change": c}).as_object().unwrap().clone();
        r.note_file_change(&meta("a", "created"));
        r.note_file_change(&meta("a", "modified"));
        r.note_file_change(&meta("b", "modified"));
        r.note_file_change(&meta("c", "created"));
        r.note_file_change(&meta("c", "deleted"));
        let v: Vec<_> = r
            .files_changed
            .iter()
            .map(|(p, c)| format!("{p}:{c}"))
            .collect();
        assert_eq!(v, vec!["a:created", "b:modified"]);
    }
}
