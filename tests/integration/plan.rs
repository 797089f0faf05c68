//! The model's plan (TodoWrite) as a scripted model writes and rewrites it: the
//! transcript's `plan` and `plan_history`, `--jsonl`'s `plan.updated`, the CI log's lines
//! on each change (and none for a rewrite that changes nothing), and `agent summary`'s
//! checklist.

use serde_json::{Value, json};

use crate::support::*;

fn write(id: &str, todos: Value) -> Reply {
    Reply::Sse(turn_tools(&[(id, "TodoWrite", json!({ "todos": todos }))]))
}

#[test]
fn the_plan_is_in_the_transcript_the_events_the_log_and_the_summary() {
    let first = json!([
        {"content": "Find the bug", "status": "in_progress", "activeForm": "Finding the bug"},
        {"content": "Fix it", "status": "pending"}
    ]);
    let second = json!([
        {"content": "Find the bug", "status": "completed"},
        {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"}
    ]);
    let env = TestEnv::new(vec![
        write("toolu_p1", first.clone()),
        write("toolu_p2", second.clone()),
        // The same plan again: no change, so no event, no log lines, no history entry.
        write("toolu_p3", second.clone()),
        Reply::Sse(turn_text("planned")),
    ]);
    let out_file = env.out("t.json");
    // No tool flag: TodoWrite is always on.
    let out = env.run(&[
        "run",
        "--jsonl",
        "-o",
        out_file.to_str().unwrap(),
        "plan it",
    ]);
    out.assert_code(0);
    let t = read_json(&out_file);
    assert!(
        t["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "TodoWrite")
    );
    assert_eq!(t["plan"], second);
    let history = t["plan_history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0]["todos"], first);
    assert_eq!(history[0]["turn"], 1);
    assert_eq!(history[1]["todos"], second);
    assert_eq!(history[1]["turn"], 2);
    assert!(history[1]["elapsed_ms"].as_u64() >= history[0]["elapsed_ms"].as_u64());

    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "plan.updated")
        .collect();
    assert_eq!(updates.len(), 2);
    assert_eq!(updates[0]["todos"], first);
    assert_eq!(updates[1]["todos"], second);
    assert_eq!(updates[1]["turn"], 2);

    // The CI log: the plan on each change, one line per item.
    for line in [
        "agent: plan (2 items):",
        "agent:   [>] Finding the bug",
        "agent:   [ ] Fix it",
        "agent:   [x] Find the bug",
        "agent:   [>] Fixing it",
    ] {
        assert!(
            out.stderr.contains(line),
            "missing {line:?} in\n{}",
            out.stderr
        );
    }
    assert_eq!(
        out.stderr.matches("plan (2 items):").count(),
        2,
        "{}",
        out.stderr
    );

    let summary = env.run(&["summary", out_file.to_str().unwrap()]);
    summary.assert_code(0);
    assert!(
        summary
            .stdout
            .contains("#### Plan (1/2 done)\n\n- [x] Find the bug\n- [ ] Fix it *(in progress)*\n"),
        "{}",
        summary.stdout
    );
}
