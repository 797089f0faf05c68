//! Task's sub-agents: the loop run again, nested, for one job (`tools::task` is the tool;
//! this is the `Subagents` runner `agent run` lends it through `ToolContext`).
//!
//! A sub-agent has a fresh history with its own system prompt, the run's workspace,
//! policy gate, hooks, sandbox, background commands and provider settings (a provider of
//! its own, so parallel ones do not share a connection), and a record of its own, which
//! the run's record nests (`subagents`) at every checkpoint of it and when it ends (its
//! usage and cost then join the run's). Its tools: `explore`, the run's read-only file,
//! search and MCP tools; `general`, every tool of the run but Task and TodoWrite. Its
//! context has no runner, so it cannot start sub-agents itself.
//!
//! Budgets are shared: it gets what is left of `--max-turns` (at most
//! `--subagent-max-turns`), `--max-tool-calls` and `--max-cost-usd` when it starts, and
//! its turns, calls and cost count against the run's afterwards. While it runs, each of
//! its requests is first reserved in the run's `budget::Pool` (a turn, and the cost of
//! its estimated input and its max_tokens), so parallel sub-agents together stop at the
//! limit instead of each going up to it. A way out (timeout,
//! signal) sets the run's `cancelled`, which the nested loop checks like the parent's;
//! the finisher marks a sub-agent still running `interrupted`.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::{Agent, RunHandle};
use crate::config::Config;
use crate::model::provider::Provider;
use crate::record::{InFlight, RunRecord, SubagentRecord};
use crate::run::budget::{Budget, Limits, Pool, Reservation, Spent};
use crate::run::ci::CiRun;
use crate::run::event::{self as ev, RunEvent};
use crate::run::events::Events;
use crate::tools::dispatch::Gate;
use crate::tools::registry::Registry;
use crate::tools::task::{SubagentCall, SubagentKind, Subagents};
use crate::tools::{Category, Tool, ToolContext, ToolError};
use crate::util::sync::Locked;

/// Makes a provider for one sub-agent (`agent run`'s, without a cassette).
pub(crate) type ProviderFactory = Box<dyn Fn() -> Result<Box<dyn Provider>, String> + Send + Sync>;

/// What the runner owns of the run: everything a nested loop borrows.
pub(crate) struct SubagentRunner {
    pub(crate) config: Arc<Config>,
    /// The run's enabled tools (Task's sub-agents choose from these).
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// The run's context, with no runner in it.
    pub(crate) ctx: ToolContext,
    pub(crate) gate: Arc<dyn Gate>,
    pub(crate) record: Arc<Mutex<RunRecord>>,
    pub(crate) events: Arc<Events>,
    pub(crate) cancelled: Arc<AtomicBool>,
    /// The run's calls in flight: where a sub-agent finds its Task call's id.
    pub(crate) in_flight: Arc<InFlight>,
    /// The run's `-o` checkpoint.
    pub(crate) checkpoint: Arc<dyn Fn() + Send + Sync>,
    pub(crate) provider: ProviderFactory,
    /// `--subagent-max-turns`.
    pub(crate) max_turns: u32,
    pub(crate) next: AtomicU32,
    /// Task call ids already taken by a sub-agent.
    pub(crate) claimed: Mutex<Vec<String>>,
    /// The run's budgets, shared by the sub-agents running at once.
    pub(crate) pool: Arc<Pool>,
}

impl std::fmt::Debug for SubagentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentRunner").finish_non_exhaustive()
    }
}

impl SubagentRunner {
    /// The Task call this sub-agent answers: the first running one with its input that
    /// no other sub-agent has taken.
    fn claim(&self, call: &SubagentCall) -> String {
        let mut claimed = self.claimed.locked();
        let id = self
            .in_flight
            .running("Task")
            .into_iter()
            .find(|(id, input)| {
                !claimed.contains(id)
                    && input["prompt"] == call.prompt.as_str()
                    && input["description"] == call.description.as_str()
            })
            .map(|(id, _)| id)
            .unwrap_or_default();
        claimed.push(id.clone());
        id
    }

