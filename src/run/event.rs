//! `RunEvent`: each thing a run does, said once, as one typed value (SPEC §9's `--jsonl`
//! events, docs/guide/events.md). The bus (`run::events`) hands each one to every sink:
//! the `--jsonl` writer, the in-process observers (`agent github`'s progress comment) and
//! the stderr log. The envelope (`version`, `seq`, `elapsed_ms`, a sub-agent's
//! `subagent_id`) is the writer's, not the event's.
//!
//! After codex-rs's `exec/src/exec_events.rs` (`enum ThreadEvent`, `#[serde(tag = "type")]`):
//! the tag is today's type name, each variant a struct with today's fields, so that a
//! consumer matches on a type instead of a string, and the schema is generated from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::model::protocol::Usage;
use crate::net::proxy::Denial;
use crate::record::transcript::{ResumedFrom, Transcript, VerificationRecord};
use crate::run::compaction::Reason;
use crate::run::context::Clearing;
use crate::tools::todo_write::Todo;

/// One happening of a run. The names are the `type` of its `--jsonl` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub(crate) enum RunEvent {
    /// The run began (the first event).
    #[serde(rename = "run.started")]
    RunStarted(Started),
    /// A Task sub-agent began: the same fields as `run.started`, tagged `subagent_id`.
    #[serde(rename = "subagent.started")]
    SubagentStarted(Started),
    /// One MCP server's start-up ended (after `run.started`, one per server).
    #[serde(rename = "mcp.started")]
    McpStarted(McpStarted),
    /// A model request is about to be sent.
    #[serde(rename = "turn.started")]
    TurnStarted(TurnStarted),
    /// The request failed and will be sent again.
    #[serde(rename = "retry")]
    Retry(Retry),
    /// The model was overloaded: `--fallback-model` answers from now on.
    #[serde(rename = "model.fallback")]
    ModelFallback(ModelFallback),
    /// The model's message of one turn, as the transcript stores it.
    #[serde(rename = "assistant.message")]
    AssistantMessage(AssistantMessage),
    /// A turn is over (its calls answered, or none will run).
    #[serde(rename = "turn.finished")]
    TurnFinished(TurnFinished),
    /// A tool call starts.
    #[serde(rename = "tool.started")]
    ToolStarted(ToolStarted),
    /// `--permission-prompt stdin`: a call passed the gate (hooks, rules, a person's
    /// answer) and executes; between its `tool.started` and this it may wait for a person.
    #[serde(rename = "tool.running")]
    ToolRunning(ToolRunning),
    /// A tool call ended (a glance at its result).
    #[serde(rename = "tool.finished")]
    ToolFinished(ToolFinished),
    /// A `--verify` round ended (as the transcript's `verifications` lists it).
    #[serde(rename = "verify.finished")]
    VerifyFinished(VerificationRecord),
    /// Old tool results were cleared from the context (as `context_clearings` lists it).
    #[serde(rename = "context.cleared")]
    ContextCleared(Clearing),
    /// The Task tool asked for a sub-agent.
    #[serde(rename = "subagent.requested")]
    SubagentRequested(SubagentRequested),
    /// A sub-agent ended.
    #[serde(rename = "subagent.finished")]
    SubagentFinished(SubagentFinished),
    /// `--allow-domain` refused a connection (as `network_denials` lists it).
    #[serde(rename = "network.denied")]
    NetworkDenied(Denial),
    /// A background command started.
    #[serde(rename = "background.started")]
    BackgroundStarted(BackgroundStarted),
    /// A background command ended.
    #[serde(rename = "background.finished")]
    BackgroundFinished(BackgroundFinished),
    /// The model's plan (TodoWrite) changed.
    #[serde(rename = "plan.updated")]
    PlanUpdated(PlanUpdated),
    /// An MCP server's tool list changed.
    #[serde(rename = "mcp.tools_changed")]
    McpToolsChanged(McpToolsChanged),
    /// The run ended (the last event), with the whole transcript.
    #[serde(rename = "run.finished")]
    RunFinished(RunFinished),
    /// An Agent Skill was loaded: by the model (Skill) or by a prompt command (turn 0).
    #[serde(rename = "skill.activated")]
    SkillActivated(SkillActivated),
    /// `--permission-prompt stdin`: a call waits for a person's answer on stdin.
    #[serde(rename = "permission.requested")]
    PermissionRequested(PermissionRequested),
    /// `--include-partial-messages`: a piece of the model's text as it streams.
    #[serde(rename = "assistant.delta")]
    AssistantDelta(AssistantDelta),
    /// A summary of the older history is about to be asked for (before the request).
    #[serde(rename = "context.compacting")]
    ContextCompacting(ContextCompacting),
    /// The history was compacted (as `context_compactions` lists it, summary aside).
    #[serde(rename = "context.compacted")]
    ContextCompacted(ContextCompacted),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct AssistantDelta {
    pub turn: u32,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PermissionRequested {
    /// The call's id (`tool_use_id`): the answer names it.
    pub id: String,
    pub name: String,
    pub input: Value,
    /// Why it is asked: the `ask` rule, or `--ask-by-default`.
    pub reason: String,
}

/// `context.compacting`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ContextCompacting {
    /// The turn whose request will carry the compacted history.
    pub turn: u32,
    /// The history's size now (the last request's usage, or an estimate).
    pub tokens: u64,
    /// The size over which a summary is asked for before the wall.
    pub threshold: Option<u64>,
    pub window: Option<u64>,
    /// `threshold`, `wall` or `resume`.
    pub reason: Reason,
    /// `--context-strategy`: `clear` or `summarize`.
    pub strategy: String,
    /// The model asked for the summary.
    pub model: String,
}

