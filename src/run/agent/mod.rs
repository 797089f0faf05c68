//! The agent loop: request a turn, stream it, run its tool calls through the scheduler,
//! answer each tool_use with exactly one tool_result in order, and loop until the model
//! stops or a limit is reached. It never names a tool.
//!
//! `turns` is a small driver over named steps: `request` (send, stream, meet the context
//! window's wall), then `answer` (record the turn and take the step its stop reason
//! calls for: `steps.rs` holds the calls, a `max_tokens` stop and an `end_turn`). Each
//! step says what comes next (`Step`). Clearing lives in `clearing.rs`, summarising
//! compaction in `compacting.rs`; which of them runs is `--context-strategy`'s.

mod clearing;
mod compacting;
mod images;
mod observers;
mod steps;
pub(crate) mod subagent;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value;

use crate::config::Config;
use crate::config::cli::ContextStrategy;
use crate::model::protocol::{Message, Role, StopReason};
use crate::model::provider::{Provider, StreamNotice, TurnRequest};
use crate::model::turn::Turn;
use crate::record::history::{Entry, History};
use crate::record::outcome::{ErrorKind, Outcome};
use crate::record::{InFlight, RunRecord};
use crate::run::ci::CiRun;
use crate::run::compaction::Reason;
use crate::run::context::{ContextWindow, Overflow, WINDOW_EXCEEDED_STOP};
use crate::run::structured;
use crate::tools::ToolContext;
use crate::tools::dispatch::{Dispatcher, Gate};
use crate::tools::registry::Registry;
use crate::tools::scheduler::{EarlyStart, EarlyWorkers};
use crate::util::output;
use crate::util::sync::Locked;
use clearing::{Wall, overflow};
use observers::RunWatch;

/// What a run lends the loop: its settings, its tools and their gate, the record and the
/// ways the rest of the run watches it. Built once by `agent run`.
pub(crate) struct RunHandle<'a> {
    pub(crate) config: &'a Config,
    pub(crate) registry: &'a Registry,
    pub(crate) ctx: &'a ToolContext,
    pub(crate) gate: &'a dyn Gate,
    /// Shared with the signal and deadline threads.
    pub(crate) record: &'a Mutex<RunRecord>,
    /// Rewrites the `-o` file after every model response and after its tool results.
    pub(crate) checkpoint: &'a dyn Fn(),
    /// Events, verification, budgets (SPEC §9).
    pub(crate) ci: &'a CiRun,
    /// Set when a signal or the deadline is ending the run: make no further request and
    /// start no further tool.
    pub(crate) cancelled: &'a AtomicBool,
    /// Calls running now, for the transcript of a run that ends while they do.
    pub(crate) in_flight: &'a InFlight,
}

impl RunHandle<'_> {
    /// The record, locked (briefly: the finisher needs it too).
    pub(crate) fn record(&self) -> MutexGuard<'_, RunRecord> {
        self.record.locked()
    }

    pub(crate) fn checkpoint(&self) {
        (self.checkpoint)();
    }

    /// `Err(interrupted)` once a way out has been taken: the one place that outcome is
    /// built. The way out writes the transcript; this only stops the loop.
    pub(crate) fn check_stop(&self) -> Result<(), Outcome> {
        if self.cancelled.load(Ordering::SeqCst) {
            return Err(Outcome::fail(ErrorKind::Interrupted, "the run was stopped"));
        }
        Ok(())
    }
}

pub(crate) struct Agent<'a> {
    pub(super) run: RunHandle<'a>,
    /// The server refused the images of a request: from then on a tool's images become
    /// error results (`images.rs`).
    pub(super) images_refused: AtomicBool,
}

/// What comes after a step.
pub(super) enum Step {
    /// The next turn.
    Next,
    /// The same turn again (after a clearing at the context window's wall).
    Retry,
    End(Outcome),
}

/// What a turn already did at the context window's wall: each is tried once a turn.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct WallTried {
    pub(super) cleared: bool,
    pub(super) compacted: bool,
}

