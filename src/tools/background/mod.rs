//! Background commands (Bash `run_in_background`): the run's table of them (`Jobs`),
//! shared by Bash (which starts one), BashOutput (reads its new output and status) and
//! KillBash (kills its tree), and read by the way out, which kills every one still
//! running and lists them all in the transcript's `background`.
//!
//! A background command is an ordinary `process::run` on a thread of its own, so it gets
//! the same supervisor, sandbox and process registry as any Bash call (every way out's
//! kill-all and the supervisor's SIGKILL guarantee cover it); only its timeout is the
//! run's, and its output is teed, as it is read, into an unread buffer that keeps a
//! bounded head and tail between two reads.

pub(crate) mod bash_output;
pub(crate) mod kill_bash;

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::process::{self, CommandOutput, CommandSpec, OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS};
use crate::util::sync::{Locked, Unpoisoned};

/// `--max-background`'s default: a server or two and a watcher; more is usually a
/// model forgetting to stop what it started.
pub(crate) const DEFAULT_MAX_BACKGROUND: usize = 4;
/// A background command has no timeout of its own: it ends with the run (every way out
/// kills it). `process::run` takes a duration, so this stands for "never" (a year).
const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long KillBash waits for the killed command's status (it comes in milliseconds;
/// the bound only keeps a stuck reader from holding the call).
const KILL_WAIT: Duration = Duration::from_secs(5);

/// What happened to a background command, for the observer (`--jsonl`, the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Started,
    Finished,
}

/// What the observer is told: the change, the command it is about, and the whole table
/// as of this change with its generation (a later generation is a newer table).
pub(crate) struct Notice {
    pub(crate) change: Change,
    pub(crate) job: JobRecord,
    pub(crate) generation: u64,
    pub(crate) all: Vec<JobRecord>,
}

type Observer = Box<dyn Fn(&Notice) + Send + Sync>;

/// One background command as the transcript lists it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct JobRecord {
    pub(crate) id: String,
    pub(crate) command: String,
    pub(crate) pid: i32,
    /// Milliseconds from the start of the run.
    pub(crate) started_ms: u64,
    /// `None` while it runs.
    pub(crate) ended_ms: Option<u64>,
    /// `None` while it runs, and when a signal ended it.
    pub(crate) exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub(crate) signal: Option<i32>,
    /// Killed by KillBash.
    pub(crate) killed: bool,
    /// Still running when the run ended, and killed then.
    pub(crate) killed_at_end: bool,
    /// Characters of output it printed (secrets removed).
    pub(crate) output_chars: u64,
    /// Its full output, when it outgrew head + tail (kept with `-o` or `--keep-spill`).
    pub(crate) full_output_path: Option<PathBuf>,
}

impl JobRecord {
    /// running, exited with code N, killed (by KillBash, at the end, or a signal).
    pub(crate) fn status(&self) -> String {
        match (self.ended_ms, self.exit_code, self.signal) {
            (None, _, _) => "running".to_string(),
            _ if self.killed || self.killed_at_end => "killed".to_string(),
            (_, Some(code), _) => format!("exited with code {code}"),
            (_, None, Some(sig)) => format!("killed by signal {sig}"),
            (_, None, None) => "ended (no status: it could not be waited for)".to_string(),
        }
    }
}

/// Output printed since the last BashOutput: the first `OUTPUT_HEAD_CHARS` and the last
/// `OUTPUT_TAIL_CHARS` of it, and how much was dropped between them.
#[derive(Default)]
struct Unread {
    head: String,
    head_chars: usize,
    tail: String,
    tail_chars: usize,
    skipped: u64,
}

impl Unread {
    fn push(&mut self, s: &str) {
        let mut rest = s;
        if self.head_chars < OUTPUT_HEAD_CHARS {
            let room = OUTPUT_HEAD_CHARS - self.head_chars;
            let cut = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
            self.head.push_str(&rest[..cut]);
            self.head_chars += rest[..cut].chars().count();
            rest = &rest[cut..];
        }
        if rest.is_empty() {
            return;
        }
        self.tail.push_str(rest);
        self.tail_chars += rest.chars().count();
        // Compacted at twice the size, so that the drain is amortised.
        if self.tail_chars > 2 * OUTPUT_TAIL_CHARS {
            let drop = self.tail_chars - OUTPUT_TAIL_CHARS;
            let at = self
                .tail
                .char_indices()
                .nth(drop)
                .map_or(self.tail.len(), |(i, _)| i);
            self.tail.drain(..at);
            self.tail_chars -= drop;
            self.skipped += drop as u64;
        }
    }

    /// The unread text (with a marker where characters were dropped), and empties it.
    fn take(&mut self) -> (String, u64) {
        let mut tail = std::mem::take(&mut self.tail);
        if self.tail_chars > OUTPUT_TAIL_CHARS {
            let drop = self.tail_chars - OUTPUT_TAIL_CHARS;
            let at = tail.char_indices().nth(drop).map_or(tail.len(), |(i, _)| i);
            tail.drain(..at);
            self.skipped += drop as u64;
        }
        let skipped = std::mem::take(&mut self.skipped);
        let mut text = std::mem::take(&mut self.head);
        if skipped > 0 {
            text.push_str(&format!(
                "\n[... {skipped} characters not shown (kept the first {OUTPUT_HEAD_CHARS} and \
                 the last {OUTPUT_TAIL_CHARS} since the last read) ...]\n"
            ));
        }
        text.push_str(&tail);
        self.head_chars = 0;
        self.tail_chars = 0;
        (text, skipped)
    }
}

