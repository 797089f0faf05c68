//! The HTTP provider shell against the loopback mock: the exact request (headers, body,
//! prompt-cache breakpoints), what a retry says and waits, which errors fail at once and
//! how they read, idle timeouts before and after the headers, and cassette recording of
//! the successful attempt only.

use crate::support::mock::sse_text;
use crate::support::sse::error_event;
use crate::support::*;
use serde_json::{Value, json};
use std::net::TcpListener;
use std::time::Duration;

/// A run of `hi` with a fast retry policy visible on stderr.
fn run(env: &TestEnv, extra: &[&str]) -> RunOutput {
    let mut args = vec!["run", "--json", "-m", "claude-test"];
    args.extend_from_slice(extra);
    args.push("hi");
    env.run(&args)
}

/// The `retrying in …: reason` lines of stderr.
fn retry_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("retrying in"))
        .collect()
}

fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Status {
        code,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.to_string(),
    }
}

fn api_error(code: u16, kind: &str, message: &str, headers: &[(&str, &str)]) -> Reply {
    let body = json!({"type": "error", "error": {"type": kind, "message": message},
        "request_id": "req_1"});
    status(code, headers, &body.to_string())
}

#[test]
fn sends_the_headers_and_body_and_records_the_successful_stream() {
    let frames = turn_text("hello");
    let env = TestEnv::new(vec![Reply::Sse(frames.clone())]);
    let cassette = env.out("c.jsonl");
    let out = run(
        &env,
        &[
            "--max-tokens",
            "1000",
            "--system",
            "be brief",
            "--record",
            cassette.to_str().unwrap(),
        ],
    );
    out.assert_code(0).assert_no_secret();
    assert_eq!(out.json()["result"], "hello");

    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    let all = |name: &str| -> Vec<&str> {
        r.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(all("x-api-key"), vec![API_KEY]);
    assert_eq!(all("anthropic-version"), vec!["2023-06-01"]);
    assert_eq!(all("content-type"), vec!["application/json"]);
    assert!(all("authorization").is_empty());

    let body = &r.body;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi",
                "cache_control": {"type": "ephemeral"}}]}])
    );
    // The breakpoint is on the last tool definition only.
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.len() > 1, "{tools:?}");
    let (last, rest) = tools.split_last().unwrap();
    assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));
    assert!(rest.iter().all(|t| t.get("cache_control").is_none()));
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(
        keys.len(),
        6,
        "model, max_tokens, system, messages, tools, stream: {keys:?}"
    );

    // The raw SSE bytes, de-chunked, pings included.
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(API_KEY));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "header and one turn");
    assert_eq!(lines[0]["model"], "claude-test");
    assert_eq!(lines[1]["sse"], sse_text(&frames, SseOpts::default()));
    env.server.assert_invariants();
}

#[test]
fn overloaded_twice_then_ok_counts_two_retries_with_their_reasons() {
    let env = TestEnv::new(vec![
        Reply::overloaded(),
        Reply::overloaded(),
        Reply::Sse(turn_text("third time")),
    ]);
    let out = run(&env, &[]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "third time");
    let lines = retry_lines(&out.stderr);
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].ends_with("(attempt 1/4): HTTP 529 overloaded_error: Overloaded"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("(attempt 2/4)"), "{}", lines[1]);
    assert_eq!(env.server.request_count(), 3);
}

#[test]
fn retry_after_is_honoured() {
    let env = TestEnv::new(vec![
        api_error(
            429,
            "rate_limit_error",
            "slow down",
            &[("retry-after", "1")],
        ),
        Reply::Sse(turn_text("after the wait")),
    ]);
    let out = run(&env, &[]);
    out.assert_code(0);
    let lines = retry_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].contains("retrying in 1.0s"), "{}", lines[0]);
    assert!(
        lines[0].contains("rate_limit_error: slow down"),
        "{}",
        lines[0]
    );
    let reqs = env.server.requests();
    let gap = reqs[1].received - reqs[0].received;
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}");
}

#[test]
fn retry_after_ms_wins_and_is_fractional() {
    let env = TestEnv::new(vec![
        api_error(
            503,
            "api_error",
            "busy",
            &[("retry-after-ms", "12.5"), ("retry-after", "9")],
        ),
        Reply::Sse(turn_text("ok")),
    ]);
    let out = run(&env, &[]);
    out.assert_code(0);
    let lines = retry_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    // 12.5 ms, not the 9 s of retry-after.
    assert!(
        lines[0].contains("retrying in 0.0s (attempt 1/4): HTTP 503 api_error: busy"),
        "{}",
        lines[0]
    );
}

