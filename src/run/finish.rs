//! The end of a run, whichever way out comes first (the normal end, or SIGINT/SIGTERM and
//! the `--timeout` deadline from `signals.rs`): one `Finisher` writes the transcript
//! exactly once (a mutex decides who wins), kills running tool process groups first, and
//! gives the exit code.
//! It also writes the `-o` checkpoints while the run goes (the first whole, the rest to
//! the journal, `journal.rs`), so that none lands after the final transcript.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::record::outcome::{Outcome, Status};
use crate::record::{InFlight, RunRecord};
use crate::run::event::{RunEvent, RunFinished, Verbatim};
use crate::tools::ToolContext;
use crate::util::sync::Locked;
use crate::{process, record::changes, record::journal, run::events, util::output};

/// How long a signal or the deadline waits for the final stdout write: a reader that
/// stopped reading must not keep the process alive (the `-o` file has the transcript).
const FINAL_WRITE_WAIT: Duration = Duration::from_secs(2);

/// Writes the transcript exactly once, from whichever way out comes first.
pub(crate) struct Finisher {
    pub(crate) record: Arc<Mutex<RunRecord>>,
    pub(crate) json: bool,
    pub(crate) output_file: Option<PathBuf>,
    /// `--trajectory`: the final transcript in ATIF too, written after `-o`.
    pub(crate) trajectory_file: Option<PathBuf>,
    pub(crate) done: Mutex<bool>,
    /// Where the `-o` checkpoints go (only touched with `done` held).
    pub(crate) checkpoints: Mutex<Checkpoints>,
    /// `--jsonl`: `run.finished` carries the transcript instead of stdout's document.
    pub(crate) events: Arc<events::Events>,
    /// The workspace scan taken at the start, for `files_changed` (set once the tools are
    /// known; a run ended before has changed nothing).
    pub(crate) baseline: OnceLock<changes::Baseline>,
    /// Tells the agent loop to stop once a way out has been taken.
    pub(crate) cancelled: Arc<AtomicBool>,
    /// For `git diff --stat` on every way out.
    pub(crate) ctx: ToolContext,
    /// Calls still running when the run ends are listed as unfinished.
    pub(crate) in_flight: Arc<InFlight>,
    /// The exit code of the finish under way, set before its stdout write.
    pub(crate) code: OnceLock<u8>,
    /// Whether the saved outputs (`ctx.spill_dir`) outlive the run.
    pub(crate) keep_spill: bool,
    /// Under GitHub Actions: a failed run also prints an `::error::` annotation.
    pub(crate) github_actions: bool,
    /// The run's spans (OpenTelemetry): ended here, then flushed within its deadline.
    pub(crate) trace: Arc<crate::run::telemetry::RunTrace>,
}

/// Where the `-o` checkpoints of a run go.
#[derive(Default)]
pub(crate) enum Checkpoints {
    /// None written yet.
    #[default]
    Start,
    /// The `-o` file names the journal, which gets every later checkpoint.
    Journal(journal::Journal),
    /// The journal could not be created: each checkpoint rewrites the whole file.
    Rewrite,
}

impl Finisher {
    /// Writes a checkpoint of the run so far (status `running`) for `-o`: the first one
    /// is the whole file, naming the journal beside it; each later one is appended to the
    /// journal (`journal.rs`), so it costs what changed, not the whole history.
    pub(crate) fn checkpoint(&self) {
        // Held while writing, so that a checkpoint can never land after the final write.
        let done = self.done.locked();
        if *done {
            return;
        }
        let Some(path) = &self.output_file else {
            return;
        };
        let mut state = self.checkpoints.locked();
        let written = match &mut *state {
            Checkpoints::Journal(j) => {
                let pending = j.prepare(&self.record.locked(), &output::redact);
                j.write(pending)
                    .map_err(|e| format!("cannot append to {}: {e}", j.path().display()))
            }
            Checkpoints::Rewrite => {
                let doc =
                    self.record
                        .locked()
                        .to_json_redacted(Status::Running, None, &output::redact);
                output::write_file_atomic_unsynced(path, doc.as_bytes())
                    .map_err(|e| format!("cannot write -o {}: {e}", path.display()))
            }
            Checkpoints::Start => self.first_checkpoint(path).map(|next| *state = next),
        };
        if let Err(e) = written {
            output::warn(&e);
        }
    }

