//! The loop's steps after a turn came (`agent.rs` drives them): running its calls, a
//! `max_tokens` stop, an `end_turn`, and what each writes to the record and the history.

use std::sync::Arc;

use super::observers::{LOG_INPUT_CHARS, shorten};
use super::{Agent, Step, Turns};
use std::sync::atomic::Ordering;

use crate::model::protocol::{ContentBlock, Message, Role};
use crate::model::turn::{PendingCall, Turn};
use crate::record::history::{Entry, History};
use crate::record::outcome::{ErrorKind, Outcome};
use crate::record::{CallMetadata, DenialRecord, ToolCallRecord, message_text, says_nothing};
use crate::run::structured::{self, Judged};
use crate::run::verify::Verdict;
use crate::tools::ToolResult;
use crate::tools::dispatch::{CallOutcome, Dispatcher};
use crate::tools::scheduler::{self, Scheduled};
use crate::util::output;

/// Continuations asked for when the final answer is cut off by `max_tokens`: enough for
/// an answer a few times the limit, while a model that never stops cannot loop on.
const MAX_ANSWER_CONTINUATIONS: u32 = 3;
/// What the model is asked when its final answer was cut off.
const CONTINUE_PROMPT: &str = "Your answer was cut off by the output token limit. Continue \
    exactly where it stopped, without repeating anything.";

