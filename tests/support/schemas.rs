//! The checked-in JSON Schemas (docs/reference/) as the tests use them: every `--jsonl`
//! line a test run writes is validated against events.schema.json (`Running::wait` calls
//! `validate_events`), so the stream and the schema others generate types from cannot
//! drift apart.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

fn events_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/reference/events.schema.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// Each line of `stdout` that is an event (a JSON object with the envelope's `seq` and
/// `elapsed_ms`) is valid against the events schema; panics naming the line otherwise.
pub(crate) fn validate_events(stdout: &str) {
    for line in stdout.lines() {
        if !line.starts_with("{\"version\":") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue; // cut off by a kill: not a whole event
        };
        if v.get("seq").is_none() || v.get("elapsed_ms").is_none() {
            continue;
        }
        let errors: Vec<String> = events_validator()
            .iter_errors(&v)
            .take(5)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "a --jsonl event is not valid against docs/reference/events.schema.json: {errors:?}\n{}",
            line.chars().take(2_000).collect::<String>()
        );
    }
}
