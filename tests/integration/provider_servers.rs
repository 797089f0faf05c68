//! What real servers and the networks in front of them do: a login page
//! served with 200, `retry-after` as an HTTP date, huge error bodies, `content: null`,
//! servers that need `tool_choice` or go silent after 200, and the token counts `-v`
//! logs.

use crate::support::*;
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn retry_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("retrying in"))
        .collect()
}

/// `agent run --provider openai` at the mock with `extra` flags.
fn run_openai(env: &TestEnv, extra: &[&str]) -> RunOutput {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    args.push("hi");
    env.run_openai("m", &args)
}

#[test]
fn a_login_page_behind_200_is_named_quoted_and_retried_once() {
    let page = "<html><head><title>Sign in to the guest Wi-Fi</title></head><body>…</body></html>";
    let login = || Reply::raw(200, "text/html; charset=utf-8", page);
    let env = TestEnv::new(vec![
        login(),
        login(),
        login(),
        Reply::turn(Turn::new().text("x")),
    ]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(1);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains(r#"content type "text/html; charset=utf-8", not an event stream"#),
        "{message}"
    );
    assert!(
        message.contains("<html><head><title>Sign in to the guest Wi-Fi"),
        "{message}"
    );
    assert!(!message.contains("message_stop"), "{message}");
    assert_eq!(retry_lines(&out.stderr).len(), 1, "{}", out.stderr);
    assert_eq!(
        env.server.request_count(),
        2,
        "retried once, not four times"
    );
}

#[test]
fn retry_after_as_an_http_date_is_honoured() {
    let when = SystemTime::now() + Duration::from_secs(3);
    let env = TestEnv::new(vec![
        Reply::rate_limited_until(when),
        Reply::turn(Turn::new().text("later")),
    ]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0);
    assert_eq!(retry_lines(&out.stderr).len(), 1, "{}", out.stderr);
    // The date has whole seconds: the retry may not come before that second began
    // (our own backoff would retry after 0.5 s).
    let whole = when.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let date = UNIX_EPOCH + Duration::from_secs(whole);
    let retried = SystemTime::now() - env.server.requests()[1].received.elapsed();
    assert!(
        retried + Duration::from_millis(50) >= date,
        "retried {:?} before the date",
        date.duration_since(retried).unwrap_or_default()
    );
}

#[test]
fn a_huge_error_body_is_capped_with_its_status_and_type_kept() {
    let env = TestEnv::new(vec![Reply::api_error(
        500,
        "api_error",
        &"the system prompt again. ".repeat(400),
    )]);
    let out = env.run(&["run", "--json", "--max-retries", "0", "hi"]);
    out.assert_code(1);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("HTTP 500 api_error: the system prompt again."));
    assert!(
        message.ends_with("… (8000 more characters not shown)"),
        "{}",
        &message[message.len() - 60..]
    );
    assert!(message.chars().count() < 2_100, "{}", message.len());
    assert!(
        out.stderr.len() < 4_000,
        "stderr: {} bytes",
        out.stderr.len()
    );
}

#[test]
fn an_assistant_message_with_tool_calls_sends_empty_content_not_null() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool("call_1", "Glob", json!({"pattern": "*"}))),
        Reply::turn(Turn::new().text("done")),
    ]);
    run_openai(&env, &[]).assert_code(0);
    let body = &env.server.requests()[1].body;
    let assistant = &body["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "", "{assistant}");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
}

#[test]
fn tool_choice_is_sent_only_when_asked() {
    let text = || Reply::turn(Turn::new().text("ok"));
    let env = TestEnv::new(vec![text(), text(), text(), text()]);
    run_openai(&env, &[]).assert_code(0);
    run_openai(&env, &["--tool-choice", "auto"]).assert_code(0);
    run_openai(&env, &["--tool-choice", "required"]).assert_code(0);
    env.run(&["run", "--json", "--tool-choice", "required", "hi"])
        .assert_code(0);
    let reqs = env.server.requests();
    assert!(
        reqs[0].body.get("tool_choice").is_none(),
        "default: not sent"
    );
    assert_eq!(reqs[1].body["tool_choice"], "auto");
    assert_eq!(reqs[2].body["tool_choice"], "required");
    assert_eq!(
        reqs[3].body["tool_choice"],
        json!({"type": "any"}),
        "the Anthropic spelling"
    );
    let bad = env.run(&["run", "--tool-choice", "sometimes", "hi"]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("--tool-choice"), "{}", bad.stderr);
}

#[test]
fn silence_after_200_suggests_the_likely_cause() {
    for (reply, openai) in [
        (Reply::ping_then_silence(), true),
        (Reply::silence(), false),
    ] {
        let env = TestEnv::new(vec![reply]);
        let flags = ["--idle-timeout", "300ms", "--max-retries", "0"];
        let out = if openai {
            run_openai(&env, &flags)
        } else {
            let mut args = vec!["run", "--json"];
            args.extend_from_slice(&flags);
            args.push("hi");
            env.run(&args)
        };
        out.assert_code(1);
        let message = out.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains("idle timeout (300ms)"), "{message}");
        assert!(
            message.contains("answered 200 and then sent no event")
                && message.contains("--tool-choice"),
            "{message}"
        );
    }
    // A stream that stalls after its first event is a plain idle timeout.
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().text("x")).with_fault(Fault::HangAfter(1)),
    ]);
    let out = env.run(&[
        "run",
        "--json",
        "--idle-timeout",
        "300ms",
        "--max-retries",
        "0",
        "hi",
    ]);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(!message.contains("no event"), "{message}");
}

