//! Summarising compaction, the pure part: when it may fire (with headroom for the summary
//! request itself), which messages it replaces and which it keeps verbatim, what the
//! summary request asks for, what the compacted history's first message says, and the
//! record of one compaction. The loop's side (the request, hooks, events, fallbacks) is
//! `run::agent::compacting`; clearing, the cheaper step tried first, is `context.rs`.
//!
//! The history is seen here as a list of sizes and roles only ([`Msg`]): the loop owns
//! the messages. A compacted history is: one user message (the original task verbatim,
//! the summary, the latest plan verbatim, the bodies of activated skills), then the
//! latest turns verbatim, starting at an assistant message, so roles alternate and every
//! `tool_use` keeps its `tool_result` (and thinking blocks stay with their turn).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::protocol::Usage;

/// The latest turns kept verbatim take at most this share of the window (at least the
/// last turn is kept, whatever its size).
pub(crate) const KEEP_SHARE: f64 = 0.2;

/// Why a compaction happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reason {
    /// A request used more than the threshold (before the wall).
    Threshold,
    /// The API refused a request as too long, or stopped at the window.
    Wall,
    /// A `--resume`d history over the threshold, before its first request.
    Resume,
}

impl Reason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::Threshold => "threshold",
            Reason::Wall => "wall",
            Reason::Resume => "resume",
        }
    }
}

/// One message as the planning sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Msg {
    pub assistant: bool,
    /// Its JSON's length.
    pub bytes: usize,
}

/// Where the latest turns kept verbatim start: an assistant message after a user
/// message, at index 2 or later (message 0 is the task, or the previous compaction's
/// first message, and something after it must be left to summarise). The earliest such
/// start whose tail fits `keep_bytes`; when even the last turn does not, the last turn.
/// None: nothing could be summarised (the history is the task and one turn, or less).
pub(crate) fn split_point(msgs: &[Msg], keep_bytes: usize) -> Option<usize> {
    let starts: Vec<usize> = (2..msgs.len())
        .filter(|&i| msgs[i].assistant && !msgs[i - 1].assistant)
        .collect();
    let last = *starts.last()?;
    let mut tail = 0usize;
    let mut best = last;
    let mut i = msgs.len();
    for &start in starts.iter().rev() {
        while i > start {
            i -= 1;
            tail += msgs[i].bytes;
        }
        if tail > keep_bytes {
            break;
        }
        best = start;
    }
    Some(best)
}

/// Where the summary request's messages resume after message 0 so that they fit
/// `budget_bytes` (message 0 and `extra_bytes`, the closing instruction, included): the
/// earliest assistant message before `split` that leaves the request under the budget.
/// Messages between 1 and it are left out ("cut to fit"). None: not even the last turn
/// before `split` fits.
pub(crate) fn cut_point(
    msgs: &[Msg],
    split: usize,
    budget_bytes: usize,
    extra_bytes: usize,
) -> Option<usize> {
    let head = msgs.first()?.bytes + extra_bytes;
    let mut size = head + msgs[1..split].iter().map(|m| m.bytes).sum::<usize>();
    for (c, m) in msgs.iter().enumerate().take(split).skip(1) {
        if m.assistant && size <= budget_bytes {
            return Some(c);
        }
        size -= m.bytes;
    }
    None
}

/// The summary request's system prompt.
pub(crate) const SUMMARY_SYSTEM: &str = "\
You write the hand-over summary of an autonomous coding agent's session. The conversation \
you are given is about to be replaced by your summary: the agent will go on with only the \
original task, your summary, its current plan and the latest turns, which it still sees \
verbatim. Whatever you leave out is lost to it.

Write these sections, in this order, as Markdown headings:
1. Task and constraints: the user's task and every constraint or preference stated, verbatim \
where short.
2. Decisions: what was decided, and why.
3. Files changed: every file in the run record's list below, with what was changed in it and \
why. Take the list from the record, not from memory.
4. Commands run: the commands that mattered and what they showed (test results, errors, \
numbers).
5. Open errors: the failures and errors not yet resolved, with their exact messages.
6. Plan: the current plan (the TodoWrite list below), with what is done and what is not.
7. Next steps: where the work stopped and exactly what to do next.

If the conversation begins with an earlier summary, fold it in: keep what still matters, \
drop what was settled. Be specific: paths, names, numbers, error texts. Invent nothing. \
Answer with the summary only; do not call tools, they are not available.";

/// What the run record knows that the summary must not take from the model's memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RecordFacts {
    /// (path, how it changed).
    pub files_changed: Vec<(String, String)>,
    /// The latest commands run (Bash), with how each ended, oldest first.
    pub commands: Vec<String>,
    /// The plan as last written (TodoWrite), one line a todo.
    pub plan: Vec<String>,
}

