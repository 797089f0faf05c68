//! Running the plan: `parallel` workers take runs in file order; each run gets a fresh
//! workspace, its `setup`, then a child `agent run` (this binary) whose transcript is
//! read back. The batch's budget (`--max-cost-usd`) is checked before each start, and
//! SIGINT/SIGTERM stop new starts and are passed on to the running children.
//!
//! Children get `PR_SET_PDEATHSIG` SIGKILL: if the batch itself is killed, its tasks die
//! with it (their transcripts still say `running`, which `--resume` re-runs) instead of
//! running on unsupervised.

use std::fs::File;
use std::io::Write;
#[cfg(target_os = "linux")]
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use crate::record::Transcript;

use super::progress::Progress;
use super::resume::{self, Decision};
use super::tasks::ChildRun;
use super::{Plan, RunSpec, TaskOutcome, describe_exit, workspace};
use crate::util::output;
use crate::util::sync::{Locked, Unpoisoned};

/// Largest journal read for a killed task's row (one task's history; far above any run).
const MAX_JOURNAL_BYTES: u64 = 512 << 20;

/// What the workers produced.
pub(crate) struct BatchResult {
    /// One row per run, in plan order.
    pub outcomes: Vec<TaskOutcome>,
    /// SIGINT/SIGTERM arrived.
    pub interrupted: bool,
    /// `--max-cost-usd` kept some runs from starting.
    pub over_budget: bool,
}

/// The batch's spending, checked before each start.
#[derive(Default)]
struct Spend {
    usd: f64,
    /// Set when a finished run's cost is unknown: the batch can no longer tell what it
    /// spent, so (as `agent run --max-cost-usd` does) it starts nothing more.
    unknown: Option<String>,
}

pub(crate) fn run_all(plan: &Plan) -> BatchResult {
    let stop = Arc::new(AtomicBool::new(false));
    let children: Arc<Mutex<Vec<u32>>> = Arc::default();
    forward_signals(stop.clone(), children.clone());
    let next = AtomicUsize::new(0);
    let over_budget = AtomicBool::new(false);
    let spend = Mutex::new(Spend::default());
    let results: Mutex<Vec<Option<TaskOutcome>>> = Mutex::new(vec![None; plan.runs.len()]);
    let exe = std::env::current_exe();
    let progress = Progress::start(plan.runs.len());
    std::thread::scope(|s| {
        for _ in 0..plan.parallel.min(plan.runs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(run) = plan.runs.get(i) else {
                        break;
                    };
                    let decision = if plan.resume {
                        resume::decide(&plan.out, run, plan.retry_failed)
                    } else {
                        Decision::Run(None)
                    };
                    let outcome = match decision {
                        Decision::Skip(o) => *o,
                        Decision::Run(note) => {
                            let blocked = if stop.load(Ordering::SeqCst) {
                                Some("the batch was interrupted before this task started".into())
                            } else {
                                budget_block(plan, &spend.locked())
                            };
                            let mut o = match (blocked, &exe) {
                                (Some(why), _) => {
                                    if !stop.load(Ordering::SeqCst) {
                                        over_budget.store(true, Ordering::SeqCst);
                                    }
                                    TaskOutcome::not_run(run, &why)
                                }
                                (None, Err(e)) => TaskOutcome::not_run(
                                    run,
                                    &format!("cannot find the agent binary: {e}"),
                                ),
                                (None, Ok(exe)) => {
                                    progress.started(&run.id);
                                    let o = run_task(exe, plan, run, &children, &stop);
                                    account(&mut spend.locked(), &o);
                                    o
                                }
                            };
                            o.note = note;
                            o
                        }
                    };
                    progress.finished(&outcome);
                    results.locked()[i] = Some(outcome);
                }
            });
        }
    });
    progress.done();
    let outcomes = results
        .into_inner()
        .unpoisoned()
        .into_iter()
        .zip(&plan.runs)
        .map(|(o, r)| o.unwrap_or_else(|| TaskOutcome::not_run(r, "not run")))
        .collect();
    BatchResult {
        outcomes,
        interrupted: stop.load(Ordering::SeqCst),
        over_budget: over_budget.load(Ordering::SeqCst),
    }
}

/// Why no run may start now, if the budget says so.
fn budget_block(plan: &Plan, spend: &Spend) -> Option<String> {
    let cap = plan.max_cost_usd?;
    if let Some(why) = &spend.unknown {
        return Some(format!(
            "not started: {why}, so the batch cannot keep to --max-cost-usd {cap}"
        ));
    }
    (spend.usd >= cap).then(|| {
        format!(
            "not started: the batch had spent ${:.4} of --max-cost-usd {cap}",
            spend.usd
        )
    })
}

