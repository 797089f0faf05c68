//! The agent loop: request a turn, stream it, run its tool calls through the scheduler,
//! answer each tool_use with exactly one tool_result in order, and loop until the model
//! stops or a limit is reached. It never names a tool.

use std::sync::Mutex;
use std::time::Instant;

use crate::config::Config;
use crate::dispatch::{Dispatcher, Gate};
use crate::output;
use crate::protocol::{ContentBlock, Message, Role, StopReason};
use crate::provider::{Provider, StreamNotice, TurnRequest};
use crate::scheduler::{self, Scheduled};
use crate::tools::ToolContext;
use crate::tools::registry::Registry;
use crate::transcript::{DenialRecord, ErrorInfo, RunRecord, Status, ToolCallRecord};
use crate::turn::{PendingCall, Turn};

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    pub error: Option<ErrorInfo>,
}

impl Outcome {
    fn ok(status: Status) -> Self {
        Outcome {
            status,
            error: None,
        }
    }

    fn fail(status: Status, kind: &str, message: impl Into<String>) -> Self {
        Outcome {
            status,
            error: Some(ErrorInfo::new(kind, message)),
        }
    }
}

pub struct Agent<'a> {
    pub config: &'a Config,
    pub registry: &'a Registry,
    pub ctx: &'a ToolContext,
    pub gate: &'a dyn Gate,
    /// Shared with the signal and deadline threads.
    pub record: &'a Mutex<RunRecord>,
    /// Rewrites the `-o` file after every turn.
    pub checkpoint: &'a dyn Fn(),
}

/// Locks the record even if a panicking thread poisoned it: the record is plain data.
pub fn lock(record: &Mutex<RunRecord>) -> std::sync::MutexGuard<'_, RunRecord> {
    record.lock().unwrap_or_else(|p| p.into_inner())
}

impl Agent<'_> {
    pub fn run(&self, provider: &mut dyn Provider) -> Outcome {
        let run_start = lock(self.record).started;
        let tools = self.registry.to_api_format();
        let mut messages = vec![Message::user_text(self.config.prompt.clone())];
        lock(self.record).messages.push(messages[0].clone());
        let dispatcher = Dispatcher {
            registry: self.registry,
            ctx: self.ctx,
            gate: self.gate,
            run_start,
        };
        let mut next_batch = 0u32;
        let mut turn_no = 0u32;
        loop {
            turn_no += 1;
            output::progress(&format!("turn {turn_no}: waiting for the model"));
            output::debug(&format!(
                "turn {turn_no}: POST {}/v1/messages ({} messages, {} tools)",
                self.config.base_url,
                messages.len(),
                tools.len()
            ));
            let request = TurnRequest {
                model: &self.config.model,
                max_tokens: self.config.max_tokens,
                system: &self.config.system_prompt,
                messages: &messages,
                tools: &tools,
            };
            let t0 = Instant::now();
            let mut chars = 0usize;
            let result = provider.stream_turn(&request, &mut |notice| match notice {
                StreamNotice::Retry { .. } => lock(self.record).retries += 1,
                StreamNotice::TextDelta(t) => {
                    chars += t.len();
                    output::progress(&format!("turn {turn_no}: streaming ({chars} chars)"));
                }
                StreamNotice::ToolReady(c) => {
                    output::progress(&format!("turn {turn_no}: model called {}", c.name));
                }
                StreamNotice::TurnStarted => chars = 0,
            });
            lock(self.record).api_duration += t0.elapsed();
            let turn = match result {
                Ok(t) => t,
                Err(e) => return Outcome::fail(Status::Error, e.kind_str(), e.message),
            };
            self.note_turn(&turn);
            messages.push(turn.message.clone());

            match &turn.stop_reason {
                StopReason::Refusal => {
                    return Outcome::fail(Status::Refusal, "refusal", "the model refused the task");
                }
                StopReason::PauseTurn => {
                    if turn_no >= self.config.max_turns {
                        return self.max_turns();
                    }
                    continue; // the paused assistant turn is sent back as it is
                }
                _ if !turn.calls.is_empty() => {
                    if turn_no >= self.config.max_turns {
                        return self.max_turns();
                    }
                    let scheduled = scheduler::run_calls(&turn.calls, &dispatcher, &mut next_batch);
                    let results = self.note_results(turn_no, &turn.calls, &scheduled);
                    messages.push(results);
                    (self.checkpoint)();
                    if let Some(fatal) = scheduled.iter().find_map(|s| s.outcome.fatal.clone()) {
                        return Outcome::fail(Status::Error, "tool_fatal", fatal);
                    }
                    if self.gate.ends_run_on_denial()
                        && let Some(d) = scheduled.iter().find_map(|s| s.outcome.denial.as_ref())
                    {
                        return Outcome::fail(
                            Status::Denied,
                            "denied",
                            format!("a tool call was denied (--on-deny fail): {}", d.reason),
                        );
                    }
                }
                StopReason::EndTurn | StopReason::StopSequence | StopReason::MaxTokens => {
                    return Outcome::ok(Status::Success);
                }
                StopReason::ToolUse => {
                    return Outcome::fail(
                        Status::Error,
                        "protocol",
                        "the model stopped for tool_use but made no tool call",
                    );
                }
                StopReason::Other(s) => {
                    return Outcome::fail(
                        Status::Error,
                        "stop_reason",
                        format!("the model stopped with stop_reason {s:?}"),
                    );
                }
            }
        }
    }

    fn max_turns(&self) -> Outcome {
        Outcome::fail(
            Status::MaxTurns,
            "max_turns",
            format!(
                "reached --max-turns {} while the model still wanted to continue",
                self.config.max_turns
            ),
        )
    }

    fn note_turn(&self, turn: &Turn) {
        let mut r = lock(self.record);
        r.num_turns += 1;
        r.usage.add(&turn.usage);
        r.stop_reason = Some(turn.stop_reason.as_str().to_string());
        if !turn.model.is_empty() {
            r.model = turn.model.clone();
        }
        r.messages.push(turn.message.clone());
        output::debug(&format!(
            "turn {}: stop_reason {}, {} tool calls, {} in / {} out tokens",
            r.num_turns,
            turn.stop_reason.as_str(),
            turn.calls.len(),
            turn.usage.input_tokens,
            turn.usage.output_tokens
        ));
    }

    /// Records the calls and builds the user message of tool_results, one per call, in
    /// the model's order. Calls that never ran (a fatal failure ended the batch walk) are
    /// answered too, so the history stays well-formed.
    fn note_results(&self, turn_no: u32, calls: &[PendingCall], done: &[Scheduled]) -> Message {
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
            output::debug(&format!(
                "tool {} {} (batch {}, {} ms){}",
                call.name,
                input,
                s.batch,
                o.duration.as_millis(),
                if o.result.is_error { " → error" } else { "" }
            ));
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
                metadata: o.result.metadata.clone(),
            });
            content.push(ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: o.result.content.clone(),
                is_error: o.result.is_error,
            });
        }
        let msg = Message {
            role: Role::User,
            content,
        };
        r.messages.push(msg.clone());
        msg
    }
}
