//! ATIF, the Agent Trajectory Interchange Format (v1.7, RFC 0001 of Harbor), as typed
//! structs, and the one mapping into it: `from_transcript` turns an owned `Transcript` into
//! a `Trajectory` (`--trajectory`, `agent batch`, `agent export atif`). The transcript is
//! the source of truth; the trajectory is a view of it that eval and training pipelines
//! read, so nothing here is recorded twice and every number is the transcript's.
//!
//! The mapping (docs/guide/harbor.md shows it): the system prompt is a system step, the
//! task a user step, each model response an agent step (`message`, `reasoning_content`,
//! `tool_calls`, `observation.results` from the tool results that answer it, `metrics`
//! from `responses`), a later user message (a verification round, a continuation) a user
//! step, each context clearing a system step with `extra.context_management`, each Task
//! sub-agent an entry of `subagent_trajectories` referenced from its call's result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::model::protocol::Usage;
use crate::record::transcript::{ResponseRecord, SubagentRecord, TRANSCRIPT_VERSION, Transcript};

/// The ATIF version written.
pub(crate) const SCHEMA_VERSION: &str = "ATIF-v1.7";
/// `agent.name`.
pub(crate) const AGENT_NAME: &str = "agent";
/// The start of the user message a failed `--verify` round sends (`run/verify.rs`).
const VERIFY_PREFIX: &str = "The verification command `";

type Extra = Map<String, Value>;

/// A whole trajectory (RFC 0001 `Trajectory`); also each embedded sub-agent's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trajectory {
    pub(crate) schema_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session_id: Option<String>,
    /// Set on embedded sub-agents: what their references resolve to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trajectory_id: Option<String>,
    pub(crate) agent: AgentInfo,
    pub(crate) steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) final_metrics: Option<FinalMetrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) subagent_trajectories: Vec<Trajectory>,
}

/// `agent`: the system that produced the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentInfo {
    pub(crate) name: String,
    pub(crate) version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

/// Who a step comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Source {
    System,
    User,
    Agent,
}

/// One step. `model_name`, `reasoning_content`, `tool_calls` and `metrics` only on agent
/// steps (the validator refuses them elsewhere).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Step {
    pub(crate) step_id: u32,
    pub(crate) source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model_name: Option<String>,
    pub(crate) message: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) observation: Option<Observation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metrics: Option<Metrics>,
    /// A step of the transcript a `--resume` run continued: not this run's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) is_copied_context: Option<bool>,
    /// How many billed responses the step's metrics add up (2 when a response cut off at
    /// the context window was answered again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) llm_call_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

/// A message or a result: text, or parts (text and images, ATIF v1.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One part of multimodal content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ContentPart {
    #[serde(rename = "type")]
    pub(crate) kind: PartKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) source: Option<ImageSource>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PartKind {
    Text,
    Image,
}

/// An image kept as a file or URL (`media_type` one of jpeg, png, gif, webp).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ImageSource {
    pub(crate) media_type: String,
    pub(crate) path: String,
}

/// One tool call of an agent step. `arguments` is always an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    pub(crate) tool_call_id: String,
    pub(crate) function_name: String,
    pub(crate) arguments: Extra,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Observation {
    pub(crate) results: Vec<ObservationResult>,
}

/// One tool result; `source_call_id` names a call of the same step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ObservationResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) source_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subagent_trajectory_ref: Option<Vec<SubagentRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

/// A reference to an embedded sub-agent trajectory (by `trajectory_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SubagentRef {
    pub(crate) trajectory_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

/// An agent step's usage. `prompt_tokens` includes the cached ones (ATIF's convention):
/// input + cache reads + cache writes; `cached_tokens` is the cache reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cached_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

/// The whole run's totals: the transcript's `usage` and `cost_usd` (sub-agents included).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FinalMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_cached_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) total_cost_usd: Option<f64>,
    pub(crate) total_steps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) extra: Option<Extra>,
}

