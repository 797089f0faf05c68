//! The CI features of SPEC §9 as seen by the agent loop: one `CiRun` per run bundles the
//! `--jsonl` event stream, the `--verify` rounds and the budgets, behind a handful of calls the loop makes at fixed points (before
//! a request, on stream notices, after a turn, when the model stops). It is also the
//! dispatcher's `Watch`, so tool events happen on the dispatching thread,
//! early-started calls included. The logic lives in `events`, `verify` and `budget`.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::config::Config;
use crate::model::provider::StreamNotice;
use crate::model::turn::{PendingCall, Turn};
use crate::record::RunRecord;
use crate::record::outcome::{ErrorKind, Outcome};
use crate::run::budget::{Budget, Pool};
use crate::run::event::{self as ev, RunEvent};
use crate::run::events::Events;
use crate::run::telemetry::RunTrace;
use crate::run::verify::{Verdict, Verifier};
use crate::tools::ToolContext;
use crate::tools::dispatch::{CallOutcome, Watch};
use crate::util::sync::Locked;

/// How much of a tool result a `tool.finished` event carries: a glance, not the output
/// (the transcript has the call; the model saw the result).
const EVENT_CONTENT_CHARS: usize = 1_000;

pub(crate) struct CiRun {
    pub events: Arc<Events>,
    pub verifier: Option<Verifier>,
    pub budget: Budget,
    /// The turn being streamed or executed, for tool events.
    turn: AtomicU32,
    /// The run's spans and metrics (OpenTelemetry; inert when off).
    pub trace: Arc<RunTrace>,
    /// The run's: the sub-agents' shared budgets, whose refusal stops the run too.
    pub pool: Option<Arc<Pool>>,
    /// A sub-agent's: reserves its next request (estimated input tokens, its cost so far).
    pub reserve: Option<Reserve>,
    /// `--include-partial-messages`: text pieces as `assistant.delta` (the run's, never a
    /// sub-agent's).
    pub partial_messages: bool,
    /// `--permission-prompt stdin`: `tool.running` when a call passes the gate (a call
    /// may wait for a person before it; without a person nothing waits).
    pub announce_running: bool,
}

/// A sub-agent's reservation of its next request in the run's `Pool`.
pub(crate) type Reserve = Box<dyn Fn(u64, f64) -> Result<(), String> + Send + Sync>;

impl CiRun {
    pub(crate) fn new(config: &Config, events: Arc<Events>, trace: Arc<RunTrace>) -> Self {
        CiRun {
            events,
            verifier: config.ci().verify().cloned().map(Verifier::new),
            budget: config.ci().budget(),
            turn: AtomicU32::new(0),
            trace,
            pool: None,
            reserve: None,
            partial_messages: config.output().partial_messages(),
            announce_running: config.tools().permission_prompt().0
                == crate::config::cli::PermissionPrompt::Stdin,
        }
    }

    /// A sub-agent's: its events (tagged), no verification, what is left of the budget.
    pub(crate) fn for_subagent(events: Arc<Events>, budget: Budget, trace: Arc<RunTrace>) -> Self {
        CiRun {
            events,
            verifier: None,
            budget,
            turn: AtomicU32::new(0),
            trace,
            pool: None,
            reserve: None,
            partial_messages: false,
            announce_running: false,
        }
    }

    /// No events, no verification, no budget.
    #[cfg(test)]
    pub(crate) fn off() -> Self {
        CiRun {
            events: Arc::new(Events::disabled()),
            verifier: None,
            budget: Budget::default(),
            turn: AtomicU32::new(0),
            trace: Arc::new(RunTrace::off()),
            pool: None,
            reserve: None,
            partial_messages: false,
            announce_running: false,
        }
    }

    /// `run.started`, then `mcp.started` per MCP server.
    pub(crate) fn run_started(&self, config: &Config, record: &Mutex<RunRecord>) {
        // Built under the lock, written without it: a stdout nobody reads must not keep
        // the record (which the finisher needs) locked.
        let (started, servers, skills) = {
            let r = record.locked();
            let started = ev::Started {
                model: r.model().to_string(),
                workspace: r.workspace().display().to_string(),
                tools: r.tools().to_vec(),
                prompt: config.session().prompt().to_string(),
                max_turns: config.session().max_turns(),
                verify: config.ci().verify().map(|v| v.command.clone()),
                agent_version: env!("CARGO_PKG_VERSION").to_string(),
                session_id: r.session_id().to_string(),
                resumed_from: r.resumed_from().cloned(),
            };
            let servers: Vec<_> = r.mcp_servers().iter().map(mcp_started).collect();
            self.trace.run_started(&r, config.session().prompt());
            (started, servers, commanded_skills(&r))
        };
        self.events.emit(if self.events.is_tagged() {
            RunEvent::SubagentStarted(started)
        } else {
            RunEvent::RunStarted(started)
        });
        for server in servers {
            self.events.emit(RunEvent::McpStarted(server));
        }
        if !self.events.is_tagged() {
            for s in skills {
                self.events.emit(RunEvent::SkillActivated(s));
            }
        }
    }

