//! `agent batch TASKS.jsonl --out DIR [--parallel N] [--shard I/N]` (SPEC §9): many
//! tasks, each run by a separate `agent run` process (this very binary) in its own copy
//! of its workspace, so a crash, a signal or a runaway tool in one task cannot touch
//! another. `--shard I/N` keeps the tasks whose index (0-based, in file order) is
//! I-1 modulo N, so a CI matrix of N jobs covers the file exactly once.
//!
//! A workspace inside a git repository gets a detached `git worktree` of HEAD (cheap,
//! and the result can be diffed and committed; uncommitted changes of the source are not
//! in it; git failing is the task's error, never a silent copy); anything else is
//! copied. Copies live in `DIR/workspaces/<id>` and are kept for inspection. Per task, `DIR/<id>.json` is the transcript and `DIR/<id>.log` the
//! process's stdout and stderr; `DIR/summary.json` sums it up and is also printed.
//!
//! The runner's own commands (git, the child agents) are argument vectors run with
//! `std::process::Command`, not shell lines: paths never go through a shell, and each
//! child agent enforces its own `--timeout`.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cli::BatchArgs;
use crate::output;
use crate::protocol::Usage;

/// The version of `summary.json`; fields are only ever added within a version.
pub const BATCH_SUMMARY_VERSION: u32 = 1;
/// Most tasks run at once: each is a process holding an HTTP stream and tool children.
const MAX_PARALLEL: usize = 64;
/// Task ids become file names: short, and limited to a portable character set.
const MAX_ID_CHARS: usize = 100;

/// One line of the tasks file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Task {
    pub id: String,
    pub prompt: String,
    /// Relative to the tasks file's directory; default that directory.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// Extra `agent run` flags (`-C`, `-o` and the prompt are set by the batch).
    #[serde(default)]
    pub args: Vec<String>,
}

/// What happened to one task (a row of `summary.json`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TaskOutcome {
    pub id: String,
    pub status: String,
    pub exit_code: Option<i32>,
    pub num_turns: u64,
    pub duration_ms: u64,
    pub cost_usd: Option<f64>,
    pub usage: Usage,
    pub transcript: Option<String>,
    pub log: String,
    pub workspace: Option<String>,
    pub workspace_kind: Option<&'static str>,
    pub error: Option<String>,
}

