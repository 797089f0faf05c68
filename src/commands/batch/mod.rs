//! `agent batch` (SPEC §9): many tasks, each run by a separate `agent run` process (this
//! very binary) in its own copy of its workspace, so a crash, a signal or a runaway tool
//! in one task cannot touch another; plus `agent batch merge` and `agent batch report`
//! for the outputs of many machines.
//!
//! Per task, `DIR/<id>.json` is the transcript, `DIR/<id>.log` the process's stdout and
//! stderr (after the setup command's output), and `DIR/tasks/<id>.json` the task line it
//! ran with (what `--resume` compares); `DIR/summary.json` sums it up and is also printed.
//!
//! - `tasks`: the tasks file, checked up front (ids, args through `agent run`'s parser).
//! - `shard`: `--shard I/N` and `--shard auto` (the CI engine's variables).
//! - `workspace`: worktrees and copies, and the per-task `setup` command.
//! - `resume`: which tasks `--resume` / `--retry-failed` run again, and why.
//! - `run`: the workers, budgets, child agents and signals.
//! - `summary`: summary.json as a type (`BatchSummary`), written and read back.
//! - `stats`: summary.json's totals, pass@k, medians; `merge` and `report` use them.
//! - `progress`: the terminal bar, or one line per finished task.

mod merge;
mod progress;
mod report;
mod resume;
mod run;
mod shard;
mod stats;
mod summary;
mod tasks;
mod workspace;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::cli::{BatchAction, BatchArgs};
use crate::error::ExitStatus;
use crate::model::protocol::Usage;
use crate::record::outcome::Status;
use crate::util::output;

pub(crate) use tasks::{Task, parse_tasks};

/// The version of `summary.json`; fields are only ever added within a version.
pub(crate) const BATCH_SUMMARY_VERSION: u32 = 1;
/// Most tasks run at once: each is a process holding an HTTP stream and tool children.
const MAX_PARALLEL: usize = 64;
/// Most runs of one task (`--repeat`): pass@k beyond this says nothing more.
const MAX_REPEAT: usize = 100;
/// The separator of a repeat's id (`<id>~2`): not a character a task id may contain.
const REPEAT_SEP: char = '~';

/// What happened to one run of a task (a row of `summary.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub(crate) struct TaskOutcome {
    /// The run's id: the task's id, or `<id>~N` with `--repeat`.
    pub id: String,
    /// The task's id (the same as `id` without `--repeat`).
    #[serde(default)]
    pub task_id: String,
    /// The task's line number in the tasks file, from 0 (orders merged shards).
    #[serde(default)]
    pub index: usize,
    pub status: String,
    pub exit_code: Option<i32>,
    pub num_turns: u64,
    pub duration_ms: u64,
    pub cost_usd: Option<f64>,
    pub usage: Usage,
    pub transcript: Option<String>,
    pub log: String,
    pub workspace: Option<String>,
    pub workspace_kind: Option<String>,
    pub error: Option<String>,
    /// `--resume` found it finished and did not run it again.
    #[serde(default)]
    pub skipped: bool,
    /// Why `--resume` ran it again (killed, changed, retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl TaskOutcome {
    /// A row for a run that did not start (or has not yet).
    pub(crate) fn not_run(run: &RunSpec, why: &str) -> TaskOutcome {
        TaskOutcome {
            id: run.id.clone(),
            task_id: run.task.id.clone(),
            index: run.index,
            status: "not_run".into(),
            exit_code: None,
            num_turns: 0,
            duration_ms: 0,
            cost_usd: None,
            usage: Usage::default(),
            transcript: None,
            log: format!("{}.log", run.id),
            workspace: None,
            workspace_kind: None,
            error: Some(why.to_string()),
            skipped: false,
            note: None,
        }
    }
}

/// One run: a task (one of `--repeat`'s copies) with its resolved source workspace.
#[derive(Debug, Clone)]
pub(crate) struct RunSpec {
    pub id: String,
    pub index: usize,
    pub task: Task,
    pub source: PathBuf,
}