    /// Before each request: a used-up budget ends the run (status `budget`); otherwise
    /// `turn.started`.
    pub(crate) fn before_request(
        &self,
        turn_no: u32,
        record: &Mutex<RunRecord>,
    ) -> Option<Outcome> {
        let (calls, cost, turns, model) = {
            let mut r = record.locked();
            r.record_request_turn(turn_no);
            let unpriced = r.unpriced_model().unwrap_or(r.model()).to_string();
            (
                r.tool_calls_counted(),
                r.cost_usd(),
                r.num_turns(),
                unpriced,
            )
        };
        if let Some(msg) = self.budget.exceeded(calls, cost) {
            return Some(Outcome::fail(ErrorKind::Budget, msg));
        }
        if let Some(msg) = self.pool.as_ref().and_then(|p| p.refused()) {
            return Some(Outcome::fail(ErrorKind::Budget, msg));
        }
        // The API may report a model other than the one asked for (a gateway, an alias):
        // a cost limit that cannot be computed must stop the run, not silently lapse.
        if let Some(max) = self.budget.max_cost_usd
            && cost.is_none()
            && turns > 0
        {
            return Some(Outcome::fail(
                ErrorKind::Budget,
                format!(
                    "cannot enforce --max-cost-usd {max}: the API reported model {model:?}, \
                     which has no price (add one under \"prices\" in the settings)"
                ),
            ));
        }
        self.turn.store(turn_no, Ordering::Relaxed);
        self.trace.request_started(turn_no);
        self.events
            .emit(RunEvent::TurnStarted(ev::TurnStarted { turn: turn_no }));
        None
    }

    /// A sub-agent's, before each request: reserves it in the run's pool (`input_tokens`
    /// estimated from the request's size); a refusal ends the sub-agent `budget`.
    pub(crate) fn reserve_next(
        &self,
        input_tokens: u64,
        record: &Mutex<RunRecord>,
    ) -> Option<Outcome> {
        let reserve = self.reserve.as_ref()?;
        let own = record.locked().cost_usd().unwrap_or(0.0);
        reserve(input_tokens, own)
            .err()
            .map(|msg| Outcome::fail(ErrorKind::Budget, msg))
    }

    /// The turn being streamed or executed.
    pub(crate) fn turn(&self) -> u32 {
        self.turn.load(Ordering::Relaxed)
    }

    /// What the stream tells the loop: retries become `retry` events, the switch to
    /// `--fallback-model` a `model.fallback` event.
    pub(crate) fn on_notice(&self, notice: &StreamNotice<'_>) {
        let turn = self.turn.load(Ordering::Relaxed);
        match notice {
            StreamNotice::Retry {
                attempt,
                reason,
                delay,
            } => {
                self.trace.request_event(
                    "retry",
                    vec![
                        ("agent.retry.attempt".into(), (*attempt).into()),
                        ("agent.retry.reason".into(), reason.to_string().into()),
                        (
                            "agent.retry.delay_ms".into(),
                            (delay.as_millis() as u64).into(),
                        ),
                    ],
                );
                self.events.emit(RunEvent::Retry(ev::Retry {
                    turn,
                    attempt: *attempt,
                    reason: reason.to_string(),
                    delay_ms: delay.as_millis() as u64,
                }))
            }
            StreamNotice::Fallback { from, to, reason } => {
                self.trace.request_event(
                    "model.fallback",
                    vec![
                        ("agent.fallback.from".into(), from.to_string().into()),
                        ("agent.fallback.to".into(), to.to_string().into()),
                        ("agent.fallback.reason".into(), reason.to_string().into()),
                    ],
                );
                self.events.emit(RunEvent::ModelFallback(ev::ModelFallback {
                    turn,
                    from: from.to_string(),
                    to: to.to_string(),
                    reason: reason.to_string(),
                }))
            }
            StreamNotice::TextDelta(text) if self.partial_messages => {
                self.events
                    .emit(RunEvent::AssistantDelta(ev::AssistantDelta {
                        turn,
                        text: text.to_string(),
                    }));
            }
            _ => {}
        }
    }

