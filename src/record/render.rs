//! The record rendered as its JSON transcript (SPEC §7): the whole document, its one-line
//! form, the `-o` checkpoints and the journal's head. The record becomes a `Transcript`
//! (`transcript.rs`) with its messages left out, which is serialised and redacted, then
//! the messages' stored JSON is spliced in. A child of `record.rs`, so it reads the
//! record's private fields.

use std::sync::Arc;

use super::RunRecord;
use crate::record::history::Entry;
use crate::record::outcome::{ErrorInfo, ErrorKind, Status};
use crate::record::transcript::{FileChange, TRANSCRIPT_VERSION, Transcript};

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
    /// `messages`, `tool_calls` and `responses` (the journal's own lines hold those),
    /// redacted.
    pub(crate) fn to_json_head(&self, redact: &dyn Fn(&str) -> String) -> String {
        self.render(Status::Running, None, false, redact, Part::Head)
    }

    /// The record as a `Transcript` without its messages (the caller splices them in).
    fn transcript(&self, status: Status, error: Option<&ErrorInfo>, part: Part<'_>) -> Transcript {
        Transcript {
            version: TRANSCRIPT_VERSION,
            status: status.as_str().to_string(),
            is_error: status != Status::Success,
            subtype: crate::record::session::subtype(status.as_str()).to_string(),
            journal: match part {
                Part::Naming(name) => Some(name.to_string()),
                _ => None,
            },
            session_id: self.session_id.clone(),
            result: self.final_text(),
            error: error.map(Into::into),
            model: self.model.clone(),
            models_used: self.models_used.clone(),
            provider: self.provider.clone(),
            stop_reason: self.stop_reason.clone(),
            num_turns: self.num_turns,
            duration_ms: self.started.elapsed().as_millis() as u64,
            api_duration_ms: self.api_duration.as_millis() as u64,
            usage: self.usage,
            cost_usd: self.cost_usd,
            total_cost_usd: self.cost_usd,
            retries: self.retries,
            messages: Vec::new(),
            structured_output: self.structured_output.clone(),
            tool_calls: match part {
                Part::Head => Vec::new(),
                _ => self.tool_calls.clone(),
            },
            workspace: self.workspace.display().to_string(),
            tools: self.tools.clone(),
            permission_denials: self.permission_denials.clone(),
            files_changed: self
                .files_changed
                .iter()
                .map(|(p, c)| FileChange {
                    path: p.clone(),
                    change: *c,
                })
                .collect(),
            verifications: self.verifications.clone(),
            git_diff_stat: self.git_diff_stat.clone(),
            spill_dir: self.spill_dir.as_ref().map(|d| d.display().to_string()),
            mcp_servers: self.mcp_servers.clone(),
            context_tokens: self.context_tokens,
            context_window: self.context_window,
            context_clearings: self.context_clearings.clone(),
            resumed_from: self.resumed_from.clone(),
            network: self.network.clone(),
            network_denials: self.network_denials.clone(),
            background: self.background.1.clone(),
            plan: self.plan.clone(),
            plan_history: self.plan_history.clone(),
            subagents: self.subagents.clone(),
            written_by: None,
            skills: self.skills.clone(),
            system_prompt: self.system_prompt.clone(),
            responses: match part {
                Part::Head => Vec::new(),
                _ => self.responses.clone(),
            },
            context_compactions: self.context_compactions.clone(),
        }
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
        let t = self.transcript(status, error, part);
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

/// Which form of the transcript `render` makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part<'a> {
    /// The whole document.
    Whole,
    /// The whole document, naming the journal (`-o`'s first checkpoint).
    Naming(&'a str),
    /// Everything but the messages, the tool calls and the responses, which grow with
    /// the run (a journal's checkpoint line: the journal has lines of its own for them).
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
    // Exact: one byte short and the last push doubles the run's largest string.
    let sep = if pretty { ",\n    ".len() } else { ",".len() };
    let closing = if pretty { "\n  ".len() } else { 0 };
    let bytes: usize = match messages.len() {
        0 => 0,
        n => {
            messages
                .iter()
                .map(|m| m.transcript_json().len())
                .sum::<usize>()
                + sep * n
                - 1
                + closing
        }
    };
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

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
