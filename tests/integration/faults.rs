//! API faults (SPEC §3.1): retryable statuses, `retry-after`, streams dropped mid-turn,
//! mid-stream `error` events, and non-retryable errors that must fail fast.

use crate::support::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn overloaded_twice_then_ok() {
    let env = TestEnv::new(vec![
        Reply::overloaded(),
        Reply::overloaded(),
        Reply::Sse(turn_text("made it")),
    ]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "made it");
    assert_eq!(t["retries"], 2);
    assert_eq!(t["num_turns"], 1);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[1].body, reqs[0].body,
        "a retry resends the same request"
    );
    assert_eq!(reqs[2].body, reqs[0].body);
    assert!(
        out.stderr.to_lowercase().contains("retry"),
        "retries are logged: {}",
        out.stderr
    );
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn rate_limited_honours_retry_after() {
    let env = TestEnv::new(vec![Reply::rate_limited(1), Reply::Sse(turn_text("ok"))]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0).assert_no_secret();
    assert_eq!(out.json()["retries"], 1);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    // A lower bound only: the retry may not come before the server allowed it.
    let gap = reqs[1].received - reqs[0].received;
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}");
    env.server.assert_invariants();
}

#[test]
fn dropped_stream_mid_turn_never_runs_the_bash_call_twice() {
    let turn = turn_tools(&[(
        "toolu_bash",
        "Bash",
        json!({"command": "echo x >> count.txt"}),
    )]);
    // Everything up to and including the tool block's content_block_stop, then the
    // socket closes: no message_delta, no message_stop.
    let cut = turn.len() - 2;
    assert!(turn[cut - 1].contains("content_block_stop"));
    let env = TestEnv::new(vec![
        Reply::DropAfter(turn.clone(), cut),
        Reply::Sse(turn),
        Reply::Sse(turn_text("appended")),
    ]);
    let out = env.run(&["run", "--allow-bash", "--json", "append x"]);
    out.assert_code(0).assert_no_secret();
    assert_eq!(
        env.read("count.txt"),
        "x\n",
        "the Bash call ran exactly once"
    );
    let t = out.json();
    assert_eq!(t["retries"], 1);
    assert_eq!(t["num_turns"], 2);
    assert_eq!(t["tool_calls"].as_array().unwrap().len(), 1);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[1].body, reqs[0].body,
        "the partial turn is not in history"
    );
    assert_eq!(reqs[2].tool_results().len(), 1);
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn dropped_stream_before_any_tool_is_retried() {
    let env = TestEnv::new(vec![
        Reply::DropAfter(turn_text("partial answer that never ends"), 2),
        Reply::Sse(turn_text("whole answer")),
    ]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["result"], "whole answer");
    assert_eq!(t["retries"], 1);
    assert_eq!(t["messages"].as_array().unwrap().len(), 2);
    env.server.assert_invariants();
}

#[test]
fn overloaded_error_event_then_ok() {
    let broken = vec![
        sse::message_start(10, 0, 0),
        sse::block_start(0, json!({"type": "text", "text": ""})),
        sse::block_delta(0, json!({"type": "text_delta", "text": "Partial-walrus"})),
        sse::error_event("overloaded_error", "Overloaded"),
    ];
    let env = TestEnv::new(vec![Reply::Sse(broken), Reply::Sse(turn_text("recovered"))]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "recovered");
    assert_eq!(t["retries"], 1);
    assert!(
        !t["messages"].to_string().contains("Partial-walrus"),
        "the partial turn is not in the transcript"
    );
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].body, reqs[0].body);
    env.server.assert_invariants();
}

#[test]
fn bad_request_fails_fast_with_the_api_message() {
    const MSG: &str = "messages.0.content: mock says the llama-message is invalid";
    let env = TestEnv::new(vec![
        Reply::bad_request(MSG),
        Reply::Sse(turn_text("must never be requested")),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&["run", "--json", "-o", out_file.to_str().unwrap(), "hi"]);
    out.assert_code(1).assert_no_secret();
    assert_eq!(env.server.request_count(), 1, "400 is not retried");
    assert!(out.stderr.contains(MSG), "stderr: {}", out.stderr);
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert_eq!(t["is_error"], true);
    assert!(t["error"]["kind"].is_string());
    assert!(
        t["error"]["message"].as_str().unwrap().contains(MSG),
        "{}",
        t["error"]
    );
    assert_eq!(t["retries"], 0);
    assert_eq!(read_json(&out_file)["status"], "error");
    env.server.assert_invariants();
}

#[test]
fn unauthorized_is_not_retried() {
    let env = TestEnv::new(vec![
        Reply::api_error(401, "authentication_error", "invalid x-api-key"),
        Reply::Sse(turn_text("must never be requested")),
    ]);
    let out = env.run(&["run", "hi"]);
    out.assert_code(1).assert_no_secret();
    assert!(out.stderr.contains("invalid x-api-key"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 1);
    env.server.assert_invariants();
}

#[test]
fn retries_exhausted_is_an_error_with_the_count() {
    let env = TestEnv::new(vec![
        Reply::overloaded(),
        Reply::overloaded(),
        Reply::Sse(turn_text("too late")),
    ]);
    let out = env.run(&["run", "--json", "--max-retries", "1", "hi"]);
    out.assert_code(1).assert_no_secret();
    assert_eq!(env.server.request_count(), 2, "1 try + 1 retry");
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert_eq!(t["retries"], 1);
    env.server.assert_invariants();
}

#[test]
fn connection_refused_is_an_error_not_a_hang() {
    let env = TestEnv::new(vec![]);
    let mut c = env.command(&["run", "--json", "--max-retries", "0", "hi"]);
    c.env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
    let out = env.spawn_command(c).wait();
    out.assert_code(1).assert_no_secret();
    assert_eq!(out.json()["status"], "error");
}
