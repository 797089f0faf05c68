//! Tests of `summary.json` as a type: the checked-in schema, byte-identical rewrites of
//! the summaries the previous release wrote, and what an older summary may lack.

use super::*;

fn fixture(rel: &str) -> (std::path::PathBuf, String) {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}

#[test]
fn batch_summary_schema_is_checked_in() {
    crate::record::transcript::check_schema("batch-summary", &summary_schema());
}

/// A shard's summary and a merged one, both written by the previous release, read into
/// the type and written again, come out byte for byte as they were.
#[test]
fn the_previous_release_summaries_read_and_rewrite_byte_identically() {
    for rel in [
        "tests/fixtures/transcripts/batch/shard1",
        "tests/fixtures/transcripts/batch/shard2",
    ] {
        let (path, text) = fixture(&format!("{rel}/summary.json"));
        let s = BatchSummary::read(path.parent().unwrap(), "").unwrap();
        assert_eq!(s.shard.map(|s| s.count), Some(2), "{rel}");
        assert_eq!(s.parallel, Some(1));
        assert_eq!(s.merge, None);
        assert_eq!(s.to_json(), text, "{rel}");
    }
    let (_, text) = fixture("tests/fixtures/golden/previous_release.merge.summary.json");
    let s: BatchSummary = serde_json::from_str(&text).unwrap();
    let merge = s.merge.as_ref().unwrap();
    assert_eq!(merge.merged_from, ["shard1", "shard2"]);
    assert_eq!(
        merge.shards,
        Some(MergedShards {
            count: 2,
            merged: vec![1, 2]
        })
    );
    assert_eq!(s.parallel, None);
    assert_eq!(s.totals.pass_at[&1], 1.0);
    assert_eq!(s.to_json(), text);
}

/// A summary of an older agent (no digest, no totals) still reads; one with no rows is
/// not a batch summary, and the error names the file and the field.
#[test]
fn an_older_summary_reads_and_rows_are_required() {
    let dir = tempfile::tempdir().unwrap();
    let row = r#"{"id":"a","status":"success","exit_code":0,"num_turns":1,"duration_ms":5,
        "cost_usd":null,"usage":{"input_tokens":1,"output_tokens":2,
        "cache_creation_input_tokens":0,"cache_read_input_tokens":0},
        "transcript":"a.json","log":"a.log","workspace":null,"workspace_kind":null,
        "error":null}"#;
    let older = format!(r#"{{"version":1,"tasks_file":"t.jsonl","shard":null,"tasks":[{row}]}}"#);
    std::fs::write(dir.path().join("summary.json"), older).unwrap();
    let s = BatchSummary::read(dir.path(), "").unwrap();
    assert_eq!(s.tasks_sha256, None);
    assert_eq!(s.tasks_file.as_deref(), Some("t.jsonl"));
    assert_eq!(s.repeat, 1);
    assert_eq!((s.tasks.len(), s.tasks[0].task_id.as_str()), (1, ""));
    std::fs::write(dir.path().join("summary.json"), r#"{"version":1}"#).unwrap();
    let e = BatchSummary::read(dir.path(), "").unwrap_err();
    assert!(
        e.contains("summary.json is not a batch summary") && e.contains("`tasks`"),
        "{e}"
    );
}
