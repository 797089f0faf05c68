//! The agent loop: request a turn, stream it, run its tool calls through the scheduler,
//! answer each tool_use with exactly one tool_result in order, and loop until the model
//! stops or a limit is reached. It never names a tool.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::config::Config;
use crate::model::protocol::{ContentBlock, Message, Role, StopReason};
use crate::model::provider::{
    Provider, ProviderError, ProviderErrorKind, StreamNotice, TurnRequest,
};
use crate::model::turn::{PendingCall, Turn};
use crate::record::history::{Entry, History};
use crate::record::outcome::{ErrorKind, Outcome};
use crate::record::{DenialRecord, InFlight, RunRecord, ToolCallRecord, lock, message_text};
use crate::run::ci::CiRun;
use crate::run::context::{
    CLEAR_TARGET, Clearing, ContextWindow, Overflow, WINDOW_EXCEEDED_STOP, cleared_note,
    learned_window_note, nothing_to_clear, overflow_of, plan_clearing, still_exceeded,
};
use crate::run::structured::{self, Judged};
use crate::run::verify::Verdict;
use crate::tools::dispatch::{CallOutcome, Dispatcher, Gate, Watch};
use crate::tools::registry::Registry;
use crate::tools::scheduler::{self, EarlyStart, EarlyWorkers, Scheduled};
use crate::tools::{ToolContext, ToolResult};
use crate::util::output;

pub struct Agent<'a> {
    pub config: &'a Config,
    pub registry: &'a Registry,
    pub ctx: &'a ToolContext,
    pub gate: &'a dyn Gate,
    /// Shared with the signal and deadline threads.
    pub record: &'a Mutex<RunRecord>,
    /// Rewrites the `-o` file after every model response and after its tool results.
    pub checkpoint: &'a dyn Fn(),
    /// Events, verification, budgets (SPEC §9).
    pub ci: &'a CiRun,
    /// Set when a signal or the deadline is ending the run: make no further request and
    /// start no further tool.
    pub cancelled: &'a AtomicBool,
    /// Calls running now, for the transcript of a run that ends while they do.
    pub in_flight: &'a InFlight,
}

/// What the dispatcher reports to the run, early-started calls included: the calls in
/// flight, and the CI observers.
struct RunWatch<'a> {
    ci: &'a CiRun,
    in_flight: &'a InFlight,
}

impl Watch for RunWatch<'_> {
    fn started(&self, call: &PendingCall) {
        let input = call.input.clone().unwrap_or_else(|_| serde_json::json!({}));
        if output::steps_enabled() {
            output::step(&format!(
                "turn {}: {} {}",
                self.ci.turn(),
                call.name,
                shorten(&input.to_string(), STEP_INPUT_CHARS)
            ));
        }
        self.in_flight
            .start(&call.id, &call.name, input, self.ci.turn());
        self.ci.started(call);
    }

    fn finished(&self, call: &PendingCall, outcome: &CallOutcome) {
        self.in_flight.end(&call.id);
        self.ci.finished(call, outcome);
    }
}

/// Continuations asked for when the final answer is cut off by `max_tokens`: enough for
/// an answer a few times the limit, while a model that never stops cannot loop on.
const MAX_ANSWER_CONTINUATIONS: u32 = 3;
/// What the model is asked when its final answer was cut off.
const CONTINUE_PROMPT: &str = "Your answer was cut off by the output token limit. Continue \
    exactly where it stopped, without repeating anything.";

/// How much of a tool input a -v log line shows: a WriteFile's content must not flood CI.
const LOG_INPUT_CHARS: usize = 200;

/// How much of a tool input a plain progress line shows: one readable log line.
const STEP_INPUT_CHARS: usize = 100;

/// `text` cut to `max` characters, with a marker saying how much was left out.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} more chars)", &text[..i], text[i..].chars().count()),
        None => text.to_string(),
    }
}

/// An assistant message with no text and no tool call.
fn says_nothing(m: &Message) -> bool {
    m.role == Role::Assistant
        && !m.content.iter().any(|b| match b {
            ContentBlock::Text { text } => !text.trim().is_empty(),
            ContentBlock::ToolUse { .. } => true,
            _ => false,
        })
}

