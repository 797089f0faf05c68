//! Tests of `agent summary`: the Markdown, the outputs, and what it reads.

use super::*;
use serde_json::json;

fn transcript() -> Value {
    json!({
        "version": 1, "status": "success", "is_error": false,
        "result": "Fixed the `off by one` in mean().", "error": null,
        "model": "claude-sonnet-4-5", "num_turns": 3, "duration_ms": 12_345,
        "api_duration_ms": 9_000,
        "usage": {"input_tokens": 1234567, "output_tokens": 890,
                  "cache_creation_input_tokens": 10, "cache_read_input_tokens": 20},
        "cost_usd": 0.01234, "retries": 0,
        "tool_calls": [
            {"id": "t1", "name": "Bash", "input": {"command": "sed -n '1|2p' a | wc"},
             "is_error": false, "batch": 1, "duration_ms": 12, "turn": 1},
            {"id": "t2", "name": "EditFile", "input": {"path": "lib/stats.sh",
             "old_string": "SECRET-ish old text", "new_string": "x"},
             "is_error": true, "batch": 2, "duration_ms": 3, "turn": 2}
        ],
        "files_changed": [{"path": "lib/stats.sh", "change": "modified"}],
        "git_diff_stat": " lib/stats.sh | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n",
        "verifications": [
            {"round": 1, "command": "tests/run.sh", "exit_code": 1, "passed": false,
             "timed_out": false, "duration_ms": 50,
             "output_tail": (1..=30).map(|i| format!("line {i}\n")).collect::<String>()},
            {"round": 2, "command": "tests/run.sh", "exit_code": 0, "passed": true,
             "timed_out": false, "duration_ms": 40, "output_tail": "ok\n"}
        ]
    })
}

#[test]
fn markdown_has_every_section() {
    let md = markdown(&typed(&transcript()));
    for needle in [
        "### agent: ✅ success",
        "| Turns | 3 |",
        "1,234,567 input (20 cache read, 10 cache write) · 890 output",
        "| Cost | $0.0123 |",
        "| 1 | 1 | <code>Bash</code> | <code>sed -n '1&#124;2p' a &#124; wc</code> | ok | 12 ms |",
        "<code>lib/stats.sh</code> | error | 3 ms |",
        "- modified <code>lib/stats.sh</code>",
        "1 file changed",
        "| 1 | <code>tests/run.sh</code> | 1 | ❌ failed |",
        "| 2 | <code>tests/run.sh</code> | 0 | ✅ passed |",
        "#### Result",
        "Fixed the `off by one`",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
    // Only a call's summary, never its other input fields or any output.
    assert!(!md.contains("SECRET-ish"), "{md}");
    // The last round passed: no failing output shown.
    assert!(!md.contains("line 30"), "{md}");
}

#[test]
fn failing_verification_shows_only_a_short_tail() {
    let mut t = transcript();
    t["status"] = json!("verify_failed");
    t["verifications"].as_array_mut().unwrap().pop();
    t["cost_usd"] = Value::Null;
    t["error"] = json!({"kind": "verify_failed", "message": "still fails"});
    let md = markdown(&typed(&t));
    assert!(md.contains("### agent: ⚠️ verify_failed"), "{md}");
    assert!(md.contains("unknown (no price for this model)"), "{md}");
    assert!(md.contains("**Error** <code>verify_failed</code>"), "{md}");
    assert!(md.contains("line 30") && md.contains("line 11"), "{md}");
    assert!(
        !md.contains("line 10\n"),
        "only the last {VERIFY_TAIL_LINES} lines: {md}"
    );
}

#[test]
fn long_lists_are_capped() {
    let mut t = transcript();
    let call = t["tool_calls"][0].clone();
    t["tool_calls"] = Value::Array(vec![call; MAX_TOOL_ROWS + 5]);
    let md = markdown(&typed(&t));
    assert!(md.contains("… and 5 more"), "{md}");
    assert_eq!(md.matches("<code>Bash</code>").count(), MAX_TOOL_ROWS);
}

#[test]
fn fences_outgrow_backticks_in_the_body() {
    let f = fenced("text", "a ``` b");
    assert!(
        f.starts_with("````text\n") && f.ends_with("\n````\n"),
        "{f}"
    );
}

#[test]
fn github_outputs_use_a_safe_heredoc() {
    let mut t = transcript();
    t["result"] = json!("two\nlines");
    let out = github_outputs(&typed(&t), Path::new("/tmp/t.json"));
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("status=success"));
    let head = lines.next().unwrap();
    let delim = head.strip_prefix("result<<").unwrap();
    assert_eq!(lines.next(), Some("two"));
    assert_eq!(lines.next(), Some("lines"));
    assert_eq!(lines.next(), Some(delim));
    assert_eq!(lines.next(), Some("transcript=/tmp/t.json"));
}

#[test]
fn bad_files_are_reported() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("t.json");
    assert!(read_transcript(&f).unwrap_err().contains("cannot read"));
    std::fs::write(&f, "nope").unwrap();
    assert!(read_transcript(&f).unwrap_err().contains("not a JSON"));
    std::fs::write(&f, "[1]").unwrap();
    assert!(
        read_transcript(&f)
            .unwrap_err()
            .contains("not an agent transcript")
    );
}