/// The validated batch: this shard's runs, in file order (repeats together).
#[derive(Debug)]
pub(crate) struct Plan {
    pub tasks_file: PathBuf,
    /// The tasks file's SHA-256 (lowercase hex, as `sha256sum` prints it): in each
    /// shard's summary, so that `merge` can tell shards of different files apart.
    pub tasks_sha256: String,
    pub out: PathBuf,
    pub parallel: usize,
    pub shard: Option<(usize, usize)>,
    pub repeat: usize,
    pub resume: bool,
    pub retry_failed: bool,
    pub max_cost_usd: Option<f64>,
    pub task_timeout: Option<Duration>,
    pub runs: Vec<RunSpec>,
}

pub(crate) fn batch_command(args: &BatchArgs) -> ExitStatus {
    match &args.action {
        Some(BatchAction::Merge(m)) => merge::merge_command(m),
        Some(BatchAction::Report(r)) => report::report_command(r),
        None => run_command(args),
    }
}

/// The batch's span (OpenTelemetry), which every task's run is a child of.
static BATCH_SPAN: std::sync::OnceLock<crate::otel::SpanContext> = std::sync::OnceLock::new();

/// `TRACEPARENT` (and `TRACESTATE`) for a task's run: the batch's span.
pub(crate) fn trace_env() -> Vec<(String, String)> {
    let mut vars = Vec::new();
    if let Some(ctx) = BATCH_SPAN.get() {
        vars.push(("TRACEPARENT".to_string(), ctx.traceparent()));
        if !ctx.trace_state.is_empty() {
            vars.push(("TRACESTATE".to_string(), ctx.trace_state.clone()));
        }
    }
    vars
}

fn run_command(args: &BatchArgs) -> ExitStatus {
    let started = Instant::now();
    let plan = match Plan::from_args(args, &|name| std::env::var(name).ok()) {
        Ok(p) => p,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let mut warnings = Vec::new();
    let otel = crate::otel::settings::OtelSettings::from_env(
        &|name| std::env::var(name).ok(),
        &mut warnings,
    );
    for w in &warnings {
        output::warn(w);
    }
    crate::otel::start(&otel);
    let mut span = crate::otel::Span::start(
        "invoke_workflow agent batch",
        crate::otel::SpanKind::Internal,
        otel.parent.as_ref(),
    );
    span.set("gen_ai.operation.name", "invoke_workflow");
    span.set("agent.batch.runs", plan.runs.len() as u64);
    if let Some(ctx) = span.context() {
        let _ = BATCH_SPAN.set(ctx);
    }
    let result = run::run_all(&plan);
    let summary = stats::batch_summary(&plan, &result.outcomes, started.elapsed());
    let text = summary.to_json();
    let path = plan.out.join("summary.json");
    if let Err(e) = output::write_file_atomic(&path, text.as_bytes()) {
        output::error(&format!("cannot write {}: {e}", path.display()));
    }
    output::print_stdout(&text);
    let ok = result
        .outcomes
        .iter()
        .filter(|o| o.status == "success")
        .count();
    let skipped = result.outcomes.iter().filter(|o| o.skipped).count();
    output::info(&format!(
        "batch: {ok} of {} tasks succeeded{}; summary in {}",
        result.outcomes.len(),
        if skipped > 0 {
            format!(" ({skipped} skipped: finished earlier)")
        } else {
            String::new()
        },
        path.display()
    ));
    // A run's codes for the same ends (SPEC's table): interrupted, over budget.
    let status = if result.interrupted {
        ExitStatus::Code(Status::Interrupted.exit_code())
    } else if result.over_budget {
        ExitStatus::Code(Status::Budget.exit_code())
    } else if ok == result.outcomes.len() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    };
    span.set("agent.batch.succeeded", ok as u64);
    if status == ExitStatus::Success {
        span.succeed();
    } else {
        span.fail(
            "batch_failed",
            &format!("{ok} of {} tasks succeeded", result.outcomes.len()),
        );
    }
    drop(span);
    crate::otel::shutdown();
    status
}

