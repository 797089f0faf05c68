//! The ways out of a run: the normal end, SIGINT/SIGTERM and the `--timeout` deadline.
//! Each goes through one `Finisher`, which writes the transcript exactly once (a mutex
//! decides who wins), kills running tool process groups first, and gives the exit code.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::tools::ToolContext;
use crate::transcript::{self, ErrorInfo, RunRecord, Status, lock};
use crate::{changes, events, output, process};

/// Writes the transcript exactly once, from whichever way out comes first.
pub(crate) struct Finisher {
    pub(crate) record: Arc<Mutex<RunRecord>>,
    pub(crate) json: bool,
    pub(crate) output_file: Option<PathBuf>,
    pub(crate) done: Mutex<bool>,
    /// `--jsonl`: `run.finished` carries the transcript instead of stdout's document.
    pub(crate) events: Arc<events::Events>,
    /// The workspace scan taken at the start, for `files_changed`.
    pub(crate) baseline: Option<changes::Baseline>,
    /// Tells the agent loop to stop once a way out has been taken.
    pub(crate) cancelled: Arc<AtomicBool>,
    /// For `git diff --stat` on every way out.
    pub(crate) ctx: ToolContext,
    /// Calls still running when the run ends are listed as unfinished.
    pub(crate) in_flight: Arc<transcript::InFlight>,
}

impl Finisher {
    /// Rewrites the `-o` file with the run so far (status `running`).
    pub(crate) fn checkpoint(&self) {
        // Held while writing, so that a checkpoint can never land after the final write.
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if *done {
            return;
        }
        if let Some(path) = &self.output_file {
            let doc = output::redact(&lock(&self.record).to_json(Status::Running, None));
            if let Err(e) = output::write_file_atomic(path, doc.as_bytes()) {
                output::warn(&format!("cannot write -o {}: {e}", path.display()));
            }
        }
    }

    /// Ends the run: kills running tools, writes `-o`, prints stdout and the summary.
    /// Returns the exit code, or None when another thread is already finishing.
    pub(crate) fn finish(&self, status: Status, error: Option<&ErrorInfo>) -> Option<u8> {
        {
            let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
            if *done {
                return None;
            }
            *done = true;
        }
        self.cancelled.store(true, Ordering::SeqCst);
        // Before the kill: a killed call would otherwise finish and leave the list.
        self.in_flight.settle(&mut lock(&self.record));
        process::kill_all_running();
        let orphans = process::kill_orphans();
        if orphans > 0 {
            output::warn(&format!(
                "killed {orphans} process(es) that tool commands left running in the background"
            ));
        }
        output::progress_done();
        if let Some(b) = &self.baseline {
            b.apply(&mut lock(&self.record));
        }
        let diff_stat = changes::git_diff_stat(&self.ctx);
        lock(&self.record).git_diff_stat = diff_stat;

        let (doc, line, text, summary) = {
            let r = lock(&self.record);
            let summary = format!(
                "{} · {} turns · {} tool calls · {} in / {} out tokens · {:.1}s",
                status.as_str(),
                r.num_turns,
                r.tool_calls.len(),
                r.usage.input_tokens
                    + r.usage.cache_read_input_tokens
                    + r.usage.cache_creation_input_tokens,
                r.usage.output_tokens,
                r.started.elapsed().as_secs_f64()
            );
            let line = self.events.enabled().then(|| r.to_json_line(status, error));
            (
                output::redact(&r.to_json(status, error)),
                line,
                output::redact(&r.final_text()),
                summary,
            )
        };
        // A transcript or answer that could not be delivered is a failure, never exit 0.
        let mut delivered = true;
        if let Some(path) = &self.output_file
            && let Err(e) = output::write_file_atomic(path, doc.as_bytes())
        {
            output::error(&format!("cannot write -o {}: {e}", path.display()));
            delivered = false;
        }
        if let Some(e) = error {
            output::error(&e.message);
        }
        if let Some(line) = line {
            // The events writer redacts every line it prints.
            self.events.finish(
                json!({"status": status.as_str(), "exit_code": status.exit_code()}),
                &line,
            );
        } else if self.json {
            delivered &= output::print_stdout(&doc);
        } else if status == Status::Success {
            delivered &= output::print_stdout(&text);
        }
        output::info(&summary);
        match status.exit_code() {
            0 if !delivered => Some(1),
            code => Some(code),
        }
    }

    /// For the signal and deadline threads: finish and exit, or wait for the thread that
    /// is already finishing to exit the process.
    pub(crate) fn finish_and_exit(&self, status: Status, error: ErrorInfo) -> ! {
        if let Some(code) = self.finish(status, Some(&error)) {
            std::process::exit(i32::from(code));
        }
        loop {
            std::thread::park();
        }
    }

    /// `--timeout`: a thread that ends the run when `limit` has passed.
    pub(crate) fn start_deadline(self: &Arc<Self>, limit: Duration) {
        let f = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            let msg = format!(
                "the run exceeded --timeout {}",
                humantime::format_duration(limit)
            );
            f.finish_and_exit(Status::Timeout, ErrorInfo::new("timeout", msg));
        });
    }
}

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
                Some(f) => f.finish_and_exit(
                    Status::Interrupted,
                    ErrorInfo::new("interrupted", format!("interrupted by {name}")),
                ),
                None => {
                    output::error(&format!("interrupted by {name} before the run started"));
                    std::process::exit(i32::from(Status::Interrupted.exit_code()));
                }
            }
        }
    });
}
