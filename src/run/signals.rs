//! The ways out that do not wait for the loop: SIGINT and SIGTERM (status
//! `interrupted`) and the `--timeout` deadline (status `timeout`). Each ends the run
//! through the one `Finisher` (`finish.rs`) and exits the process.

use std::sync::Arc;
use std::time::Duration;

use crate::record::outcome::{ErrorKind, Outcome, Status};
use crate::run::finish::Finisher;
use crate::util::output;

/// How long a signal or the deadline waits for a finish already under way on another
/// thread (normally milliseconds) before exiting itself: that finish may be stuck writing
/// to a stdout nobody reads. With `FINAL_WRITE_WAIT`, well within the 7.5 s GitHub
/// Actions allows between its SIGINT and its SIGTERM.
const FINISH_GRACE: Duration = Duration::from_secs(3);

impl Finisher {
    /// For the signal and deadline threads: finish and exit, or wait for the thread that
    /// is already finishing to exit the process.
    pub(crate) fn finish_and_exit(&self, outcome: Outcome) -> ! {
        if let Some(code) = self.finish(&outcome, true) {
            if let Some(hook) = ON_EXIT.get() {
                hook(code);
            }
            std::process::exit(i32::from(code));
        }
        // The other thread exits the process when it is done; one stuck writing to a
        // stdout nobody reads is not waited for.
        std::thread::sleep(FINISH_GRACE);
        let code = match self.code.get() {
            Some(0) => 1, // its output was not delivered
            Some(&c) => c,
            None => outcome.status.exit_code(),
        };
        output::error(&format!(
            "the run was ending but could not deliver its output within {}s (is stdout read?)",
            FINISH_GRACE.as_secs()
        ));
        std::process::exit(i32::from(code));
    }

    /// `--timeout`: a thread that ends the run when `limit` has passed.
    pub(crate) fn start_deadline(self: &Arc<Self>, limit: Duration) {
        let f = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            let msg = format!(
                "the run exceeded --timeout {}",
                crate::util::duration::human(limit)
            );
            f.finish_and_exit(Outcome::fail(ErrorKind::Timeout, msg));
        });
    }
}

/// What a command running the agent (`agent github`) does when a signal or the deadline
/// has finished the run, before the process exits (the transcript is written): it must
/// be quick, the caller is on its way out (GitHub sends SIGTERM 7.5 s after SIGINT).
pub(crate) static ON_EXIT: std::sync::OnceLock<Box<dyn Fn(u8) + Send + Sync>> =
    std::sync::OnceLock::new();

/// The way out that signals take, once the run is set up.
pub(crate) static FINISHER: std::sync::OnceLock<Arc<Finisher>> = std::sync::OnceLock::new();

/// SIGINT and SIGTERM end the run with status `interrupted`, transcript written. A
/// signal that arrives before the run is set up (no transcript exists yet) exits 130 too.
pub(crate) fn watch_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            output::warn(&format!("cannot watch for signals: {e}"));
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            match FINISHER.get() {
                Some(f) => f.finish_and_exit(Outcome::fail(
                    ErrorKind::Interrupted,
                    format!("interrupted by {name}"),
                )),
                None => {
                    output::error(&format!("interrupted by {name} before the run started"));
                    std::process::exit(i32::from(Status::Interrupted.exit_code()));
                }
            }
        }
    });
}
