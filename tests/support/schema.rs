//! Every transcript the suite sees is checked against `docs/reference/transcript.schema.json`
//! (generated from the `Transcript` type): `--json` stdout, each `run.finished` event of a
//! `--jsonl` stream and every JSON file read through `read_json`. A transcript the schema
//! refuses fails the test that produced it, whatever the test itself asserts. Every
//! `--jsonl` line is also checked against `docs/reference/events.schema.json` (generated
//! from `RunEvent`), so the stream and the schema others generate types from cannot drift
//! apart.

use std::sync::OnceLock;

use serde_json::Value;

/// The compiled transcript schema, built once per test binary.
fn transcript_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| validator("transcript"))
}

/// The compiled events schema, built once per test binary.
fn events_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| validator("events"))
}

/// `docs/reference/{name}.schema.json`, compiled.
fn validator(name: &str) -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("docs/reference/{name}.schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("{} is not a valid schema: {e}", path.display()))
}

/// Panics, naming every violation, when `line` is a `--jsonl` event (an object with the
/// envelope's `seq` and `elapsed_ms`) the events schema refuses.
fn check_event(ev: &Value, line: &str) {
    if ev.get("seq").is_none() || ev.get("elapsed_ms").is_none() {
        return;
    }
    let errors: Vec<String> = events_validator()
        .iter_errors(ev)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "a --jsonl event does not match docs/reference/events.schema.json:\n{}\n{}",
        errors.join("\n"),
        line.chars().take(2_000).collect::<String>()
    );
}

/// Whether `v` is a transcript: an object with `version`, `status` and `is_error` (a
/// `--jsonl` event has a `type`; a batch summary or report has no `is_error`).
fn is_transcript(v: &Value) -> bool {
    v.get("type").is_none()
        && ["version", "status", "is_error"]
            .iter()
            .all(|k| v.get(*k).is_some())
}

/// Panics, naming every violation, when `v` is a transcript the schema refuses.
pub(crate) fn check_transcript(v: &Value, what: &str) {
    if !is_transcript(v) {
        return;
    }
    let errors: Vec<String> = transcript_validator()
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: the transcript does not match docs/reference/transcript.schema.json:\n{}",
        errors.join("\n")
    );
}

/// Checks the transcripts in a run's stdout: one `--json` document, or every event of a
/// `--jsonl` stream and its `run.finished` transcript.
pub(crate) fn check_stdout(stdout: &str) {
    if let Ok(v) = serde_json::from_str::<Value>(stdout)
        && is_transcript(&v)
    {
        check_transcript(&v, "stdout");
        return;
    }
    for line in stdout.lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            continue; // not JSON, or cut off by a kill
        };
        check_event(&ev, line);
        if ev.get("type").and_then(Value::as_str) == Some("run.finished")
            && let Some(t) = ev.get("transcript")
        {
            check_transcript(t, "the run.finished event");
        }
    }
}

/// The compiled schema of `agent batch`'s summary.json
/// (`docs/reference/batch-summary.schema.json`), built once per test binary.
fn summary_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| validator("batch-summary"))
}

/// Whether `v` is a batch summary (a shard's or a merge's): rows under `tasks` and the
/// totals' `pass_at` (the report has `rows`, not `tasks`).
fn is_batch_summary(v: &Value) -> bool {
    v.get("tasks").is_some_and(Value::is_array) && v.get("pass_at").is_some()
}

/// Panics, naming every violation, when `v` is a batch summary the schema refuses: `agent
/// batch` and `merge` stdout, and a `summary.json` read through `read_json`.
pub(crate) fn check_batch_summary(v: &Value, what: &str) {
    if !is_batch_summary(v) {
        return;
    }
    let errors: Vec<String> = summary_validator()
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: the summary does not match docs/reference/batch-summary.schema.json:\n{}",
        errors.join("\n")
    );
}

/// Checks stdout when it is one batch summary document.
pub(crate) fn check_stdout_summary(stdout: &str) {
    if let Ok(v) = serde_json::from_str::<Value>(stdout) {
        check_batch_summary(&v, "stdout");
    }
}
