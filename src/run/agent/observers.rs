//! What the loop shows and counts while a turn streams and its calls run: the calls in
//! flight and the CI observers (`RunWatch`, the dispatcher's `Watch`), progress lines and
//! retry accounting for stream notices.

use super::Agent;
use crate::model::provider::StreamNotice;
use crate::model::turn::PendingCall;
use crate::record::InFlight;
use crate::run::ci::CiRun;
use crate::tools::dispatch::{CallOutcome, Watch};
use crate::util::output;

/// How much of a tool input a -v log line shows: a WriteFile's content must not flood CI.
pub(super) const LOG_INPUT_CHARS: usize = 200;

/// How much of a tool input a plain progress line shows: one readable log line.
const STEP_INPUT_CHARS: usize = 100;

/// `text` cut to `max` characters, with a marker saying how much was left out.
pub(super) fn shorten(text: &str, max: usize) -> String {
    crate::util::text::counted(text, max, "chars")
}

/// What the dispatcher reports to the run, early-started calls included: the calls in
/// flight, and the CI observers.
pub(super) struct RunWatch<'a> {
    pub(super) ci: &'a CiRun,
    pub(super) in_flight: &'a InFlight,
}

impl Watch for RunWatch<'_> {
    fn started(&self, call: &PendingCall) {
        let input = call.input.clone().unwrap_or_else(|_| serde_json::json!({}));
        if output::steps_enabled() {
            output::step(&format!(
                "{}turn {}: {} {}",
                self.ci.events.log_prefix(),
                self.ci.turn(),
                call.name,
                shorten(&input.to_string(), STEP_INPUT_CHARS)
            ));
        }
        self.in_flight
            .start(&call.id, &call.name, input, self.ci.turn());
        self.ci.started(call);
    }

    fn running(&self, call: &PendingCall) {
        self.ci.running(call);
    }

    fn finished(&self, call: &PendingCall, outcome: &CallOutcome) {
        self.in_flight.end(&call.id);
        self.ci.finished(call, outcome);
    }
}

impl Agent<'_> {
    /// Progress and retry accounting for what the stream tells us.
    pub(super) fn on_notice(&self, turn_no: u32, chars: &mut usize, notice: StreamNotice<'_>) {
        let what = match notice {
            StreamNotice::Retry { attempt, delay, .. } => {
                self.run.record().record_retry();
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
            let tokens = self.run.record().usage().tokens_line();
            output::progress(&format!("turn {turn_no} · {what} · {tokens}"));
        }
    }
}

#[cfg(test)]
#[path = "observers_tests.rs"]
mod tests;