pub(crate) fn batch_command(args: &BatchArgs) -> ExitCode {
    let started = Instant::now();
    let plan = match Plan::from_args(args) {
        Ok(p) => p,
        Err(e) => {
            output::error(&e);
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let children: Arc<Mutex<Vec<u32>>> = Arc::default();
    forward_signals(stop.clone(), children.clone());
    let outcomes = run_all(&plan, &stop, &children);
    let summary = summary(&plan, &outcomes, started.elapsed().as_millis() as u64);
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    let path = plan.out.join("summary.json");
    if let Err(e) = output::write_file_atomic(&path, text.as_bytes()) {
        output::error(&format!("cannot write {}: {e}", path.display()));
    }
    output::print_stdout(&text);
    let ok = outcomes.iter().filter(|o| o.status == "success").count();
    output::info(&format!(
        "batch: {ok} of {} tasks succeeded; summary in {}",
        outcomes.len(),
        path.display()
    ));
    let code = if stop.load(Ordering::SeqCst) {
        130
    } else if ok == outcomes.len() {
        0
    } else {
        1
    };
    ExitCode::from(code)
}

/// The validated batch: this shard's tasks with resolved workspaces.
#[derive(Debug)]
pub(crate) struct Plan {
    pub tasks_file: PathBuf,
    pub out: PathBuf,
    pub parallel: usize,
    pub shard: Option<(usize, usize)>,
    /// (task, its workspace directory), in file order.
    pub tasks: Vec<(Task, PathBuf)>,
}

impl Plan {
    pub(crate) fn from_args(args: &BatchArgs) -> Result<Plan, String> {
        if args.parallel == 0 || args.parallel > MAX_PARALLEL {
            return Err(format!("--parallel must be between 1 and {MAX_PARALLEL}"));
        }
        let shard = args.shard.as_deref().map(parse_shard).transpose()?;
        let text = std::fs::read_to_string(&args.tasks)
            .map_err(|e| format!("cannot read the tasks file {}: {e}", args.tasks.display()))?;
        let all = parse_tasks(&text).map_err(|e| format!("{}: {e}", args.tasks.display()))?;
        let base = match args.tasks.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tasks = Vec::new();
        for (i, task) in all.into_iter().enumerate() {
            if let Some((idx, n)) = shard
                && i % n != idx - 1
            {
                continue;
            }
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
            check_config(&task, &ws)?;
            tasks.push((task, ws));
        }
        std::fs::create_dir_all(args.out.join("workspaces"))
            .map_err(|e| format!("--out {}: {e}", args.out.display()))?;
        let out = args
            .out
            .canonicalize()
            .map_err(|e| format!("--out {}: {e}", args.out.display()))?;
        Ok(Plan {
            tasks_file: args.tasks.clone(),
            out,
            parallel: args.parallel,
            shard,
            tasks,
        })
    }
}

/// `I/N` with 1 ≤ I ≤ N.
pub(crate) fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("--shard {s:?}: expected I/N with 1 <= I <= N, e.g. 2/3");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// Every task of the file (blank lines skipped), validated; ids unique across the whole
/// file so that every shard agrees.
pub(crate) fn parse_tasks(text: &str) -> Result<Vec<Task>, String> {
    let mut tasks = Vec::new();
    let mut seen = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |e: String| format!("line {}: {e}", n + 1);
        let task: Task = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let id_ok = !task.id.is_empty()
            && task.id.chars().count() <= MAX_ID_CHARS
            && !task.id.starts_with('.')
            && task
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !id_ok {
            return Err(at(format!(
                "id {:?} must be 1 to {MAX_ID_CHARS} of A-Z a-z 0-9 - _ . (not starting with .): \
                 it names the task's files",
                task.id
            )));
        }
        if task.id == "summary" {
            return Err(at(
                "id \"summary\" is reserved: DIR/summary.json is the batch's summary".into(),
            ));
        }
        if !seen.insert(task.id.clone()) {
            return Err(at(format!("duplicate id {:?}", task.id)));
        }
        if task.prompt.trim().is_empty() {
            return Err(at(format!("task {:?} has an empty prompt", task.id)));
        }
        check_args(&task).map_err(at)?;
        tasks.push(task);
    }
    Ok(tasks)
}

/// A task's `args` through the very parser `agent run` uses (clap's `Cli`), with the
/// flags the batch adds: anything clap rejects, and the flags the batch owns however
/// they are spelled (`-C/tmp`, `--cwd=X`, `-oX`, a `--` or a stray positional that
/// would replace the prompt), is an error here, before any task runs.
pub(crate) fn check_args(task: &Task) -> Result<(), String> {
    use clap::Parser;
    const PROMPT: &str = "the task's prompt";
    let argv = ["agent", "run"]
        .into_iter()
        .map(String::from)
        .chain(task.args.iter().cloned())
        .chain(["--".to_string(), PROMPT.to_string()]);
    let bad = |why: String| format!("task {:?}: args: {why}", task.id);
    if task.args.iter().any(|a| a == "--") {
        // Everything after it would be read as the prompt, which is the task's field.
        return Err(bad(
            "`--` is not allowed: the prompt is the task's \"prompt\" field".into(),
        ));
    }
    let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| bad(clap_message(&e)))?;
    let crate::cli::Command::Run(run) = cli.command else {
        return Err(bad("not `agent run` flags".into()));
    };
    if run.cwd.is_some() {
        return Err(bad(
            "-C/--cwd is set by the batch (the task's workspace copy)".into(),
        ));
    }
    if run.output.is_some() {
        return Err(bad("-o/--output is set by the batch (DIR/<id>.json)".into()));
    }
    if run.prompt.as_deref() != Some(PROMPT) || run.prompt_file.is_some() {
        return Err(bad(
            "the prompt is the task's \"prompt\" field: args may hold no positional \
             argument or --prompt-file"
                .into(),
        ));
    }
    Ok(())
}

