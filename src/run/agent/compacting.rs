//! Summarising compaction, the loop's side: the PreCompact hooks, the summary request (same
//! provider, no tools, over the part of the history being replaced, cut to fit the
//! window and cut further once if it still overflows), the compacted history, the record,
//! the events and the PostCompact hooks. What to keep, what to ask and what the first
//! message says are `run::compaction`'s; when to compact is decided by `mod.rs` (before
//! the wall) and `clearing.rs` (at the wall).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::clearing::overflow;
use super::{Agent, Turns};
use crate::model::protocol::{ContentBlock, Message, Role, StopReason};
use crate::model::provider::{Provider, TurnRequest};
use crate::record::history::{Entry, History};
use crate::record::message_text;
use crate::run::compaction::{
    Compaction, KEEP_SHARE, Msg, Reason, SUMMARY_SYSTEM, compacted_note, compacting_note,
    cut_point, failed_note, head_texts, request_text, split_point,
};
use crate::run::context::{INSTRUCTION_TOKENS, summary_max_tokens};
use crate::run::event::{self as ev, RunEvent};
use crate::util::output;

/// The latest Bash commands the summary request lists from the record.
const COMMANDS_LISTED: usize = 20;

/// Why no compaction was made.
pub(super) enum NotCompacted {
    /// Nothing to summarise, or not even the last turn fits: no request was made.
    Nothing(String),
    /// A PreCompact veto, a failed summary request or an empty summary (recorded in
    /// `context_compactions` with its error).
    Failed(String),
}

/// The summary request's answer, or why there is none.
struct Asked {
    summary: Result<String, String>,
    usage: crate::model::protocol::Usage,
    /// Messages left out of the request to fit (the last attempt's).
    left_out: usize,
    /// The model that answered, as the API reported it (for the price).
    answered_by: Option<String>,
}

