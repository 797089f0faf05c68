//! The run's record (`RunRecord`): everything the run has done so far, kept up to date
//! as the run goes. Its JSON form (SPEC §7) is `render.rs`; how a run ended, `outcome.rs`.

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

#[path = "render.rs"]
mod render;
pub(crate) use render::TRANSCRIPT_VERSION;

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
    use crate::record::outcome::Status;
    use serde_json::json;

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
