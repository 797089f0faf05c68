//! The one path every tool call takes (SPEC §5): look up → schema check → the tool's
//! parse and validation (once) → the repeated-call guard → gate (hooks and permission
//! rules) → execute (panics caught) → result size limit (spill) → gate after → a record
//! with timings.

mod repeat;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model::turn::{PendingCall, StreamNotice};
pub(crate) use crate::tools::gate::{Denial, Gate, GateCall};
use crate::tools::registry::Registry;
use crate::tools::{PreparedCall, Tool, ToolContext, ToolError, ToolResult, schema};
use repeat::RepeatGuard;

/// How much of an oversized result the model sees before the saved file's path.
const SPILL_PREVIEW_CHARS: usize = 2_000; // enough to judge whether to read the rest

/// Run-level observers of every call (calls in flight, `--jsonl` events), on whichever
/// thread dispatches it, early or not. They observe; they do not decide.
pub(crate) trait Watch: Send + Sync {
    /// Called when dispatch begins.
    fn started(&self, _call: &PendingCall) {}
    /// Called when the call passed the gate and is about to execute.
    fn running(&self, _call: &PendingCall) {}
    /// Called with the final outcome.
    fn finished(&self, _call: &PendingCall, _outcome: &CallOutcome) {}
}

/// What happened to one call.
#[derive(Debug, Clone)]
pub(crate) struct CallOutcome {
    pub result: ToolResult,
    /// Since the start of the run.
    pub started: Duration,
    pub duration: Duration,
    pub denial: Option<Denial>,
    /// A system failure that must end the run.
    pub fatal: Option<String>,
}

pub(crate) struct Dispatcher<'a> {
    pub registry: &'a Registry,
    pub ctx: &'a ToolContext,
    pub gate: &'a dyn Gate,
    pub run_start: Instant,
    pub watch: Option<&'a dyn Watch>,
    /// Refuses the same call made `REPEAT_LIMIT` times in a row (fed by the loop through
    /// `on_notice`, `turn_complete` and `turn_answered`).
    repeats: RepeatGuard,
}

impl<'a> Dispatcher<'a> {
    pub(crate) fn new(
        registry: &'a Registry,
        ctx: &'a ToolContext,
        gate: &'a dyn Gate,
        run_start: Instant,
        watch: Option<&'a dyn Watch>,
    ) -> Self {
        Dispatcher {
            registry,
            ctx,
            gate,
            run_start,
            watch,
            repeats: RepeatGuard::default(),
        }
    }

    /// Whether the call may share a parallel batch with its neighbours.
    pub(crate) fn is_concurrency_safe(&self, call: &PendingCall) -> bool {
        match (self.registry.get(&call.name), &call.input) {
            (Some(tool), Ok(input)) => tool.is_concurrency_safe(input),
            _ => false,
        }
    }

    /// What the stream says about the turn's calls: each complete call in the model's
    /// order, and a restarted attempt (the calls heard so far are forgotten).
    pub(crate) fn on_notice(&self, notice: &StreamNotice<'_>) {
        match notice {
            StreamNotice::ToolReady(call) => self.repeats.observe(call),
            StreamNotice::TurnStarted => self.repeats.restart(),
            _ => {}
        }
    }

    /// The turn is complete: its calls, in order, are the authority.
    pub(crate) fn turn_complete(&self, calls: &[PendingCall]) {
        self.repeats.sync(calls);
    }

    /// The turn's calls were answered (or none will run): they become the history the
    /// next turn's calls are compared with.
    pub(crate) fn turn_answered(&self) {
        self.repeats.commit();
    }

