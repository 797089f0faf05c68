//! Unit tests of `event.rs`: the tag is today's type name, `Verbatim` keeps its bytes.

use super::*;

#[test]
fn the_tag_is_the_kind() {
    let e = RunEvent::ContextCleared(Clearing {
        turn: 3,
        results_cleared: 2,
        tokens_before: 10,
        tokens_after_estimate: 5,
    });
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v["type"], e.kind());
    assert_eq!(v["type"], "context.cleared");
    assert_eq!(serde_json::from_value::<RunEvent>(v).unwrap(), e);
}

#[test]
fn verbatim_is_written_as_it_is() {
    let v = Verbatim(r#"{"z":1,"a":1.50}"#.into());
    assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"z":1,"a":1.50}"#);
    let e = RunEvent::RunFinished(RunFinished {
        status: "success".into(),
        exit_code: 0,
        transcript: v,
    });
    assert_eq!(e.verbatim().map(|(k, _)| k), Some("transcript"));
    assert!(
        RunEvent::TurnStarted(TurnStarted { turn: 1 })
            .verbatim()
            .is_none()
    );
}

/// docs/reference/events.schema.json is what `RunEvent` generates (the transcript's check:
/// `AGENT_REGENERATE_SCHEMAS=1 cargo test schema_is_checked_in` rewrites both).
#[test]
fn events_schema_is_checked_in() {
    crate::record::transcript::check_schema("events", &events_schema());
}

/// Every event, as the `--jsonl` writer writes it (envelope and all), is valid against
/// the schema; one with a field of the wrong type is not.
#[test]
fn written_events_are_valid_against_the_schema() {
    let schema: Value = serde_json::from_str(&events_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let events = [
        RunEvent::TurnStarted(TurnStarted { turn: 1 }),
        RunEvent::ContextCleared(Clearing {
            turn: 3,
            results_cleared: 2,
            tokens_before: 10,
            tokens_after_estimate: 5,
        }),
        RunEvent::RunFinished(RunFinished {
            status: "success".into(),
            exit_code: 0,
            transcript: Verbatim(r#"{"version":1,"status":"success"}"#.into()),
        }),
    ];
    for (i, e) in events.iter().enumerate() {
        let line = crate::run::events::line(&crate::run::events::Emitted {
            seq: i as u64 + 1,
            elapsed_ms: 5,
            subagent_id: Some("subagent_1"),
            event: e,
        });
        let v: Value = serde_json::from_str(&line).unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
    }
    let bad = serde_json::json!({"version": 1, "type": "turn.started", "seq": 1, "elapsed_ms": 0, "turn": "one"});
    assert!(!validator.is_valid(&bad));
    let unknown = serde_json::json!({"version": 1, "type": "no.such", "seq": 1, "elapsed_ms": 0});
    assert!(!validator.is_valid(&unknown));
    // Fields are only ever added within a version: a later agent's line still fits.
    let later = serde_json::json!({"version": 1, "type": "turn.started", "seq": 1, "elapsed_ms": 0, "turn": 1, "new_field": 1});
    assert!(validator.is_valid(&later));
}
