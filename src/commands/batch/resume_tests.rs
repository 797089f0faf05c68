//! Tests of what `--resume` runs again and why.

use super::*;
use crate::commands::batch::Task;
use serde_json::{Value, json};
use std::path::PathBuf;

fn spec(prompt: &str) -> RunSpec {
    RunSpec {
        id: "t".into(),
        index: 0,
        task: Task {
            id: "t".into(),
            prompt: prompt.into(),
            workspace: None,
            args: vec!["--full-auto".into()],
            setup: None,
            images: Vec::new(),
            sets_timeout: false,
        },
        source: PathBuf::from("/src/ws"),
    }
}

fn put(out: &Path, transcript: Option<Value>, record: Option<TaskRecord>) {
    std::fs::create_dir_all(out.join(RECORDS_DIR)).unwrap();
    if let Some(t) = transcript {
        std::fs::write(out.join("t.json"), t.to_string()).unwrap();
    }
    if let Some(r) = record {
        std::fs::write(record_path(out, "t"), serde_json::to_string(&r).unwrap()).unwrap();
    }
}

fn note(d: Decision) -> String {
    match d {
        Decision::Run(n) => n.unwrap_or_default(),
        Decision::Skip(o) => panic!("skipped: {o:?}"),
    }
}

fn finished(status: &str) -> Value {
    json!({"status": status, "num_turns": 2, "duration_ms": 1500, "cost_usd": 0.25,
           "usage": {"input_tokens": 10, "output_tokens": 5}, "workspace": "/ws/copy"})
}

#[test]
fn what_runs_again_and_why() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path();
    let run = spec("p");
    // Never started: a first run, no note.
    assert!(matches!(decide(out, &run, false), Decision::Run(None)));
    // Started (record written) but no transcript.
    put(out, None, Some(record(&run, None)));
    assert!(note(decide(out, &run, false)).contains("left no transcript"));
    for (status, needle) in [("running", "killed"), ("interrupted", "interrupted")] {
        put(out, Some(finished(status)), None);
        assert!(note(decide(out, &run, false)).contains(needle), "{status}");
    }
    std::fs::write(out.join("t.json"), "{ cut").unwrap();
    assert!(note(decide(out, &run, false)).contains("not valid JSON"));
    // Finished, same line: skipped, its row from the transcript and the record.
    put(
        out,
        Some(finished("max_turns")),
        Some(record(&run, Some(3))),
    );
    let Decision::Skip(o) = decide(out, &run, false) else {
        panic!("finished and unchanged is skipped");
    };
    assert!(o.skipped);
    assert_eq!(
        (
            o.status.as_str(),
            o.exit_code,
            o.num_turns,
            o.duration_ms,
            o.cost_usd
        ),
        ("max_turns", Some(3), 2, 1500, Some(0.25))
    );
    assert_eq!(o.usage.input_tokens, 10);
    assert_eq!(o.workspace.as_deref(), Some("/ws/copy"));
    // --retry-failed: a failure runs again; a success does not.
    assert!(note(decide(out, &run, true)).contains("max_turns"));
    put(out, Some(finished("success")), None);
    assert!(matches!(decide(out, &run, true), Decision::Skip(_)));
    // A changed line runs again, naming what changed.
    let n = note(decide(out, &spec("another prompt"), false));
    assert!(n.contains("changed") && n.contains("prompt"), "{n}");
    let mut moved = spec("p");
    moved.source = PathBuf::from("/elsewhere");
    moved.task.args.push("-v".into());
    let n = note(decide(out, &moved, false));
    assert!(n.contains("args, workspace"), "{n}");
    // No record of the line (an older batch): run again rather than guess.
    std::fs::remove_file(record_path(out, "t")).unwrap();
    assert!(note(decide(out, &run, false)).contains("no record"));
}

/// The record is written as the release before the type wrote it (sorted keys, every
/// field), so a batch directory of either reads with the other.
#[test]
fn the_record_keeps_its_text() {
    let r = record(&spec("p"), Some(3));
    let as_released = json!({
        "id": "t", "task_id": "t", "prompt": "p", "args": ["--full-auto"],
        "workspace": "/src/ws", "setup": null, "exit_code": 3,
    });
    assert_eq!(
        crate::commands::batch::summary::sorted_pretty(&r),
        serde_json::to_string_pretty(&as_released).unwrap()
    );
    assert_eq!(
        serde_json::from_value::<TaskRecord>(as_released).unwrap(),
        r
    );
}