/// Everything else `agent run` checks before its first request (`--max-turns 0`, a
/// missing API key, an unreadable `--settings` file, …), with the task's source
/// workspace standing in for its copy: a task that would exit 2 stops the batch first.
fn check_config(task: &Task, workspace: &Path) -> Result<(), String> {
    use clap::Parser;
    let argv = ["agent", "run"]
        .into_iter()
        .map(std::ffi::OsString::from)
        .chain(task.args.iter().map(Into::into))
        .chain(["-C".into(), workspace.as_os_str().to_owned()])
        .chain(["--".into(), task.prompt.clone().into()]);
    let bad = |why: String| format!("task {:?}: args: {why}", task.id);
    let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| bad(clap_message(&e)))?;
    let crate::cli::Command::Run(run) = cli.command else {
        return Err(bad("not `agent run` flags".into()));
    };
    crate::config::Config::from_args(&run, &crate::config::ProcessEnv)
        .map(drop)
        .map_err(|e| bad(e.to_string()))
}

/// The first line of a clap error, without its `error: ` prefix and without the usage
/// text that follows (which describes `agent run`'s command line, not the task's args).
fn clap_message(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return "--help and --version print text instead of running the task".into();
    }
    let text = e.to_string();
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.strip_prefix("error: ")
        .unwrap_or(line)
        .trim()
        .to_string()
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