/// The text that closes the summary request (a block after the last replaced message):
/// the record's facts, `--compact-instructions`, and how many messages were left out to
/// fit.
pub(crate) fn request_text(facts: &RecordFacts, custom: Option<&str>, left_out: usize) -> String {
    let mut t = String::from(
        "[Compaction] The conversation above is about to be replaced by your summary. \
         Write it now, as the instructions say.\n\nFrom the run record:\n",
    );
    t.push_str("\nFiles changed:\n");
    if facts.files_changed.is_empty() {
        t.push_str("(none)\n");
    }
    for (path, change) in &facts.files_changed {
        t.push_str(&format!("- {path} ({change})\n"));
    }
    if !facts.commands.is_empty() {
        t.push_str("\nLatest commands run:\n");
        for c in &facts.commands {
            t.push_str(&format!("- {c}\n"));
        }
    }
    t.push_str("\nPlan (TodoWrite), as last written:\n");
    if facts.plan.is_empty() {
        t.push_str("(none)\n");
    }
    for line in &facts.plan {
        t.push_str(line);
        t.push('\n');
    }
    if left_out > 0 {
        t.push_str(&format!(
            "\n{left_out} earlier messages were left out of this request to fit the context \
             window; the summary at the start (if any) covers what came before them.\n"
        ));
    }
    if let Some(custom) = custom {
        t.push_str("\nAdditional instructions:\n");
        t.push_str(custom.trim());
        t.push('\n');
    }
    t
}

/// The text blocks the compacted history's first message carries after the original
/// task's own blocks: the summary, the plan as last written, then each activated skill's
/// body, verbatim.
pub(crate) fn head_texts(
    number: u32,
    summary: &str,
    plan: &[String],
    skills: &[String],
) -> Vec<String> {
    let mut blocks = vec![format!(
        "[The conversation after the task above was summarised to fit the context window \
         (compaction {number}). The latest turns follow verbatim. Summary:]\n\n{}",
        summary.trim()
    )];
    if !plan.is_empty() {
        blocks.push(format!(
            "[The current plan (TodoWrite), as last written:]\n{}",
            plan.join("\n")
        ));
    }
    for body in skills {
        blocks.push(format!("[An activated skill, kept verbatim:]\n{body}"));
    }
    blocks
}

/// One compaction (or an attempt that failed), as the transcript's
/// `context_compactions` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Compaction {
    /// The turn whose request is the first to carry the compacted history.
    pub turn: u32,
    pub reason: Reason,
    /// The model asked for the summary.
    pub model: String,
    pub tokens_before: u64,
    /// The compacted history's size, estimated from its bytes (the next request's usage
    /// says the real one).
    pub tokens_after_estimate: u64,
    /// Messages the summary replaced (the previous compacted first message included).
    pub messages_summarized: usize,
    /// Latest messages kept verbatim.
    pub messages_kept: usize,
    /// Messages left out of the summary request to fit the window ("cut to fit").
    pub messages_left_out: usize,
    /// The summary; None when the attempt failed.
    pub summary: Option<String>,
    /// The summary request's usage (also in the run's `usage`).
    pub usage: Usage,
    /// Its cost (also in the run's `cost_usd`); None when the model has no price.
    pub cost_usd: Option<f64>,
    /// Why the attempt failed (the history was then cleared, or the run ended).
    pub error: Option<String>,
}

/// The line a compaction's start prints.
pub(crate) fn compacting_note(
    turn: u32,
    reason: Reason,
    tokens: u64,
    window: Option<u64>,
    model: &str,
) -> String {
    let why = match reason {
        Reason::Threshold => "over the threshold",
        Reason::Wall => "at the window's wall",
        Reason::Resume => "a resumed history over the threshold",
    };
    format!(
        "turn {turn}: compacting the conversation ({tokens} tokens{}, {why}): asking {model} for a summary",
        window
            .map(|w| format!(" of a {w}-token window"))
            .unwrap_or_default()
    )
}

/// The line a finished compaction prints.
pub(crate) fn compacted_note(c: &Compaction) -> String {
    format!(
        "turn {}: compacted the conversation: {} messages summarised, {} kept ({} → about {} \
         tokens; a summary of {} characters{})",
        c.turn,
        c.messages_summarized,
        c.messages_kept,
        c.tokens_before,
        c.tokens_after_estimate,
        c.summary.as_deref().map_or(0, |s| s.chars().count()),
        c.cost_usd.map(|u| format!(", ${u:.4}")).unwrap_or_default()
    )
}

/// The warning when a compaction could not be made.
pub(crate) fn failed_note(turn: u32, why: &str, then: &str) -> String {
    format!("turn {turn}: the conversation could not be compacted ({why}); {then}")
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