struct Job {
    record: JobRecord,
    unread: Unread,
    /// The finished notice was given (by the command's thread or by `end_all`).
    reported_end: bool,
}

#[derive(Default)]
struct State {
    next: u32,
    jobs: Vec<Job>,
    generation: u64,
    /// The run is ending: no more background commands.
    closed: bool,
}

impl State {
    fn job(&mut self, id: &str) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| j.record.id == id)
    }

    fn records(&self) -> Vec<JobRecord> {
        self.jobs.iter().map(|j| j.record.clone()).collect()
    }
}

/// The run's background commands.
pub(crate) struct Jobs {
    state: Mutex<State>,
    /// Signalled whenever a command ends (KillBash waits for it).
    ended: Condvar,
    max: usize,
    started: Instant,
    observer: OnceLock<Observer>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs").field("max", &self.max).finish()
    }
}

/// What starting a background command gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartedJob {
    pub(crate) id: String,
    pub(crate) pid: i32,
}

impl Jobs {
    /// At most `max` at once; `started_ms` counts from `started` (the run's start).
    pub(crate) fn new(max: usize, started: Instant) -> Self {
        Jobs {
            state: Mutex::new(State::default()),
            ended: Condvar::new(),
            max,
            started,
            observer: OnceLock::new(),
        }
    }

    /// Who hears of each start and end (`agent run`: `--jsonl` and the record). Once.
    pub(crate) fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn notify(&self, change: Change, id: &str) {
        let Some(observer) = self.observer.get() else {
            return;
        };
        let (job, generation, all) = {
            let st = self.state.locked();
            let Some(job) = st.jobs.iter().find(|j| j.record.id == id) else {
                return;
            };
            (job.record.clone(), st.generation, st.records())
        };
        observer(&Notice {
            change,
            job,
            generation,
            all,
        });
    }

