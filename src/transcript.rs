//! The public JSON transcript (SPEC §7): the run's record, kept up to date as the run
//! goes, and its serialisation. Field names only ever get added within a `version`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::protocol::{ContentBlock, Message, Role, Usage};

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
}

impl Status {
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Error | Status::Refusal | Status::Running => 1,
            Status::MaxTurns | Status::Budget => 3,
            Status::VerifyFailed => 4,
            Status::Denied => 5,
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
    pub workspace: PathBuf,
    pub tools: Vec<String>,
    pub messages: Vec<Message>,
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
}

impl RunRecord {
    pub fn new(model: &str, workspace: PathBuf, tools: Vec<String>) -> Self {
        RunRecord {
            started: Instant::now(),
            model: model.to_string(),
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
        }
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

    /// The text of the last assistant message: the run's answer.
    pub fn final_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| {
                m.content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("")
            })
            .unwrap_or_default()
    }

    /// The transcript as a JSON document.
    pub fn to_json(&self, status: Status, error: Option<&ErrorInfo>) -> String {
        self.render(status, error, true)
    }

    /// The transcript on one line (for the `run.finished` event of `--jsonl`).
    pub fn to_json_line(&self, status: Status, error: Option<&ErrorInfo>) -> String {
        self.render(status, error, false)
    }

    fn render(&self, status: Status, error: Option<&ErrorInfo>, pretty: bool) -> String {
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
            result: self.final_text(),
            error,
            model: &self.model,
            stop_reason: self.stop_reason.as_deref(),
            num_turns: self.num_turns,
            duration_ms: self.started.elapsed().as_millis() as u64,
            api_duration_ms: self.api_duration.as_millis() as u64,
            usage: &self.usage,
            cost_usd: self.cost_usd,
            retries: self.retries,
            messages: &self.messages,
            tool_calls: &self.tool_calls,
            workspace: self.workspace.display().to_string(),
            tools: &self.tools,
            permission_denials: &self.permission_denials,
            files_changed,
            verifications: &self.verifications,
            git_diff_stat: self.git_diff_stat.as_deref(),
            spill_dir: self.spill_dir.as_ref().map(|d| d.display().to_string()),
            mcp_servers: &self.mcp_servers,
        };
        let text = if pretty {
            serde_json::to_string_pretty(&t)
        } else {
            serde_json::to_string(&t)
        };
        text.unwrap_or_else(|e| {
            format!(
                "{{\"version\":{TRANSCRIPT_VERSION},\"status\":\"error\",\"is_error\":true,\
                 \"error\":{{\"kind\":\"internal\",\"message\":{:?}}}}}",
                e.to_string()
            )
        })
    }
}

/// Field order here is the document's key order: `version` first.
#[derive(Serialize)]
struct Transcript<'a> {
    version: u32,
    status: &'a str,
    is_error: bool,
    result: String,
    error: Option<&'a ErrorInfo>,
    model: &'a str,
    stop_reason: Option<&'a str>,
    num_turns: u32,
    duration_ms: u64,
    api_duration_ms: u64,
    usage: &'a Usage,
    cost_usd: Option<f64>,
    retries: u32,
    messages: &'a [Message],
    tool_calls: &'a [ToolCallRecord],
    workspace: String,
    tools: &'a [String],
    permission_denials: &'a [DenialRecord],
    files_changed: Vec<FileChange>,
    verifications: &'a [VerificationRecord],
    git_diff_stat: Option<&'a str>,
    spill_dir: Option<String>,
    mcp_servers: &'a [crate::mcp::ServerReport],
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
                metadata,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn version_first_and_fields_present() {
        let mut r = RunRecord::new("m", PathBuf::from("/w"), vec!["ReadFile".into()]);
        r.messages.push(Message::user_text("hi"));
        r.messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "done".into(),
            }],
        });
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
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["result"], "done");
        assert_eq!(v["is_error"], false);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 0);
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Status::Success.exit_code(), 0);
        assert_eq!(Status::Refusal.exit_code(), 1);
        assert_eq!(Status::MaxTurns.exit_code(), 3);
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