impl Trajectory {
    /// The trajectory as the file `--trajectory` writes (pretty, one newline at the end).
    pub(crate) fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// A transcript document's trajectory, as the file `--trajectory` writes.
pub(crate) fn trajectory_json(transcript: &str) -> Result<String, String> {
    let t: Transcript =
        serde_json::from_str(transcript).map_err(|e| format!("not an agent transcript ({e})"))?;
    Ok(from_transcript(&t)?.to_json())
}

/// The trajectory of a transcript. Errors (a transcript of an unknown version, a message
/// that is not one) say what is wrong; the caller names the file.
pub(crate) fn from_transcript(t: &Transcript) -> Result<Trajectory, String> {
    if t.version != TRANSCRIPT_VERSION {
        return Err(format!(
            "transcript version {} is not supported (this agent reads version {TRANSCRIPT_VERSION})",
            t.version
        ));
    }
    let messages = parse_messages(t.messages.iter().map(|m| m.get()))?;
    let mut b = Builder::new(&t.model, t.resumed_from.is_some());
    if let Some(prompt) = t.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        b.push(Source::System, Content::Text(prompt.to_string()));
    }
    b.responses(&t.responses);
    let mut context: Vec<(u32, String, Extra)> = t
        .context_clearings
        .iter()
        .map(|c| {
            (
                c.turn,
                format!(
                    "Cleared {} old tool result(s) from the model's context.",
                    c.results_cleared
                ),
                clearing_step_extra(c.results_cleared, c.tokens_before, c.tokens_after_estimate),
            )
        })
        .collect();
    // A compaction (a failed attempt changed nothing, so it is no step) replaces the older
    // history with its summary before the request of its turn.
    context.extend(t.context_compactions.iter().filter_map(|c| {
        let summary = c.summary.as_ref()?;
        Some((
            c.turn,
            format!("The older history was replaced by this summary:\n\n{summary}"),
            compaction_step_extra(c),
        ))
    }));
    context.sort_by_key(|(turn, _, _)| *turn);
    b.clearings = context;
    b.messages(&messages);
    b.rest_of_clearings();
    let mut subagents = Vec::new();
    for s in &t.subagents {
        subagents.push(subagent(s, t)?);
        b.link_subagent(s, &t.session_id);
    }
    let mut steps = b.finish();
    if steps.is_empty() {
        steps.push(plain_step(
            1,
            Source::System,
            "The run recorded no messages: it ended before its first request.".into(),
        ));
    }
    let total_steps = steps.len() as u32;
    let mut extra = Extra::new();
    extra.insert("status".into(), json!(t.status));
    if let Some(reason) = &t.stop_reason {
        extra.insert("stop_reason".into(), json!(reason));
    }
    if let Some(e) = &t.error {
        extra.insert(
            "error".into(),
            json!({"kind": e.kind, "message": e.message}),
        );
    }
    if let Some(v) = &t.structured_output {
        extra.insert("structured_output".into(), v.clone());
    }
    if let Some(r) = &t.resumed_from {
        extra.insert("resumed_from".into(), json!(r.path));
    }
    let notes = (!t.subagents.is_empty()).then(|| {
        "final_metrics are the run's totals, its sub-agents' included; each \
         subagent_trajectories entry has its own"
            .to_string()
    });
    Ok(Trajectory {
        schema_version: SCHEMA_VERSION.into(),
        session_id: Some(t.session_id.clone()).filter(|s| !s.is_empty()),
        trajectory_id: None,
        agent: agent_info(&t.model, t.provider.as_deref()),
        steps,
        notes,
        final_metrics: Some(final_metrics(
            &t.usage,
            t.cost_usd,
            total_steps,
            Some(t.num_turns),
        )),
        extra: Some(extra),
        subagent_trajectories: subagents,
    })
}

/// `agent`: this binary, the run's model, and the API it was reached through.
fn agent_info(model: &str, provider: Option<&str>) -> AgentInfo {
    AgentInfo {
        name: AGENT_NAME.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        model_name: Some(model.to_string()).filter(|m| !m.is_empty()),
        extra: provider.map(|p| {
            let mut m = Extra::new();
            m.insert("provider".into(), json!(p));
            m
        }),
    }
}