/// Whether a failed request was refused because the conversation no longer fits.
fn overflow(e: &ProviderError) -> Option<Overflow> {
    match &e.kind {
        ProviderErrorKind::Http { status, error_type } => {
            overflow_of(*status, error_type, &e.message)
        }
        _ => None,
    }
}

/// A request that ran into the context window.
struct Wall<'a> {
    overflow: Overflow,
    /// The size of what was sent (for an estimate when the API gives no numbers).
    request_bytes: usize,
    /// This was already the retry after a clearing.
    retried: bool,
    /// What the API said, for the final message.
    what: &'a str,
}

/// The run ends because the history cannot be made to fit.
fn exceeded(message: String) -> Outcome {
    Outcome::fail(ErrorKind::ContextExceeded, message)
}

impl Agent<'_> {
    pub fn run(&self, provider: &mut dyn Provider) -> Outcome {
        let before = crate::record::history::serialisations();
        let outcome = self.run_loop(provider);
        let r = lock(self.record);
        output::debug(&format!(
            "history: {} messages, {} serialisations",
            r.messages.len(),
            crate::record::history::serialisations() - before
        ));
        outcome
    }

    /// A new message: serialised once, shared by the record and the request history.
    fn enter(&self, history: &mut History, message: Message) {
        let entry = Entry::new(message);
        lock(self.record).messages.push(entry.clone());
        history.push(entry);
    }

    /// Clears the oldest tool results until the estimate falls to `target`; records the
    /// clearing and announces it. None when nothing is left to clear.
    fn clear(
        &self,
        history: &mut History,
        window: &ContextWindow,
        turn_no: u32,
        tokens_now: u64,
        target: u64,
    ) -> Option<Clearing> {
        let plan = plan_clearing(&history.clearable(), tokens_now, target, window)?;
        let cleared = history.apply(&plan);
        let c = Clearing {
            turn: turn_no,
            results_cleared: cleared,
            tokens_before: tokens_now,
            tokens_after_estimate: plan.tokens_after_estimate,
        };
        lock(self.record).context_clearings.push(c);
        self.ci.events.emit(
            "context.cleared",
            serde_json::to_value(c).unwrap_or_default(),
        );
        output::info(&cleared_note(&c, window.window()));
        Some(c)
    }

    /// The request did not fit: learn the window if the error names it, clear down to
    /// half of it, and let the loop retry the same turn once. A second overflow, or
    /// nothing left to clear, ends the run with `context_exceeded`.
    fn recover(
        &self,
        history: &mut History,
        window: &mut ContextWindow,
        turn_no: u32,
        wall: Wall<'_>,
    ) -> Result<(), Outcome> {
        let Wall {
            overflow: o,
            request_bytes,
            retried,
            what,
        } = wall;
        if let Some(limit) = window.learn(&o) {
            lock(self.record).context_window = Some(limit);
            output::warn(&learned_window_note(limit));
        }
        let tokens_now = o
            .tokens
            .unwrap_or_else(|| window.tokens_of(request_bytes))
            .max(window.window().unwrap_or(0));
        let limit = window
            .window()
            .map(|w| format!(" ({tokens_now} tokens > {w})"))
            .unwrap_or_default();
        if retried {
            return Err(exceeded(still_exceeded(&limit, what)));
        }
        let target =
            (window.window().unwrap_or(tokens_now).min(tokens_now) as f64 * CLEAR_TARGET) as u64;
        match self.clear(history, window, turn_no, tokens_now, target) {
            Some(_) => Ok(()),
            None => Err(exceeded(nothing_to_clear(&limit, what))),
        }
    }

    fn run_loop(&self, provider: &mut dyn Provider) -> Outcome {
        let run_start = lock(self.record).started;
        let watch = RunWatch {
            ci: self.ci,
            in_flight: self.in_flight,
        };
        let dispatcher =
            Dispatcher::new(self.registry, self.ctx, self.gate, run_start, Some(&watch));
        // The threads calls started early run on live as long as the run (see
        // `EarlyWorkers`); the scope ends when they have.
        std::thread::scope(|scope| self.turns(provider, &dispatcher, &EarlyWorkers::new(scope)))
    }

    fn turns<'env>(
        &self,
        provider: &mut dyn Provider,
        dispatcher: &'env Dispatcher<'env>,
        workers: &EarlyWorkers<'_, 'env>,
    ) -> Outcome {
        let tools = self.registry.to_api_format();
        let mut history = History::new();
        match &self.config.resume {
            // A resumed run starts from the earlier conversation (its new prompt appended).
            Some(r) => {
                for m in &r.messages {
                    self.enter(&mut history, m.clone());
                }
            }
            None => self.enter(&mut history, Message::user_text(self.config.prompt.clone())),
        }
        let mut window = ContextWindow::for_run(&self.config.model, &self.config.context);
        lock(self.record).context_window = window.window();
        // What every request sends besides the history: calibrates bytes per token.
        let fixed_bytes =
            serde_json::to_string(&tools).map_or(0, |t| t.len()) + self.config.system_prompt.len();
        {
            // The initial `cost_usd`: 0, or null for a model without a price.
            let mut r = lock(self.record);
            r.cost_usd = self.config.prices.cost(&r.model, &r.usage);
        }
        // The task is checkpointed before the first request: a run killed while waiting
        // for the first response leaves it, so `--resume` can continue it.
        (self.checkpoint)();
        self.ci.run_started(self.config, self.record);
        let mut next_batch = 0u32;
        let mut turn_no = 0u32;
        // Set while the same turn is asked again after a clearing at the wall.
        let mut retrying = false;
        let mut continuations = 0u32;
        // `--output-schema`: the model's answers, counted against --max-schema-retries.
        let mut answers = self
            .config
            .output_schema
            .as_ref()
            .map(|_| structured::Answers::new(self.config.max_schema_retries));
        // Benchmarking switch (README "Performance"): run every call only after message_stop.
        let early_tools = std::env::var_os("AGENT_NO_EARLY_TOOLS").is_none_or(|v| v != "1");
        loop {
            if self.cancelled.load(Ordering::SeqCst) {
                return Outcome::fail(ErrorKind::Interrupted, "the run was stopped");
            }
            if !retrying {
                turn_no += 1;
                if let Some(stop) = self.ci.before_request(turn_no, self.record) {
                    return stop;
                }
                // Before any usage (a resumed history), the bytes about to be sent tell.
                let tokens = window.next_tokens(history.json_bytes() + fixed_bytes);
                if window.over_threshold(tokens)
                    && let Some(target) = window.clear_target()
                {
                    self.clear(&mut history, &window, turn_no, tokens, target);
                }
            }
            output::progress(&format!("turn {turn_no}: waiting for the model"));
            output::step(&format!("turn {turn_no}: waiting for the model"));
            if output::debug_enabled() {
                let to = match &self.config.replay {
                    Some(c) => format!("the cassette {}", c.display()),
                    None => self.config.base_url.clone(),
                };
                output::debug(&format!(
                    "turn {turn_no}: request to {to} ({} messages, {} tools)",
                    history.entries().len(),
                    tools.len()
                ));
            }
            let request = TurnRequest {
                model: &self.config.model,
                max_tokens: self.config.max_tokens,
                system: &self.config.system_prompt,
                messages: history.entries(),
                tools: &tools,
            };
            let request_bytes = history.json_bytes() + fixed_bytes;
            let t0 = Instant::now();
            let mut chars = 0usize;
            let mut early =
                EarlyStart::new(early_tools && turn_no < self.config.max_turns, workers);
            let result = provider.stream_turn(&request, &mut |n| {
                self.ci.on_notice(&n);
                dispatcher.on_notice(&n);
                match &n {
                    StreamNotice::ToolReady(c) => early.offer(c, dispatcher),
                    StreamNotice::TurnStarted => early.restart(),
                    _ => {}
                }
                self.on_notice(turn_no, &mut chars, n);
            });
            lock(self.record).api_duration += t0.elapsed();
            let turn = match result {
                Ok(t) => t,
                Err(e) => {
                    let Some(o) = overflow(&e) else {
                        return Outcome::fail(ErrorKind::of_provider(&e.kind), e.message);
                    };
                    let wall = Wall {
                        overflow: o,
                        request_bytes,
                        retried: retrying,
                        what: &e.message,
                    };
                    match self.recover(&mut history, &mut window, turn_no, wall) {
                        Ok(()) => {
                            retrying = true;
                            continue;
                        }
                        Err(out) => return out,
                    }
                }
            };
            if turn.stop_reason.as_str() == WINDOW_EXCEEDED_STOP {
                // Billed, but not a model turn: its partial answer is dropped and the
                // same turn is asked again with a cleared history.
                lock(self.record).add_response(
                    self.answered_by(&turn),
                    &turn.usage,
                    &self.config.prices,
                    false,
                );
                let o = Overflow {
                    tokens: Some(turn.usage.input_total()).filter(|t| *t > 0),
                    limit: None,
                };
                let wall = Wall {
                    overflow: o,
                    request_bytes,
                    retried: retrying,
                    what: "the model stopped with model_context_window_exceeded",
                };
                match self.recover(&mut history, &mut window, turn_no, wall) {
                    Ok(()) => {
                        retrying = true;
                        continue;
                    }
                    Err(out) => return out,
                }
            }
            retrying = false;
            window.observe(&turn.usage, request_bytes);
            lock(self.record).context_tokens = window.last_tokens();
            let early = early.take(&turn.calls);
            let entry = self.note_turn(&turn, &mut history);
            // A turn of answers only may run on the last allowed turn: it runs nothing but
            // the schema check, and the run can end with it.
            let calls_may_run = turn_no < self.config.max_turns
                || (answers.is_some() && structured::only_answers(&turn.calls));
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
            self.ci
                .after_turn(turn_no, &turn, entry.json(), self.record, runs_tools);
            // Before the calls run: a run killed during one leaves an `-o` file that holds
            // the call, so `--resume` can answer it (README "Resume").
            (self.checkpoint)();

            match &turn.stop_reason {
                StopReason::Refusal => {
                    return Outcome::fail(ErrorKind::Refusal, "the model refused the task");
                }
                StopReason::PauseTurn => {
                    if turn_no >= self.config.max_turns {
                        return self.max_turns();
                    }
                    continue; // the paused assistant turn is sent back as it is
                }
                _ if !turn.calls.is_empty() => {
                    // Not an answer after all: earlier cut-off parts are no longer joined.
                    continuations = 0;
                    lock(self.record).answer_parts.clear();
                    if !calls_may_run {
                        return self.max_turns();
                    }
                    if self.cancelled.load(Ordering::SeqCst) {
                        return Outcome::fail(ErrorKind::Interrupted, "the run was stopped");
                    }
                    if output::progress_enabled() {
                        let names: Vec<&str> = turn.calls.iter().map(|c| c.name.as_str()).collect();
                        output::progress(&format!("turn {turn_no} · running {}", names.join(", ")));
                    }
                    let scheduled =
                        scheduler::run_calls(&turn.calls, dispatcher, &mut next_batch, early);
                    if self.cancelled.load(Ordering::SeqCst) {
                        // A way out was taken while the calls ran; it has recorded them.
                        return Outcome::fail(ErrorKind::Interrupted, "the run was stopped");
                    }
                    let model = self.answered_by(&turn);
                    self.note_results(turn_no, model, &turn.calls, &scheduled, &mut history);
                    dispatcher.turn_answered();
                    self.ci.turn_finished(turn_no, self.record);
                    (self.checkpoint)();
                    if let Some(fatal) = scheduled.iter().find_map(|s| s.outcome.fatal.clone()) {
                        return Outcome::fail(ErrorKind::ToolFatal, fatal);
                    }
                    if self.gate.ends_run_on_denial()
                        && let Some(d) = scheduled.iter().find_map(|s| s.outcome.denial.as_ref())
                    {
                        return Outcome::fail(
                            ErrorKind::Denied,
                            format!("a tool call was denied (--on-deny fail): {}", d.reason),
                        );
                    }
                    if let Some(a) = answers.as_mut() {
                        let results: Vec<&ToolResult> =
                            scheduled.iter().map(|s| &s.outcome.result).collect();
                        match a.judge(&turn.calls, &results) {
                            // An accepted answer is the model's stop: verification decides.
                            Judged::Accepted(value) => {
                                lock(self.record).structured_output = Some(value);
                                if let Some(end) = self.stopped(turn_no, &mut history) {
                                    return end;
                                }
                            }
                            Judged::Exhausted(m) => {
                                return Outcome::fail(ErrorKind::SchemaFailed, m);
                            }
                            Judged::Rejected if turn_no >= self.config.max_turns => {
                                return self.max_turns();
                            }
                            Judged::Rejected | Judged::NoAnswer => {}
                        }
                    }
                }
                StopReason::MaxTokens => {
                    // The final answer was cut off: send it back and ask for the rest.
                    if continuations >= MAX_ANSWER_CONTINUATIONS || turn_no >= self.config.max_turns
                    {
                        return Outcome::fail(
                            ErrorKind::MaxTokens,
                            format!(
                                "the answer was cut off by --max-tokens {} (after {continuations} \
                                 continuation{})",
                                self.config.max_tokens,
                                if continuations == 1 { "" } else { "s" }
                            ),
                        );
                    }
                    continuations += 1;
                    lock(self.record)
                        .answer_parts
                        .push(message_text(&turn.message));
                    if history.last().as_ref().is_some_and(says_nothing) {
                        history.pop();
                    }
                    self.enter(
                        &mut history,
                        Message::user_text(CONTINUE_PROMPT.to_string()),
                    );
                    (self.checkpoint)();
                }
                StopReason::EndTurn | StopReason::StopSequence => {
                    // With --output-schema, stopping without an answer is not the end.
                    if let Some(a) = answers.as_mut() {
                        let ask = match a.missing() {
                            Err(m) => {
                                return Outcome::fail(ErrorKind::SchemaFailed, m);
                            }
                            Ok(_) if turn_no >= self.config.max_turns => {
                                return Outcome::fail(
                                    ErrorKind::SchemaFailed,
                                    format!(
                                        "the model stopped without calling {} and --max-turns \
                                         {} leaves no turn to ask for it",
                                        structured::TOOL_NAME,
                                        self.config.max_turns
                                    ),
                                );
                            }
                            Ok(msg) => msg,
                        };
                        continuations = 0;
                        lock(self.record).answer_parts.clear();
                        self.tell(&mut history, ask);
                        continue;
                    }
                    match self.stopped(turn_no, &mut history) {
                        Some(end) => return end,
                        // A new answer comes: the old one's parts are not joined to it.
                        None => continuations = 0,
                    }
                }
                StopReason::ToolUse => {
                    return Outcome::fail(
                        ErrorKind::Protocol,
                        "the model stopped for tool_use but made no tool call",
                    );
                }
                StopReason::Other(s) => {
                    return Outcome::fail(
                        ErrorKind::StopReason,
                        format!("the model stopped with stop_reason {s:?}"),
                    );
                }
            }
        }
    }

    /// The model stopped (or gave an accepted answer): `--verify` decides. Returns how
    /// the run ends, or None when the verification failure went back to the model (an
    /// accepted answer is then discarded: the model must answer again after its fix).
    fn stopped(&self, turn_no: u32, history: &mut History) -> Option<Outcome> {
        let turns_left = turn_no < self.config.max_turns;
        match self.ci.after_stop(self.ctx, self.record, turns_left) {
            Verdict::Passed => Some(Outcome::success()),
            Verdict::Failed(m) => Some(Outcome::fail(ErrorKind::VerifyFailed, m)),
            Verdict::Retry(msg) => {
                {
                    let mut r = lock(self.record);
                    r.structured_output = None;
                    r.answer_parts.clear();
                }
                self.tell(history, msg);
                None
            }
        }
    }

    /// Sends the model a user message of ours (a verification failure, a request for the
    /// answer) with the next request, and checkpoints.
    fn tell(&self, history: &mut History, msg: Message) {
        // The API refuses a non-final assistant message with nothing to say (empty, or
        // thinking only): it stays in the transcript, not in the requests.
        if history.last().as_ref().is_some_and(says_nothing) {
            history.pop();
        }
        let mut r = lock(self.record);
        let user_last =
            |m: Option<&std::sync::Arc<Entry>>| m.is_some_and(|e| e.role() == Role::User);
        // After tool results (an accepted answer), the text joins that user message:
        // roles must alternate. The request's copy may have had old results cleared, so
        // each copy is extended on its own.
        if user_last(history.entries().last()) && user_last(r.messages.last()) {
            let extended = |e: &std::sync::Arc<Entry>| {
                let mut m = e.message();
                m.content.extend(msg.content.iter().cloned());
                Entry::new(m)
            };
            if let (Some(sent), Some(kept)) = (history.pop(), r.messages.pop()) {
                let new_kept = extended(&kept);
                let new_sent = if std::sync::Arc::ptr_eq(&sent, &kept) {
                    new_kept.clone()
                } else {
                    extended(&sent)
                };
                r.messages.push(new_kept);
                history.push(new_sent);
            }
            drop(r);
        } else {
            drop(r);
            self.enter(history, msg);
        }
        (self.checkpoint)();
    }

    /// Progress and retry accounting for what the stream tells us.
    fn on_notice(&self, turn_no: u32, chars: &mut usize, notice: StreamNotice<'_>) {
        let what = match notice {
            StreamNotice::Retry { attempt, delay, .. } => {
                lock(self.record).retries += 1;
                format!("retry {attempt} in {:.1}s", delay.as_secs_f64())
            }
            StreamNotice::TextDelta(t) => {
                *chars += t.len();
                format!("streaming ({chars} chars)")
            }
            StreamNotice::ToolReady(c) => format!("model called {}", c.name),
            StreamNotice::Fallback { to, .. } => format!("overloaded: asking {to}"),
            StreamNotice::TurnStarted => {
                *chars = 0;
                "streaming".to_string()
            }
        };
        if output::progress_enabled() {
            let tokens = lock(self.record).usage.tokens_line();
            output::progress(&format!("turn {turn_no} · {what} · {tokens}"));
        }
    }

    fn max_turns(&self) -> Outcome {
        Outcome::fail(
            ErrorKind::MaxTurns,
            format!(
                "reached --max-turns {} while the model still wanted to continue",
                self.config.max_turns
            ),
        )
    }

    fn note_turn(&self, turn: &Turn, history: &mut History) -> std::sync::Arc<Entry> {
        let entry = Entry::new(turn.message.clone());
        history.push(entry.clone());
        let mut r = lock(self.record);
        r.num_turns += 1;
        r.stop_reason = Some(turn.stop_reason.as_str().to_string());
        let model = self.answered_by(turn);
        r.model = model.to_string();
        r.add_response(model, &turn.usage, &self.config.prices, true);
        r.messages.push(entry.clone());
        output::debug(&format!(
            "turn {}: stop_reason {}, {} tool calls, {}",
            r.num_turns,
            turn.stop_reason.as_str(),
            turn.calls.len(),
            turn.usage.tokens_line()
        ));
        entry
    }

    /// The model that answered `turn`: the one the API reported, else the one asked for.
    fn answered_by<'t>(&'t self, turn: &'t Turn) -> &'t str {
        if turn.model.is_empty() {
            &self.config.model
        } else {
            &turn.model
        }
    }

    /// Records the calls and builds the user message of tool_results, one per call, in
    /// the model's order. Calls that never ran (a fatal failure ended the batch walk) are
    /// answered too, so the history stays well-formed.
    fn note_results(
        &self,
        turn_no: u32,
        model: &str,
        calls: &[PendingCall],
        done: &[Scheduled],
        history: &mut History,
    ) {
        let mut r = lock(self.record);
        let mut content = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let Some(s) = done.get(i) else {
                content.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: "not executed: the run ended before this call (a system failure, \
                              or a denial with --on-deny fail)"
                        .into(),
                    is_error: true,
                });
                continue;
            };
            let o = &s.outcome;
            let input = call.input.clone().unwrap_or_else(|_| serde_json::json!({}));
            if output::debug_enabled() {
                output::debug(&format!(
                    "tool {} {} (batch {}, {} ms){}",
                    call.name,
                    shorten(&input.to_string(), LOG_INPUT_CHARS),
                    s.batch,
                    o.duration.as_millis(),
                    if o.result.is_error { " → error" } else { "" }
                ));
            }
            if let Some(d) = &o.denial {
                r.permission_denials.push(DenialRecord {
                    tool_name: call.name.clone(),
                    tool_use_id: call.id.clone(),
                    tool_input: input.clone(),
                    reason: d.reason.clone(),
                });
            }
            if !o.result.is_error {
                r.note_file_change(&o.result.metadata);
            }
            r.tool_calls.push(ToolCallRecord {
                id: call.id.clone(),
                name: call.name.clone(),
                input,
                is_error: o.result.is_error,
                batch: s.batch,
                duration_ms: o.duration.as_millis() as u64,
                started_ms: o.started.as_millis() as u64,
                turn: turn_no,
                model: model.to_string(),
                metadata: o.result.metadata.clone(),
            });
            content.push(ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: o.result.content.clone(),
                is_error: o.result.is_error,
            });
        }
        let entry = Entry::new(Message {
            role: Role::User,
            content,
        });
        r.messages.push(entry.clone());
        history.push(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::protocol::Usage;
    use crate::model::provider::ProviderError;
    use crate::record::outcome::Status;
    use crate::tools::ToolResult;
    use crate::tools::gate::OpenGate;
    use crate::tools::registry::ToolSelection;
    use crate::tools::test_support::FnTool;
    use crate::util::output::Verbosity;
    use serde_json::{Value, json};
    use std::sync::atomic::AtomicU32;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex as StdMutex};
    use std::time::Duration;

    /// Hang guard only: a broken early start would otherwise block the test forever.
    const HANG_GUARD: Duration = Duration::from_secs(60);

    fn config(dir: &std::path::Path) -> Config {
        Config {
            prompt: "task".into(),
            workspace: dir.to_path_buf(),
            add_dirs: Vec::new(),
            json: true,
            output_file: None,
            verbosity: Verbosity::Quiet,
            provider: crate::config::cli::ProviderKind::Anthropic,
            model: "m".into(),
            fallback_model: None,
            max_tokens: 100,
            base_url: "http://127.0.0.1:9".into(),
            api_key: String::new(),
            system_prompt: "sys".into(),
            max_turns: 10,
            timeout: None,
            bash_timeout: Duration::from_secs(5),
            max_retries: 0,
            idle_timeout: Duration::from_secs(5),
            request: Default::default(),
            gateway: Default::default(),
            tools: ToolSelection::default(),
            replay: None,
            record: None,
            jsonl: false,
            verify: None,
            budget: Default::default(),
            prices: Default::default(),
            settings: Default::default(),
            on_deny: Default::default(),
            sandbox: Default::default(),
            keep_env: Vec::new(),
            warnings: Vec::new(),
            keep_spill: false,
            mcp: Default::default(),
            context: Default::default(),
            output_schema: None,
            max_schema_retries: 3,
            resume: None,
        }
    }

    fn call(id: &str) -> PendingCall {
        PendingCall {
            id: id.into(),
            name: "Probe".into(),
            input: Ok(json!({})),
        }
    }

    fn turn(calls: Vec<PendingCall>, stop: StopReason) -> Turn {
        let mut content = vec![ContentBlock::Text { text: "t".into() }];
        for c in &calls {
            content.push(ContentBlock::ToolUse {
                id: c.id.clone(),
                name: c.name.clone(),
                input: json!({}),
            });
        }
        Turn {
            id: "msg".into(),
            model: "m".into(),
            message: Message {
                role: Role::Assistant,
                content,
            },
            calls,
            stop_reason: stop,
            usage: Usage::default(),
        }
    }

    /// First turn: announces a call, then (optionally) waits until the tool has started
    /// before finishing the response — which only happens if the call started early.
    struct Scripted {
        turns: u32,
        started: mpsc::Receiver<u32>,
        retry_first: bool,
    }
    impl Provider for Scripted {
        fn stream_turn(
            &mut self,
            _request: &TurnRequest<'_>,
            on_notice: &mut dyn FnMut(StreamNotice<'_>),
        ) -> Result<Turn, ProviderError> {
            self.turns += 1;
            if self.turns > 1 {
                return Ok(turn(vec![], StopReason::EndTurn));
            }
            on_notice(StreamNotice::TurnStarted);
            let a = call("toolu_a");
            on_notice(StreamNotice::ToolReady(&a));
            // The rest of the response streams only after the tool is running.
            assert_eq!(
                self.started.recv_timeout(HANG_GUARD),
                Ok(1),
                "call did not start early"
            );
            if self.retry_first {
                on_notice(StreamNotice::Retry {
                    attempt: 1,
                    reason: "dropped",
                    delay: Duration::ZERO,
                });
                on_notice(StreamNotice::TurnStarted);
                on_notice(StreamNotice::ToolReady(&a));
                assert_eq!(self.started.recv_timeout(HANG_GUARD), Ok(2));
            }
            on_notice(StreamNotice::TextDelta("more text after the call"));
            Ok(turn(vec![a], StopReason::ToolUse))
        }
    }

    fn run_scripted(retry_first: bool) -> (Outcome, RunRecord, u32) {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let (tx, rx) = mpsc::channel();
        // A read-only tool that reports each execution on a channel.
        let runs = Arc::new(AtomicU32::new(0));
        let (counted, started) = (runs.clone(), StdMutex::new(tx));
        let mut registry = Registry::builtin(&ToolSelection::default());
        registry.register(FnTool::safe("Probe", move |_: &Value| {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            let _ = started.lock().unwrap().send(n);
            ToolResult::ok(format!("run {n}"))
        }));
        let ctx = ToolContext::for_workspace(dir.path().to_path_buf());
        let record = Mutex::new(RunRecord::new("m", dir.path().to_path_buf(), vec![]));
        let agent = Agent {
            config: &cfg,
            registry: &registry,
            ctx: &ctx,
            gate: &OpenGate,
            record: &record,
            checkpoint: &|| {},
            ci: &CiRun::off(),
            cancelled: &AtomicBool::new(false),
            in_flight: &InFlight::default(),
        };
        let mut provider = Scripted {
            turns: 0,
            started: rx,
            retry_first,
        };
        let outcome = agent.run(&mut provider);
        let runs = runs.load(Ordering::SeqCst);
        (outcome, record.into_inner().unwrap(), runs)
    }

    #[test]
    fn log_lines_shorten_long_inputs() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("abcdefgh", 3), "abc… (5 more chars)");
        assert_eq!(shorten("ééééé", 2), "éé… (3 more chars)");
    }

    #[test]
    fn safe_call_starts_while_the_response_streams() {
        let (outcome, record, runs) = run_scripted(false);
        assert_eq!(outcome.status, Status::Success);
        assert_eq!(
            runs, 1,
            "the early call is not run again after message_stop"
        );
        assert_eq!(record.tool_calls.len(), 1);
        assert_eq!(record.tool_calls[0].batch, 1);
        let results: Vec<_> = record.messages[2]
            .message()
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::ToolResult { content, .. } => content.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(results, vec!["run 1"]);
    }

    #[test]
    fn early_results_of_a_retried_attempt_are_discarded() {
        let (outcome, record, runs) = run_scripted(true);
        assert_eq!(outcome.status, Status::Success);
        assert_eq!(runs, 2);
        match &record.messages[2].message().content[0] {
            ContentBlock::ToolResult { content, .. } => assert_eq!(content, "run 2"),
            other => panic!("{other:?}"),
        }
    }
}