/// What the loop carries from turn to turn.
pub(super) struct Turns {
    pub(super) tools: Vec<Value>,
    pub(super) history: History,
    pub(super) window: ContextWindow,
    /// What every request sends besides the history: calibrates bytes per token.
    pub(super) fixed_bytes: usize,
    pub(super) next_batch: u32,
    pub(super) turn_no: u32,
    /// Set while the same turn is asked again after a clearing at the wall.
    pub(super) retrying: bool,
    /// What the current turn already tried at the wall.
    pub(super) wall: WallTried,
    /// The conversation's first message (the task): every compacted history starts
    /// with it verbatim.
    pub(super) task: Option<Arc<Entry>>,
    /// Continuations asked for the current answer cut off by `max_tokens`.
    pub(super) continuations: u32,
    /// `--output-schema`: the model's answers, counted against --max-schema-retries.
    pub(super) answers: Option<structured::Answers>,
    /// Benchmarking switch (docs/performance.md): run every call only after message_stop.
    pub(super) early_tools: bool,
    /// Turns Task's sub-agents took so far, already added to `turn_no`.
    pub(super) subagent_turns: u32,
}

impl Turns {
    /// What the next request sends, in bytes.
    pub(super) fn request_bytes(&self) -> usize {
        self.history.json_bytes() + self.fixed_bytes
    }

    /// The `tools` array changed: the next request sends `tools`.
    fn retool(&mut self, tools: Vec<Value>) {
        let bytes = |t: &[Value]| serde_json::to_string(t).map_or(0, |t| t.len());
        self.fixed_bytes = (self.fixed_bytes + bytes(&tools)).saturating_sub(bytes(&self.tools));
        self.tools = tools;
    }
}

/// A streamed turn and the calls it started early (collected once the turn is noted).
pub(super) struct Streamed<'w, 'scope, 'env> {
    pub(super) turn: Turn,
    pub(super) early: EarlyStart<'w, 'scope, 'env>,
}

impl<'a> Agent<'a> {
    pub(crate) fn new(run: RunHandle<'a>) -> Self {
        Agent {
            run,
            images_refused: AtomicBool::new(false),
        }
    }

    pub(crate) fn run(&self, provider: &mut dyn Provider) -> Outcome {
        let before = crate::record::history::serialisations();
        let outcome = self.run_loop(provider);
        let messages = self.run.record().messages().len();
        output::debug(&format!(
            "history: {messages} messages, {} serialisations",
            crate::record::history::serialisations() - before
        ));
        outcome
    }

    fn run_loop(&self, provider: &mut dyn Provider) -> Outcome {
        let run = &self.run;
        let run_start = run.record().started();
        let watch = RunWatch {
            ci: run.ci,
            in_flight: run.in_flight,
        };
        let dispatcher = Dispatcher::new(run.registry, run.ctx, run.gate, run_start, Some(&watch));
        // The threads calls started early run on live as long as the run (see
        // `EarlyWorkers`); the scope ends when they have.
        std::thread::scope(|scope| self.turns(provider, &dispatcher, &EarlyWorkers::new(scope)))
    }