fn account(spend: &mut Spend, o: &TaskOutcome) {
    match o.cost_usd {
        Some(c) => spend.usd += c,
        // A run that made no request cost nothing.
        None if o.num_turns == 0 && o.usage == crate::model::protocol::Usage::default() => {}
        None => {
            spend.unknown.get_or_insert_with(|| {
                format!(
                    "the cost of task {} is unknown (no price for its model)",
                    o.id
                )
            });
        }
    }
}

/// Prepares the run's workspace, runs its setup and `agent run` in it, and reads its
/// transcript.
fn run_task(
    exe: &Path,
    plan: &Plan,
    run: &RunSpec,
    children: &Mutex<Vec<u32>>,
    stop: &AtomicBool,
) -> TaskOutcome {
    let t0 = Instant::now();
    let mut outcome = TaskOutcome::not_run(run, "");
    outcome.error = None;
    let transcript = plan.out.join(format!("{}.json", run.id));
    // A stale one from an earlier batch must not count.
    let _ = std::fs::remove_file(&transcript);
    let _ = std::fs::remove_file(trajectory_path(&transcript));
    let record_path = resume::record_path(&plan.out, &run.id);
    let _ = write_record(&record_path, &resume::record(run, None));
    let dest = plan.out.join("workspaces").join(&run.id);
    let (cwd, kind) = match workspace::prepare_workspace(&run.source, &dest, &plan.out) {
        Ok(w) => w,
        Err(e) => {
            return ended_early(
                outcome,
                "error",
                format!("cannot prepare the workspace: {e}"),
                &transcript,
                t0,
            );
        }
    };
    outcome.workspace = Some(cwd.display().to_string());
    outcome.workspace_kind = Some(kind.to_string());
    let log_path = plan.out.join(&outcome.log);
    let mut log = match File::create(&log_path) {
        Ok(f) => f,
        Err(e) => {
            let why = format!("cannot create {}: {e}", log_path.display());
            return ended_early(outcome, "error", why, &transcript, t0);
        }
    };
    if stop.load(Ordering::SeqCst) {
        let why = "the batch was interrupted before this task's agent started".to_string();
        return ended_early(outcome, "interrupted", why, &transcript, t0);
    }
    if let Some(setup) = &run.task.setup {
        let _ = writeln!(log, "agent batch: setup: {setup}");
        let spill = plan
            .out
            .join("workspaces")
            .join(format!("{}.setup-output", run.id));
        let ran = workspace::run_setup(setup, &cwd, &spill);
        let _ = match &ran {
            Ok(text) => writeln!(log, "{text}\nagent batch: setup passed"),
            Err(why) => writeln!(log, "agent batch: {why}"),
        };
        if let Err(why) = ran {
            // A signal stops the setup too: that is the batch's interruption, not the
            // setup's failure.
            let status = if stop.load(Ordering::SeqCst) {
                "interrupted"
            } else {
                "setup_failed"
            };
            return ended_early(outcome, status, why, &transcript, t0);
        }
    }
    let child = ChildRun {
        flags: &run.task.args,
        timeout: plan.task_timeout.filter(|_| !run.task.sets_timeout),
        workspace: &cwd,
        transcript: Some(&transcript),
        prompt: &run.task.prompt,
    };
    let mut cmd = Command::new(exe);
    cmd.args(child.argv())
        .envs(super::trace_env())
        .stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    // Linux only: macOS has no parent-death signal (a killed batch leaves its tasks).
    #[cfg(target_os = "linux")]
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let spawned = log
        .try_clone()
        .and_then(|out| cmd.stdout(out).stderr(log).spawn());
    let status = spawned.and_then(|mut child| {
        let pid = child.id();
        children.locked().push(pid);
        // A signal that came between the start checks and the line above found no pid
        // to pass on: pass it on now (the signal thread sets `stop` before it looks).
        if stop.load(Ordering::SeqCst) {
            terminate(pid);
        }
        let status = child.wait();
        children.locked().retain(|p| *p != pid);
        status
    });
    outcome.duration_ms = t0.elapsed().as_millis() as u64;
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            let why = format!("cannot run the agent: {e}");
            return ended_early(outcome, "error", why, &transcript, t0);
        }
    };
    outcome.exit_code = status.code();
    let exit = describe_exit(status.code(), status.signal());
    let _ = write_record(&record_path, &resume::record(run, outcome.exit_code));
    let read = read_transcript(&transcript);
    if let Some(t) = &read {
        write_trajectory(&transcript, t);
    }
    match read {
        // A transcript still saying `running` is the last checkpoint of a run that was
        // killed before it could finish (SIGKILL, OOM): that is an error.
        Some(t) if t.status == "running" => {
            outcome_from_transcript(&mut outcome, &t, &transcript);
            outcome.status = "error".into();
            outcome.error = Some(format!(
                "the run was killed before it finished ({exit}); its last checkpoint is {}",
                transcript.display()
            ));
        }
        Some(t) => outcome_from_transcript(&mut outcome, &t, &transcript),
        None => {
            outcome.status = "error".into();
            outcome.error = Some(format!(
                "the run left no transcript ({exit}); see {}",
                outcome.log
            ));
        }
    }
    outcome
}