    /// The turn is complete (already in the record, cost included): `assistant.message`, and —
    /// when no tool will run for it — `turn.finished`.
    /// `message_json` is the turn's message as the transcript stores it (not serialised
    /// again for the event; reasoning and unsigned thinking included).
    pub(crate) fn after_turn(
        &self,
        turn_no: u32,
        turn: &Turn,
        message_json: &str,
        record: &Mutex<RunRecord>,
        runs_tools: bool,
    ) {
        self.trace.turn_received(turn, message_json);
        // Copied out first: the lock must not be held while the event is written.
        let model = record.locked().model().to_string();
        if self.events.enabled() {
            self.events
                .emit(RunEvent::AssistantMessage(ev::AssistantMessage {
                    turn: turn_no,
                    model,
                    stop_reason: turn.stop_reason.as_str().to_string(),
                    usage: turn.usage,
                    message: ev::Verbatim(message_json.to_string()),
                }));
        }
        if !runs_tools {
            self.turn_finished(turn_no, record);
        }
    }

    /// The turn's tool calls were answered (or none will run): `turn.finished`.
    pub(crate) fn turn_finished(&self, turn_no: u32, record: &Mutex<RunRecord>) {
        let finished = {
            let r = record.locked();
            self.trace.turn_finished(&r);
            ev::TurnFinished {
                turn: turn_no,
                model: r.model().to_string(),
                stop_reason: r.stop_reason().map(String::from),
                tool_calls: r.tool_calls().iter().filter(|c| c.turn == turn_no).count(),
                usage: *r.usage(),
                cost_usd: r.cost_usd(),
                context_tokens: r.context_tokens(),
            }
        };
        self.events.emit(RunEvent::TurnFinished(finished));
    }

    /// The model stopped: run `--verify` if given.
    pub(crate) fn after_stop(
        &self,
        ctx: &ToolContext,
        record: &Mutex<RunRecord>,
        turns_left: bool,
    ) -> Verdict {
        match &self.verifier {
            None => Verdict::Passed,
            Some(v) => {
                // The command runs in the round's span (its TRACEPARENT).
                let span = self.trace.verify_span();
                let verdict = {
                    let _in = crate::otel::context::enter(span.context());
                    v.verify(ctx, &self.events, record, turns_left)
                };
                self.trace.verify_finished(span, &record.locked());
                verdict
            }
        }
    }
}

impl Watch for CiRun {
    fn started(&self, call: &PendingCall) {
        self.trace
            .call_started(call, self.turn.load(Ordering::Relaxed));
        if !self.events.enabled() {
            return;
        }
        self.events.emit(RunEvent::ToolStarted(ev::ToolStarted {
            turn: self.turn.load(Ordering::Relaxed),
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.as_ref().ok().cloned(),
        }));
    }

    fn running(&self, call: &PendingCall) {
        if self.announce_running && self.events.enabled() {
            self.events.emit(RunEvent::ToolRunning(ev::ToolRunning {
                turn: self.turn.load(Ordering::Relaxed),
                id: call.id.clone(),
                name: call.name.clone(),
            }));
        }
    }

    fn finished(&self, call: &PendingCall, outcome: &CallOutcome) {
        self.trace
            .call_finished(call, outcome, self.turn.load(Ordering::Relaxed));
        if !self.events.enabled() {
            return;
        }
        // Redacted before the cut: a cut through a secret would leave its prefix.
        let content = crate::util::output::redact(&outcome.result.content);
        let (shown, _) = crate::util::text::truncate(&content, EVENT_CONTENT_CHARS);
        self.events.emit(RunEvent::ToolFinished(ev::ToolFinished {
            turn: self.turn.load(Ordering::Relaxed),
            id: call.id.clone(),
            name: call.name.clone(),
            is_error: outcome.result.is_error,
            denied: outcome.denial.is_some(),
            duration_ms: outcome.duration.as_millis() as u64,
            content: shown.to_string(),
            content_truncated: shown.len() < content.len(),
        }));
    }
}

/// `mcp.started` of one server's report.
/// The skills a prompt command loaded before the first turn (`skill.activated`, turn 0).
fn commanded_skills(r: &RunRecord) -> Vec<ev::SkillActivated> {
    r.skills()
        .iter()
        .filter(|s| s.activated_turn == Some(0))
        .map(|s| ev::SkillActivated {
            name: s.name.clone(),
            path: s.path.clone(),
            turn: 0,
        })
        .collect()
}

fn mcp_started(r: &crate::mcp::ServerReport) -> ev::McpStarted {
    ev::McpStarted {
        name: r.name.clone(),
        transport: r.transport.to_string(),
        status: r.status.to_string(),
        protocol_version: r.protocol_version.clone(),
        tools: r.tools.clone(),
        error: r.error.clone(),
    }
}