impl Agent<'_> {
    /// The turn made calls: run them (those started early are only collected), answer
    /// each, and end the run on a fatal failure, a denial under `--on-deny fail` or a
    /// judged answer.
    pub(super) fn calls(
        &self,
        turn: &Turn,
        early: Vec<CallOutcome>,
        calls_may_run: bool,
        dispatcher: &Dispatcher<'_>,
        s: &mut Turns,
    ) -> Step {
        let run = &self.run;
        // Not an answer after all: earlier cut-off parts are no longer joined.
        s.continuations = 0;
        run.record().drop_answer_parts();
        if !calls_may_run {
            return Step::End(self.max_turns());
        }
        if let Err(stopped) = run.check_stop() {
            return Step::End(stopped);
        }
        if output::progress_enabled() {
            let names: Vec<&str> = turn.calls.iter().map(|c| c.name.as_str()).collect();
            output::progress(&format!(
                "turn {} · running {}",
                s.turn_no,
                names.join(", ")
            ));
        }
        let scheduled = scheduler::run_calls(&turn.calls, dispatcher, &mut s.next_batch, early);
        // A way out taken while the calls ran has recorded them.
        if let Err(stopped) = run.check_stop() {
            return Step::End(stopped);
        }
        let model = self.answered_by(turn);
        self.note_results(s.turn_no, model, &turn.calls, &scheduled, &mut s.history);
        dispatcher.turn_answered();
        run.ci.turn_finished(s.turn_no, run.record);
        run.checkpoint();
        if let Some(fatal) = scheduled.iter().find_map(|o| o.outcome.fatal.clone()) {
            return Step::End(Outcome::fail(ErrorKind::ToolFatal, fatal));
        }
        if run.gate.ends_run_on_denial()
            && let Some(d) = scheduled.iter().find_map(|o| o.outcome.denial.as_ref())
        {
            return Step::End(Outcome::fail(
                ErrorKind::Denied,
                format!("a tool call was denied (--on-deny fail): {}", d.reason),
            ));
        }
        self.judge_answers(turn, &scheduled, s)
    }

    /// `--output-schema`: an accepted answer is the model's stop (verification decides);
    /// no correction left ends the run.
    fn judge_answers(&self, turn: &Turn, scheduled: &[Scheduled], s: &mut Turns) -> Step {
        let Some(answers) = s.answers.as_mut() else {
            return Step::Next;
        };
        let results: Vec<&ToolResult> = scheduled.iter().map(|o| &o.outcome.result).collect();
        match answers.judge(&turn.calls, &results) {
            Judged::Accepted(value) => {
                self.run.record().accept_answer(value);
                self.stopped(s)
            }
            Judged::Exhausted(m) => Step::End(Outcome::fail(ErrorKind::SchemaFailed, m)),
            Judged::Rejected if s.turn_no >= self.run.config.session().max_turns() => {
                Step::End(self.max_turns())
            }
            Judged::Rejected | Judged::NoAnswer => Step::Next,
        }
    }

    /// The final answer was cut off: send it back and ask for the rest.
    pub(super) fn max_tokens_stop(&self, turn: &Turn, s: &mut Turns) -> Step {
        let config = self.run.config;
        let n = s.continuations;
        if n >= MAX_ANSWER_CONTINUATIONS || s.turn_no >= config.session().max_turns() {
            return Step::End(Outcome::fail(
                ErrorKind::MaxTokens,
                format!(
                    "the answer was cut off by --max-tokens {} (after {n} continuation{})",
                    config.provider().max_tokens(),
                    if n == 1 { "" } else { "s" }
                ),
            ));
        }
        s.continuations += 1;
        self.run
            .record()
            .record_answer_part(message_text(&turn.message));
        if s.history.last().as_ref().is_some_and(says_nothing) {
            s.history.pop();
        }
        self.enter(
            &mut s.history,
            Message::user_text(CONTINUE_PROMPT.to_string()),
        );
        self.run.checkpoint();
        Step::Next
    }

    /// The model stopped. With `--output-schema`, stopping without an answer is not the
    /// end: it is asked for one. Otherwise `--verify` decides.
    pub(super) fn end_turn(&self, s: &mut Turns) -> Step {
        let config = self.run.config;
        let Some(answers) = s.answers.as_mut() else {
            return self.stopped(s);
        };
        let ask = match answers.missing() {
            Err(m) => return Step::End(Outcome::fail(ErrorKind::SchemaFailed, m)),
            Ok(_) if s.turn_no >= config.session().max_turns() => {
                return Step::End(Outcome::fail(
                    ErrorKind::SchemaFailed,
                    format!(
                        "the model stopped without calling {} and --max-turns {} leaves no \
                         turn to ask for it",
                        structured::TOOL_NAME,
                        config.session().max_turns()
                    ),
                ));
            }
            Ok(msg) => msg,
        };
        s.continuations = 0;
        self.run.record().drop_answer_parts();
        self.tell(&mut s.history, ask);
        Step::Next
    }

    /// The model stopped (or gave an accepted answer): `--verify` decides. A failure that
    /// goes back to the model discards an accepted answer (it must answer again after its
    /// fix), and the next answer's parts start afresh.
    fn stopped(&self, s: &mut Turns) -> Step {
        let run = &self.run;
        let turns_left = s.turn_no < run.config.session().max_turns();
        match run.ci.after_stop(run.ctx, run.record, turns_left) {
            Verdict::Passed => Step::End(Outcome::success()),
            Verdict::Failed(m) => Step::End(Outcome::fail(ErrorKind::VerifyFailed, m)),
            Verdict::Retry(msg) => {
                run.record().discard_answer();
                self.tell(&mut s.history, msg);
                s.continuations = 0;
                Step::Next
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
        let mut r = self.run.record();
        let user_last = |m: Option<&Arc<Entry>>| m.is_some_and(|e| e.role() == Role::User);
        // After tool results (an accepted answer), the text joins that user message:
        // roles must alternate. The request's copy may have had old results cleared, so
        // each copy is extended on its own.
        if user_last(history.entries().last()) && user_last(r.messages().last()) {
            let extended = |e: &Arc<Entry>| {
                let mut m = e.message();
                m.content.extend(msg.content.iter().cloned());
                Entry::new(m)
            };
            if let (Some(sent), Some(kept)) = (history.pop(), r.messages().last().cloned()) {
                let new_kept = extended(&kept);
                let new_sent = if Arc::ptr_eq(&sent, &kept) {
                    new_kept.clone()
                } else {
                    extended(&sent)
                };
                r.replace_last_message(new_kept);
                history.push(new_sent);
            }
            drop(r);
        } else {
            drop(r);
            self.enter(history, msg);
        }
        self.run.checkpoint();
    }

    /// Records a model turn and adds it to the request history.
    pub(super) fn note_turn(&self, turn: &Turn, history: &mut History) -> Arc<Entry> {
        let entry = Entry::new(turn.message.clone());
        history.push(entry.clone());
        let stop = turn.stop_reason.as_str();
        let model = self.answered_by(turn);
        let prices = &self.run.config.ci().prices();
        let n = self
            .run
            .record()
            .record_turn(model, stop, &turn.usage, prices, entry.clone());
        output::debug(&format!(
            "turn {n}: stop_reason {stop}, {} tool calls, {}",
            turn.calls.len(),
            turn.usage.tokens_line()
        ));
        entry
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
        let mut records = Vec::with_capacity(done.len());
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
            records.push(call_record(turn_no, model, call, s));
            let images = self.run.config.session().images();
            let refused = images.refused() || self.images_refused.load(Ordering::Relaxed);
            let (result, is_error) =
                super::images::result_content(&s.outcome.result, images.inline(), refused);
            content.push(ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: result,
                is_error,
            });
        }
        let entry = Entry::new(Message {
            role: Role::User,
            content,
        });
        self.run.record().record_results(records, entry.clone());
        history.push(entry);
    }
}

/// What the record keeps of one executed (or refused) call; logs it at -v.
fn call_record(
    turn_no: u32,
    model: &str,
    call: &PendingCall,
    s: &Scheduled,
) -> (ToolCallRecord, Option<DenialRecord>) {
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
    let denial = o.denial.as_ref().map(|d| DenialRecord {
        tool_name: call.name.clone(),
        tool_use_id: call.id.clone(),
        tool_input: input.clone(),
        reason: d.reason.clone(),
    });
    let record = ToolCallRecord {
        id: call.id.clone(),
        name: call.name.clone(),
        input,
        is_error: o.result.is_error,
        batch: s.batch,
        duration_ms: o.duration.as_millis() as u64,
        started_ms: o.started.as_millis() as u64,
        turn: turn_no,
        model: model.to_string(),
        metadata: CallMetadata::of_result(o.result.metadata.clone()),
        changes: o.result.changes.clone(),
    };
    (record, denial)
}
