//! The record's JSON transcript (SPEC §7): the whole document, its one-line form, the
//! `-o` checkpoints and the journal's head. Field names only ever get added within a
//! `version`. A child of `record.rs`, so it reads the record's private fields.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::{DenialRecord, ModelUse, RunRecord, ToolCallRecord, VerificationRecord};
use crate::model::protocol::Usage;
use crate::record::history::Entry;
use crate::record::outcome::{ErrorInfo, ErrorKind, Status};
use crate::run::context::Clearing;

pub(crate) const TRANSCRIPT_VERSION: u32 = 1;

impl RunRecord {
    /// The transcript as a JSON document, unredacted (tests).
    #[cfg(test)]
    pub(crate) fn to_json(&self, status: Status, error: Option<&ErrorInfo>) -> String {
        self.render(status, error, true, &|s| s.to_string(), Part::Whole)
    }

    /// The transcript on one line (for the `run.finished` event of `--jsonl`).
    pub(crate) fn to_json_line(&self, status: Status, error: Option<&ErrorInfo>) -> String {
        self.render(status, error, false, &|s| s.to_string(), Part::Whole)
    }

    /// The transcript as a JSON document with `redact` applied. The messages were
    /// redacted once as they entered (`Entry`), so only the rest of the document is
    /// redacted here: a checkpoint costs a copy of the history, not a scan of it.
    pub(crate) fn to_json_redacted(
        &self,
        status: Status,
        error: Option<&ErrorInfo>,
        redact: &dyn Fn(&str) -> String,
    ) -> String {
        self.render(status, error, true, redact, Part::Whole)
    }

    /// The `-o` file at the run's first checkpoint: the whole transcript so far (status
    /// `running`) naming the journal that the later checkpoints go to (`journal.rs`).
    pub(crate) fn to_json_journaled(
        &self,
        journal: &str,
        redact: &dyn Fn(&str) -> String,
    ) -> String {
        self.render(Status::Running, None, true, redact, Part::Naming(journal))
    }

    /// A journal's checkpoint: the transcript on one line, status `running`, with empty
    /// `messages` and `tool_calls` (the journal's own lines hold those), redacted.
    pub(crate) fn to_json_head(&self, redact: &dyn Fn(&str) -> String) -> String {
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
            provider: self.provider.as_deref(),
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
            network: self.network.as_ref(),
            network_denials: &self.network_denials,
            background: &self.background.1,
            plan: &self.plan,
            plan_history: &self.plan_history,
            subagents: &self.subagents,
        };
        let text = if pretty {
            serde_json::to_string_pretty(&t)
        } else {
            serde_json::to_string(&t)
        };
        match text {
            Ok(text) if part == Part::Head => redact(&text),
            Ok(text) => splice_messages(&redact(&text), &self.messages, pretty),
            Err(e) => {
                let error = ErrorInfo {
                    kind: ErrorKind::Internal,
                    message: e.to_string(),
                };
                // A kind and a string: serialising them cannot fail.
                let error = serde_json::to_string(&error).unwrap_or_default();
                format!(
                    "{{\"version\":{TRANSCRIPT_VERSION},\"status\":\"error\",\"is_error\":true,\
                     \"error\":{error}}}"
                )
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct FileChange {
    pub(crate) path: String,
    pub(crate) change: String,
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
    /// The API it was reached through (`anthropic`, `openai`, `bedrock` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
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
    /// `{"tier": "namespace" | "landlock" | "host", …}`: what confined the commands.
    network: Option<&'a Value>,
    network_denials: &'a [crate::net::proxy::Denial],
    /// Every background command: `{id, command, pid, started_ms, ended_ms, exit_code, …}`.
    background: &'a [crate::tools::background::JobRecord],
    /// The model's plan (TodoWrite) as last written, and each change.
    plan: &'a [crate::tools::todo_write::Todo],
    plan_history: &'a [super::PlanChange],
    /// Task's sub-agents: `{id, tool_use_id, subagent_type, status, num_turns, usage, …}`.
    subagents: &'a [super::SubagentRecord],
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