/// `context.compacted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ContextCompacted {
    pub turn: u32,
    pub tokens_before: u64,
    pub tokens_after_estimate: u64,
    /// The summary's length in characters (the text is in the transcript).
    pub summary_chars: usize,
    pub messages_summarized: usize,
    pub messages_kept: usize,
    pub messages_left_out: usize,
    /// The summary request's usage and cost (both also in the run's totals).
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// `run.started` / `subagent.started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Started {
    pub model: String,
    pub workspace: String,
    pub tools: Vec<String>,
    pub prompt: String,
    pub max_turns: u32,
    /// The `--verify` command.
    pub verify: Option<String>,
    pub agent_version: String,
    pub session_id: String,
    /// What a `--resume`d run continues (the transcript's `resumed_from`).
    pub resumed_from: Option<ResumedFrom>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct McpStarted {
    pub name: String,
    pub transport: String,
    /// `connected` or `failed`.
    pub status: String,
    pub protocol_version: Option<String>,
    pub tools: Vec<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct TurnStarted {
    pub turn: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Retry {
    pub turn: u32,
    pub attempt: u32,
    pub reason: String,
    pub delay_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ModelFallback {
    pub turn: u32,
    pub from: String,
    pub to: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct AssistantMessage {
    pub turn: u32,
    pub model: String,
    pub stop_reason: String,
    pub usage: Usage,
    /// The message as the transcript stores it, written as it is (last).
    #[schemars(with = "MessageSchema")]
    pub message: Verbatim,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct TurnFinished {
    pub turn: u32,
    pub model: String,
    pub stop_reason: Option<String>,
    /// The calls of this turn.
    pub tool_calls: usize,
    /// The run's so far.
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub context_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ToolStarted {
    pub turn: u32,
    pub id: String,
    pub name: String,
    /// `null` when the model's input was not JSON.
    pub input: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ToolRunning {
    pub turn: u32,
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ToolFinished {
    pub turn: u32,
    pub id: String,
    pub name: String,
    pub is_error: bool,
    pub denied: bool,
    pub duration_ms: u64,
    /// The result's first characters (redacted).
    pub content: String,
    pub content_truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SubagentRequested {
    pub tool_use_id: String,
    pub subagent_type: String,
    pub description: String,
    pub max_turns: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SubagentFinished {
    pub tool_use_id: String,
    pub status: String,
    pub num_turns: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct BackgroundStarted {
    pub id: String,
    pub command: String,
    pub pid: i32,
    pub started_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct BackgroundFinished {
    pub id: String,
    pub pid: i32,
    pub status: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub ended_ms: Option<u64>,
    pub killed: bool,
    pub killed_at_end: bool,
}

/// `skill.activated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SkillActivated {
    /// The skill's name.
    pub name: String,
    /// Its `SKILL.md`.
    pub path: String,
    /// The turn it was loaded in; 0: a prompt command, before the first request.
    pub turn: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PlanUpdated {
    pub turn: u32,
    pub todos: Vec<Todo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct McpToolsChanged {
    pub name: String,
    pub at_turn: u32,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    /// The names the model sees now.
    pub tools: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct RunFinished {
    pub status: String,
    pub exit_code: u8,
    /// The transcript (SPEC §7), written as it is (last): `transcript()` reads it.
    #[schemars(with = "Transcript")]
    pub transcript: Verbatim,
}

impl RunFinished {
    /// The transcript, typed.
    pub(crate) fn transcript(&self) -> Result<Transcript, String> {
        serde_json::from_str(&self.transcript.0)
            .map_err(|e| format!("run.finished: not an agent transcript ({e})"))
    }
}

/// A message in Anthropic's Messages API format, for the schema.
#[derive(JsonSchema)]
#[schemars(description = "A message in Anthropic's Messages API format ({role, content}).")]
#[expect(dead_code, reason = "a schema only")]
struct MessageSchema {
    role: String,
    content: Value,
}

/// JSON written as it is (its key order and number forms kept): a history message, the
/// transcript. Read back as any JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verbatim(pub String);

impl Serialize for Verbatim {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Verbatim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Verbatim(Value::deserialize(d)?.to_string()))
    }
}

impl RunEvent {
    /// The `type` of its line.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            RunEvent::RunStarted(_) => "run.started",
            RunEvent::SubagentStarted(_) => "subagent.started",
            RunEvent::McpStarted(_) => "mcp.started",
            RunEvent::TurnStarted(_) => "turn.started",
            RunEvent::Retry(_) => "retry",
            RunEvent::ModelFallback(_) => "model.fallback",
            RunEvent::AssistantMessage(_) => "assistant.message",
            RunEvent::TurnFinished(_) => "turn.finished",
            RunEvent::ToolStarted(_) => "tool.started",
            RunEvent::ToolRunning(_) => "tool.running",
            RunEvent::ToolFinished(_) => "tool.finished",
            RunEvent::VerifyFinished(_) => "verify.finished",
            RunEvent::ContextCleared(_) => "context.cleared",
            RunEvent::SubagentRequested(_) => "subagent.requested",
            RunEvent::SubagentFinished(_) => "subagent.finished",
            RunEvent::NetworkDenied(_) => "network.denied",
            RunEvent::BackgroundStarted(_) => "background.started",
            RunEvent::BackgroundFinished(_) => "background.finished",
            RunEvent::PlanUpdated(_) => "plan.updated",
            RunEvent::McpToolsChanged(_) => "mcp.tools_changed",
            RunEvent::RunFinished(_) => "run.finished",
            RunEvent::SkillActivated(_) => "skill.activated",
            RunEvent::PermissionRequested(_) => "permission.requested",
            RunEvent::AssistantDelta(_) => "assistant.delta",
            RunEvent::ContextCompacting(_) => "context.compacting",
            RunEvent::ContextCompacted(_) => "context.compacted",
        }
    }

    /// The field written last and as it is (`message`, `transcript`), if the event has one.
    pub(crate) fn verbatim(&self) -> Option<(&'static str, &Verbatim)> {
        match self {
            RunEvent::AssistantMessage(e) => Some(("message", &e.message)),
            RunEvent::RunFinished(e) => Some(("transcript", &e.transcript)),
            _ => None,
        }
    }
}

/// The JSON Schema of the event stream (`docs/reference/events.schema.json`): one of the
/// events, each with its envelope (`version`, `seq`, `elapsed_ms`, `subagent_id`).
#[cfg(test)]
pub(crate) fn events_schema() -> String {
    let mut schema = schemars::schema_for!(RunEvent);
    let envelope = serde_json::json!({
        "version": {"type": "integer", "const": crate::run::events::EVENTS_VERSION,
                    "description": "The event schema's version; fields are only ever added within one."},
        "seq": {"type": "integer", "minimum": 1, "description": "1, 2, 3 … with no gaps, in the order written."},
        "elapsed_ms": {"type": "integer", "minimum": 0, "description": "Since the run started."},
        "subagent_id": {"type": "string", "description": "A Task sub-agent's events: its id."}
    });
    if let Some(variants) = schema.get_mut("oneOf").and_then(Value::as_array_mut) {
        for v in variants {
            if let Some(props) = v.get_mut("properties").and_then(Value::as_object_mut) {
                for (k, p) in envelope.as_object().into_iter().flatten() {
                    props.insert(k.clone(), p.clone());
                }
            }
            if let Some(req) = v.get_mut("required").and_then(Value::as_array_mut) {
                req.extend(["version", "seq", "elapsed_ms"].map(Value::from));
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