/// A sub-agent as an embedded trajectory: its task, its turns and its results; its usage
/// is only known as a total (its `final_metrics`).
fn subagent(s: &SubagentRecord, parent: &Transcript) -> Result<Trajectory, String> {
    let messages = parse_messages(s.messages.iter().map(|m| m.get()))
        .map_err(|e| format!("sub-agent {}: {e}", s.id))?;
    let mut b = Builder::new(&parent.model, false);
    b.messages(&messages);
    let mut steps = b.finish();
    if steps.is_empty() {
        steps.push(plain_step(
            1,
            Source::User,
            format!("{} (the sub-agent recorded no messages)", s.description),
        ));
    }
    let total = steps.len() as u32;
    let mut extra = Extra::new();
    extra.insert("subagent_type".into(), json!(s.subagent_type));
    extra.insert("description".into(), json!(s.description));
    extra.insert("status".into(), json!(s.status));
    extra.insert("parent_tool_call_id".into(), json!(s.tool_use_id));
    Ok(Trajectory {
        schema_version: SCHEMA_VERSION.into(),
        session_id: Some(parent.session_id.clone()).filter(|s| !s.is_empty()),
        trajectory_id: Some(s.id.clone()),
        agent: agent_info(&parent.model, parent.provider.as_deref()),
        steps,
        notes: None,
        final_metrics: Some(final_metrics(
            &s.usage,
            s.cost_usd,
            total,
            Some(s.num_turns),
        )),
        extra: Some(extra),
        subagent_trajectories: Vec::new(),
    })
}

/// `final_metrics` from a usage total.
fn final_metrics(usage: &Usage, cost: Option<f64>, steps: u32, turns: Option<u32>) -> FinalMetrics {
    let m = metrics(usage, cost);
    FinalMetrics {
        total_prompt_tokens: m.prompt_tokens,
        total_completion_tokens: m.completion_tokens,
        total_cached_tokens: m.cached_tokens,
        total_cost_usd: cost,
        total_steps: steps,
        extra: turns.map(|n| {
            let mut e = m.extra.unwrap_or_default();
            e.insert("num_turns".into(), json!(n));
            e
        }),
    }
}

/// A usage as ATIF metrics; a usage that was not reported gives no counts.
fn metrics(u: &Usage, cost: Option<f64>) -> Metrics {
    if u.unknown {
        return Metrics {
            cost_usd: cost,
            ..Metrics::default()
        };
    }
    let mut extra = Extra::new();
    if u.cache_creation_input_tokens > 0 {
        extra.insert(
            "cache_creation_input_tokens".into(),
            json!(u.cache_creation_input_tokens),
        );
    }
    if u.reasoning_output_tokens > 0 {
        extra.insert(
            "reasoning_output_tokens".into(),
            json!(u.reasoning_output_tokens),
        );
    }
    Metrics {
        prompt_tokens: Some(
            u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens,
        ),
        completion_tokens: Some(u.output_tokens),
        cached_tokens: Some(u.cache_read_input_tokens),
        cost_usd: cost,
        extra: (!extra.is_empty()).then_some(extra),
    }
}

/// `extra` of a context-management system step. A clearing replaces old tool results with
/// a placeholder; a compaction summary maps through `compaction_step_extra`.
fn clearing_step_extra(cleared: usize, before: u64, after: u64) -> Extra {
    let mut cm = Extra::new();
    cm.insert("type".into(), json!("clearing"));
    cm.insert("boundary".into(), json!("edit"));
    cm.insert("results_cleared".into(), json!(cleared));
    cm.insert("tokens_before".into(), json!(before));
    cm.insert("tokens_after_estimate".into(), json!(after));
    cm
}

/// `extra.context_management` of a compaction: the summary replaced the older history.
fn compaction_step_extra(c: &crate::run::compaction::Compaction) -> Extra {
    let mut cm = Extra::new();
    cm.insert("type".into(), json!("compaction"));
    cm.insert("boundary".into(), json!("replace"));
    cm.insert("reason".into(), json!(c.reason));
    cm.insert("model".into(), json!(c.model));
    cm.insert("messages_summarized".into(), json!(c.messages_summarized));
    cm.insert("messages_kept".into(), json!(c.messages_kept));
    cm.insert("tokens_before".into(), json!(c.tokens_before));
    cm.insert(
        "tokens_after_estimate".into(),
        json!(c.tokens_after_estimate),
    );
    cm
}

/// A system step that marks a change of the model's context (`extra.context_management`).
pub(crate) fn context_step(step_id: u32, message: String, context_management: Extra) -> Step {
    let mut extra = Extra::new();
    extra.insert(
        "context_management".into(),
        Value::Object(context_management),
    );
    Step {
        extra: Some(extra),
        ..plain_step(step_id, Source::System, message)
    }
}

fn plain_step(step_id: u32, source: Source, message: String) -> Step {
    Step {
        step_id,
        source,
        model_name: None,
        message: Content::Text(message),
        reasoning_content: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        is_copied_context: None,
        llm_call_count: None,
        extra: None,
    }
}