    /// Starts `spec` in the background and returns once it runs, with its id and pid.
    /// `Err` (for the model) when `--max-background` are running, the run is ending, or
    /// it could not start.
    pub(crate) fn start(
        self: &Arc<Self>,
        mut spec: CommandSpec,
        command: &str,
    ) -> Result<StartedJob, String> {
        let id = {
            let mut st = self.state.locked();
            if st.closed {
                return Err("not started: the run is ending".to_string());
            }
            let running: Vec<&str> = st
                .jobs
                .iter()
                .filter(|j| j.record.ended_ms.is_none())
                .map(|j| j.record.id.as_str())
                .collect();
            if self.max == 0 {
                return Err(
                    "not started: background commands are off in this run (--max-background \
                     0); run the command in the foreground"
                        .to_string(),
                );
            }
            if running.len() >= self.max {
                return Err(format!(
                    "not started: {} background commands are running ({}), the most this run \
                     allows (--max-background {}). Stop one with KillBash first, or run this \
                     command in the foreground.",
                    running.len(),
                    running.join(", "),
                    self.max
                ));
            }
            st.next += 1;
            let id = format!("bash_{}", st.next);
            st.generation += 1;
            let started_ms = self.now_ms();
            st.jobs.push(Job {
                record: JobRecord {
                    id: id.clone(),
                    command: command.to_string(),
                    pid: 0,
                    started_ms,
                    ended_ms: None,
                    exit_code: None,
                    signal: None,
                    killed: false,
                    killed_at_end: false,
                    output_chars: 0,
                    full_output_path: None,
                },
                unread: Unread::default(),
                reported_end: false,
            });
            id
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<i32>(1);
        spec.timeout = NO_TIMEOUT;
        spec.on_start = Some(Arc::new(move |pid| {
            let _ = tx.send(pid);
        }));
        let jobs = self.clone();
        let tee_id = id.clone();
        spec.tee = Some(Arc::new(move |s: &str| jobs.push_output(&tee_id, s)));
        let jobs = self.clone();
        let thread_id = id.clone();
        // The command's own thread: it waits for the command for its whole life, which
        // the supervisor's parent-death signal needs (it follows the spawning thread).
        let spawned = std::thread::Builder::new()
            .name(format!("bg-{id}"))
            .spawn(move || {
                let out = process::run(&spec);
                jobs.finished(&thread_id, out);
            });
        if let Err(e) = spawned {
            self.finished(&id, Err(format!("cannot start its thread: {e}")));
            return Err(format!("not started: cannot start its thread: {e}"));
        }
        match rx.recv() {
            Ok(pid) => {
                let pid = {
                    let mut st = self.state.locked();
                    st.generation += 1;
                    match st.job(&id) {
                        Some(j) => {
                            j.record.pid = pid;
                            pid
                        }
                        None => pid,
                    }
                };
                self.notify(Change::Started, &id);
                Ok(StartedJob { id, pid })
            }
            // The thread ended without a pid: `process::run` failed; it recorded why.
            Err(_) => {
                self.wait_ended(&id, KILL_WAIT);
                let mut st = self.state.locked();
                let why = match st.jobs.iter().position(|j| j.record.id == id) {
                    Some(i) => {
                        let mut job = st.jobs.remove(i);
                        st.generation += 1;
                        job.unread.take().0
                    }
                    None => String::new(),
                };
                Err(format!(
                    "not started: {}",
                    why.trim().trim_matches(['[', ']'])
                ))
            }
        }
    }

    fn push_output(&self, id: &str, s: &str) {
        let mut st = self.state.locked();
        if let Some(j) = st.job(id) {
            j.record.output_chars += s.chars().count() as u64;
            j.unread.push(s);
        }
    }

    /// The command's thread, when `process::run` returned.
    fn finished(&self, id: &str, out: Result<CommandOutput, String>) {
        let now = self.now_ms();
        let notify = {
            let mut st = self.state.locked();
            st.generation += 1;
            let Some(j) = st.job(id) else { return };
            if j.record.ended_ms.is_none() {
                j.record.ended_ms = Some(now);
            }
            match &out {
                Ok(o) => {
                    j.record.exit_code = o.exit_code;
                    j.record.signal = o.signal;
                    j.record.full_output_path = o.output.full_output_path.clone();
                }
                Err(e) => j.unread.push(&format!("\n[{e}]\n")),
            }
            let first = !j.reported_end;
            j.reported_end = true;
            // A command that never started (no pid) is no notice: the call says why.
            first && j.record.pid != 0
        };
        self.ended.notify_all();
        if notify {
            self.notify(Change::Finished, id);
        }
    }

    /// Waits until `id`'s thread has reported its end (at most `limit`).
    fn wait_ended(&self, id: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut st = self.state.locked();
        loop {
            let Some(job) = st.job(id) else { return false };
            if job.record.ended_ms.is_some() && job.reported_end {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self.ended.wait_timeout(st, left).unpoisoned().0;
        }
    }

    /// BashOutput: the output since the last read (`filter`: only lines it matches) and
    /// the status.
    pub(crate) fn read(
        &self,
        id: &str,
        filter: Option<&regex::Regex>,
    ) -> Result<(String, JobRecord), String> {
        let mut st = self.state.locked();
        let known = known_ids(&st);
        let job = st.job(id).ok_or_else(|| no_such(id, &known))?;
        let (mut text, _) = job.unread.take();
        if let Some(re) = filter {
            let kept: Vec<&str> = text.lines().filter(|l| re.is_match(l)).collect();
            text = kept.join("\n");
        }
        Ok((text, job.record.clone()))
    }

    /// KillBash: kills the command's whole tree and waits (bounded) for its status.
    pub(crate) fn kill(&self, id: &str) -> Result<JobRecord, String> {
        let pid = {
            let mut st = self.state.locked();
            let known = known_ids(&st);
            let job = st.job(id).ok_or_else(|| no_such(id, &known))?;
            if job.record.ended_ms.is_some() {
                return Err(format!(
                    "{id} is not running: it {}",
                    job.record.status().replace("exited", "has exited")
                ));
            }
            job.record.killed = true;
            job.record.pid
        };
        if !process::kill_command_tree(pid) {
            // It ended between the look-up and the kill: its thread reports it.
            let mut st = self.state.locked();
            if let Some(j) = st.job(id) {
                j.record.killed = false;
            }
        }
        let _ = self.wait_ended(id, KILL_WAIT);
        let mut st = self.state.locked();
        let known = known_ids(&st);
        st.job(id)
            .map(|j| j.record.clone())
            .ok_or_else(|| no_such(id, &known))
    }

    /// The way out, before the kill-all: marks every command still running as killed at
    /// the end (now) and refuses new ones; the kill-all that follows kills their groups.
    /// Returns how many were running.
    pub(crate) fn end_all(&self) -> usize {
        let now = self.now_ms();
        let ending: Vec<String> = {
            let mut st = self.state.locked();
            st.closed = true;
            st.generation += 1;
            st.jobs
                .iter_mut()
                .filter(|j| j.record.ended_ms.is_none() && j.record.pid != 0)
                .map(|j| {
                    j.record.ended_ms = Some(now);
                    j.record.killed_at_end = true;
                    j.reported_end = true;
                    j.record.id.clone()
                })
                .collect()
        };
        for id in &ending {
            self.notify(Change::Finished, id);
        }
        ending.len()
    }

    /// Every background command of the run so far, with the table's generation.
    pub(crate) fn snapshot(&self) -> (u64, Vec<JobRecord>) {
        let st = self.state.locked();
        (st.generation, st.records())
    }
}

fn known_ids(st: &State) -> Vec<String> {
    st.jobs.iter().map(|j| j.record.id.clone()).collect()
}

fn no_such(id: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("no background command `{id}`: none was started (Bash with run_in_background)")
    } else {
        format!(
            "no background command `{id}`; this run's are: {}",
            known.join(", ")
        )
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
