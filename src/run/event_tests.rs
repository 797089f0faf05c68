//! Unit tests of `event.rs`: the tag is today's type name, `Verbatim` keeps its bytes.

use super::*;

#[test]
fn the_tag_is_the_kind() {
    let e = RunEvent::ContextCleared(ContextCleared {
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