/// A message of the transcript (Anthropic's format), as far as the mapping reads it.
#[derive(Deserialize)]
struct Msg {
    role: String,
    content: MsgContent,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum MsgContent {
    Text(String),
    Blocks(Vec<Block>),
}

/// A content block; kinds this release does not map are kept as `Other` and counted in
/// the step's `extra.unmapped_blocks` rather than refused (a later release's transcript).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: bool,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {},
    Reasoning {
        #[serde(default)]
        summary: String,
    },
    /// An image the transcript names by reference (or holds inline: not mapped, ATIF's
    /// image parts name a file).
    Image {
        #[serde(default)]
        source: Value,
    },
    #[serde(other)]
    Other,
}

fn parse_messages<'a>(texts: impl Iterator<Item = &'a str>) -> Result<Vec<Msg>, String> {
    texts
        .enumerate()
        .map(|(i, text)| {
            serde_json::from_str::<Msg>(text)
                .map_err(|e| format!("message {} of the transcript is not a message ({e})", i + 1))
        })
        .collect()
}

/// The image part of a referenced image; None for one held inline (ATIF's parts name a
/// file or URL, and the ATIF file does not carry bytes).
fn image_part(source: &Value) -> Option<ContentPart> {
    if source.get("type").and_then(Value::as_str) != Some("reference") {
        return None;
    }
    Some(ContentPart {
        kind: PartKind::Image,
        text: None,
        source: Some(ImageSource {
            media_type: source.get("media_type")?.as_str()?.to_string(),
            path: source.get("path")?.as_str()?.to_string(),
        }),
    })
}

fn text_part(text: String) -> ContentPart {
    ContentPart {
        kind: PartKind::Text,
        text: Some(text),
        source: None,
    }
}

/// Text alone, or text and image parts when there are images.
fn content_of(text: String, images: Vec<ContentPart>) -> Content {
    if images.is_empty() {
        return Content::Text(text);
    }
    let mut parts = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() {
        parts.push(text_part(text));
    }
    parts.extend(images);
    Content::Parts(parts)
}

/// A tool result's content: its text, with its referenced images as image parts.
fn result_content(content: &Value) -> Content {
    let images = match content {
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("image"))
            .filter_map(|p| image_part(p.get("source")?))
            .collect(),
        _ => Vec::new(),
    };
    content_of(result_text(content), images)
}

/// A tool result's text: the string, or the text parts of a list joined.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Builds the steps of one agent's messages, in order.
struct Builder {
    model: String,
    steps: Vec<Step>,
    /// Responses by the index of the message they gave.
    by_message: BTreeMap<u64, Vec<ResponseRecord>>,
    /// Responses that gave no message (cut off at the window, silent): billed with the
    /// next message's, or with the last agent step when none follows.
    orphans: Vec<ResponseRecord>,
    /// The responses billed to each agent step (by its index in `steps`).
    billed: BTreeMap<usize, Vec<ResponseRecord>>,
    /// The turn (1, 2 …) of the next agent step that a response answered.
    turn: u32,
    /// Clearings by the turn whose request first carried the cleared history.
    /// Context-management steps (clearings, compactions) by the turn they preceded.
    clearings: Vec<(u32, String, Extra)>,
    /// Resumed: messages before the first one this run's model gave are copied context.
    resumed: bool,
    first_answered: Option<u64>,
    /// User messages seen with text (the first is the task).
    user_texts: u32,
    verify_rounds: u32,
}

impl Builder {
    fn new(model: &str, resumed: bool) -> Builder {
        Builder {
            model: model.to_string(),
            steps: Vec::new(),
            by_message: BTreeMap::new(),
            orphans: Vec::new(),
            billed: BTreeMap::new(),
            turn: 0,
            clearings: Vec::new(),
            resumed,
            first_answered: None,
            user_texts: 0,
            verify_rounds: 0,
        }
    }

    /// Each response with a message goes to that message; a silent one waits for the
    /// next message that has one.
    fn responses(&mut self, responses: &[ResponseRecord]) {
        let mut pending = Vec::new();
        for r in responses {
            match r.message {
                Some(i) => {
                    let entry = self.by_message.entry(i).or_default();
                    entry.append(&mut pending);
                    entry.push(r.clone());
                }
                None => pending.push(r.clone()),
            }
        }
        self.orphans = pending;
        self.first_answered = self.by_message.keys().next().copied();
    }

    fn push(&mut self, source: Source, message: Content) -> &mut Step {
        let id = self.steps.len() as u32 + 1;
        let mut step = plain_step(id, source, String::new());
        step.message = message;
        let at = self.steps.len();
        self.steps.push(step);
        &mut self.steps[at]
    }