/// The task's transcript, None when there is none or it is not one. A killed run's `-o`
/// file stands for its journal's last checkpoint (turns, usage and cost so far); anything
/// unreadable there leaves the file as it is.
pub(crate) fn read_transcript(path: &Path) -> Option<Transcript> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc = serde_json::from_str::<Value>(&text).ok()?;
    let t = Transcript::from_value(&doc).ok()?;
    if t.status != "running" {
        return Some(t);
    }
    let dir = path.parent().unwrap_or(Path::new(""));
    crate::record::journal::follow(doc, dir, MAX_JOURNAL_BYTES)
        .ok()
        .and_then(|rebuilt| Transcript::from_value(&rebuilt).ok())
        .or(Some(t))
}

/// Fills a row from a transcript's fields.
pub(crate) fn outcome_from_transcript(outcome: &mut TaskOutcome, t: &Transcript, path: &Path) {
    outcome.status = t.status.clone();
    outcome.num_turns = u64::from(t.num_turns);
    outcome.cost_usd = t.cost_usd;
    outcome.usage = t.usage;
    outcome.error = t.error.as_ref().map(|e| e.message.clone());
    outcome.transcript = path.file_name().map(|n| n.to_string_lossy().into_owned());
}

/// A run that ended before its agent could write a transcript (workspace, setup): the
/// batch writes a minimal one in its place, so that `--resume` and `report` see the
/// status like any other.
fn ended_early(
    mut outcome: TaskOutcome,
    status: &str,
    why: String,
    transcript: &Path,
    t0: Instant,
) -> TaskOutcome {
    outcome.status = status.to_string();
    outcome.duration_ms = t0.elapsed().as_millis() as u64;
    let doc = Transcript {
        version: crate::record::TRANSCRIPT_VERSION,
        status: status.to_string(),
        is_error: true,
        subtype: crate::record::session::subtype(status).to_string(),
        duration_ms: outcome.duration_ms,
        usage: outcome.usage,
        cost_usd: Some(0.0),
        total_cost_usd: Some(0.0),
        error: Some(crate::record::transcript::ErrorRecord {
            kind: status.to_string(),
            message: why.clone(),
        }),
        written_by: Some("agent batch (the agent did not run)".to_string()),
        ..Transcript::default()
    };
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    write_trajectory(transcript, &doc);
    if output::write_file_atomic(transcript, text.as_bytes()).is_ok() {
        outcome.transcript = transcript
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        outcome.cost_usd = Some(0.0);
    }
    outcome.error = Some(why);
    outcome
}

/// `OUT/ID.trajectory.json`: the task's transcript as ATIF, beside it. Made here from the
/// transcript the batch read (a killed run's through its journal), so every task that has
/// a transcript has a trajectory; one that cannot be made is a warning, not a failed task.
fn write_trajectory(transcript: &Path, t: &Transcript) {
    let path = trajectory_path(transcript);
    let written = crate::record::atif::from_transcript(t).and_then(|traj| {
        output::write_file_atomic(&path, traj.to_json().as_bytes()).map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        output::warn(&format!(
            "cannot write the trajectory {}: {e}",
            path.display()
        ));
    }
}

/// `ID.json` → `ID.trajectory.json`.
pub(crate) fn trajectory_path(transcript: &Path) -> std::path::PathBuf {
    let stem = transcript
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    transcript.with_file_name(format!("{stem}.trajectory.json"))
}

fn write_record(path: &Path, r: &resume::TaskRecord) -> std::io::Result<()> {
    let text = super::summary::sorted_pretty(r);
    output::write_file_atomic(path, text.as_bytes())
}

/// SIGINT/SIGTERM: start no new task, stop running setup commands, and pass SIGTERM on
/// to the running agents, which then write their transcripts (status `interrupted`) and
/// exit; the summary follows.
fn forward_signals(stop: Arc<AtomicBool>, children: Arc<Mutex<Vec<u32>>>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        output::warn("cannot watch for signals");
        return;
    };
    std::thread::spawn(move || {
        for _ in signals.forever() {
            stop.store(true, Ordering::SeqCst);
            crate::process::kill_all_running();
            for pid in children.locked().iter() {
                terminate(*pid);
            }
        }
    });
}

/// SIGTERM to a child agent we spawned and have not reaped yet (it is in `children`
/// until its wait returns), so the pid cannot have been reused.
fn terminate(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: plain kill(2) on our own unreaped child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}
