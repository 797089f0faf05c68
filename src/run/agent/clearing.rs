//! When the loop clears the context window: over `--compact-at` before a request, and
//! at the wall (a request refused as too long, or a `model_context_window_exceeded`
//! stop), once, before the same turn is retried. `context.rs` plans a clearing and
//! words its messages; `history.rs` applies it.

use super::{Agent, Step, Turns};
use crate::model::protocol::{ContentBlock, Message, Role};
use crate::model::provider::{ProviderError, ProviderErrorKind};
use crate::model::turn::Turn;
use crate::record::history::{Entry, History};
use crate::record::outcome::{ErrorKind, Outcome};
use crate::run::context::{
    CLEAR_TARGET, Clearing, ContextWindow, Overflow, cleared_note, learned_window_note,
    nothing_to_clear, overflow_of, plan_clearing, still_exceeded,
};
use crate::run::event::RunEvent;
use crate::util::output;

/// Whether a failed request was refused because the conversation no longer fits.
pub(super) fn overflow(e: &ProviderError) -> Option<Overflow> {
    match &e.kind {
        ProviderErrorKind::Http { status, error_type } => {
            overflow_of(*status, error_type, &e.message)
        }
        _ => None,
    }
}

/// A request that ran into the context window.
pub(super) struct Wall<'a> {
    pub(super) overflow: Overflow,
    /// The size of what was sent (for an estimate when the API gives no numbers).
    pub(super) request_bytes: usize,
    /// This was already the retry after a clearing.
    pub(super) retried: bool,
    /// What the API said, for the final message.
    pub(super) what: &'a str,
}

/// The text a response cut off at the window had streamed, as an assistant message; None
/// when it said nothing. Its calls never ran (nor will) and its thinking is cut off, so
/// only the text is kept.
fn partial_answer(m: &Message) -> Option<Message> {
    let content: Vec<ContentBlock> = m
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::Text { text } if !text.trim().is_empty()))
        .cloned()
        .collect();
    (!content.is_empty()).then_some(Message {
        role: Role::Assistant,
        content,
    })
}

/// The run ends because the history cannot be made to fit.
fn exceeded(message: String) -> Outcome {
    Outcome::fail(ErrorKind::ContextExceeded, message)
}

impl Agent<'_> {
    /// A `model_context_window_exceeded` stop: billed, but not a model turn. Its partial
    /// answer goes to the record only (never to a request: the retry asks the same turn
    /// again, with a cleared history), where the retried turn replaces it; a run that
    /// ends first keeps it (DESIGN.md).
    pub(super) fn window_exceeded(&self, s: &mut Turns, turn: &Turn, request_bytes: usize) -> Step {
        let run = &self.run;
        let partial = partial_answer(&turn.message).map(Entry::new);
        run.record().record_wall(
            self.answered_by(turn),
            turn.stop_reason.as_str(),
            &turn.usage,
            run.config.ci().prices(),
            partial,
        );
        let o = Overflow {
            tokens: Some(turn.usage.input_total()).filter(|t| *t > 0),
            limit: None,
        };
        let what = "the model stopped with model_context_window_exceeded";
        self.at_the_wall(s, o, request_bytes, what)
    }

    /// Clears the oldest tool results until the estimate falls to `target`; records the
    /// clearing and announces it. None when nothing is left to clear.
    pub(super) fn clear(
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
        self.run.record().record_clearing(c);
        self.run.ci.events.emit(RunEvent::ContextCleared(c));
        output::info(&cleared_note(&c, window.window()));
        Some(c)
    }

    /// The request did not fit: learn the window if the error names it, clear down to
    /// half of it, and let the loop retry the same turn once. A second overflow, or
    /// nothing left to clear, ends the run with `context_exceeded`.
    pub(super) fn recover(
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
            self.run.record().record_context_window(Some(limit));
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
}