/// Runs the plan's tasks on `parallel` workers; outcomes in file order.
fn run_all(plan: &Plan, stop: &AtomicBool, children: &Mutex<Vec<u32>>) -> Vec<TaskOutcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<TaskOutcome>>> = Mutex::new(vec![None; plan.tasks.len()]);
    let exe = std::env::current_exe();
    std::thread::scope(|s| {
        for _ in 0..plan.parallel.min(plan.tasks.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((task, ws)) = plan.tasks.get(i) else {
                        break;
                    };
                    let outcome = if stop.load(Ordering::SeqCst) {
                        not_run(task, "the batch was interrupted before this task started")
                    } else {
                        match &exe {
                            Ok(exe) => run_task(exe, plan, task, ws, children),
                            Err(e) => not_run(task, &format!("cannot find the agent binary: {e}")),
                        }
                    };
                    output::info(&format!("batch: task {} → {}", task.id, outcome.status));
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(outcome);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .zip(&plan.tasks)
        .map(|(o, (t, _))| o.unwrap_or_else(|| not_run(t, "not run")))
        .collect()
}

fn not_run(task: &Task, why: &str) -> TaskOutcome {
    TaskOutcome {
        id: task.id.clone(),
        status: "not_run".into(),
        exit_code: None,
        num_turns: 0,
        duration_ms: 0,
        cost_usd: None,
        usage: Usage::default(),
        transcript: None,
        log: format!("{}.log", task.id),
        workspace: None,
        workspace_kind: None,
        error: Some(why.to_string()),
    }
}

/// Prepares the task's workspace, runs `agent run` in it and reads its transcript.
fn run_task(
    exe: &Path,
    plan: &Plan,
    task: &Task,
    source: &Path,
    children: &Mutex<Vec<u32>>,
) -> TaskOutcome {
    let t0 = Instant::now();
    let mut outcome = not_run(task, "");
    outcome.error = None;
    let dest = plan.out.join("workspaces").join(&task.id);
    let (cwd, kind) = match prepare_workspace(source, &dest, &plan.out) {
        Ok(w) => w,
        Err(e) => {
            outcome.status = "error".into();
            outcome.error = Some(format!("cannot prepare the workspace: {e}"));
            return outcome;
        }
    };
    outcome.workspace = Some(cwd.display().to_string());
    outcome.workspace_kind = Some(kind);
    let transcript = plan.out.join(format!("{}.json", task.id));
    let _ = std::fs::remove_file(&transcript); // a stale one from an earlier batch must not count
    let log_path = plan.out.join(&outcome.log);
    let spawned = File::create(&log_path).and_then(|log| {
        Command::new(exe)
            .arg("run")
            .args(&task.args)
            .arg("-C")
            .arg(&cwd)
            .arg("-o")
            .arg(&transcript)
            .arg("--")
            .arg(&task.prompt)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
    });
    let status = spawned.and_then(|mut child| {
        let pid = child.id();
        children.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
        let status = child.wait();
        children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != pid);
        status
    });
    outcome.duration_ms = t0.elapsed().as_millis() as u64;
    let signal = status
        .as_ref()
        .ok()
        .and_then(std::os::unix::process::ExitStatusExt::signal);
    match status {
        Ok(s) => outcome.exit_code = s.code(),
        Err(e) => {
            outcome.status = "error".into();
            outcome.error = Some(format!("cannot run the agent: {e}"));
            return outcome;
        }
    }
    match std::fs::read_to_string(&transcript)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    {
        // A transcript still saying `running` is the last checkpoint of a run that was
        // killed before it could finish (SIGKILL, OOM): that is an error.
        Some(t) if t["status"] == "running" => {
            outcome.status = "error".into();
            outcome.num_turns = t["num_turns"].as_u64().unwrap_or(0);
            outcome.usage = serde_json::from_value(t["usage"].clone()).unwrap_or_default();
            outcome.error = Some(format!(
                "the run was killed before it finished ({}); its last checkpoint is {}",
                describe_exit(outcome.exit_code, signal),
                transcript.display()
            ));
            outcome.transcript = transcript
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
        }
        Some(t) => {
            outcome.status = t["status"].as_str().unwrap_or("error").to_string();
            outcome.num_turns = t["num_turns"].as_u64().unwrap_or(0);
            outcome.cost_usd = t["cost_usd"].as_f64();
            outcome.usage = serde_json::from_value(t["usage"].clone()).unwrap_or_default();
            outcome.error = t["error"]["message"].as_str().map(str::to_string);
            outcome.transcript = transcript
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
        }
        None => {
            outcome.status = "error".into();
            outcome.error = Some(format!(
                "the run left no transcript ({}); see {}",
                describe_exit(outcome.exit_code, signal),
                outcome.log
            ));
        }
    }
    outcome
}

/// Held around every `git worktree` change: git keeps worktrees in files under the
/// repository's `.git/worktrees`, and concurrent `worktree add`s there race (`failed to
/// read .git/worktrees/…/commondir`), so a batch makes them one at a time.
static WORKTREE_LOCK: Mutex<()> = Mutex::new(());
/// Tries of `git worktree add` (with a `worktree prune` between them): another process
/// (a second shard on the same machine) may still race with this one.
const WORKTREE_ATTEMPTS: usize = 3;

/// Makes `dest` a fresh copy of `source`: a git worktree of HEAD when `source` is in a
/// repository with a commit, else a directory copy. Returns the directory to run in
/// (the same subdirectory of the worktree as `source` is of its repository). A source
/// in a repository never falls back to a copy: a copy would lack `.git` and carry the
/// source's uncommitted files, so when git cannot make the worktree the task fails.
pub(crate) fn prepare_workspace(
    source: &Path,
    dest: &Path,
    out: &Path,
) -> Result<(PathBuf, &'static str), String> {
    let serial = WORKTREE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if dest.exists() {
        // An earlier batch's copy: unregister it if it was a worktree, then remove it.
        let _ = git(
            source,
            &["worktree", "remove", "--force", &dest.to_string_lossy()],
        );
        match std::fs::remove_dir_all(dest) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot remove the old {}: {e}", dest.display()));
            }
            _ => {}
        }
        let _ = git(source, &["worktree", "prune"]);
    }
    if let (Ok(top), Ok(prefix)) = (
        git(source, &["rev-parse", "--show-toplevel"]),
        git(source, &["rev-parse", "--show-prefix"]),
    ) && git(source, &["rev-parse", "--verify", "-q", "HEAD"]).is_ok()
    {
        let top = PathBuf::from(top.trim_end_matches('\n'));
        let mut last = String::new();
        for _ in 0..WORKTREE_ATTEMPTS {
            let dest_arg = dest.to_string_lossy();
            match git(
                &top,
                &["worktree", "add", "--detach", "-q", &dest_arg, "HEAD"],
            ) {
                Ok(_) => return Ok((dest.join(prefix.trim_end_matches('\n')), "git-worktree")),
                Err(e) => last = e,
            }
            // A half-made worktree must not block the next try.
            let _ = std::fs::remove_dir_all(dest);
            let _ = git(&top, &["worktree", "prune"]);
        }
        return Err(format!(
            "git worktree add {} failed {WORKTREE_ATTEMPTS} times (the source {} is in a git \
             repository, so it is not copied instead): {last}",
            dest.display(),
            source.display()
        ));
    }
    drop(serial); // copies of different tasks need no order
    copy_dir(source, dest, out).map_err(|e| e.to_string())?;
    Ok((dest.to_path_buf(), "copy"))
}

