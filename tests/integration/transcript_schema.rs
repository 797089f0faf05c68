//! The transcript schema (`docs/reference/transcript.schema.json`) against transcripts:
//! every transcript of the previous release (the fixtures) fits it, a run's does (the
//! support code checks each one a test produces, `support::schema`), and a transcript
//! with a field of the wrong type is refused, so the check can fail.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::schema::{check_stdout, check_transcript};
use crate::support::*;

/// Whether checking `v` fails.
fn refused(v: &Value) -> bool {
    let v = v.clone();
    std::panic::catch_unwind(move || check_transcript(&v, "test")).is_err()
}

#[test]
fn previous_release_transcripts_fit_the_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let mut checked = 0;
    for name in [
        "plain.json",
        "tools.json",
        "verify.json",
        "structured.json",
        "killed.json",
        "batch/shard1/fix-stats.json",
        "batch/shard2/fix-stats-again.json",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        check_transcript(&v, name);
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn a_wrong_field_type_is_refused() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts/tools.json"),
    )
    .unwrap();
    let good: Value = serde_json::from_str(&text).unwrap();
    assert!(!refused(&good));
    for (key, bad) in [
        ("num_turns", json!("three")),
        ("usage", json!({"input_tokens": "x"})),
        ("files_changed", json!([{"path": "a", "change": "renamed"}])),
        ("network", json!({"tier": "moon"})),
        ("tool_calls", json!([{"id": 1}])),
    ] {
        let mut t = good.clone();
        t[key] = bad;
        assert!(refused(&t), "{key} of the wrong type was accepted");
    }
    // A --jsonl stream's run.finished transcript is checked too.
    let mut t = good.clone();
    t["num_turns"] = json!(-1);
    let line = json!({"version": 1, "type": "run.finished", "seq": 1, "transcript": t});
    let stream = format!("{}\n", line);
    assert!(std::panic::catch_unwind(|| check_stdout(&stream)).is_err());
}

/// A run of the demo cassette, `--json` and `--jsonl`: both transcripts fit (checked by
/// `wait`), and the `--json` one holds typed parts the schema names.
#[test]
fn a_demo_run_fits_the_schema() {
    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    let cassette = demo_dir().join("demo.cassette.jsonl");
    let ws = env.ws();
    let args = [
        "run",
        "--replay",
        cassette.to_str().unwrap(),
        "--full-auto",
        "-C",
        ws.to_str().unwrap(),
        "--json",
        "Fix the failing tests",
    ];
    let out = env.run(&args);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["files_changed"][0]["change"], "modified");
    check_transcript(&t, "the demo run");
}

/// The batch summaries of the previous release (two shards and their merge) fit
/// `docs/reference/batch-summary.schema.json`, and one with a field of the wrong type is
/// refused, so the check the support code makes of every summary can fail.
#[test]
fn batch_summaries_fit_their_schema_and_a_wrong_type_is_refused() {
    use crate::support::schema::check_batch_summary;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut good = Vec::new();
    for name in [
        "tests/fixtures/transcripts/batch/shard1/summary.json",
        "tests/fixtures/transcripts/batch/shard2/summary.json",
        "tests/fixtures/golden/previous_release.merge.summary.json",
    ] {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(name)).unwrap()).unwrap();
        check_batch_summary(&v, name);
        good.push(v);
    }
    let refused =
        |v: Value| std::panic::catch_unwind(move || check_batch_summary(&v, "test")).is_err();
    for (key, bad) in [
        ("total", json!("two")),
        ("shard", json!({"index": "1", "count": 2})),
        ("pass_at", json!({"one": 1.0})),
        ("tasks", json!([{"id": "a", "status": 0}])),
        ("shards", json!({"count": 2, "merged": "1,2"})),
    ] {
        let mut s = good[2].clone();
        s[key] = bad;
        assert!(refused(s), "{key} of the wrong type was accepted");
    }
}
