//! `--jsonl` (SPEC §9): events on stdout as JSON lines while the run goes, every line
//! parsed back; `seq` consecutive; the last line is `run.finished` with the transcript.

use crate::support::*;
use serde_json::{Value, json};

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

#[test]
fn events_parse_line_by_line_and_end_in_run_finished() {
    let env = TestEnv::new(vec![
        Reply::overloaded(),
        Reply::Sse(
            Turn::new()
                .text("Reading both.")
                .tool("toolu_r", "ReadFile", json!({"path": "a.txt"}))
                .tool("toolu_g", "Glob", json!({"pattern": "*.txt"}))
                .frames(),
        ),
        Reply::Sse(turn_text("All done.")),
        Reply::Sse(turn_text("Still done.")),
    ]);
    env.write("a.txt", "hello\n");
    let out = env.run(&[
        "run",
        "--jsonl",
        "--verify",
        "test -f ok || { touch ok; exit 1; }",
        "go",
    ]);
    out.assert_code(0).assert_no_secret();
    // The transcript inside run.finished keeps `version` first, as with --json.
    let last = out.stdout.lines().last().unwrap();
    assert!(
        last.contains(r#""transcript":{"version":1,"status":"success""#),
        "{last}"
    );
    let ev = events(&out.stdout);
    for (i, e) in ev.iter().enumerate() {
        assert_eq!(e["version"], 1, "{e}");
        assert_eq!(e["seq"], (i + 1) as u64, "seq is consecutive from 1: {e}");
        assert!(e["elapsed_ms"].is_u64(), "{e}");
        let raw = out.stdout.lines().nth(i).unwrap();
        assert!(
            raw.starts_with(r#"{"version":1,"type":""#),
            "common fields first: {raw}"
        );
    }
    let kinds: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // Tool events of one parallel batch may come in either order.
    let mut expected = vec![
        "run.started",
        "turn.started",
        "retry",
        "tool.started",
        "tool.finished",
        "tool.started",
        "tool.finished",
        "assistant.message",
        "turn.finished",
        "turn.started",
        "assistant.message",
        "turn.finished",
        "verify.finished",
        "turn.started",
        "assistant.message",
        "turn.finished",
        "verify.finished",
        "run.finished",
    ];
    let mut got = kinds.clone();
    let tool_events = |v: &mut Vec<&str>| v.retain(|k| !k.starts_with("tool."));
    let tools_got = got.iter().filter(|k| k.starts_with("tool.")).count();
    tool_events(&mut got);
    tool_events(&mut expected);
    assert_eq!(got, expected, "{kinds:?}");
    assert_eq!(tools_got, 4, "{kinds:?}");
    // Each tool is started before it finishes, and both finish before turn 1 ends.
    for id in ["toolu_r", "toolu_g"] {
        let pos = |k: &str| {
            ev.iter()
                .position(|e| e["type"] == k && e["id"] == id)
                .unwrap_or_else(|| panic!("no {k} for {id}"))
        };
        assert!(pos("tool.started") < pos("tool.finished"));
        let turn_end = kinds.iter().position(|k| *k == "turn.finished").unwrap();
        assert!(pos("tool.finished") < turn_end);
    }
    let started = &ev[0];
    assert_eq!(started["prompt"], "go");
    assert!(
        started["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("ReadFile"))
    );
    let retry = ev.iter().find(|e| e["type"] == "retry").unwrap();
    assert_eq!(retry["attempt"], 1);
    let read = ev
        .iter()
        .find(|e| e["type"] == "tool.finished" && e["id"] == "toolu_r")
        .unwrap();
    assert_eq!(read["name"], "ReadFile");
    assert_eq!(read["is_error"], false);
    assert!(read["content"].as_str().unwrap().contains("hello"));
    let msg = ev
        .iter()
        .find(|e| e["type"] == "assistant.message")
        .unwrap();
    assert_eq!(msg["message"]["role"], "assistant");
    assert_eq!(msg["stop_reason"], "tool_use");
    let verifies: Vec<_> = ev
        .iter()
        .filter(|e| e["type"] == "verify.finished")
        .collect();
    assert_eq!(verifies[0]["passed"], false);
    assert_eq!(verifies[1]["passed"], true);
    let fin = ev.last().unwrap();
    assert_eq!(fin["type"], "run.finished");
    assert_eq!(fin["status"], "success");
    assert_eq!(fin["exit_code"], 0);
    let t = &fin["transcript"];
    assert_eq!(t["version"], 1);
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "Still done.");
    assert_eq!(t["retries"], 1);
    assert_eq!(t["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(t["verifications"].as_array().unwrap().len(), 2);
}

#[test]
fn jsonl_and_json_conflict() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--jsonl", "--json", "x"]);
    out.assert_code(2);
    assert!(out.stdout.is_empty());
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn a_failed_run_still_ends_in_run_finished() {
    // Not a context overflow (that ends `context_exceeded`, see context.rs): a plain 400.
    let env = TestEnv::new(vec![Reply::bad_request("system: too long for this model")]);
    let out = env.run(&["run", "--jsonl", "x"]);
    out.assert_code(1);
    let ev = events(&out.stdout);
    let fin = ev.last().unwrap();
    assert_eq!(fin["type"], "run.finished");
    assert_eq!(fin["status"], "error");
    assert_eq!(fin["exit_code"], 1);
    assert!(
        fin["transcript"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too long")
    );
}