#[test]
fn bad_request_fails_fast_with_the_api_message_whatever_x_should_retry_says() {
    let env = TestEnv::new(vec![
        api_error(
            400,
            "invalid_request_error",
            "messages.0: tool_use ids were found without tool_result blocks",
            &[("x-should-retry", "true")],
        ),
        Reply::Sse(turn_text("never")),
    ]);
    let out = run(&env, &[]);
    out.assert_code(1).assert_no_secret();
    let t = out.json();
    assert_eq!(t["error"]["kind"], "api_error");
    assert_eq!(
        t["error"]["message"],
        "HTTP 400 invalid_request_error: messages.0: tool_use ids were found without \
         tool_result blocks"
    );
    assert!(retry_lines(&out.stderr).is_empty(), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 1);
}

#[test]
fn x_should_retry_false_stops_a_retryable_status() {
    let env = TestEnv::new(vec![
        api_error(500, "api_error", "do not", &[("x-should-retry", "false")]),
        Reply::Sse(turn_text("never")),
    ]);
    let out = run(&env, &[]);
    out.assert_code(1);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("do not"), "{message}");
    assert_eq!(env.server.request_count(), 1);
}

#[test]
fn the_api_key_never_appears_in_errors() {
    let echo = format!("invalid x-api-key: {API_KEY}");
    let env = TestEnv::new(vec![api_error(401, "authentication_error", &echo, &[])]);
    let out = run(&env, &[]);
    out.assert_code(1).assert_no_secret();
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("[REDACTED]"), "{message}");
}

#[test]
fn a_non_json_error_body_is_quoted() {
    let env = TestEnv::new(vec![status(404, &[], "<html>no such route</html>")]);
    let out = run(&env, &[]);
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["error"]["kind"], "api_error");
    assert_eq!(
        t["error"]["message"],
        "HTTP 404: <html>no such route</html>"
    );
}

#[test]
fn a_stream_dropped_mid_turn_is_retried_and_only_the_good_attempt_is_recorded() {
    let partial = turn_tools(&[("toolu_partial", "Bash", json!({"command": "rm x"}))]);
    // message_start, the whole tool block, then the connection drops.
    let cut = partial
        .iter()
        .position(|f| f.contains("content_block_stop"))
        .unwrap()
        + 1;
    let env = TestEnv::new(vec![
        Reply::DropAfter(partial, cut),
        Reply::Sse(turn_text("clean")),
    ]);
    env.write("x", "kept");
    let cassette = env.out("c.jsonl");
    let out = run(
        &env,
        &["--allow-bash", "--record", cassette.to_str().unwrap()],
    );
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["result"], "clean");
    assert_eq!(t["retries"], 1);
    assert_eq!(env.read("x"), "kept", "the partial turn's call never ran");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(
        text.lines().count(),
        2,
        "only the successful attempt: {text}"
    );
    assert!(!text.contains("toolu_partial"));
}

#[test]
fn an_overloaded_error_event_is_retried_with_its_reason() {
    let mut failing = turn_text("partial");
    failing.truncate(1); // message_start only
    failing.push(error_event("overloaded_error", "Overloaded"));
    let env = TestEnv::new(vec![Reply::Sse(failing), Reply::Sse(turn_text("fine"))]);
    let out = run(&env, &[]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "fine");
    let lines = retry_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].ends_with("stream error overloaded_error: Overloaded"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_silent_stream_times_out_instead_of_hanging() {
    let mut head = turn_text("x");
    head.truncate(2);
    let env = TestEnv::new(vec![
        Reply::Hang(head.clone()),
        Reply::Sse(turn_text("after the stall")),
    ]);
    let out = run(&env, &["--idle-timeout", "300ms"]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "after the stall");
    let lines = retry_lines(&out.stderr);
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].contains("idle timeout (300ms)"), "{}", lines[0]);

    // Out of retries, it is a transport error that says so.
    let env = TestEnv::new(vec![Reply::Hang(head)]);
    let out = run(&env, &["--idle-timeout", "300ms", "--max-retries", "0"]);
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["error"]["kind"], "transport_error");
    let message = t["error"]["message"].as_str().unwrap();
    assert!(message.contains("idle timeout"), "{message}");
}

