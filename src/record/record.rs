//! The run's record (`RunRecord`): everything the run has done so far, kept up to date
//! as the run goes. Its JSON form (SPEC §7) is `render.rs`; how a run ended, `outcome.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use std::sync::Arc;

use crate::model::protocol::{ContentBlock, Role, Usage};
use crate::record::history::Entry;
use crate::run::budget::{Prices, round_usd};
use crate::run::compaction::{Compaction, RecordFacts};
use crate::run::context::Clearing;
use crate::util::sync::Locked;

#[path = "render.rs"]
mod render;

use crate::record::transcript::{CallMetadata, Network};
pub(crate) use crate::record::transcript::{
    DenialRecord, ModelUse, PlanChange, ResponseRecord, ResumedFrom, SubagentRecord,
    ToolCallRecord, VerificationRecord,
};
use crate::tools::paths::ChangeKind;

/// Everything the run has done so far. Shared (behind a mutex) with the signal and
/// deadline threads, so that every way out can write it. Its fields are private: the run
/// changes it through the named `record_*` methods below (one per thing that happens)
/// and reads it through accessors; `render.rs` (a child module) turns it into JSON.
#[derive(Debug)]
pub(crate) struct RunRecord {
    started: Instant,
    model: String,
    /// Every model that answered, in the order each first did (`--fallback-model`).
    models_used: Vec<ModelUse>,
    workspace: PathBuf,
    tools: Vec<String>,
    /// Every message as it happened (the requests may carry cleared copies), each
    /// serialised once (`history.rs`).
    messages: Vec<Arc<Entry>>,
    tool_calls: Vec<ToolCallRecord>,
    usage: Usage,
    num_turns: u32,
    api_duration: Duration,
    retries: u32,
    stop_reason: Option<String>,
    permission_denials: Vec<DenialRecord>,
    /// Path → how it changed; a file created stays created (`note_file_change`).
    files_changed: BTreeMap<String, ChangeKind>,
    /// USD so far; None when the model's price is unknown.
    cost_usd: Option<f64>,
    verifications: Vec<VerificationRecord>,
    /// `git diff --stat` at the end of the run; None outside a git repository.
    git_diff_stat: Option<String>,
    /// The directory of saved outputs, when it is kept (`-o`, `--keep-spill`) and exists.
    spill_dir: Option<PathBuf>,
    /// The MCP servers of the run, connected or failed.
    mcp_servers: Vec<crate::mcp::ServerReport>,
    /// The last request's input size in tokens (input + cache read + cache creation).
    context_tokens: Option<u64>,
    /// The context window the run worked with, when known.
    context_window: Option<u64>,
    /// Each clearing of old tool results.
    context_clearings: Vec<Clearing>,
    /// The earlier parts of a final answer cut off by `max_tokens` and continued: the
    /// result is these, then the last assistant message's text.
    answer_parts: Vec<String>,
    /// The last message is the partial answer of a response cut off at the context
    /// window (`record_wall`): the turn that answers again replaces it.
    wall_partial: bool,
    /// A random UUID per run (`session_id`).
    session_id: String,
    /// `--output-schema`: the accepted answer (the run's `result`, serialised).
    structured_output: Option<Value>,
    /// `--resume`: `{path, session_id, num_turns, status, usage, cost_usd}` of the
    /// transcript this run continues.
    resumed_from: Option<ResumedFrom>,
    /// The API the model was reached through (`--provider`; a cassette's on replay).
    provider: Option<String>,
    /// Which network tier confined the commands (`{"tier": …}`), once known.
    network: Option<Network>,
    /// Connections the `--allow-domain` proxy refused, in order.
    network_denials: Vec<crate::net::proxy::Denial>,
    /// Every background command (Bash `run_in_background`), and the generation of the
    /// table it was copied from (a later one is newer).
    background: (u64, Vec<crate::tools::background::JobRecord>),
    /// The model's plan (TodoWrite), as last written.
    plan: Vec<crate::tools::todo_write::Todo>,
    /// Each change of the plan: `{turn, elapsed_ms, todos}`.
    plan_history: Vec<PlanChange>,
    /// The turn being requested, streamed or executed (calls may start while it streams).
    request_turn: u32,
    /// Task's sub-agents, running (as of their last checkpoint) or ended.
    subagents: Vec<SubagentRecord>,
    /// The skills found, each with the turn it was loaded at.
    skills: Vec<crate::skills::SkillRecord>,
    /// The system prompt sent (the transcript's `system_prompt`).
    system_prompt: Option<String>,
    /// Every billed response of this agent, in order (`responses`).
    responses: Vec<ResponseRecord>,
    /// Each summarising compaction of the history, and each attempt that failed.
    context_compactions: Vec<Compaction>,
}