/// llama-cpp-python's answer to a `tool_choice` its chat format cannot stream: 200 with
/// event-stream headers, then the (chunked) body ends empty, as the server's handler
/// raised after the headers were sent. The error says what that usually means.
#[test]
fn an_empty_stream_after_200_suggests_the_likely_cause() {
    let empty = || Reply::raw(200, "text/event-stream; charset=utf-8", "");
    let env = TestEnv::new(vec![empty(), empty()]);
    let out = run_openai(&env, &["--tool-choice", "auto", "--max-retries", "1"]);
    out.assert_code(1);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("(after 0 chunks)"), "{message}");
    assert!(
        message.contains("closed the stream without a chunk") && message.contains("--tool-choice"),
        "{message}"
    );
    assert_eq!(
        env.server.request_count(),
        2,
        "retried once, as any dropped stream"
    );
    // A stream dropped after its first chunk is no such case.
    let env = TestEnv::new(vec![Reply::Sse(vec![chat::delta(
        json!({"content": "x"}),
        None,
    )])]);
    let out = run_openai(&env, &["--max-retries", "0"]);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("(after 1 chunks)"), "{message}");
    assert!(!message.contains("without a chunk"), "{message}");
}

#[test]
fn verbose_input_tokens_include_cache_reads_like_the_summary() {
    let env = TestEnv::new(vec![Reply::turn(
        Turn::new().text("x").usage(100, 7).cache(50, 900),
    )]);
    let out = env.run(&["run", "-v", "hi"]);
    out.assert_code(0);
    let turn_line = out
        .stderr
        .lines()
        .find(|l| l.contains("turn 1: stop_reason"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(turn_line.contains("1050 in / 7 out tokens"), "{turn_line}");
    assert!(
        out.stderr
            .contains("1 turns · 0 tool calls · 1050 in / 7 out tokens")
            || out
                .stderr
                .contains("1 turn · 0 tool calls · 1050 in / 7 out tokens"),
        "{}",
        out.stderr
    );
}

/// A server that sends no usage (llama-cpp-python; a gateway dropping it): the
/// transcript's counts are null and so is the cost, on both wires.
#[test]
fn unknown_usage_is_null_not_zero() {
    // A priced model, so that a null cost can only come from the unknown usage.
    let anthropic_turn = |usage: &str, delta_usage: &str| {
        vec![
            format!(
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\
                 \"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\
                 \"content\":[]{usage}}}}}\n\n"
            ),
            crate::support::sse::block_start(0, json!({"type": "text", "text": ""})),
            crate::support::sse::block_delta(0, json!({"type": "text_delta", "text": "hi"})),
            crate::support::sse::block_stop(0),
            format!(
                "event: message_delta\ndata: {{\"type\":\"message_delta\",\
                 \"delta\":{{\"stop_reason\":\"end_turn\"}}{delta_usage}}}\n\n"
            ),
            crate::support::sse::message_stop(),
        ]
    };
    let anthropic = anthropic_turn("", "");
    let openai = vec![
        chat_delta(json!({"role": "assistant", "content": "hi"}), None),
        chat_delta(json!({}), Some("stop")),
        crate::support::chat::done(),
    ];
    for (frames, is_openai) in [(anthropic, false), (openai, true)] {
        let env = TestEnv::new(vec![Reply::Sse(frames)]);
        let out = if is_openai {
            run_openai(&env, &[])
        } else {
            env.run(&["run", "--json", "hi"])
        };
        out.assert_code(0);
        let t = out.json();
        assert_eq!(
            t["usage"],
            json!({"input_tokens": null, "output_tokens": null,
                   "cache_creation_input_tokens": null, "cache_read_input_tokens": null}),
            "openai: {is_openai}"
        );
        assert_eq!(t["cost_usd"], json!(null), "openai: {is_openai}");
        // The summary line does not print the unknown counts as zeros either.
        assert!(
            out.stderr
                .contains("1 turn · 0 tool calls · tokens not reported"),
            "{}",
            out.stderr
        );
    }
    // The same stream with usage has counts and a cost.
    let env = TestEnv::new(vec![Reply::Sse(anthropic_turn(
        r#","usage":{"input_tokens":10,"output_tokens":1}"#,
        r#","usage":{"output_tokens":5}"#,
    ))]);
    let t = env.run(&["run", "--json", "hi"]).json();
    assert_eq!(t["usage"]["input_tokens"], 10);
    assert_eq!(t["usage"]["output_tokens"], 5);
    assert!(t["cost_usd"].as_f64().is_some(), "{}", t["cost_usd"]);
}

fn chat_delta(d: serde_json::Value, finish: Option<&str>) -> String {
    crate::support::chat::delta(d, finish)
}