#[test]
fn an_odd_status_cannot_inject_markdown() {
    let t = json!({"version": 1, "status": "x\n## Injected heading\n| a | b |",
                   "is_error": true, "tool_calls": [], "files_changed": []});
    let md = markdown(&typed(&t));
    assert!(!md.contains("\n## Injected"), "{md}");
    assert!(!md.lines().any(|l| l.starts_with("| a | b |")), "{md}");
}

#[test]
fn counts_are_pluralised_and_costs_rounded() {
    let mut t = transcript();
    t["num_turns"] = json!(1);
    t["cost_usd"] = json!(0.000_717_000_000_000_000_2);
    t["tool_calls"] = json!([t["tool_calls"][0].clone()]);
    let md = markdown(&typed(&t));
    assert!(
        md.contains("\n\n1 turn · 1 tool call · $0.000717\n\n"),
        "{md}"
    );
    assert!(md.contains("| Cost | $0.000717 |"), "{md}");
    assert!(!md.contains("0000000"), "{md}");
    let md = markdown(&typed(&transcript()));
    assert!(md.contains("3 turns · 2 tool calls · $0.0123"), "{md}");
    assert_eq!(count(0, "turn"), "0 turns");
    assert_eq!(count(1, "turn"), "1 turn");
    assert_eq!(count(1500, "tool call"), "1,500 tool calls");
    assert_eq!(usd(0.1 + 0.2), "$0.3000");
    assert_eq!(usd(0.0), "$0");
    assert_eq!(usd(0.000_050_1), "$0.0000501");
}

#[test]
fn a_jsonl_capture_gives_its_run_finished_transcript() {
    let t = transcript();
    let capture = format!(
        "{}\n{}\n{}\n",
        json!({"version": 1, "type": "turn.started", "seq": 1, "turn": 1}),
        json!({"version": 1, "type": "tool.finished", "seq": 2, "status": "odd"}),
        json!({"version": 1, "type": "run.finished", "seq": 3, "transcript": t}),
    );
    assert_eq!(parse_transcript(&capture, "cap").unwrap(), t);
    // Cut before run.finished: a clear error, not the wrong document.
    let cut: String = capture.lines().take(2).map(|l| format!("{l}\n")).collect();
    let e = parse_transcript(&cut, "cap").unwrap_err();
    assert!(e.contains("without a run.finished"), "{e}");
    // A plain transcript still reads as before.
    assert_eq!(parse_transcript(&t.to_string(), "t").unwrap(), t);
    let e = parse_transcript("x\ny\n", "junk").unwrap_err();
    assert!(e.contains("not a JSON transcript"), "{e}");
}

#[test]
fn unknown_usage_reads_as_unknown_not_zero() {
    let mut t = transcript();
    t["usage"] = json!({"input_tokens": null, "output_tokens": null,
                        "cache_creation_input_tokens": null, "cache_read_input_tokens": null});
    t["cost_usd"] = Value::Null;
    let md = markdown(&typed(&t));
    assert!(
        md.contains("| Tokens | unknown (the server reported no usage) |"),
        "{md}"
    );
    assert!(!md.contains("0 input"), "{md}");
}

#[test]
fn a_fallback_run_lists_each_model_with_its_turns_and_cost() {
    let mut t = transcript();
    t["models_used"] = json!([
        {"model": "claude-sonnet-4-5", "turns": 1, "cost_usd": 0.01},
        {"model": "claude-haiku-4-5", "turns": 2, "cost_usd": null}
    ]);
    let md = markdown(&typed(&t));
    assert!(
        md.contains("| Models used | <code>claude-sonnet-4-5</code> (1 turn, $0.0100) → <code>claude-haiku-4-5</code> (2 turns, cost unknown) |"),
        "{md}"
    );
    // One model: no row (the Model row says it).
    t["models_used"] = json!([{"model": "claude-sonnet-4-5", "turns": 3, "cost_usd": 0.01}]);
    assert!(!markdown(&typed(&t)).contains("Models used"));
}

#[test]
fn the_plan_is_a_checklist_with_markup_escaped() {
    let mut t = transcript();
    assert!(
        !markdown(&typed(&t)).contains("#### Plan"),
        "no plan, no section"
    );
    t["plan"] = json!([
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix [the](http://x) *bug*", "status": "in_progress", "activeForm": "Fixing"},
        {"content": "Run <b>tests</b>", "status": "pending"}
    ]);
    let md = markdown(&typed(&t));
    for needle in [
        "#### Plan (1/3 done)",
        "- [x] Read the code\n",
        "- [ ] Fix \\[the\\]\\(http://x\\) \\*bug\\* *(in progress)*\n",
        "- [ ] Run \\<b\\>tests\\</b\\>\n",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
}

/// The typed transcript of a test's JSON.
fn typed(t: &Value) -> Transcript {
    Transcript::from_value(t).unwrap()
}