impl RunRecord {
    /// The provider the run speaks to (the transcript's `provider`).
    pub(crate) fn record_provider(&mut self, name: &str) {
        self.provider = Some(name.to_string());
    }

    pub(crate) fn new(model: &str, workspace: PathBuf, tools: Vec<String>) -> Self {
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
            wall_partial: false,
            session_id: crate::record::session::new_session_id(),
            structured_output: None,
            resumed_from: None,
            provider: None,
            network: None,
            network_denials: Vec::new(),
            background: (0, Vec::new()),
            plan: Vec::new(),
            plan_history: Vec::new(),
            request_turn: 0,
            subagents: Vec::new(),
            context_compactions: Vec::new(),
            skills: Vec::new(),
            system_prompt: None,
            responses: Vec::new(),
        }
    }

    /// The skills discovery found (`agent run` at start-up).
    pub(crate) fn record_skills(&mut self, skills: Vec<crate::skills::SkillRecord>) {
        self.skills = skills;
    }

    /// The skills found, as the transcript lists them.
    pub(crate) fn skills(&self) -> &[crate::skills::SkillRecord] {
        &self.skills
    }

    /// Skill `name` was loaded, in the current turn (0: by a prompt command before the
    /// first); returns that turn and the skill's `SKILL.md`.
    pub(crate) fn record_skill_activated(&mut self, name: &str) -> (u32, String) {
        let turn = self.request_turn;
        match self
            .skills
            .iter_mut()
            .find(|s| s.name == name && s.skipped.is_none())
        {
            Some(s) => {
                s.activated_turn.get_or_insert(turn);
                (turn, s.path.clone())
            }
            None => (turn, String::new()),
        }
    }

    /// The system prompt the run sends.
    pub(crate) fn record_system_prompt(&mut self, prompt: &str) {
        self.system_prompt = Some(prompt.to_string());
    }

    /// One billed response, with the index of the message it gave (None: it gave none).
    fn record_response(
        &mut self,
        message: Option<usize>,
        model: &str,
        usage: &Usage,
        prices: &Prices,
    ) {
        self.responses.push(ResponseRecord {
            message: message.map(|i| i as u64),
            model: model.to_string(),
            usage: *usage,
            cost_usd: prices.cost(model, usage).map(round_usd),
        });
    }

    /// The billed responses so far.
    pub(crate) fn responses(&self) -> &[ResponseRecord] {
        &self.responses
    }

    /// The network tier the commands run under (`agent run` at start-up).
    pub(crate) fn record_network(&mut self, tier: Network) {
        self.network = Some(tier);
    }

    /// A connection the proxy refused.
    pub(crate) fn record_network_denial(&mut self, denial: crate::net::proxy::Denial) {
        self.network_denials.push(denial);
    }

    // ---- what happens during a run ----

    /// `agent run` starts (or started) these MCP servers (connected, failed, starting).
    pub(crate) fn record_mcp_servers(&mut self, servers: Vec<crate::mcp::ServerReport>) {
        self.mcp_servers = servers;
    }

    /// One MCP server's start-up ended: its entry is replaced.
    pub(crate) fn record_mcp_server(&mut self, server: crate::mcp::ServerReport) {
        match self.mcp_servers.iter_mut().find(|s| s.name == server.name) {
            Some(s) => *s = server,
            None => self.mcp_servers.push(server),
        }
    }

    /// An MCP server's tool list changed during the run: its entry lists its tools now
    /// and, in `tools_changed`, when and how.
    pub(crate) fn record_mcp_tools_changed(
        &mut self,
        server: &str,
        change: crate::mcp::refresh::ToolsChange,
        tools: Vec<String>,
    ) {
        if let Some(s) = self.mcp_servers.iter_mut().find(|s| s.name == server) {
            s.tools = tools;
            s.tools_changed.push(change);
        }
    }

    /// The enabled tools, once the MCP servers' have joined the built-in ones.
    pub(crate) fn record_tools(&mut self, tools: Vec<String>) {
        self.tools = tools;
    }

    /// `--resume`: the transcript this run continues.
    pub(crate) fn record_resumed_from(&mut self, from: ResumedFrom) {
        self.resumed_from = Some(from);
    }

    /// The initial `cost_usd`: 0, or null for a model without a price.
    pub(crate) fn record_start_price(&mut self, prices: &Prices) {
        self.cost_usd = prices.cost(&self.model, &self.usage);
    }

    /// The context window the run works with (from the start, or learned at the wall).
    pub(crate) fn record_context_window(&mut self, window: Option<u64>) {
        self.context_window = window;
    }

    /// A message of ours (the task, a continuation or verification request).
    pub(crate) fn record_message(&mut self, entry: Arc<Entry>) {
        self.messages.push(entry);
    }

    /// The last message, replaced by `entry` (text joined to tool results).
    pub(crate) fn replace_last_message(&mut self, entry: Arc<Entry>) {
        self.messages.pop();
        self.messages.push(entry);
    }

    /// Time spent waiting for the model.
    pub(crate) fn record_api_time(&mut self, elapsed: Duration) {
        self.api_duration += elapsed;
    }

    /// A request retried by the provider.
    pub(crate) fn record_retry(&mut self) {
        self.retries += 1;
    }

    /// A model turn: its message, its stop reason, the model that answered and its
    /// usage priced by that model. Returns the run's turn count.
    pub(crate) fn record_turn(
        &mut self,
        model: &str,
        stop_reason: &str,
        usage: &Usage,
        prices: &Prices,
        entry: Arc<Entry>,
    ) -> u32 {
        if std::mem::take(&mut self.wall_partial) {
            self.messages.pop(); // the retried turn's partial answer, now answered again
        }
        self.num_turns += 1;
        self.stop_reason = Some(stop_reason.to_string());
        self.model = model.to_string();
        self.add_response(model, usage, prices, true);
        self.record_response(Some(self.messages.len()), model, usage, prices);
        self.messages.push(entry);
        self.num_turns
    }

    /// A response billed but no model turn (cut off at the context window, `stop`). Its
    /// partial answer, if it said anything, stands last in `messages` (not in the
    /// requests) until the turn is answered again (`record_turn` replaces it), so a run
    /// that ends here (`context_exceeded`, a signal, `--timeout`) keeps it.
    pub(crate) fn record_wall(
        &mut self,
        model: &str,
        stop: &str,
        usage: &Usage,
        prices: &Prices,
        partial: Option<Arc<Entry>>,
    ) {
        self.add_response(model, usage, prices, false);
        self.model = model.to_string();
        self.stop_reason = Some(stop.to_string());
        if std::mem::take(&mut self.wall_partial) {
            self.messages.pop(); // an earlier attempt's partial answer
        }
        let at = partial.is_some().then_some(self.messages.len());
        self.record_response(at, model, usage, prices);
        if let Some(p) = partial {
            self.messages.push(p);
            self.wall_partial = true;
        }
    }

    /// The last request's input size in tokens.
    pub(crate) fn record_context_tokens(&mut self, tokens: Option<u64>) {
        self.context_tokens = tokens;
    }

    /// A turn's calls (each with its denial, if a rule or hook refused it), then the
    /// user message of their results. A call that succeeded notes the file it changed.
    pub(crate) fn record_results(
        &mut self,
        calls: Vec<(ToolCallRecord, Option<DenialRecord>)>,
        results: Arc<Entry>,
    ) {
        for (call, denial) in calls {
            self.record_call(call, denial);
        }
        self.messages.push(results);
    }

    /// One executed (or refused) call.
    pub(crate) fn record_call(&mut self, call: ToolCallRecord, denial: Option<DenialRecord>) {
        self.permission_denials.extend(denial);
        if !call.is_error {
            for c in &call.changes {
                self.note_change(&c.path, c.change);
            }
        }
        self.tool_calls.push(call);
    }

    /// One summarising compaction (or a failed attempt): its summary request's usage
    /// joins the run's, priced by the model that wrote it (no model turn). Returns it
    /// with its cost filled in.
    pub(crate) fn record_compaction(&mut self, mut c: Compaction, prices: &Prices) -> Compaction {
        if c.usage != Usage::default() {
            c.cost_usd = prices.cost(&c.model, &c.usage);
            self.add_response(&c.model, &c.usage, prices, false);
            // A billed response that gave no message of the conversation.
            self.record_response(None, &c.model, &c.usage, prices);
        }
        self.context_compactions.push(c.clone());
        c
    }

    /// What a summary must take from the record, not from the model's memory: the files
    /// changed, the latest `limit` Bash commands with how each ended, the plan.
    pub(crate) fn compaction_facts(&self, limit: usize) -> RecordFacts {
        let files_changed = self
            .files_changed
            .iter()
            .map(|(p, c)| {
                let how = match c {
                    ChangeKind::Created => "created",
                    ChangeKind::Modified => "modified",
                    ChangeKind::Deleted => "deleted",
                };
                (p.clone(), how.to_string())
            })
            .collect();
        let mut commands: Vec<String> = self
            .tool_calls
            .iter()
            .rev()
            .filter_map(|c| {
                let cmd = c.input.get("command")?.as_str()?;
                let how = match c.metadata.rest.get("exit_code") {
                    Some(code) if !code.is_null() => format!("exit {code}"),
                    _ if c.is_error => "failed".to_string(),
                    _ => "ended".to_string(),
                };
                Some(format!(
                    "`{}` ({how}, turn {})",
                    crate::util::text::ellipsis(cmd, 200),
                    c.turn
                ))
            })
            .take(limit)
            .collect();
        commands.reverse();
        RecordFacts {
            files_changed,
            commands,
            plan: self.plan.iter().map(|t| t.line()).collect(),
        }
    }

    /// Whether a compaction (not a failed attempt) was made for `turn`.
    pub(crate) fn compacted_at(&self, turn: u32) -> bool {
        self.context_compactions
            .iter()
            .any(|c| c.turn == turn && c.error.is_none())
    }

    /// Whether old tool results were cleared for `turn`.
    pub(crate) fn cleared_at(&self, turn: u32) -> bool {
        self.context_clearings.iter().any(|c| c.turn == turn)
    }

    /// How many compactions were made (failed attempts aside).
    pub(crate) fn compactions(&self) -> u32 {
        self.context_compactions
            .iter()
            .filter(|c| c.error.is_none())
            .count() as u32
    }

    /// One clearing of old tool results.
    pub(crate) fn record_clearing(&mut self, clearing: Clearing) {
        self.context_clearings.push(clearing);
    }

    /// A final answer cut off by `max_tokens`: this part, before its continuation.
    pub(crate) fn record_answer_part(&mut self, text: String) {
        self.answer_parts.push(text);
    }

    /// The cut-off parts no longer join the answer (a tool call came, or a new answer).
    pub(crate) fn drop_answer_parts(&mut self) {
        self.answer_parts.clear();
    }

    /// `--output-schema`: the accepted answer.
    pub(crate) fn accept_answer(&mut self, value: Value) {
        self.structured_output = Some(value);
    }

    /// The answer goes back to the model (a failed verification): none is kept.
    pub(crate) fn discard_answer(&mut self) {
        self.structured_output = None;
        self.answer_parts.clear();
    }

    /// One `--verify` round; `round` is set here. Returns it.
    pub(crate) fn record_verification(&mut self, mut v: VerificationRecord) -> u32 {
        let round = self.verifications.len() as u32 + 1;
        v.round = round;
        self.verifications.push(v);
        round
    }

    /// The workspace scanned again at the end: merged into `files_changed`.
    pub(crate) fn record_workspace_scan(&mut self, baseline: &crate::record::changes::Baseline) {
        baseline.merge_into(&mut self.files_changed);
    }

    /// `git diff --stat` at the end of the run.
    pub(crate) fn record_diff_stat(&mut self, stat: Option<String>) {
        self.git_diff_stat = stat;
    }

    /// The saved outputs' directory, when it is kept.
    pub(crate) fn record_spill_dir(&mut self, dir: Option<PathBuf>) {
        self.spill_dir = dir;
    }

    /// The table of background commands changed; an older copy told late is ignored.
    pub(crate) fn record_background(
        &mut self,
        generation: u64,
        jobs: Vec<crate::tools::background::JobRecord>,
    ) {
        if generation >= self.background.0 {
            self.background = (generation, jobs);
        }
    }

    /// A sub-agent's progress (its entry replaced, or added when new).
    pub(crate) fn record_subagent(&mut self, entry: SubagentRecord) {
        match self.subagents.iter_mut().find(|s| s.id == entry.id) {
            Some(s) => *s = entry,
            None => self.subagents.push(entry),
        }
    }

    /// A sub-agent ended: its entry, and its usage (per model that answered it) added to
    /// the run's `usage` and `cost_usd`.
    pub(crate) fn record_subagent_end(
        &mut self,
        entry: SubagentRecord,
        usage_by_model: &[(String, Usage)],
        prices: &Prices,
    ) {
        for (model, usage) in usage_by_model {
            self.add_response(model, usage, prices, false);
        }
        self.record_subagent(entry);
    }

    /// The run is ending: a sub-agent still running is interrupted.
    pub(crate) fn settle_subagents(&mut self) {
        for s in &mut self.subagents {
            if s.status == "running" {
                s.status = "interrupted".to_string();
            }
        }
    }

    /// Tool calls against `--max-tool-calls`: the run's and its sub-agents'.
    pub(crate) fn tool_calls_counted(&self) -> usize {
        self.tool_calls.len()
            + self
                .subagents
                .iter()
                .map(|s| s.tool_calls.len())
                .sum::<usize>()
    }

    /// Turns the sub-agents took (against `--max-turns`).
    pub(crate) fn subagent_turns(&self) -> u32 {
        self.subagents.iter().map(|s| s.num_turns).sum()
    }

    /// The turn being requested, streamed or executed.
    pub(crate) fn request_turn(&self) -> u32 {
        self.request_turn
    }

    /// A request for turn `turn` is about to go.
    pub(crate) fn record_request_turn(&mut self, turn: u32) {
        self.request_turn = turn;
    }

    /// The model wrote a new plan (TodoWrite), in the current turn; returns that turn.
    pub(crate) fn record_plan(&mut self, todos: Vec<crate::tools::todo_write::Todo>) -> u32 {
        self.plan_history.push(PlanChange {
            turn: self.request_turn,
            elapsed_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            todos: todos.clone(),
        });
        self.plan = todos;
        self.request_turn
    }

    /// How many background commands were still running when the run ended.
    pub(crate) fn background_killed_at_end(&self) -> usize {
        self.background.1.iter().filter(|j| j.killed_at_end).count()
    }

    /// How many background commands the run started.
    pub(crate) fn background_started(&self) -> usize {
        self.background.1.len()
    }

    // ---- what the run reads back ----

    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// The model of the newest turn (the one asked for before the first).
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }

    pub(crate) fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    pub(crate) fn tools(&self) -> &[String] {
        &self.tools
    }

    pub(crate) fn mcp_servers(&self) -> &[crate::mcp::ServerReport] {
        &self.mcp_servers
    }

    pub(crate) fn resumed_from(&self) -> Option<&ResumedFrom> {
        self.resumed_from.as_ref()
    }

    /// Every message as it happened.
    pub(crate) fn messages(&self) -> &[Arc<Entry>] {
        &self.messages
    }

    pub(crate) fn tool_calls(&self) -> &[ToolCallRecord] {
        &self.tool_calls
    }

    pub(crate) fn usage(&self) -> &Usage {
        &self.usage
    }

    pub(crate) fn num_turns(&self) -> u32 {
        self.num_turns
    }

    pub(crate) fn stop_reason(&self) -> Option<&str> {
        self.stop_reason.as_deref()
    }

    pub(crate) fn cost_usd(&self) -> Option<f64> {
        self.cost_usd
    }

    pub(crate) fn context_tokens(&self) -> Option<u64> {
        self.context_tokens
    }

    pub(crate) fn verifications(&self) -> &[VerificationRecord] {
        &self.verifications
    }

    /// Path → how it changed.
    #[cfg(test)]
    pub(crate) fn files_changed(&self) -> &BTreeMap<String, ChangeKind> {
        &self.files_changed
    }

    /// Adds one response's usage, priced by the model that gave it, to the run's totals
    /// and to that model's `models_used` entry. `turn` is false for a response that is
    /// billed but is no model turn (one cut off at the context window).
    fn add_response(&mut self, model: &str, usage: &Usage, prices: &Prices, turn: bool) {
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
    pub(crate) fn unpriced_model(&self) -> Option<&str> {
        self.models_used
            .iter()
            .find(|u| u.cost_usd.is_none())
            .map(|u| u.model.as_str())
    }

    /// One file changed by a tool, merged with what the run did to it before: created
    /// then deleted is no change, created then changed stays created, deleted then
    /// created is modified.
    pub(crate) fn note_change(&mut self, path: &str, change: ChangeKind) {
        use ChangeKind::{Created, Deleted, Modified};
        let merged = match (self.files_changed.get(path), change) {
            (Some(Created), Deleted) => None, // created then deleted: no net change
            (Some(Created), _) => Some(Created),
            (Some(Deleted), Created) => Some(Modified),
            (_, c) => Some(c),
        };
        match merged {
            Some(c) => {
                self.files_changed.insert(path.to_string(), c);
            }
            None => {
                self.files_changed.remove(path);
            }
        }
    }

    /// The run's answer: the accepted structured output as one line of JSON, else the
    /// text of the last assistant message.
    pub(crate) fn final_text(&self) -> String {
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

/// An assistant message with no text and no tool call (empty, or thinking only): not
/// an answer, and not worth keeping at the end of a history.
pub(crate) fn says_nothing(m: &crate::model::protocol::Message) -> bool {
    m.role == crate::model::protocol::Role::Assistant
        && !m.content.iter().any(|b| match b {
            ContentBlock::Text { text } => !text.trim().is_empty(),
            ContentBlock::ToolUse { .. } => true,
            _ => false,
        })
}

/// The text blocks of a message, joined.
pub(crate) fn message_text(m: &crate::model::protocol::Message) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Tool calls that started and have not finished. A run that ends while some still run
/// (timeout, signal) lists them in `tool_calls` too, so CI can see which command hung.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Mutex<Vec<Unfinished>>);

#[derive(Debug, Clone)]
struct Unfinished {
    id: String,
    name: String,
    input: Value,
    started: Instant,
    turn: u32,
}

impl InFlight {
    /// The ids and inputs of the running calls named `name` (Task finds its own call).
    pub(crate) fn running(&self, name: &str) -> Vec<(String, Value)> {
        self.0
            .locked()
            .iter()
            .filter(|c| c.name == name)
            .map(|c| (c.id.clone(), c.input.clone()))
            .collect()
    }

    pub(crate) fn start(&self, id: &str, name: &str, input: Value, turn: u32) {
        let call = Unfinished {
            id: id.to_string(),
            name: name.to_string(),
            input,
            started: Instant::now(),
            turn,
        };
        self.0.locked().push(call);
    }

    pub(crate) fn end(&self, id: &str) {
        self.0.locked().retain(|c| c.id != id);
    }

    /// Adds the calls still running to `record.tool_calls`, marked `unfinished` (batch 0:
    /// their batch never completed); an MCP call names its server and tool.
    pub(crate) fn settle(&self, record: &mut RunRecord) {
        let calls = std::mem::take(&mut *self.0.locked());
        for c in calls {
            if record.tool_calls.iter().any(|t| t.id == c.id) {
                continue;
            }
            let mut metadata = CallMetadata {
                unfinished: true,
                rest: Map::new(),
            };
            // As a finished MCP call's result says (`McpTool`).
            if let Some((server, tool)) = crate::mcp::names::origin(&c.name) {
                metadata.rest.insert("server".into(), Value::String(server));
                metadata.rest.insert("mcp_tool".into(), Value::String(tool));
            }
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
                changes: Vec::new(),
            });
        }
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
