//! Bad tool calls from the model (SPEC §3.1, §5): an unknown or disabled tool, a missing
//! field, a wrong type, malformed input JSON, a call cut off by `max_tokens`. Each gets
//! an `is_error` tool_result that says what to fix, and the run goes on to success.

use crate::support::*;
use serde_json::json;

#[test]
fn bad_calls_get_error_results_and_the_run_goes_on() {
    let env = TestEnv::new(vec![
        Reply::Sse(
            Turn::new()
                .tool("toolu_unknown", "Frobnicate", json!({"x": 1}))
                .tool("toolu_missing", "ReadFile", json!({}))
                .tool("toolu_type", "ReadFile", json!({"path": 42}))
                .tool_raw("toolu_malformed", "ReadFile", r#"{"path": "a.txt""#)
                .tool("toolu_good", "ReadFile", json!({"path": "a.txt"}))
                .frames(),
        ),
        Reply::Sse(turn_text("recovered")),
    ]);
    env.write("a.txt", "alpha\n");
    let out = env.run(&["run", "--json", "go"]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "recovered");
    let errs: Vec<bool> = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["is_error"].as_bool().unwrap())
        .collect();
    assert_eq!(errs, [true, true, true, true, false]);

    let reqs = env.server.requests();
    let results = reqs[1].tool_results();
    let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "toolu_unknown",
            "toolu_missing",
            "toolu_type",
            "toolu_malformed",
            "toolu_good"
        ]
    );
    let unknown = &results[0];
    assert!(unknown.is_error);
    for name in ["Frobnicate", "Glob", "Grep", "ReadFile"] {
        assert!(
            unknown.content.contains(name),
            "{name} in: {}",
            unknown.content
        );
    }
    assert!(
        results[1].is_error && results[1].content.contains("path"),
        "{:?}",
        results[1]
    );
    assert!(
        results[2].is_error && results[2].content.contains("path"),
        "{:?}",
        results[2]
    );
    let malformed = &results[3];
    assert!(malformed.is_error);
    let lower = malformed.content.to_lowercase();
    assert!(
        lower.contains("json") || lower.contains("parse") || lower.contains("eof"),
        "quotes the parse error: {}",
        malformed.content
    );
    assert!(!results[4].is_error);
    assert!(results[4].content.contains("alpha"));
    // The malformed block goes back in history with an empty object as input.
    let assistant = &reqs[1].messages()[1];
    let block = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "toolu_malformed")
        .unwrap();
    assert_eq!(block["input"], json!({}));
}

#[test]
fn a_disabled_tool_is_refused_and_nothing_runs() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[
            ("toolu_bash", "Bash", json!({"command": "touch pwned.txt"})),
            (
                "toolu_write",
                "WriteFile",
                json!({"path": "pwned2.txt", "content": "x"}),
            ),
        ])),
        Reply::Sse(turn_text("ok")),
    ]);
    let out = env.run(&["run", "--json", "go"]);
    out.assert_code(0).assert_no_secret();
    assert!(!env.path("pwned.txt").exists());
    assert!(!env.path("pwned2.txt").exists());
    let results = env.server.requests()[1].tool_results();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.is_error), "{results:?}");
    assert!(
        results[0].content.contains("ReadFile"),
        "lists the enabled tools"
    );
    env.server.assert_invariants();
}

#[test]
fn tool_cut_by_max_tokens_gets_a_truncation_error() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_max_tokens_cut_tool(
            "Writing the file.",
            "toolu_cut",
            "WriteFile",
            r#"{"path": "big.txt", "content": "lots of"#,
        )),
        Reply::Sse(turn_text("ok, smaller next time")),
    ]);
    let out = env.run(&["run", "--allow-write", "--json", "write"]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    assert!(!env.path("big.txt").exists(), "a cut call is not executed");
    let results = env.server.requests()[1].tool_results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].tool_use_id, "toolu_cut");
    assert!(results[0].is_error);
    let lower = results[0].content.to_lowercase();
    assert!(
        lower.contains("max_tokens") || lower.contains("truncat") || lower.contains("cut off"),
        "{}",
        results[0].content
    );
    assert_eq!(out.json()["status"], "success");
}

#[test]
fn empty_input_means_an_empty_object() {
    // A tool_use whose only fragment is "" has input {}: Glob then complains about the
    // missing pattern, it is not a parse error.
    let env = TestEnv::new(vec![
        Reply::Sse(turn_raw_tool("toolu_empty", "Glob", "")),
        Reply::Sse(turn_text("ok")),
    ]);
    let out = env.run(&["run", "--json", "go"]);
    out.assert_code(0);
    env.server.assert_invariants();
    let reqs = env.server.requests();
    let block = &reqs[1].messages()[1]["content"][0];
    assert_eq!(block["input"], json!({}));
    let r = &reqs[1].tool_results()[0];
    assert!(r.is_error && r.content.contains("pattern"), "{r:?}");
}