/// `git -C dir ARGS`: stdout when it succeeds, else what went wrong (its stderr).
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{}: {}",
            describe_exit(
                out.status.code(),
                std::os::unix::process::ExitStatusExt::signal(&out.status)
            ),
            err.trim()
        ))
    }
}

/// Copies a tree: files with their permissions, symlinks as symlinks, nothing else.
/// `skip` (the batch's output directory) is left out when it lies inside `from`.
fn copy_dir(from: &Path, to: &Path, skip: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let src = entry.path();
        if src == skip {
            continue;
        }
        let dst = to.join(entry.file_name());
        let ft = entry.file_type()?;
        if ft.is_dir() {
            copy_dir(&src, &dst, skip)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// `summary.json`.
fn summary(plan: &Plan, outcomes: &[TaskOutcome], wall_ms: u64) -> Value {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut cost = 0.0;
    let mut priced = 0;
    for o in outcomes {
        *counts.entry(o.status.as_str()).or_default() += 1;
        usage.add(&o.usage);
        if let Some(c) = o.cost_usd {
            cost += c;
            priced += 1;
        }
    }
    let all_ok = outcomes.iter().all(|o| o.status == "success");
    json!({
        "version": BATCH_SUMMARY_VERSION,
        "tasks_file": plan.tasks_file.display().to_string(),
        "shard": plan.shard.map(|(i, n)| json!({"index": i, "count": n})),
        "parallel": plan.parallel,
        "total": outcomes.len(),
        "succeeded": outcomes.iter().filter(|o| o.status == "success").count(),
        "all_succeeded": all_ok,
        "status_counts": counts,
        "usage": usage,
        "cost_usd": if priced > 0 { Some(cost) } else { None },
        "cost_unknown_tasks": outcomes.len() - priced,
        "wall_time_ms": wall_ms,
        "tasks": outcomes,
    })
}

/// SIGINT/SIGTERM: start no new task and pass SIGTERM on to the running agents, which
/// then write their transcripts (status `interrupted`) and exit; the summary follows.
fn forward_signals(stop: Arc<AtomicBool>, children: Arc<Mutex<Vec<u32>>>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        output::warn("cannot watch for signals");
        return;
    };
    std::thread::spawn(move || {
        for _ in signals.forever() {
            stop.store(true, Ordering::SeqCst);
            for pid in children.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                if let Ok(pid) = libc::pid_t::try_from(*pid) {
                    // SAFETY: kill(2) on a child we spawned and have not reaped yet.
                    unsafe {
                        libc::kill(pid, libc::SIGTERM);
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards() {
        assert_eq!(parse_shard("2/3"), Ok((2, 3)));
        assert_eq!(parse_shard("1/1"), Ok((1, 1)));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tasks_are_validated() {
        let ok = parse_tasks(
            "{\"id\":\"a\",\"prompt\":\"p\"}\n\n{\"id\":\"b-1.x\",\"prompt\":\"q\",\"workspace\":\"w\",\"args\":[\"--full-auto\"]}\n",
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].args, vec!["--full-auto"]);
        for (text, needle) in [
            ("{\"id\":\"a\"}", "line 1"),
            ("{\"id\":\"../x\",\"prompt\":\"p\"}", "must be"),
            ("{\"id\":\"\",\"prompt\":\"p\"}", "must be"),
            (
                "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"a\",\"prompt\":\"p\"}",
                "line 2: duplicate",
            ),
            ("{\"id\":\"a\",\"prompt\":\" \"}", "empty prompt"),
            (
                "{\"id\":\"a\",\"prompt\":\"p\",\"nope\":1}",
                "unknown field",
            ),
            (
                "{\"id\":\"a\",\"prompt\":\"p\",\"args\":[\"-o\",\"x\"]}",
                "set by the batch",
            ),
            ("not json", "line 1"),
            (
                "{\"id\":\"a\",\"prompt\":\"p\",\"args\":[\"-C/tmp\"]}",
                "line 1: task \"a\": args: -C/--cwd is set by the batch",
            ),
        ] {
            let e = parse_tasks(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    fn task(args: &[&str]) -> Task {
        Task {
            id: "t".into(),
            prompt: "p".into(),
            workspace: None,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn args_go_through_the_run_parser() {
        for ok in [
            &[][..],
            &["--full-auto", "--max-turns", "3"],
            &["--verify=cargo test", "-v", "--timeout", "5m"],
        ] {
            assert_eq!(check_args(&task(ok)), Ok(()), "{ok:?}");
        }
        for (args, needle) in [
            (&["-C/tmp"][..], "-C/--cwd is set by the batch"),
            (&["-C", "/tmp"], "-C/--cwd is set by the batch"),
            (&["--cwd=x"], "-C/--cwd is set by the batch"),
            (&["-qC/tmp"], "-C/--cwd is set by the batch"),
            (&["-o/tmp/x"], "-o/--output is set by the batch"),
            (&["--output=x"], "-o/--output is set by the batch"),
            (&["--", "other prompt"], "`--` is not allowed"),
            (&["--"], "`--` is not allowed"),
            (&["stray"], "unexpected argument"),
            (&["--prompt-file", "f"], "cannot be used with"),
            (&["--max-turns", "x"], "--max-turns"),
            (&["--no-such-flag"], "--no-such-flag"),
            (&["--help"], "--help and --version"),
        ] {
            let e = check_args(&task(args)).unwrap_err();
            assert!(e.starts_with("task \"t\": args: "), "{args:?}: {e}");
            assert!(e.contains(needle), "{args:?}: {e}");
            assert!(!e.contains("Some("), "{e}");
        }
    }

    #[test]
    fn exit_statuses_read_as_numbers_or_signal_names() {
        assert_eq!(describe_exit(Some(2), None), "exit 2");
        assert_eq!(describe_exit(None, Some(9)), "signal 9 (SIGKILL)");
        assert_eq!(describe_exit(None, Some(15)), "signal 15 (SIGTERM)");
        assert_eq!(describe_exit(None, Some(63)), "signal 63");
        assert_eq!(describe_exit(None, None), "no exit status");
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn plain_directory_is_copied_without_the_output_dir() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        write(&src, "a.txt", "a");
        write(&src, "sub/b.sh", "b");
        std::os::unix::fs::symlink("a.txt", src.join("link")).unwrap();
        let out = src.join("results");
        std::fs::create_dir_all(out.join("workspaces")).unwrap();
        let dest = out.join("workspaces/t1");
        let (cwd, kind) = prepare_workspace(&src, &dest, &out).unwrap();
        assert_eq!((cwd.as_path(), kind), (dest.as_path(), "copy"));
        assert_eq!(std::fs::read_to_string(dest.join("sub/b.sh")).unwrap(), "b");
        assert_eq!(
            std::fs::read_link(dest.join("link")).unwrap(),
            Path::new("a.txt")
        );
        assert!(
            !dest.join("results").exists(),
            "the output dir is not copied into itself"
        );
        // A second batch in the same DIR starts from a fresh copy.
        write(&dest, "leftover", "x");
        prepare_workspace(&src, &dest, &out).unwrap();
        assert!(!dest.join("leftover").exists());
    }

    #[test]
    fn git_repository_gets_a_worktree_of_head() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        write(&repo, "sub/f.txt", "committed\n");
        let g = |args: &[&str]| {
            let ok = Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        g(&["init", "-q"]);
        g(&["add", "."]);
        g(&["commit", "-q", "-m", "init"]);
        write(&repo, "sub/f.txt", "uncommitted\n");
        let out = d.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let dest = out.join("t");
        let (cwd, kind) = prepare_workspace(&repo.join("sub"), &dest, &out).unwrap();
        assert_eq!(kind, "git-worktree");
        assert_eq!(cwd, dest.join("sub/"));
        assert_eq!(
            std::fs::read_to_string(cwd.join("f.txt")).unwrap(),
            "committed\n"
        );
        // Again: the old worktree is removed and a new one added.
        let (_, kind) = prepare_workspace(&repo.join("sub"), &dest, &out).unwrap();
        assert_eq!(kind, "git-worktree");
    }

    fn git_repo(root: &Path) -> PathBuf {
        let repo = root.join("repo");
        write(&repo, "f.txt", "committed\n");
        for args in [
            &["init", "-q"][..],
            &["add", "."],
            &["commit", "-q", "-m", "init"],
        ] {
            let ok = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(["-c", "commit.gpgsign=false"])
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        }
        repo
    }

    /// Eight tasks of one repository prepared at once (released together by a
    /// barrier), twice, so that the second round also removes and prunes the first's
    /// worktrees while others are being added: every one gets a real worktree.
    #[test]
    fn concurrent_worktrees_all_succeed() {
        const TASKS: usize = 8;
        let d = tempfile::tempdir().unwrap();
        let repo = git_repo(d.path());
        let out = d.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let barrier = std::sync::Barrier::new(TASKS);
        for _round in 0..2 {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..TASKS)
                    .map(|i| {
                        let (repo, out, barrier) = (&repo, &out, &barrier);
                        s.spawn(move || {
                            let dest = out.join(format!("t{i}"));
                            barrier.wait();
                            prepare_workspace(repo, &dest, out)
                        })
                    })
                    .collect();
                for (i, h) in handles.into_iter().enumerate() {
                    let (cwd, kind) = h.join().unwrap().unwrap();
                    assert_eq!(kind, "git-worktree", "t{i}");
                    assert!(cwd.join(".git").is_file(), "t{i} is a worktree");
                }
            });
        }
        let list = git(&repo, &["worktree", "list", "--porcelain"]).unwrap();
        assert_eq!(list.matches("worktree ").count(), TASKS + 1, "{list}");
    }

    /// When git cannot add the worktree the task fails with git's reason: it never
    /// silently runs in a copy without `.git`.
    #[test]
    fn a_failed_worktree_is_an_error_not_a_copy() {
        let d = tempfile::tempdir().unwrap();
        let repo = git_repo(d.path());
        // A file where git keeps its worktrees: `worktree add` cannot register one.
        std::fs::write(repo.join(".git/worktrees"), "in the way").unwrap();
        let out = d.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let e = prepare_workspace(&repo, &out.join("t"), &out).unwrap_err();
        assert!(e.contains("git worktree add"), "{e}");
        assert!(e.contains("not copied"), "{e}");
        assert!(e.contains("exit "), "git's status and reason: {e}");
        assert!(!out.join("t/f.txt").exists(), "no copy was made");
    }
}