    /// The whole `-o` file (naming the journal), then the journal with the same
    /// checkpoint. In this order, a kill in between leaves a file whose journal is
    /// missing or still an earlier run's, and readers then take the file itself.
    fn first_checkpoint(&self, path: &Path) -> Result<Checkpoints, String> {
        let journal_path = journal::path_for(path);
        let name = journal_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (doc, session_id) = {
            let r = self.record.locked();
            (
                r.to_json_journaled(&name, &output::redact),
                r.session_id().to_string(),
            )
        };
        output::write_file_atomic_unsynced(path, doc.as_bytes())
            .map_err(|e| format!("cannot write -o {}: {e}", path.display()))?;
        let created = journal::Journal::create(&journal_path, &session_id).and_then(|mut j| {
            let pending = j.prepare(&self.record.locked(), &output::redact);
            j.write(pending).map(|()| j)
        });
        match created {
            Ok(j) => Ok(Checkpoints::Journal(j)),
            Err(e) => {
                output::warn(&format!(
                    "cannot write the journal {}: {e}; each checkpoint rewrites -o instead",
                    journal_path.display()
                ));
                Ok(Checkpoints::Rewrite)
            }
        }
    }

    /// Ends the run: kills running tools, writes `-o`, prints stdout and the summary.
    /// Returns the exit code, or None when another thread is already finishing.
    /// `bounded`: give up on a stdout write that does not complete in `FINAL_WRITE_WAIT`
    /// (the signal and deadline paths, which must end the process).
    pub(crate) fn finish(&self, outcome: &Outcome, bounded: bool) -> Option<u8> {
        let (status, error) = (outcome.status, outcome.error.as_ref());
        {
            let mut done = self.done.locked();
            if *done {
                return None;
            }
            *done = true;
        }
        self.close_record(status);
        // The whole document only when something takes it (`-o`, `--trajectory`, `--json`):
        // for a long history it is the run's largest allocation, made at its end.
        let wanted = self.json || self.output_file.is_some() || self.trajectory_file.is_some();
        let (doc, text, summary) = {
            let r = self.record.locked();
            (
                wanted.then(|| r.to_json_redacted(status, error, &output::redact)),
                output::redact(&r.final_text()),
                summary_line(&r, status),
            )
        };
        // A transcript or answer that could not be delivered is a failure, never exit 0.
        let mut delivered = true;
        if let Some(doc) = &doc {
            delivered &= self.write_output_file(doc);
            delivered &= self.write_trajectory(doc);
        }
        // One copy of a long transcript at a time (peak memory): the document
        // is kept only for stdout, and the one-line form made only after it is gone.
        let doc = doc.filter(|_| self.json);
        let line = self
            .events
            .takes_the_result()
            .then(|| self.record.locked().to_json_line(status, error));
        if let Some(e) = error {
            self.report_error(status, &e.message);
        }
        let _ = self.code.set(match status.exit_code() {
            0 if !delivered => 1,
            code => code,
        });
        delivered &= self.deliver(status, Final { doc, text, line }, bounded);
        output::info(&summary);
        // Last: the transcript and stdout never wait for a collector.
        self.trace.finish(&self.record.locked(), outcome);
        crate::otel::shutdown();
        match status.exit_code() {
            0 if !delivered => Some(1),
            code => Some(code),
        }
    }