    pub(crate) fn dispatch(&self, call: &PendingCall) -> CallOutcome {
        let t0 = Instant::now();
        let started = t0.duration_since(self.run_start);
        let mut denial = None;
        let mut fatal = None;
        if let Some(w) = self.watch {
            w.started(call);
        }
        // A repeated call is answered like an invalid one: it never reaches hooks or policy.
        // Held for the call: a list change may replace the registry's entry meanwhile.
        let tool = self.registry.get(&call.name);
        let prepared = self.prepare(tool.as_deref(), call).and_then(|ready| {
            match self.repeats.refusal(call) {
                Some(msg) => Err(ToolResult::error(msg)),
                None => Ok(ready),
            }
        });
        let result = match prepared {
            Err(r) => r,
            Ok((tool, input, ready)) => {
                let subject = ready.subject();
                let gc = GateCall {
                    tool,
                    id: &call.id,
                    input,
                    subject: &subject,
                };
                match self.gate.before(&gc) {
                    Err(d) => {
                        let r = ToolResult::error(d.reason.clone());
                        denial = Some(d);
                        r
                    }
                    Ok(()) => {
                        if let Some(w) = self.watch {
                            w.running(call);
                        }
                        let mut r = match execute_caught(tool, ready.as_ref(), self.ctx) {
                            Ok(r) => r,
                            Err(ToolError::Failed(m) | ToolError::NotFound(m)) => {
                                ToolResult::error(m)
                            }
                            Err(ToolError::Fatal(m)) => {
                                fatal = Some(m.clone());
                                ToolResult::error(m)
                            }
                        };
                        if let Some(max) = tool.max_result_chars() {
                            limit_size(&mut r, max, &self.ctx.spill_dir, &call.id);
                        }
                        self.gate.after(&gc, &mut r);
                        r
                    }
                }
            }
        };
        let outcome = CallOutcome {
            result,
            started,
            duration: t0.elapsed(),
            denial,
            fatal,
        };
        if let Some(w) = self.watch {
            w.finished(call, &outcome);
        }
        outcome
    }

    /// Lookup, schema check, and the tool's parse and validation (once).
    fn prepare<'t, 'c>(
        &self,
        tool: Option<&'t dyn Tool>,
        call: &'c PendingCall,
    ) -> Result<Ready<'t, 'c>, ToolResult> {
        let Some(tool) = tool else {
            return Err(ToolResult::error(format!(
                "unknown tool {:?}; the enabled tools are: {}",
                call.name,
                self.registry.enabled_names().join(", ")
            )));
        };
        let input = call
            .input
            .as_ref()
            .map_err(|m| ToolResult::error(m.clone()))?;
        if !tool.checks_own_schema() {
            schema::validate(&tool.input_schema(), input)
                .map_err(|m| ToolResult::error(format!("invalid input for {}: {m}", call.name)))?;
        }
        let ready = tool
            .prepare(input)
            .map_err(|e| ToolResult::error(format!("invalid input for {}: {e}", call.name)))?;
        Ok((tool, input, ready))
    }
}

/// A call ready to pass the gate: its tool, its input as sent, and the parsed call.
type Ready<'a, 'c> = (&'a dyn Tool, &'c Value, Box<dyn PreparedCall + 'a>);

/// A panic inside a tool becomes an error result, never a crash of the run.
fn execute_caught(
    tool: &dyn Tool,
    call: &dyn PreparedCall,
    ctx: &ToolContext,
) -> Result<ToolResult, ToolError> {
    catch_unwind(AssertUnwindSafe(|| call.execute(ctx))).unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(ToolError::failed(format!(
            "internal error: the {} tool panicked ({msg}); try a different approach",
            tool.name()
        )))
    })
}

/// Saves an oversized result in full and gives the model a preview plus the file's path.
fn limit_size(result: &mut ToolResult, max_chars: usize, spill_dir: &Path, call_id: &str) {
    if result.content.len() <= max_chars {
        return; // bytes >= chars, so this is the common fast path
    }
    let total_chars = result.content.chars().count();
    if total_chars <= max_chars {
        return;
    }
    // Redacted before the cut and the save: a cut through a secret would leave its prefix.
    result.content = crate::util::output::redact(&result.content);
    let total_chars = result.content.chars().count();
    let preview = crate::util::text::truncate(&result.content, SPILL_PREVIEW_CHARS)
        .0
        .to_string();
    let safe_id: String = call_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let path = spill_dir.join(format!("result-{safe_id}.txt"));
    let saved = crate::process::create_spill_file(spill_dir, &format!("result-{safe_id}.txt"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, result.content.as_bytes()));
    let note = match &saved {
        Ok(()) => format!(
            "\n\n[result truncated: showing the first {SPILL_PREVIEW_CHARS} of {total_chars} \
             characters; the full result was saved to {} — read it with ReadFile using \
             offset/limit]",
            path.display()
        ),
        Err(e) => format!(
            "\n\n[result truncated: showing the first {SPILL_PREVIEW_CHARS} of {total_chars} \
             characters; saving the full result failed: {e}]"
        ),
    };
    result.content = preview + &note;
    result
        .metadata
        .insert("truncated_from_chars".into(), total_chars.into());
    if saved.is_ok() {
        result
            .metadata
            .insert("full_result_path".into(), path.display().to_string().into());
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