impl Agent<'_> {
    /// Replaces the older part of the history by a summary, when it can; warns and
    /// records when it cannot (the history is then unchanged). `tokens_now` is the
    /// history's size as the caller knows it.
    pub(super) fn compact(
        &self,
        provider: &mut dyn Provider,
        s: &mut Turns,
        reason: Reason,
        tokens_now: u64,
    ) -> Result<Compaction, NotCompacted> {
        let run = &self.run;
        let context = run.config.session().context();
        let model = context
            .compact_model
            .as_deref()
            .unwrap_or(run.config.provider().model())
            .to_string();
        // Without a known window (an unknown model before its first overflow), the size
        // the history has now stands in for it.
        let window = s.window.window().unwrap_or(tokens_now).max(1);
        let bpt = s.window.bytes_per_token();
        let msgs: Vec<Msg> = s
            .history
            .entries()
            .iter()
            .map(|e| Msg {
                assistant: e.role() == Role::Assistant,
                bytes: e.json().len() + 1,
            })
            .collect();
        let keep_bytes = (window as f64 * KEEP_SHARE * bpt) as usize;
        let Some(split) = split_point(&msgs, keep_bytes) else {
            return Err(NotCompacted::Nothing(
                "nothing to summarise: the history is the task and its latest turn".into(),
            ));
        };
        let facts = run.record().compaction_facts(COMMANDS_LISTED);
        let custom = context.compact_instructions.as_deref();

        let hook_fields = json!({
            "turn": s.turn_no,
            "reason": reason.as_str(),
            "tokens": tokens_now,
            "window": s.window.window(),
            "custom_instructions": custom,
            "session_id": run.record().session_id(),
        });
        if let Err(why) = run.gate.pre_compact(&hook_fields) {
            let why = format!("vetoed by a PreCompact hook: {why}");
            return Err(self.failed(s.turn_no, reason, &model, tokens_now, why, None));
        }

        run.ci
            .events
            .emit(RunEvent::ContextCompacting(ev::ContextCompacting {
                turn: s.turn_no,
                tokens: tokens_now,
                threshold: s.window.threshold(),
                window: s.window.window(),
                reason,
                strategy: context.strategy.as_str().to_string(),
                model: model.clone(),
            }));
        output::info(&compacting_note(
            s.turn_no,
            reason,
            tokens_now,
            s.window.window(),
            &model,
        ));

        let asked = self.ask_summary(provider, s, &model, &msgs, split, &facts, custom);
        let model = asked.answered_by.unwrap_or(model);
        let summary = match asked.summary {
            Ok(text) => text,
            Err(why) => {
                let usage = Some(asked.usage);
                return Err(self.failed(s.turn_no, reason, &model, tokens_now, why, usage));
            }
        };

        // The compacted history: the task, the summary, the plan, the skills; then the
        // latest turns as they were sent.
        let entries = s.history.entries();
        let mut head = Message {
            role: Role::User,
            content: s
                .task
                .as_ref()
                .map(|t| t.message().content)
                .unwrap_or_default(),
        };
        let number = run.record().compactions() + 1;
        // Loaded skills hold for the whole run: the replaced part's (a previous compacted
        // message's included) are carried over verbatim; the kept turns keep their own.
        let replaced: Vec<Message> = entries[..split].iter().map(|e| e.message()).collect();
        let mut skills: Vec<String> = Vec::new();
        let task_text = head
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.as_str(),
                _ => "",
            })
            .collect::<String>();
        for body in crate::skills::kept_skill_contents(&replaced) {
            // A prompt command's skill is in the task, which is kept as it is.
            if !skills.contains(&body) && !task_text.contains(&body) {
                skills.push(body);
            }
        }
        for text in head_texts(number, &summary, &facts.plan, &skills) {
            head.content.push(ContentBlock::Text { text });
        }
        let mut history = History::new();
        history.push(Entry::new(head));
        for e in &entries[split..] {
            history.push(Arc::clone(e));
        }
        let kept = entries.len() - split;
        let tokens_after = s.window.tokens_of(history.json_bytes() + s.fixed_bytes);
        s.history = history;
        s.window.assume(tokens_after);

        let c = Compaction {
            turn: s.turn_no,
            reason,
            model,
            tokens_before: tokens_now,
            tokens_after_estimate: tokens_after,
            messages_summarized: split - asked.left_out,
            messages_kept: kept,
            messages_left_out: asked.left_out,
            summary: Some(summary),
            usage: asked.usage,
            cost_usd: None,
            error: None,
        };
        let c = run.record().record_compaction(c, run.config.ci().prices());
        run.ci
            .events
            .emit(RunEvent::ContextCompacted(ev::ContextCompacted {
                turn: c.turn,
                tokens_before: c.tokens_before,
                tokens_after_estimate: c.tokens_after_estimate,
                summary_chars: c.summary.as_deref().map_or(0, |t| t.chars().count()),
                messages_summarized: c.messages_summarized,
                messages_kept: c.messages_kept,
                messages_left_out: c.messages_left_out,
                usage: c.usage,
                cost_usd: c.cost_usd,
            }));
        output::info(&compacted_note(&c));
        run.gate.post_compact(&json!({
            "turn": c.turn,
            "reason": reason.as_str(),
            "tokens_before": c.tokens_before,
            "tokens_after_estimate": c.tokens_after_estimate,
            "summary": c.summary,
            "session_id": run.record().session_id(),
        }));
        Ok(c)
    }

    /// The summary request: the history up to `split`, cut to fit the window with room
    /// for the answer; one more attempt, cut to half that, when the API still finds it
    /// too long. Other failures were already retried by the provider as any request.
    #[expect(clippy::too_many_arguments, reason = "one call site, all borrowed")]
    fn ask_summary(
        &self,
        provider: &mut dyn Provider,
        s: &Turns,
        model: &str,
        msgs: &[Msg],
        split: usize,
        facts: &crate::run::compaction::RecordFacts,
        custom: Option<&str>,
    ) -> Asked {
        let run = &self.run;
        let window = s.window.window();
        let max_tokens = summary_max_tokens(window);
        let bpt = s.window.bytes_per_token();
        let entries = s.history.entries();
        let room = window.map_or(u64::MAX, |w| {
            w.saturating_sub(u64::from(max_tokens) + INSTRUCTION_TOKENS)
        });
        let mut budget = (room as f64 * bpt).min(usize::MAX as f64) as usize;
        let mut usage = crate::model::protocol::Usage::default();
        let mut last_cut = None;
        for attempt in 0..2 {
            // The closing text's size depends on how much is left out; 64 bytes cover it.
            let extra = request_text(facts, custom, 0).len() + SUMMARY_SYSTEM.len() + 64;
            let Some(cut) = cut_point(msgs, split, budget, extra) else {
                let why = "the part of the history to summarise does not fit in the window, \
                           even cut to its last turn";
                return Asked {
                    summary: Err(why.into()),
                    usage,
                    left_out: 0,
                    answered_by: None,
                };
            };
            if last_cut == Some(cut) {
                break; // nothing more to cut
            }
            last_cut = Some(cut);
            let left_out = cut - 1;
            let mut closing = entries[split - 1].message();
            closing.content.push(ContentBlock::Text {
                text: request_text(facts, custom, left_out),
            });
            let mut sent: Vec<Arc<Entry>> = Vec::with_capacity(split - cut + 1);
            sent.push(Arc::clone(&entries[0]));
            sent.extend(entries[cut..split - 1].iter().cloned());
            sent.push(Entry::new(closing));
            let request = TurnRequest {
                model,
                max_tokens,
                system: SUMMARY_SYSTEM,
                messages: &sent,
                tools: &[],
            };
            let t0 = Instant::now();
            let result = provider.stream_turn(&request, &mut |n| run.ci.on_notice(&n));
            run.record().record_api_time(t0.elapsed());
            match result {
                Ok(turn) => {
                    usage.add(&turn.usage);
                    let text = message_text(&turn.message);
                    let summary = match (text.trim().is_empty(), &turn.stop_reason) {
                        (true, _) => Err(format!(
                            "the summary came back empty (stop_reason {})",
                            turn.stop_reason.as_str()
                        )),
                        (false, StopReason::Refusal) => {
                            Err("the model refused to write the summary".into())
                        }
                        (false, _) => Ok(text.trim().to_string()),
                    };
                    return Asked {
                        summary,
                        usage,
                        left_out,
                        answered_by: Some(turn.model).filter(|m| !m.is_empty()),
                    };
                }
                Err(e) if overflow(&e).is_some() && attempt == 0 => {
                    output::warn(&format!(
                        "turn {}: the summary request was too long ({}); cutting it further",
                        s.turn_no, e.message
                    ));
                    // Half of the messages sent after the first: the estimate was wrong,
                    // so the budget is too.
                    let sent = msgs[cut..split].iter().map(|m| m.bytes).sum::<usize>();
                    budget = msgs[0].bytes + extra + sent / 2;
                }
                Err(e) => {
                    return Asked {
                        summary: Err(format!("the summary request failed: {}", e.message)),
                        usage,
                        left_out,
                        answered_by: None,
                    };
                }
            }
        }
        Asked {
            summary: Err("the summary request was still too long after cutting it".into()),
            usage,
            left_out: last_cut.map_or(0, |c| c - 1),
            answered_by: None,
        }
    }

    /// A compaction that was attempted and failed: recorded, warned about.
    fn failed(
        &self,
        turn: u32,
        reason: Reason,
        model: &str,
        tokens_now: u64,
        why: String,
        usage: Option<crate::model::protocol::Usage>,
    ) -> NotCompacted {
        let c = Compaction {
            turn,
            reason,
            model: model.to_string(),
            tokens_before: tokens_now,
            tokens_after_estimate: tokens_now,
            messages_summarized: 0,
            messages_kept: 0,
            messages_left_out: 0,
            summary: None,
            usage: usage.unwrap_or_default(),
            cost_usd: None,
            error: Some(why.clone()),
        };
        self.run
            .record()
            .record_compaction(c, self.run.config.ci().prices());
        NotCompacted::Failed(why)
    }

    /// Compacts, or says why not on stderr with what happens instead (`then`). Whether a
    /// compaction was made.
    pub(super) fn try_compact(
        &self,
        provider: &mut dyn Provider,
        s: &mut Turns,
        reason: Reason,
        tokens_now: u64,
        then: &str,
    ) -> bool {
        match self.compact(provider, s, reason, tokens_now) {
            Ok(_) => true,
            Err(NotCompacted::Nothing(why)) => {
                output::info(&failed_note(s.turn_no, &why, then));
                false
            }
            Err(NotCompacted::Failed(why)) => {
                output::warn(&failed_note(s.turn_no, &why, then));
                false
            }
        }
    }
}