    /// The end of the record: stops the loop, lists the calls still running, kills the
    /// run's processes, and adds the workspace scan, `git diff --stat` and the spill dir.
    fn close_record(&self, status: Status) {
        self.cancelled.store(true, Ordering::SeqCst);
        // Before the kill: a killed call would otherwise finish and leave the list.
        {
            let mut r = self.record.locked();
            self.in_flight.settle(&mut r);
            r.settle_subagents();
        }
        // MCP servers end gracefully first; the kill-all is the backstop.
        crate::mcp::shutdown_all(&format!("the agent run ended ({})", status.as_str()));
        // Marked (and told) before the kill-all below kills their groups.
        self.ctx.background.end_all();
        process::kill_all_running();
        let orphans = process::kill_orphans();
        let (generation, jobs) = self.ctx.background.snapshot();
        self.record.locked().record_background(generation, jobs);
        if orphans > 0 {
            output::warn(&format!(
                "killed {orphans} process(es) that tool commands left running in the background"
            ));
        }
        output::progress_done();
        if let Some(b) = self.baseline.get() {
            self.record.locked().record_workspace_scan(b);
        }
        let diff_stat = changes::git_diff_stat(&self.ctx);
        self.record.locked().record_diff_stat(diff_stat);
        let spill = &self.ctx.spill_dir;
        if self.keep_spill {
            self.record
                .locked()
                .record_spill_dir(spill.is_dir().then(|| spill.clone()));
        } else if let Err(e) = std::fs::remove_dir_all(spill)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            output::warn(&format!("cannot remove {}: {e}", spill.display()));
        }
    }

    /// `-o`: the final transcript in place of the checkpoints. False when it failed.
    fn write_output_file(&self, doc: &str) -> bool {
        let Some(path) = &self.output_file else {
            return true;
        };
        match output::write_file_atomic(path, doc.as_bytes()) {
            Ok(()) => {
                self.remove_journal();
                true
            }
            Err(e) => {
                // The checkpoint file and its journal stay: they hold the run so far.
                output::error(&format!("cannot write -o {}: {e}", path.display()));
                false
            }
        }
    }

    /// `--trajectory`: the transcript just rendered (redacted), as ATIF. False when it
    /// could not be made or written.
    fn write_trajectory(&self, doc: &str) -> bool {
        let Some(path) = &self.trajectory_file else {
            return true;
        };
        let written = crate::record::atif::trajectory_json(doc).and_then(|text| {
            output::write_file_atomic(path, text.as_bytes()).map_err(|e| e.to_string())
        });
        match written {
            Ok(()) => true,
            Err(e) => {
                output::error(&format!(
                    "cannot write --trajectory {}: {e}",
                    path.display()
                ));
                false
            }
        }
    }

    /// The error on stderr, and as an `::error::` annotation under GitHub Actions.
    fn report_error(&self, status: Status, message: &str) {
        output::error(message);
        if self.github_actions {
            output::workflow_command(&format!(
                "::error title=agent run {}::{}",
                status.as_str(),
                escape_workflow_data(&format!("{}: {message}", status.as_str()))
            ));
        }
    }

    /// Stdout's part: `run.finished` (`--jsonl`), the document (`--json`) or the answer
    /// of a success. False when it could not be written (in time, when `bounded`).
    fn deliver(&self, status: Status, out: Final, bounded: bool) -> bool {
        let events = self.events.clone();
        let json = self.json;
        let deliver = move || match out.line {
            Some(line) => {
                // Redacted for every sink (the `--jsonl` writer redacts each line again).
                events.emit(RunEvent::RunFinished(RunFinished {
                    status: status.as_str().to_string(),
                    exit_code: status.exit_code(),
                    transcript: Verbatim(output::redact_owned(line)),
                }));
                true
            }
            None if json => output::print_stdout(out.doc.as_deref().unwrap_or_default()),
            None if status == Status::Success => output::print_stdout(&out.text),
            None => true,
        };
        if !bounded {
            return deliver();
        }
        within(FINAL_WRITE_WAIT, deliver).unwrap_or_else(|| {
            output::error(&format!(
                "stdout is not being read: gave up writing the final output after {}s",
                FINAL_WRITE_WAIT.as_secs()
            ));
            false
        })
    }

    /// After the final transcript is in place, its journal is only a copy.
    fn remove_journal(&self) {
        let state = self.checkpoints.locked();
        if let Checkpoints::Journal(j) = &*state
            && let Err(e) = std::fs::remove_file(j.path())
            && e.kind() != std::io::ErrorKind::NotFound
        {
            output::warn(&format!("cannot remove {}: {e}", j.path().display()));
        }
    }
}

/// Runs `f` on its own thread and waits at most `limit` for its result; a thread still
/// blocked after that is left behind (the process is about to exit).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("final-write".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    rx.recv_timeout(limit).ok()
}

/// What stdout may get at the end.
struct Final {
    /// The whole transcript (`--json`).
    doc: Option<String>,
    /// The answer, redacted.
    text: String,
    /// The transcript on one line (`--jsonl`'s `run.finished`).
    line: Option<String>,
}

/// The stderr line that closes a run: status, turns, calls, tokens, time.
fn summary_line(r: &RunRecord, status: Status) -> String {
    let mut line = format!(
        "{} · {} · {} · {} · {:.1}s",
        status.as_str(),
        crate::commands::summary::count(u64::from(r.num_turns()), "turn"),
        crate::commands::summary::count(r.tool_calls().len() as u64, "tool call"),
        r.usage().tokens_line(),
        r.started().elapsed().as_secs_f64()
    );
    if r.background_started() > 0 {
        line.push_str(&format!(
            " · {} still running at the end (killed)",
            crate::commands::summary::count(
                r.background_killed_at_end() as u64,
                "background command"
            )
        ));
    }
    line
}

/// A workflow command's message with `%`, CR and LF escaped, as the runner expects.
fn escape_workflow_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}