    /// The tools a sub-agent of `kind` gets.
    fn registry(&self, kind: SubagentKind) -> Registry {
        let mut r = Registry::new();
        for t in &self.tools {
            let take = match kind {
                SubagentKind::Explore => {
                    t.is_read_only()
                        && matches!(
                            t.category(),
                            Category::File | Category::Search | Category::Mcp
                        )
                }
                SubagentKind::General => !matches!(t.category(), Category::Agent | Category::Plan),
            };
            if take {
                r.register(t.clone());
            }
        }
        r
    }

    /// What is left of the run's budgets now: turns, then the calls and cost budget.
    fn left(&self) -> (u32, Budget) {
        let r = self.record.locked();
        let parent = self.config.ci().budget();
        let turns = self
            .config
            .session()
            .max_turns()
            .saturating_sub(r.request_turn() + r.subagent_turns());
        let calls = r.tool_calls_counted() as u32;
        let budget = Budget {
            max_tool_calls: parent.max_tool_calls.map(|m| m.saturating_sub(calls)),
            max_cost_usd: parent
                .max_cost_usd
                .map(|m| (m - r.cost_usd().unwrap_or(0.0)).max(0.0)),
        };
        (turns, budget)
    }
}

impl SubagentRunner {
    /// Sub-agent `id`'s reservation of each request in the run's pool, judged under the
    /// run's record lock (the pool is locked after it, as `release` is).
    fn reserver(&self, id: &str, config: &Config) -> crate::run::ci::Reserve {
        let (run, pool, id) = (self.record.clone(), self.pool.clone(), id.to_string());
        let limits = Limits {
            max_turns: self.config.session().max_turns(),
            budget: self.config.ci().budget(),
        };
        let price = config.ci().prices().lookup(config.provider().model());
        let max_tokens = config.provider().max_tokens();
        Box::new(move |input_tokens, own_usd| {
            let r = run.locked();
            let spent = Spent {
                cost_usd: r.cost_usd().unwrap_or(0.0),
                turns: r.request_turn() + r.subagent_turns(),
                tool_calls: r.tool_calls_counted(),
            };
            let next = price.map(|p| Reservation::new(p, input_tokens, max_tokens));
            pool.reserve(&id, limits, spent, own_usd, next)
        })
    }
}

/// The sub-agent's record as the run's transcript nests it.
fn entry(
    id: &str,
    tool_use_id: &str,
    call: &SubagentCall,
    record: &RunRecord,
    status: &str,
) -> SubagentRecord {
    SubagentRecord {
        id: id.to_string(),
        tool_use_id: tool_use_id.to_string(),
        subagent_type: call.kind.as_str().into(),
        description: call.description.clone(),
        status: status.to_string(),
        num_turns: record.num_turns(),
        usage: *record.usage(),
        cost_usd: record.cost_usd(),
        messages: record
            .messages()
            .iter()
            .filter_map(|m| {
                serde_json::value::RawValue::from_string(m.transcript_json().to_string())
                    .ok()
                    .map(crate::record::transcript::RawJson)
            })
            .collect(),
        tool_calls: record.tool_calls().to_vec(),
    }
}

/// The sub-agent's system prompt: its job, the workspace, and who reads its answer.
fn system_prompt(kind: SubagentKind, workspace: &std::path::Path) -> String {
    let tools = match kind {
        SubagentKind::Explore => {
            "You have read-only tools: you can read and search files, not change them."
        }
        SubagentKind::General => "You have the same tools as the agent that started you.",
    };
    format!(
        "You are a sub-agent of a coding agent that runs unattended in CI. That agent gave \
         you one job (the user message); do it and end with your answer. Your final \
         message goes to that agent, another model, not to a person: make it a complete, \
         concise report of what you found or did, with file paths and line numbers, and \
         anything it must know to go on. Nobody can answer questions.\n\n\
         The workspace is {}. {tools} Prefer Glob and Grep to find things, then ReadFile \
         the parts that matter.",
        workspace.display()
    )
}

