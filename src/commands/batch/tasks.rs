//! The tasks file of `agent batch`: one JSON object per line, checked in full before
//! anything runs. A task's `args` go through the very parser `agent run` uses (clap's
//! `Cli`) and then `agent run`'s own checks (`Config::from_args`), so what the child
//! would reject with exit 2 stops the batch first, naming the task.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use serde::Deserialize;

use crate::config::cli::{Cli, Command, RunArgs};

/// Task ids become file names: short, and limited to a portable character set.
const MAX_ID_CHARS: usize = 100;
/// Stands in for the prompt while a task's args are parsed on their own.
const PROMPT_PLACEHOLDER: &str = "the task's prompt";

/// One line of the tasks file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
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
    /// A shell command run in the task's workspace copy before the agent (`bash -c`,
    /// with `--verify`'s process handling); failing, the task is `setup_failed`.
    #[serde(default)]
    pub setup: Option<String>,
    /// Whether `args` set `--timeout` (then `--task-timeout` leaves it alone).
    #[serde(skip)]
    pub sets_timeout: bool,
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
        let mut task: Task = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
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
        if task.setup.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(at(format!(
                "task {:?}: setup is empty (leave it out for none)",
                task.id
            )));
        }
        let run = check_args(&task).map_err(at)?;
        task.sets_timeout = run.timeout.is_some();
        tasks.push(task);
    }
    Ok(tasks)
}

/// A task's `args` through `agent run`'s parser, with the prompt the batch adds:
/// anything clap rejects, and the flags the batch owns however they are spelled
/// (`-C/tmp`, `--cwd=X`, `-oX`, `--`, a stray positional that would replace the
/// prompt), is an error naming the task.
pub(crate) fn check_args(task: &Task) -> Result<Box<RunArgs>, String> {
    let bad = |why: String| format!("task {:?}: args: {why}", task.id);
    if task.args.iter().any(|a| a == "--") {
        // Everything after it would be read as the prompt, which is the task's field.
        return Err(bad(
            "`--` is not allowed: the prompt is the task's \"prompt\" field".into(),
        ));
    }
    let run = parse_run(task, PROMPT_PLACEHOLDER).map_err(bad)?;
    if run.cwd.is_some() {
        return Err(bad(
            "-C/--cwd is set by the batch (the task's workspace copy)".into(),
        ));
    }
    if run.output.is_some() {
        return Err(bad("-o/--output is set by the batch (DIR/<id>.json)".into()));
    }
    if run.prompt.as_deref() != Some(PROMPT_PLACEHOLDER) || run.prompt_file.is_some() {
        return Err(bad(
            "the prompt is the task's \"prompt\" field: args may hold no positional \
             argument or --prompt-file"
                .into(),
        ));
    }
    Ok(run)
}

/// Everything else `agent run` checks before its first request (`--max-turns 0`, a
/// missing API key, an unreadable `--settings` file, …), with the task's source
/// workspace standing in for its copy and `--task-timeout` added as the batch adds it.
pub(crate) fn check_config(
    task: &Task,
    workspace: &Path,
    task_timeout: Option<Duration>,
) -> Result<(), String> {
    let child = ChildRun {
        flags: &task.args,
        timeout: task_timeout.filter(|_| !task.sets_timeout),
        workspace,
        transcript: None,
        prompt: &task.prompt,
    };
    let bad = |why: String| format!("task {:?}: args: {why}", task.id);
    let run = parse_argv(child.argv()).map_err(bad)?;
    crate::config::Config::from_args(&run, &crate::config::ProcessEnv)
        .map(drop)
        .map_err(|e| bad(e.to_string()))
}

/// One task's `agent run`, typed; `argv` is the one place it becomes the child's
/// arguments. A task runs as a child process, not as a function: its own process group
/// for signals and the kill on the way out, its own working directory, secrets and
/// environment, and tasks in parallel without sharing the run's process-wide state (the
/// finisher, the redaction list, OpenTelemetry). decision 0086.
pub(crate) struct ChildRun<'a> {
    /// The task's own `agent run` flags (the tasks file's `args`).
    pub flags: &'a [String],
    /// `--task-timeout`, when the task's flags do not set `--timeout`.
    pub timeout: Option<Duration>,
    pub workspace: &'a Path,
    /// `-o`: the transcript the batch reads back (none: checking the flags only).
    pub transcript: Option<&'a Path>,
    pub prompt: &'a str,
}

impl ChildRun<'_> {
    /// `run FLAGS [--no-user-skills] [--timeout T] -C WORKSPACE [-o TRANSCRIPT] -- PROMPT`.
    pub(crate) fn argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec!["run".into()];
        argv.extend(self.flags.iter().map(Into::into));
        // A task's skills are its workspace's: the home of whoever runs the batch must not
        // change the results (`--skill DIR` adds a folder explicitly).
        if !self.flags.iter().any(|f| f == "--no-user-skills") {
            argv.push("--no-user-skills".into());
        }
        if let Some(t) = self.timeout {
            argv.extend(["--timeout".into(), timeout_arg(t).into()]);
        }
        argv.extend(["-C".into(), self.workspace.into()]);
        if let Some(t) = self.transcript {
            argv.extend(["-o".into(), t.into()]);
        }
        argv.extend(["--".into(), self.prompt.into()]);
        argv
    }
}

/// `--timeout`'s value for a duration (whole milliseconds, which humantime reads back).
pub(crate) fn timeout_arg(t: Duration) -> String {
    format!("{}ms", t.as_millis().max(1))
}

/// `agent run ARGS -- PROMPT` through clap.
fn parse_run(task: &Task, prompt: &str) -> Result<Box<RunArgs>, String> {
    let argv = ["run".into()]
        .into_iter()
        .chain(task.args.iter().map(OsString::from))
        .chain(["--".into(), prompt.into()]);
    parse_argv(argv.collect())
}

/// `agent ARGV` (a `run`) through clap.
fn parse_argv(argv: Vec<OsString>) -> Result<Box<RunArgs>, String> {
    let argv = std::iter::once(OsString::from("agent")).chain(argv);
    let cli = Cli::try_parse_from(argv).map_err(|e| clap_message(&e))?;
    match cli.command {
        Command::Run(run) => Ok(run),
        _ => Err("not `agent run` flags".into()),
    }
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

#[cfg(test)]
#[path = "tasks_tests.rs"]
mod tests;
