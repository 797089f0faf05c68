//! When the loop clears the context window: over `--compact-at` before a request, and
//! at the wall (a request refused as too long, or a `model_context_window_exceeded`
//! stop), where clearing and summarising (`compacting.rs`) are each tried once a turn,
//! in the order `--context-strategy` gives, before the same turn is retried.
//! `context.rs` plans a clearing and words its messages; `history.rs` applies it.

use super::{Agent, Step, Turns};
use crate::config::cli::ContextStrategy;
use crate::model::protocol::{ContentBlock, Message, Role};
use crate::model::provider::{Provider, ProviderError, ProviderErrorKind};
use crate::model::turn::Turn;
use crate::record::history::{Entry, History};
use crate::record::outcome::{ErrorKind, Outcome};
use crate::run::compaction::Reason;
use crate::run::context::{
    CLEAR_TARGET, Clearing, ContextWindow, Overflow, cleared_note, learned_window_note,
    neither_tried, nothing_to_clear, overflow_of, plan_clearing, still_exceeded,
    still_exceeded_after_summary,
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
    pub(super) fn window_exceeded(
        &self,
        provider: &mut dyn Provider,
        s: &mut Turns,
        turn: &Turn,
        request_bytes: usize,
    ) -> Step {
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
        self.at_the_wall(provider, s, o, request_bytes, what)
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

    /// The request did not fit: learn the window if the error names it, then clear
    /// down to half of it or summarise (each once a turn, in the strategy's order), and
    /// let the loop retry the same turn. When neither is left to try, or neither could be
    /// made, the run ends with `context_exceeded`.
    pub(super) fn recover(
        &self,
        provider: &mut dyn Provider,
        s: &mut Turns,
        wall: Wall<'_>,
    ) -> Result<(), Outcome> {
        let Wall {
            overflow: o,
            request_bytes,
            what,
        } = wall;
        if let Some(limit) = s.window.learn(&o) {
            self.run.record().record_context_window(Some(limit));
            output::warn(&learned_window_note(limit));
        }
        let window = &s.window;
        let tokens_now = o
            .tokens
            .unwrap_or_else(|| window.tokens_of(request_bytes))
            .max(window.window().unwrap_or(0));
        let limit = window
            .window()
            .map(|w| format!(" ({tokens_now} tokens > {w})"))
            .unwrap_or_default();
        let target =
            (window.window().unwrap_or(tokens_now).min(tokens_now) as f64 * CLEAR_TARGET) as u64;
        let strategy = self.run.config.session().context().strategy;
        let order: &[Remedy] = match strategy {
            ContextStrategy::Fail => return Err(exceeded(neither_tried(&limit, what))),
            ContextStrategy::Clear => &[Remedy::Clear, Remedy::Summarize],
            ContextStrategy::Summarize => &[Remedy::Summarize, Remedy::Clear],
        };
        for remedy in order {
            match remedy {
                Remedy::Clear if !s.wall.cleared => {
                    s.wall.cleared = true;
                    if self
                        .clear(&mut s.history, &s.window, s.turn_no, tokens_now, target)
                        .is_some()
                    {
                        return Ok(());
                    }
                }
                Remedy::Summarize if !s.wall.compacted => {
                    s.wall.compacted = true;
                    let then = match (strategy, s.wall.cleared) {
                        (ContextStrategy::Summarize, false) => "clearing old tool results",
                        _ => "the run ends",
                    };
                    if self.try_compact(provider, s, Reason::Wall, tokens_now, then) {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        let message = if s.wall.compacted && self.compacted_at_turn(s.turn_no) {
            still_exceeded_after_summary(&limit, what)
        } else if s.wall.cleared && self.cleared_at_turn(s.turn_no) {
            still_exceeded(&limit, what)
        } else {
            nothing_to_clear(&limit, what)
        };
        Err(exceeded(message))
    }

    /// Whether the history was summarised for this turn.
    fn compacted_at_turn(&self, turn: u32) -> bool {
        self.run.record().compacted_at(turn)
    }

    /// Whether old tool results were cleared for this turn.
    fn cleared_at_turn(&self, turn: u32) -> bool {
        self.run.record().cleared_at(turn)
    }
}

/// What can be done at the wall.
enum Remedy {
    Clear,
    Summarize,
}