impl Plan {
    /// Checks everything (flags, the tasks file, every task's args, the workspaces)
    /// before anything is created. `env` reads the CI engine's variables.
    pub(crate) fn from_args(
        args: &BatchArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Plan, String> {
        let (Some(tasks_file), Some(out)) = (&args.tasks, &args.out) else {
            return Err("agent batch needs TASKS and --out DIR".into());
        };
        if args.parallel == 0 || args.parallel > MAX_PARALLEL {
            return Err(format!("--parallel must be between 1 and {MAX_PARALLEL}"));
        }
        if args.repeat == 0 || args.repeat > MAX_REPEAT {
            return Err(format!("--repeat must be between 1 and {MAX_REPEAT}"));
        }
        if let Some(x) = args.max_cost_usd
            && !(x.is_finite() && x > 0.0)
        {
            return Err(format!("--max-cost-usd {x}: give an amount above 0"));
        }
        if args.task_timeout.is_some_and(|t| t.is_zero()) {
            return Err("--task-timeout must be longer than 0s".into());
        }
        let shard = shard::resolve(args.shard.as_deref(), args.shards, env)?;
        let text = std::fs::read_to_string(tasks_file)
            .map_err(|e| format!("cannot read the tasks file {}: {e}", tasks_file.display()))?;
        let all = parse_tasks(&text).map_err(|e| format!("{}: {e}", tasks_file.display()))?;
        let base = match tasks_file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut runs = Vec::new();
        for (index, task) in all.into_iter().enumerate() {
            if !shard::keeps(shard, index) {
                continue;
            }
            let source = resolve_workspace(&base, &task)?;
            tasks::check_config(&task, &source, args.task_timeout)?;
            for n in 1..=args.repeat {
                let id = if args.repeat > 1 {
                    format!("{}{REPEAT_SEP}{n}", task.id)
                } else {
                    task.id.clone()
                };
                runs.push(RunSpec {
                    id,
                    index,
                    task: task.clone(),
                    source: source.clone(),
                });
            }
        }
        std::fs::create_dir_all(out.join("workspaces"))
            .and_then(|()| std::fs::create_dir_all(out.join(resume::RECORDS_DIR)))
            .map_err(|e| format!("--out {}: {e}", out.display()))?;
        let out = out
            .canonicalize()
            .map_err(|e| format!("--out {}: {e}", out.display()))?;
        Ok(Plan {
            tasks_file: tasks_file.clone(),
            tasks_sha256: sha256_hex(text.as_bytes()),
            out,
            parallel: args.parallel,
            shard,
            repeat: args.repeat,
            resume: args.resume,
            retry_failed: args.retry_failed,
            max_cost_usd: args.max_cost_usd,
            task_timeout: args.task_timeout,
            runs,
        })
    }
}

/// `bytes`' SHA-256 in lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest
        .as_ref()
        .iter()
        .fold(String::with_capacity(64), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

fn resolve_workspace(base: &Path, task: &Task) -> Result<PathBuf, String> {
    let ws = base.join(task.workspace.clone().unwrap_or_else(|| PathBuf::from(".")));
    let ws = ws
        .canonicalize()
        .map_err(|e| format!("task {:?}: workspace {}: {e}", task.id, ws.display()))?;
    if !ws.is_dir() {
        return Err(format!(
            "task {:?}: workspace {} is not a directory",
            task.id,
            ws.display()
        ));
    }
    Ok(ws)
}

/// An exit status for messages: `exit 2`, `signal 9 (SIGKILL)`.
pub(crate) fn describe_exit(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => match signal_name(s) {
            Some(name) => format!("signal {s} ({name})"),
            None => format!("signal {s}"),
        },
        (None, None) => "no exit status".to_string(),
    }
}

/// The usual name of a signal number (the ones a CI job meets).
fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
