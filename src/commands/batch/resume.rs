//! `--resume` and `--retry-failed`: which runs of an earlier batch in the same DIR are
//! done, and why the others run again.
//!
//! Before a run starts, the batch writes the task line it runs with to
//! `DIR/tasks/<id>.json` (`TaskRecord`; after, its exit code). On `--resume` a run is skipped
//! when its transcript holds a final status and the record matches the task line of
//! the tasks file now; it runs again, with a note saying why, when its transcript is
//! missing, still says `running` (the machine or the batch was killed: a fresh
//! workspace copy is made, as for every run) or `interrupted` (a signal stopped it: its
//! result says nothing about the task), the task line changed, or, with
//! `--retry-failed`, its status is not `success`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::record::Transcript;

use super::{RunSpec, TaskOutcome, run::outcome_from_transcript};

/// The subdirectory of DIR holding the task records.
pub(crate) const RECORDS_DIR: &str = "tasks";

/// What `--resume` does with one run.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Run it; the note says why it runs again (none for a first run).
    Run(Option<String>),
    /// Finished earlier: this is its row, from its transcript.
    Skip(Box<TaskOutcome>),
}

/// The record of the task line a run starts with (the run's exit code added after):
/// `DIR/tasks/<id>.json`, written with sorted keys as it always was (`sorted_pretty`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    pub id: String,
    pub task_id: String,
    pub prompt: String,
    pub args: Vec<String>,
    pub workspace: String,
    pub setup: Option<String>,
    pub exit_code: Option<i32>,
}

pub(crate) fn record(run: &RunSpec, exit_code: Option<i32>) -> TaskRecord {
    TaskRecord {
        id: run.id.clone(),
        task_id: run.task.id.clone(),
        prompt: run.task.prompt.clone(),
        args: run.task.args.clone(),
        workspace: run.source.display().to_string(),
        setup: run.task.setup.clone(),
        exit_code,
    }
}

pub(crate) fn record_path(out: &Path, id: &str) -> std::path::PathBuf {
    out.join(RECORDS_DIR).join(format!("{id}.json"))
}

/// What to do with `run` given what an earlier batch left in `out`.
pub(crate) fn decide(out: &Path, run: &RunSpec, retry_failed: bool) -> Decision {
    let transcript_path = out.join(format!("{}.json", run.id));
    let transcript = match std::fs::read_to_string(&transcript_path) {
        Ok(t) => t,
        Err(_) => {
            let note = record_path(out, &run.id)
                .exists()
                .then(|| "re-run: an earlier run started but left no transcript".to_string());
            return Decision::Run(note);
        }
    };
    let Ok(t) = serde_json::from_str::<Transcript>(&transcript) else {
        return Decision::Run(Some(
            "re-run: the earlier transcript is not valid JSON".into(),
        ));
    };
    let status = t.status.as_str();
    if status == "running" || status.is_empty() {
        return Decision::Run(Some(
            "re-run in a fresh workspace copy: the earlier run was killed before it \
             finished (its transcript says running)"
                .into(),
        ));
    }
    if status == "interrupted" {
        return Decision::Run(Some(
            "re-run: the earlier run was interrupted (SIGINT/SIGTERM) before it finished".into(),
        ));
    }
    let recorded: Option<TaskRecord> = std::fs::read_to_string(record_path(out, &run.id))
        .ok()
        .and_then(|r| serde_json::from_str(&r).ok());
    let Some(recorded) = recorded else {
        return Decision::Run(Some(
            "re-run: no record of the task line the earlier run used".into(),
        ));
    };
    let now = record(run, None);
    let changed: Vec<&str> = [
        ("prompt", recorded.prompt != now.prompt),
        ("args", recorded.args != now.args),
        ("workspace", recorded.workspace != now.workspace),
        ("setup", recorded.setup != now.setup),
    ]
    .into_iter()
    .filter_map(|(k, changed)| changed.then_some(k))
    .collect();
    if !changed.is_empty() {
        return Decision::Run(Some(format!(
            "re-run: the task line changed since the earlier run ({})",
            changed.join(", ")
        )));
    }
    if retry_failed && status != "success" {
        return Decision::Run(Some(format!(
            "re-run (--retry-failed): the earlier run ended with {status}"
        )));
    }
    let mut outcome = TaskOutcome::not_run(run, "");
    outcome_from_transcript(&mut outcome, &t, &transcript_path);
    outcome.exit_code = recorded.exit_code;
    outcome.duration_ms = t.duration_ms;
    outcome.workspace = Some(t.workspace.clone()).filter(|w| !w.is_empty());
    outcome.skipped = true;
    Decision::Skip(Box::new(outcome))
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