    /// The driver: each turn is a request, then the answer's step.
    fn turns<'env>(
        &self,
        provider: &mut dyn Provider,
        dispatcher: &'env Dispatcher<'env>,
        workers: &EarlyWorkers<'_, 'env>,
    ) -> Outcome {
        let mut s = self.start();
        loop {
            if let Err(stopped) = self.run.check_stop() {
                return stopped;
            }
            if !s.retrying
                && let Some(end) = self.next_turn(provider, &mut s)
            {
                return end;
            }
            let step = match self.request(provider, dispatcher, workers, &mut s) {
                Ok(streamed) => self.answer(streamed, dispatcher, &mut s),
                Err(step) => step,
            };
            match step {
                Step::Next => s.retrying = false,
                Step::Retry => s.retrying = true,
                Step::End(outcome) => return outcome,
            }
        }
    }

    /// The history the first request sends (the task, or a resumed conversation), the
    /// window, the first checkpoint and `run.started`.
    fn start(&self) -> Turns {
        let run = &self.run;
        let config = run.config;
        let tools = run.registry.to_api_format();
        let mut history = History::new();
        match &config.session().resume() {
            // A resumed run starts from the earlier conversation (its new prompt appended).
            Some(r) => {
                let attached = config.session().images().attached();
                let last = r.messages.len().saturating_sub(1);
                for (i, m) in r.messages.iter().enumerate() {
                    let mut m = m.clone();
                    if i == last && m.role == Role::User {
                        m.content.extend(attached.iter().cloned());
                    }
                    self.enter(&mut history, m);
                }
                if r.messages.last().is_none_or(|m| m.role != Role::User) && !attached.is_empty() {
                    self.enter(
                        &mut history,
                        Message {
                            role: Role::User,
                            content: attached.to_vec(),
                        },
                    );
                }
            }
            // Images first: the models read a picture better before the question about it.
            None => {
                let mut first = Message::user_text(config.session().prompt());
                let attached = config.session().images().attached();
                first.content.splice(0..0, attached.iter().cloned());
                self.enter(&mut history, first)
            }
        }
        let window = ContextWindow::for_run(config.provider().model(), config.session().context());
        let fixed_bytes = serde_json::to_string(&tools).map_or(0, |t| t.len())
            + config.session().system_prompt().len();
        {
            let mut r = run.record();
            r.record_context_window(window.window());
            r.record_start_price(config.ci().prices());
        }
        // The task is checkpointed before the first request: a run killed while waiting
        // for the first response leaves it, so `--resume` can continue it.
        run.checkpoint();
        run.ci.run_started(config, run.record);
        let task = history.entries().first().cloned();
        Turns {
            tools,
            history,
            task,
            wall: WallTried::default(),
            window,
            fixed_bytes,
            next_batch: 0,
            turn_no: 0,
            retrying: false,
            continuations: 0,
            answers: config
                .session()
                .output_schema()
                .map(|_| structured::Answers::new(config.session().max_schema_retries())),
            early_tools: std::env::var_os("AGENT_NO_EARLY_TOOLS").is_none_or(|v| v != "1"),
            subagent_turns: 0,
        }
    }

    /// A new turn: the budgets may end the run; a history over the threshold is cleared
    /// or summarised.
    fn next_turn(&self, provider: &mut dyn Provider, s: &mut Turns) -> Option<Outcome> {
        s.wall = WallTried::default();
        // Sub-agents' turns count against --max-turns: the turn number moves past them.
        let sub = self.run.record().subagent_turns();
        s.turn_no += 1 + sub.saturating_sub(s.subagent_turns);
        s.subagent_turns = sub;
        if s.turn_no > self.run.config.session().max_turns() {
            return Some(self.max_turns());
        }
        if let Some(stop) = self.run.ci.before_request(s.turn_no, self.run.record) {
            return Some(stop);
        }
        // Before any usage (a resumed history), the bytes about to be sent tell.
        let tokens = s.window.next_tokens(s.request_bytes());
        if let Some(stop) = self.run.ci.reserve_next(tokens, self.run.record) {
            return Some(stop);
        }
        if s.window.over_threshold(tokens) {
            let reason = match s.window.last_tokens() {
                None if self.run.config.session().resume().is_some() => Reason::Resume,
                _ => Reason::Threshold,
            };
            self.before_the_wall(provider, s, tokens, reason);
        }
        None
    }

    /// Over the threshold: `clear` clears old tool results and summarises when that
    /// cannot get under the threshold; `summarize` summarises, and clears only when that
    /// fails; `fail` does neither (the wall will end the run).
    fn before_the_wall(
        &self,
        provider: &mut dyn Provider,
        s: &mut Turns,
        tokens: u64,
        reason: Reason,
    ) {
        let Some(target) = s.window.clear_target() else {
            return;
        };
        match self.run.config.session().context().strategy {
            ContextStrategy::Fail => {}
            ContextStrategy::Clear => {
                let cleared = self.clear(&mut s.history, &s.window, s.turn_no, tokens, target);
                // Clearing aims at half the window; only when it cannot even get under
                // the threshold (the next turn would be over it again) is a summary worth
                // its request.
                let after = cleared.map_or(tokens, |c| c.tokens_after_estimate);
                if s.window.over_threshold(after) {
                    let then = match cleared {
                        Some(_) => "the cleared history goes on",
                        None => "the history goes on as it is",
                    };
                    self.try_compact(provider, s, reason, after, then);
                }
            }
            ContextStrategy::Summarize => {
                if !self.try_compact(provider, s, reason, tokens, "clearing old tool results") {
                    self.clear(&mut s.history, &s.window, s.turn_no, tokens, target);
                }
            }
        }
    }

    /// Sends the request and streams the turn, starting safe calls as they are ready.
    /// `Err` is the step when no turn came: a failure, or the wall (cleared: `Retry`).
    fn request<'w, 'scope, 'env>(
        &self,
        provider: &mut dyn Provider,
        dispatcher: &'env Dispatcher<'env>,
        workers: &'w EarlyWorkers<'scope, 'env>,
        s: &mut Turns,
    ) -> Result<Streamed<'w, 'scope, 'env>, Step> {
        let (run, turn_no) = (&self.run, s.turn_no);
        if let Some(tools) = run.registry.refresh(turn_no) {
            s.retool(tools); // a tool source's list changed (an MCP server's)
        }
        self.announce_request(s);
        let request = TurnRequest {
            model: run.config.provider().model(),
            max_tokens: run.config.provider().max_tokens(),
            system: run.config.session().system_prompt(),
            messages: s.history.entries(),
            tools: &s.tools,
        };
        let request_bytes = s.request_bytes();
        let t0 = Instant::now();
        let mut chars = 0usize;
        let early_ok = s.early_tools && turn_no < run.config.session().max_turns();
        let mut early = EarlyStart::new(early_ok, workers);
        let result = provider.stream_turn(&request, &mut |n| {
            run.ci.on_notice(&n);
            dispatcher.on_notice(&n);
            match &n {
                StreamNotice::ToolReady(c) => early.offer(c, dispatcher),
                StreamNotice::TurnStarted => early.restart(),
                _ => {}
            }
            self.on_notice(turn_no, &mut chars, n);
        });
        run.record().record_api_time(t0.elapsed());
        let turn = match result {
            Ok(t) => t,
            Err(e) => {
                if images::refuses_images(&e) && !self.images_refused.swap(true, Ordering::Relaxed)
                {
                    let n = s.history.rewrite(|m| images::without_media(m, &e.message));
                    if n > 0 {
                        output::warn(&format!(
                            "the server refused the request's images ({}); they are now \
                             error results, and the request is sent again",
                            e.message
                        ));
                        return Err(Step::Retry);
                    }
                }
                let Some(o) = overflow(&e) else {
                    return Err(Step::End(Outcome::fail(
                        ErrorKind::of_provider(&e.kind),
                        e.message,
                    )));
                };
                return Err(self.at_the_wall(provider, s, o, request_bytes, &e.message));
            }
        };
        if turn.stop_reason.as_str() == WINDOW_EXCEEDED_STOP {
            return Err(self.window_exceeded(provider, s, &turn, request_bytes));
        }
        Ok(Streamed { turn, early })
    }

    /// Progress lines and the -v log line for the request about to go.
    fn announce_request(&self, s: &Turns) {
        let turn_no = s.turn_no;
        output::progress(&format!("turn {turn_no}: waiting for the model"));
        output::step(&format!(
            "{}turn {turn_no}: waiting for the model",
            self.run.ci.events.log_prefix()
        ));
        if output::debug_enabled() {
            let to = match &self.run.config.provider().replay() {
                Some(c) => format!("the cassette {}", c.display()),
                None => self.run.config.provider().base_url().to_string(),
            };
            output::debug(&format!(
                "turn {turn_no}: request to {to} ({} messages, {} tools)",
                s.history.entries().len(),
                s.tools.len()
            ));
        }
    }

    /// The request ran into the context window: clear or summarise and retry, or end.
    pub(super) fn at_the_wall(
        &self,
        provider: &mut dyn Provider,
        s: &mut Turns,
        overflow: Overflow,
        request_bytes: usize,
        what: &str,
    ) -> Step {
        let wall = Wall {
            overflow,
            request_bytes,
            what,
        };
        match self.recover(provider, s, wall) {
            Ok(()) => Step::Retry,
            Err(out) => Step::End(out),
        }
    }

    /// The turn came: record it, checkpoint, and take the step its stop reason calls for.
    fn answer(
        &self,
        streamed: Streamed<'_, '_, '_>,
        dispatcher: &Dispatcher<'_>,
        s: &mut Turns,
    ) -> Step {
        let run = &self.run;
        let Streamed { turn, early } = streamed;
        let turn_no = s.turn_no;
        s.window.observe(&turn.usage, s.request_bytes());
        run.record().record_context_tokens(s.window.last_tokens());
        let entry = self.note_turn(&turn, &mut s.history);
        // A turn of answers only may run on the last allowed turn: it runs nothing but
        // the schema check, and the run can end with it.
        let calls_may_run = turn_no < run.config.session().max_turns()
            || (s.answers.is_some() && structured::only_answers(&turn.calls));
        let runs_tools = !turn.calls.is_empty()
            && calls_may_run
            && !matches!(
                turn.stop_reason,
                StopReason::Refusal | StopReason::PauseTurn
            );
        dispatcher.turn_complete(&turn.calls);
        if !runs_tools {
            dispatcher.turn_answered();
        }
        run.ci.after_turn(
            turn_no,
            &turn,
            entry.transcript_json(),
            run.record,
            runs_tools,
        );
        // Before the calls run: a run killed during one leaves an `-o` file that holds
        // the call, so `--resume` can answer it (docs/guide/resume.md).
        run.checkpoint();
        // Only now wait for the calls started early: a way out taken while they still
        // run finds their turn recorded, as with any other call.
        let early = early.take(&turn.calls);
        match &turn.stop_reason {
            StopReason::Refusal => Step::End(Outcome::fail(
                ErrorKind::Refusal,
                "the model refused the task",
            )),
            // The paused assistant turn is sent back as it is.
            StopReason::PauseTurn if turn_no >= run.config.session().max_turns() => {
                Step::End(self.max_turns())
            }
            StopReason::PauseTurn => Step::Next,
            _ if !turn.calls.is_empty() => self.calls(&turn, early, calls_may_run, dispatcher, s),
            StopReason::MaxTokens => self.max_tokens_stop(&turn, s),
            StopReason::EndTurn | StopReason::StopSequence => self.end_turn(s),
            StopReason::ToolUse => Step::End(Outcome::fail(
                ErrorKind::Protocol,
                "the model stopped for tool_use but made no tool call",
            )),
            StopReason::Other(reason) => Step::End(Outcome::fail(
                ErrorKind::StopReason,
                format!("the model stopped with stop_reason {reason:?}"),
            )),
        }
    }

    /// The model that answered `turn`: the one the API reported, else the one asked for.
    pub(super) fn answered_by<'t>(&'t self, turn: &'t Turn) -> &'t str {
        if turn.model.is_empty() {
            self.run.config.provider().model()
        } else {
            &turn.model
        }
    }

    pub(super) fn max_turns(&self) -> Outcome {
        Outcome::fail(
            ErrorKind::MaxTurns,
            format!(
                "reached --max-turns {} while the model still wanted to continue",
                self.run.config.session().max_turns()
            ),
        )
    }

    /// A new message: serialised once, shared by the record and the request history.
    pub(super) fn enter(&self, history: &mut History, message: Message) {
        let entry = Entry::new(message);
        self.run.record().record_message(entry.clone());
        history.push(entry);
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
