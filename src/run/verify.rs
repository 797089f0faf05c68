//! `--verify CMD` (SPEC §9): when the model stops, CMD runs in the workspace with the Bash
//! tool's machinery (`process::run`: own process group, timeout, head + tail truncation
//! with spill, the scrubbed environment). A failure goes back to the model as a new user
//! message and the loop goes on; after `--max-verify` failed rounds the run ends with
//! `verify_failed` (exit 4). "Fix the tests" then means the tests pass, not that the
//! model says so. Every round is recorded in the transcript's `verifications`.

use std::sync::Mutex;
use std::time::Duration;

use crate::model::protocol::Message;
use crate::process::{self, CommandSpec};
use crate::record::{RunRecord, VerificationRecord};
use crate::run::event::RunEvent;
use crate::run::events::Events;
use crate::tools::ToolContext;
use crate::util::sync::Locked;

/// How much of the output the transcript keeps per round (the model gets the runner's
/// full head + tail): enough for the failing test's message, small for a CI summary.
pub(crate) const VERIFY_TAIL_CHARS: usize = 2_000;

/// The `--verify` settings of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerifySpec {
    pub command: String,
    /// Failed rounds before the run ends with `verify_failed` (at least 1).
    pub max_rounds: u32,
    pub timeout: Duration,
}

/// What the loop does after a verification.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// The command passed: the run is a success.
    Passed,
    /// It failed and rounds remain: send this user message and continue the loop.
    Retry(Message),
    /// It failed and no round (or no turn) remains: `verify_failed` with this message.
    Failed(String),
}

/// Runs the verification rounds of one run.
pub(crate) struct Verifier {
    spec: VerifySpec,
    failures: Mutex<u32>,
}

impl Verifier {
    pub(crate) fn new(spec: VerifySpec) -> Self {
        Verifier {
            spec,
            failures: Mutex::new(0),
        }
    }

    /// Runs the command once, records the round and decides. `turns_left`: whether the
    /// loop may make another request (`--max-turns`), so a failure can still be fixed.
    pub(crate) fn verify(
        &self,
        ctx: &ToolContext,
        events: &Events,
        record: &Mutex<RunRecord>,
        turns_left: bool,
    ) -> Verdict {
        let spec = &self.spec;
        let ran = self.run_once(ctx);
        let passed = ran.exit_code == Some(0) && !ran.timed_out;
        let duration_ms = ran.duration.as_millis() as u64;
        let mut v = VerificationRecord {
            round: 0, // set by the record
            command: spec.command.clone(),
            exit_code: ran.exit_code,
            passed,
            timed_out: ran.timed_out,
            duration_ms,
            output_tail: tail(&ran.text, VERIFY_TAIL_CHARS),
        };
        v.round = record.locked().record_verification(v.clone());
        events.emit(RunEvent::VerifyFinished(v));
        if passed {
            return Verdict::Passed; // logged by the bus's `Log`
        }
        self.failed(&ran, turns_left)
    }

    /// The command, run once as the Bash tool runs commands.
    fn run_once(&self, ctx: &ToolContext) -> Round {
        let spec = &self.spec;
        let mut cmd = CommandSpec::new(
            spec.command.clone(),
            &ctx.workspace,
            ctx.child_env.clone(),
            spec.timeout,
            &ctx.spill_dir,
        );
        // The Bash sandbox (`--sandbox`), exactly as the Bash tool applies it.
        cmd.pre_exec = ctx.sandbox.as_ref().map(|s| s.pre_exec_own());
        crate::util::output::info(&format!("verifying: {}", spec.command));
        let out = match process::run(&cmd) {
            Ok(out) => out,
            Err(e) => {
                return Round {
                    exit_code: None,
                    timed_out: false,
                    duration: Duration::ZERO,
                    text: e,
                    why: "could not start".into(),
                };
            }
        };
        let why = if out.timed_out {
            format!(
                "timed out after {}",
                crate::util::duration::human(spec.timeout)
            )
        } else if out.interrupted {
            "was stopped because the run is ending".to_string()
        } else {
            match (out.exit_code, out.signal) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(s)) => format!("killed by signal {s}"),
                (None, None) => "ended abnormally".to_string(),
            }
        };
        Round {
            exit_code: out.exit_code,
            timed_out: out.timed_out,
            duration: out.duration,
            text: out.output.text,
            why,
        }
    }

    /// A failed round: back to the model while rounds and turns remain, else the end.
    fn failed(&self, ran: &Round, turns_left: bool) -> Verdict {
        let (spec, why) = (&self.spec, &ran.why);
        let failures = {
            let mut f = self.failures.locked();
            *f += 1;
            *f
        };
        crate::util::output::warn(&format!(
            "verification failed ({why}), round {failures} of {}",
            spec.max_rounds
        ));
        if failures >= spec.max_rounds {
            return Verdict::Failed(format!(
                "the verification command `{}` still fails ({why}) after {failures} round{}",
                spec.command,
                if failures == 1 { "" } else { "s" }
            ));
        }
        if !turns_left {
            return Verdict::Failed(format!(
                "the verification command `{}` fails ({why}) and --max-turns leaves no turn to fix it",
                spec.command
            ));
        }
        Verdict::Retry(Message::user_text(format!(
            "The verification command `{}` failed ({why}):\n<output>{}</output>\n\
             The task is not done until this command passes. Find and fix the cause, then \
             stop: the command runs again automatically (verification round {failures} of {}).",
            spec.command,
            ran.text.trim_end_matches('\n'),
            spec.max_rounds
        )))
    }
}

/// One run of the command: how it ended, its output, and why it failed (if it did).
struct Round {
    /// None when the command timed out, was killed by a signal or could not start.
    exit_code: Option<i32>,
    timed_out: bool,
    duration: Duration,
    text: String,
    why: String,
}

/// The last `max` characters of `text`, on a character boundary.
pub(crate) fn tail(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    text.chars().skip(n - max).collect()
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
