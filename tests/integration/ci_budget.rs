//! Budgets (SPEC §9): `--max-tool-calls` and `--max-cost-usd` stop the run before a
//! request with status `budget` (exit 3); `cost_usd` from the price table (overridden in
//! the settings file); the same call 5 times in a row is refused, not run.

use crate::support::*;
use serde_json::json;

fn globs(ids: &[&str]) -> Reply {
    let mut t = Turn::new().text("Looking.");
    for id in ids {
        t = t.tool(id, "Glob", json!({"pattern": format!("*{id}*")}));
    }
    Reply::Sse(t.frames())
}

#[test]
fn max_tool_calls_stops_before_the_next_request_with_exit_3() {
    let env = TestEnv::new(vec![
        globs(&["a", "b"]),
        globs(&["c"]),
        Reply::Sse(turn_text("done")),
    ]);
    let out = env.run(&["run", "--json", "--max-tool-calls", "2", "look"]);
    out.assert_code(3).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "budget");
    assert_eq!(t["is_error"], true);
    assert_eq!(t["error"]["kind"], "budget");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-tool-calls 2"),
        "{}",
        t["error"]
    );
    assert_eq!(t["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(
        env.server.request_count(),
        1,
        "no request after the budget is used up"
    );
    env.server.assert_invariants();
}

#[test]
fn max_cost_usd_uses_the_settings_price_and_stops_with_exit_3() {
    let env = TestEnv::new(vec![
        globs(&["a"]),
        globs(&["b"]),
        globs(&["c"]),
        globs(&["d"]),
    ]);
    // 100 input tokens per turn at $2000/MTok = $0.20 a turn; output and cache free.
    env.write(
        ".agent/settings.json",
        r#"{"prices": {"claude-mock": {"input": 2000, "output": 0, "cache_write": 0, "cache_read": 0}}}"#,
    );
    let out = env.run(&[
        "run",
        "--json",
        "-m",
        sse::MOCK_MODEL,
        "--max-cost-usd",
        "0.5",
        "spend",
    ]);
    out.assert_code(3).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "budget");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-cost-usd 0.5")
    );
    assert_eq!(
        env.server.request_count(),
        3,
        "$0.20, $0.40, $0.60 ≥ $0.50: stop"
    );
    let cost = t["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.6).abs() < 1e-9, "{cost}");
}

#[test]
fn cost_is_null_for_an_unknown_model_and_known_for_sonnet() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("hi"))]);
    let t = env.run(&["run", "--json", "x"]).assert_code(0).json();
    assert_eq!(t["model"], sse::MOCK_MODEL);
    assert!(t["cost_usd"].is_null(), "{}", t["cost_usd"]);
    // --max-cost-usd with a model of unknown price is a usage error before any request.
    let out = env.run(&[
        "run",
        "--json",
        "-m",
        "my-model",
        "--max-cost-usd",
        "1",
        "x",
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("\"prices\""), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 1);
}

#[test]
fn the_fifth_identical_call_in_a_row_is_refused() {
    let same = json!({"pattern": "*.txt"});
    let five = (1..=5).fold(Turn::new(), |t, i| {
        t.tool(&format!("toolu_{i}"), "Glob", same.clone())
    });
    let env = TestEnv::new(vec![
        Reply::Sse(five.frames()),
        Reply::Sse(Turn::new().tool("toolu_6", "Glob", same.clone()).frames()),
        Reply::Sse(
            Turn::new()
                .tool("toolu_7", "Glob", json!({"pattern": "*.md"}))
                .frames(),
        ),
        Reply::Sse(turn_text("ok, changing approach")),
    ]);
    env.write("a.txt", "x");
    let out = env.run(&["run", "--json", "find"]);
    out.assert_code(0);
    let reqs = env.server.requests();
    let first = reqs[1].tool_results();
    let errors: Vec<bool> = first.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, vec![false, false, false, false, true], "{first:?}");
    assert_eq!(
        first[4].content,
        "you have made this exact call 5 times; change approach"
    );
    assert!(first[0].content.contains("a.txt"), "{}", first[0].content);
    let second = reqs[2].tool_results();
    assert!(
        second[0].is_error && second[0].content.contains("6 times"),
        "{second:?}"
    );
    // A different call runs again.
    let third = reqs[3].tool_results();
    assert!(!third[0].is_error, "{third:?}");
    let t = out.json();
    let calls = t["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 7);
    assert_eq!(calls[4]["is_error"], true);
    assert_eq!(
        t["permission_denials"],
        json!([]),
        "a refusal is not a policy denial"
    );
    env.server.assert_invariants();
}

/// The API may report a model other than the one asked for: when that model has no
/// price, the cost limit cannot be enforced and the run stops instead of going on
/// unlimited.
#[test]
fn max_cost_usd_stops_when_the_reported_model_has_no_price() {
    let env = TestEnv::new(vec![globs(&["a"]), globs(&["b"])]);
    let out = env.run(&[
        "run",
        "--json",
        "-m",
        "claude-sonnet-4-5",
        "--max-cost-usd",
        "100",
        "spend",
    ]);
    out.assert_code(3);
    let t = out.json();
    assert_eq!(t["status"], "budget");
    let msg = t["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(sse::MOCK_MODEL) && msg.contains("no price"),
        "{msg}"
    );
    assert_eq!(env.server.request_count(), 1);
}