impl Subagents for SubagentRunner {
    fn run(&self, call: &SubagentCall) -> Result<String, ToolError> {
        if self.cancelled.load(Ordering::SeqCst) {
            return Err(ToolError::failed("not started: the run is stopping"));
        }
        let (turns_left, budget) = self.left();
        if turns_left == 0 {
            return Err(ToolError::failed(format!(
                "not started: no turns are left under --max-turns {} for a sub-agent",
                self.config.session().max_turns()
            )));
        }
        let mut provider = (self.provider)().map_err(ToolError::Failed)?;
        let id = format!("subagent_{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let tool_use_id = self.claim(call);
        let config = self.config.for_subagent(
            system_prompt(call.kind, self.config.workspace()),
            call.prompt.clone(),
            self.max_turns.min(turns_left),
        );
        let registry = self.registry(call.kind);
        let names = registry
            .enabled_names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        let record = Mutex::new(RunRecord::new(
            config.provider().model(),
            config.workspace().to_path_buf(),
            names,
        ));
        let trace = Arc::new(crate::run::telemetry::RunTrace::for_subagent(
            crate::run::telemetry::provider_name(config.provider().kind()),
            config.provider().model(),
            config.provider().max_tokens(),
            &id,
        ));
        let mut ci = CiRun::for_subagent(Arc::new(self.events.tagged(&id)), budget, trace);
        ci.reserve = Some(self.reserver(&id, &config));
        // Its calls may wait for a person too (the run's asker).
        ci.announce_running = self.config.tools().permission_prompt().0
            == crate::config::cli::PermissionPrompt::Stdin;
        ci.events
            .emit(RunEvent::SubagentRequested(ev::SubagentRequested {
                tool_use_id: tool_use_id.clone(),
                subagent_type: call.kind.as_str().to_string(),
                description: call.description.clone(),
                max_turns: config.session().max_turns(),
            }));
        let note = |status: &str| {
            let e = entry(&id, &tool_use_id, call, &record.locked(), status);
            self.record.locked().record_subagent(e);
        };
        note("running");
        let checkpoint = || {
            note("running");
            (self.checkpoint)();
        };
        let in_flight = InFlight::default();
        let outcome = Agent::new(RunHandle {
            config: &config,
            registry: &registry,
            ctx: &self.ctx,
            gate: self.gate.as_ref(),
            record: &record,
            checkpoint: &checkpoint,
            ci: &ci,
            cancelled: &self.cancelled,
            in_flight: &in_flight,
        })
        .run(provider.as_mut());
        ci.trace.finish(&record.locked(), &outcome);
        let status = outcome.status.as_str();
        let (answer, usage, model) = {
            let r = record.locked();
            (r.final_text(), *r.usage(), r.model().to_string())
        };
        {
            let e = entry(&id, &tool_use_id, call, &record.locked(), status);
            let mut parent = self.record.locked();
            // A way out already marked it interrupted and wrote the transcript.
            if !self.cancelled.load(Ordering::SeqCst) {
                parent.record_subagent_end(e, &[(model, usage)], config.ci().prices());
            }
            // Under the run's lock: its cost is the run's now, not the pool's.
            self.pool.release(&id);
        }
        let num_turns = record.locked().num_turns();
        ci.events
            .emit(RunEvent::SubagentFinished(ev::SubagentFinished {
                tool_use_id: tool_use_id.clone(),
                status: status.to_string(),
                num_turns,
            }));
        match outcome.error {
            None => Ok(answer),
            Some(e) => Err(ToolError::failed(format!(
                "the sub-agent ended with status {status}: {}{}",
                e.message,
                if answer.trim().is_empty() {
                    String::new()
                } else {
                    format!("\nIts last message:\n{answer}")
                }
            ))),
        }
    }
}