#[test]
fn a_server_silent_before_its_headers_times_out_too() {
    // A listener that never accepts: the kernel completes the connection and takes the
    // request, and no byte ever comes back.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let env = TestEnv::new(vec![]);
    let mut c = env.command(&[
        "run",
        "--json",
        "--idle-timeout",
        "300ms",
        "--max-retries",
        "0",
        "hi",
    ]);
    c.env(
        "ANTHROPIC_BASE_URL",
        format!("http://{}", silent.local_addr().unwrap()),
    );
    let out = env.spawn_command(c).wait();
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["error"]["kind"], "transport_error");
    let message = t["error"]["message"].as_str().unwrap();
    assert!(message.contains("idle timeout"), "{message}");
}

#[test]
fn gives_up_after_max_retries_with_the_last_error() {
    let env = TestEnv::new(vec![
        api_error(503, "api_error", "first", &[]),
        api_error(503, "api_error", "second", &[]),
        api_error(502, "api_error", "last", &[]),
        Reply::Sse(turn_text("too late")),
    ]);
    let out = run(&env, &["--max-retries", "2"]);
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["error"]["kind"], "api_error");
    assert_eq!(
        t["error"]["message"],
        "HTTP 502 api_error: last (gave up after 2 retries)"
    );
    assert_eq!(retry_lines(&out.stderr).len(), 2, "{}", out.stderr);
    assert_eq!(env.server.request_count(), 3);
}

#[test]
fn connection_refused_is_retried_then_a_transport_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = TestEnv::new(vec![]);
    let mut c = env.command(&["run", "--json", "--max-retries", "1", "hi"]);
    c.env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    let out = env.spawn_command(c).wait();
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["error"]["kind"], "transport_error");
    let message = t["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("connection to http://127.0.0.1"),
        "{message}"
    );
    assert_eq!(retry_lines(&out.stderr).len(), 1, "{}", out.stderr);
}

#[test]
fn a_bad_url_is_not_retried() {
    let env = TestEnv::new(vec![]);
    let mut c = env.command(&["run", "--json", "hi"]);
    c.env("ANTHROPIC_BASE_URL", "http://bad host:x");
    let out = env.spawn_command(c).wait();
    out.assert_code(1);
    assert_eq!(out.json()["error"]["kind"], "transport_error");
    assert!(retry_lines(&out.stderr).is_empty(), "{}", out.stderr);
}

/// After each turn's end marker the body is read to its end, so that ureq can pool the
/// connection: a three-request run opens one connection (both wires).
#[test]
fn a_multi_turn_run_keeps_one_connection() {
    for openai in [false, true] {
        let env = TestEnv::keep_alive(vec![
            Reply::turn(Turn::new().tool("toolu_1", "Glob", json!({"pattern": "*"}))),
            Reply::turn(Turn::new().tool("toolu_2", "Glob", json!({"pattern": "*.x"}))),
            Reply::turn(Turn::new().text("done")),
        ]);
        let base = env.server.openai_url();
        let out = if openai {
            env.run(&[
                "run",
                "--json",
                "--provider",
                "openai",
                "-m",
                "m",
                "--base-url",
                &base,
                "hi",
            ])
        } else {
            env.run(&["run", "--json", "hi"])
        };
        out.assert_code(0);
        assert_eq!(env.server.request_count(), 3);
        assert_eq!(env.server.connections(), 1, "openai: {openai}");
    }
}

/// A server that leaves the body open after the stream's end marker costs a connection,
/// not the run: the drain's reads give up at its deadline and the connection is closed,
/// and the next turn's connection is pooled again (the last two turns share one).
#[test]
fn a_body_left_open_after_the_end_marker_costs_a_connection_not_the_run() {
    let held = Turn::new().tool("toolu_1", "Glob", json!({"pattern": "*"}));
    let (frames, _) = Wire::Anthropic.render(&held);
    let env = TestEnv::keep_alive(vec![
        Reply::Hang(frames),
        Reply::turn(Turn::new().tool("toolu_2", "Glob", json!({"pattern": "*.x"}))),
        Reply::turn(Turn::new().text("done")),
    ]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "done");
    assert_eq!(env.server.request_count(), 3);
    assert_eq!(env.server.connections(), 2);
}