    /// The clearings that took effect before the request of `turn` (all that remain when
    /// None).
    fn clearings_before(&mut self, turn: Option<u32>) {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.clearings)
            .into_iter()
            .partition(|(t, _, _)| turn.is_none_or(|n| *t <= n));
        self.clearings = later;
        for (_, message, cm) in now {
            let id = self.steps.len() as u32 + 1;
            self.steps.push(context_step(id, message, cm));
        }
    }

    fn rest_of_clearings(&mut self) {
        self.clearings_before(None);
    }

    fn messages(&mut self, messages: &[Msg]) {
        for (i, m) in messages.iter().enumerate() {
            let copied = self.resumed && self.first_answered.is_some_and(|f| (i as u64) + 1 < f);
            let before = self.steps.len();
            if m.role == "assistant" {
                self.assistant(i as u64, m);
            } else {
                self.user(m);
            }
            if copied {
                for s in &mut self.steps[before..] {
                    s.is_copied_context = Some(true);
                }
            }
        }
    }

    fn assistant(&mut self, index: u64, m: &Msg) {
        let responses = self.by_message.remove(&index).unwrap_or_default();
        if !responses.is_empty() {
            self.turn += 1;
            self.clearings_before(Some(self.turn));
        }
        let (mut text, mut reasoning, mut calls, mut unmapped) =
            (Vec::new(), Vec::new(), Vec::new(), 0u32);
        match &m.content {
            MsgContent::Text(t) => text.push(t.clone()),
            MsgContent::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        Block::Text { text: t } => text.push(t.clone()),
                        Block::Thinking { thinking } if !thinking.is_empty() => {
                            reasoning.push(thinking.clone())
                        }
                        Block::Reasoning { summary } if !summary.is_empty() => {
                            reasoning.push(summary.clone())
                        }
                        Block::ToolUse { id, name, input } => calls.push(ToolCall {
                            tool_call_id: id.clone(),
                            function_name: name.clone(),
                            arguments: match input {
                                Value::Object(o) => o.clone(),
                                Value::Null => Extra::new(),
                                other => {
                                    let mut o = Extra::new();
                                    o.insert("input".into(), other.clone());
                                    o
                                }
                            },
                            extra: None,
                        }),
                        Block::Thinking { .. }
                        | Block::Reasoning { .. }
                        | Block::RedactedThinking {} => {}
                        Block::ToolResult { .. } | Block::Image { .. } | Block::Other => {
                            unmapped += 1
                        }
                    }
                }
            }
        }
        let model = responses
            .last()
            .map(|r| r.model.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| self.model.clone());
        let step = self.push(Source::Agent, Content::Text(text.join("\n\n")));
        step.model_name = Some(model).filter(|m| !m.is_empty());
        step.reasoning_content = (!reasoning.is_empty()).then(|| reasoning.join("\n\n"));
        step.tool_calls = (!calls.is_empty()).then_some(calls);
        if unmapped > 0 {
            step.extra = Some(unmapped_extra(unmapped));
        }
        if !responses.is_empty() {
            self.billed.insert(self.steps.len() - 1, responses);
        }
    }

    fn user(&mut self, m: &Msg) {
        let (mut text, mut results, mut images, mut unmapped) =
            (Vec::new(), Vec::new(), Vec::new(), 0u32);
        match &m.content {
            MsgContent::Text(t) => text.push(t.clone()),
            MsgContent::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        Block::Text { text: t } => text.push(t.clone()),
                        Block::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            results.push((tool_use_id.clone(), result_content(content), *is_error))
                        }
                        Block::Image { source } => match image_part(source) {
                            Some(part) => images.push(part),
                            None => unmapped += 1,
                        },
                        _ => unmapped += 1,
                    }
                }
            }
        }
        for (id, content, is_error) in results {
            self.observe(id, content, is_error);
        }
        if text.is_empty() && images.is_empty() && unmapped == 0 {
            return;
        }
        let joined = text.join("\n\n");
        let mut extra = Extra::new();
        self.user_texts += u32::from(!text.is_empty());
        if joined.starts_with(VERIFY_PREFIX) {
            self.verify_rounds += 1;
            extra.insert("verification_round".into(), json!(self.verify_rounds));
        } else if self.user_texts == 1 {
            extra.insert("kind".into(), json!("task"));
        }
        if unmapped > 0 {
            extra.extend(unmapped_extra(unmapped));
        }
        let step = self.push(Source::User, content_of(joined, images));
        step.extra = (!extra.is_empty()).then_some(extra);
    }

    /// A tool result goes to the agent step whose call it answers; one whose call is not
    /// in the last agent step (a call the resumed run left unanswered) goes there without
    /// `source_call_id`, naming the call in `extra`.
    fn observe(&mut self, id: String, content: Content, is_error: bool) {
        let Some(step) = self
            .steps
            .iter_mut()
            .rev()
            .find(|s| s.source == Source::Agent)
        else {
            let step = self.push(Source::User, Content::Text(String::new()));
            step.observation = Some(Observation {
                results: vec![orphan_result(id, content, is_error)],
            });
            return;
        };
        let known = step
            .tool_calls
            .iter()
            .flatten()
            .any(|c| c.tool_call_id == id);
        let result = if known {
            let mut extra = Extra::new();
            if is_error {
                extra.insert("is_error".into(), json!(true));
            }
            ObservationResult {
                source_call_id: Some(id),
                content: Some(content),
                subagent_trajectory_ref: None,
                extra: (!extra.is_empty()).then_some(extra),
            }
        } else {
            orphan_result(id, content, is_error)
        };
        step.observation
            .get_or_insert(Observation {
                results: Vec::new(),
            })
            .results
            .push(result);
    }

    /// The Task call's result references the sub-agent's trajectory (a result is added
    /// for a call that had none: the run ended while the sub-agent ran).
    fn link_subagent(&mut self, s: &SubagentRecord, session_id: &str) {
        let reference = SubagentRef {
            trajectory_id: s.id.clone(),
            session_id: Some(session_id.to_string()).filter(|s| !s.is_empty()),
            extra: None,
        };
        let Some(step) = self.steps.iter_mut().find(|st| {
            st.tool_calls
                .iter()
                .flatten()
                .any(|c| c.tool_call_id == s.tool_use_id)
        }) else {
            return;
        };
        let obs = step.observation.get_or_insert(Observation {
            results: Vec::new(),
        });
        match obs
            .results
            .iter_mut()
            .find(|r| r.source_call_id.as_deref() == Some(&s.tool_use_id))
        {
            Some(r) => r.subagent_trajectory_ref = Some(vec![reference]),
            None => obs.results.push(ObservationResult {
                source_call_id: Some(s.tool_use_id.clone()),
                content: None,
                subagent_trajectory_ref: Some(vec![reference]),
                extra: None,
            }),
        }
    }

    /// The steps, each agent step with the metrics of its responses; responses that gave
    /// no message are billed to the last agent step of this run.
    fn finish(mut self) -> Vec<Step> {
        let mut left = std::mem::take(&mut self.orphans);
        left.extend(std::mem::take(&mut self.by_message).into_values().flatten());
        if !left.is_empty() {
            let last = self
                .steps
                .iter()
                .rposition(|s| s.source == Source::Agent && !s.is_copied_context.unwrap_or(false));
            if let Some(i) = last {
                self.billed.entry(i).or_default().extend(left);
            }
        }
        for (i, responses) in std::mem::take(&mut self.billed) {
            let step = &mut self.steps[i];
            step.llm_call_count = Some(responses.len() as u32);
            step.metrics = Some(sum_metrics(&responses));
        }
        self.steps
    }
}

fn orphan_result(id: String, content: Content, is_error: bool) -> ObservationResult {
    let mut extra = Extra::new();
    extra.insert("tool_use_id".into(), json!(id));
    if is_error {
        extra.insert("is_error".into(), json!(true));
    }
    ObservationResult {
        source_call_id: None,
        content: Some(content),
        subagent_trajectory_ref: None,
        extra: Some(extra),
    }
}

fn unmapped_extra(n: u32) -> Extra {
    let mut e = Extra::new();
    e.insert("unmapped_blocks".into(), json!(n));
    e
}

/// The sum of responses' usage and cost as one step's metrics.
fn sum_metrics(responses: &[ResponseRecord]) -> Metrics {
    let mut usage = Usage::default();
    let mut cost = Some(0.0);
    for r in responses {
        usage.add(&r.usage);
        cost = cost.zip(r.cost_usd).map(|(a, b)| a + b);
    }
    metrics(&usage, cost.map(crate::run::budget::round_usd))
}

#[cfg(test)]
#[path = "atif_tests.rs"]
mod tests;
