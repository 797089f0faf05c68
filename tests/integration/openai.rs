//! `agent run --provider openai` against the loopback mock OpenAI-compatible server: a
//! whole multi-turn session (tools run, `role: "tool"` results paired by id in order),
//! the faults (429 with retry-after, a dropped stream, a 400 error body), usage errors,
//! and a record/replay round trip.

use serde_json::{Value, json};

use crate::support::openai::{
    OpenAiMock, Reply, run_agent, text_turn, tool_turn, tool_turn_prefix, transcript,
};

const KEY: &str = "sk-openai-test-0123456789";

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}

fn base_args(mock: &OpenAiMock) -> Vec<String> {
    [
        "--provider",
        "openai",
        "--base-url",
        &mock.base_url,
        "-m",
        "mock-model",
        "--full-auto",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn args<'a>(base: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = base.iter().map(String::as_str).collect();
    v.extend_from_slice(extra);
    v
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_multi_turn_session_runs_tools_and_pairs_results_by_id() {
    let ws = workspace();
    let mock = OpenAiMock::start(vec![
        Reply::Sse(tool_turn(
            Some("Looking around."),
            &[
                ("call_read", "ReadFile", json!({"path": "notes.txt"})),
                ("call_glob", "Glob", json!({"pattern": "*.txt"})),
            ],
        )),
        Reply::Sse(tool_turn(
            None,
            &[(
                "call_write",
                "WriteFile",
                json!({"path": "out.txt", "content": "gamma\n"}),
            )],
        )),
        Reply::Sse(text_turn("Wrote out.txt — done.")),
    ]);
    let base = base_args(&mock);
    let out = run_agent(ws.path(), &args(&base, &["copy the notes"]), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = transcript(&out);
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "Wrote out.txt — done.");
    assert_eq!(t["num_turns"], 3);
    assert_eq!(t["model"], "mock-model");
    assert_eq!(t["usage"]["input_tokens"], 250);
    assert_eq!(t["usage"]["output_tokens"], 47);
    let names: Vec<_> = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["ReadFile", "Glob", "WriteFile"]);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out.txt")).unwrap(),
        "gamma\n"
    );
    // The transcript keeps the Anthropic message format whatever the provider.
    assert_eq!(t["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(t["messages"][2]["content"][0]["type"], "tool_result");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0];
    assert_eq!(first.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(first.header("authorization"), None, "no key, no header");
    assert_eq!(first.body["model"], "mock-model");
    assert_eq!(first.body["stream"], true);
    assert_eq!(first.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(first.body["messages"][0]["role"], "system");
    assert_eq!(
        first.body["messages"][1],
        json!({"role": "user", "content": "copy the notes"})
    );
    let tools = first.body["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t["type"] == "function" && t["function"]["parameters"].is_object())
    );
    assert!(tools.iter().any(|t| t["function"]["name"] == "Bash"));

    // Turn 2 carries the first assistant turn and one tool message per call, in order.
    let msgs = requests[1].body["messages"].as_array().unwrap();
    let assistant = &msgs[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "Looking around.");
    let ids: Vec<_> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_read", "call_glob"]);
    let args0: Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args0, json!({"path": "notes.txt"}));
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_read");
    assert!(
        msgs[3]["content"].as_str().unwrap().contains("alpha"),
        "{}",
        msgs[3]
    );
    assert_eq!(msgs[4]["role"], "tool");
    assert_eq!(msgs[4]["tool_call_id"], "call_glob");
    assert!(msgs[4]["content"].as_str().unwrap().contains("notes.txt"));
    assert_eq!(msgs.len(), 5);
    // Turn 3 adds the write call and its result.
    let msgs = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(msgs[5]["tool_calls"][0]["id"], "call_write");
    assert_eq!(msgs[6]["tool_call_id"], "call_write");
    assert_eq!(msgs.len(), 7);
}

#[test]
fn a_429_is_retried_after_its_retry_after_and_the_key_is_sent() {
    let ws = workspace();
    let mock = OpenAiMock::start(vec![
        Reply::error(
            429,
            "rate_limit_exceeded",
            "Rate limit reached for requests",
            &[("retry-after", "1")],
        ),
        Reply::Sse(text_turn("after the wait")),
    ]);
    let base = base_args(&mock);
    let out = run_agent(ws.path(), &args(&base, &["hi"]), &[("OPENAI_API_KEY", KEY)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = transcript(&out);
    assert_eq!(t["result"], "after the wait");
    assert_eq!(t["retries"], 1);
    let err = stderr(&out);
    assert!(err.contains("retrying in 1.0s"), "{err}");
    assert!(
        err.contains("HTTP 429 rate_limit_exceeded: Rate limit reached"),
        "{err}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
}

#[test]
fn a_dropped_stream_is_retried_and_its_calls_never_run() {
    let ws = workspace();
    let partial = tool_turn_prefix(
        None,
        &[
            (
                "call_partial",
                "WriteFile",
                json!({"path": "partial.txt", "content": "x"}),
            ),
            ("call_cut", "ReadFile", json!({"path": "notes.txt"})),
        ],
    );
    let mock = OpenAiMock::start(vec![
        Reply::Dropped(partial),
        Reply::Sse(text_turn("clean answer")),
    ]);
    let base = base_args(&mock);
    let out = run_agent(ws.path(), &args(&base, &["hi"]), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = transcript(&out);
    assert_eq!(t["result"], "clean answer");
    assert_eq!(t["retries"], 1);
    assert_eq!(t["tool_calls"], json!([]));
    assert_eq!(t["messages"].as_array().unwrap().len(), 2);
    assert!(
        !ws.path().join("partial.txt").exists(),
        "a failed attempt's call ran"
    );
    let err = stderr(&out);
    assert!(err.contains("retrying in"), "{err}");
    assert!(
        err.contains("mid-stream") || err.contains("before a finish_reason"),
        "{err}"
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn a_400_error_body_is_surfaced_and_not_retried() {
    let ws = workspace();
    let mock = OpenAiMock::start(vec![
        Reply::error(
            400,
            "invalid_request_error",
            "The model `mock-model` does not exist",
            &[],
        ),
        Reply::Sse(text_turn("never")),
    ]);
    let base = base_args(&mock);
    let out = run_agent(ws.path(), &args(&base, &["hi"]), &[]);
    assert_eq!(out.status.code(), Some(1));
    let t = transcript(&out);
    assert_eq!(t["status"], "error");
    assert_eq!(t["error"]["kind"], "api_error");
    let expected = "HTTP 400 invalid_request_error: The model `mock-model` does not exist";
    assert_eq!(t["error"]["message"], expected);
    assert!(stderr(&out).contains(expected), "{}", stderr(&out));
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn usage_errors_name_the_flag_or_variable() {
    let ws = workspace();
    let out = run_agent(ws.path(), &["--provider", "openai", "hi"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--model") && err.contains("AGENT_MODEL"),
        "{err}"
    );
    let out = run_agent(ws.path(), &["hi"], &[("AGENT_PROVIDER", "gemini")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("AGENT_PROVIDER"));
}

#[test]
fn record_then_replay_an_openai_session() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("openai.cassette.jsonl");
    let mock = OpenAiMock::start(vec![
        Reply::Sse(tool_turn(
            None,
            &[(
                "call_w",
                "WriteFile",
                json!({"path": "made.txt", "content": "made\n"}),
            )],
        )),
        Reply::Sse(text_turn("made it")),
    ]);
    let base = base_args(&mock);
    let record = args(&base, &["--record", cassette.to_str().unwrap(), "make it"]);
    let out = run_agent(ws.path(), &record, &[("OPENAI_API_KEY", KEY)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(KEY), "the key reached the cassette");
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["provider"], "openai");
    assert_eq!(text.lines().count(), 3);

    // Replay in a fresh workspace: no key, no server, no --provider; the tools run.
    let fresh = workspace();
    let out = run_agent(
        fresh.path(),
        &[
            "--replay",
            cassette.to_str().unwrap(),
            "--full-auto",
            "--json",
            "make it",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = transcript(&out);
    assert_eq!(t["result"], "made it");
    assert_eq!(t["tool_calls"][0]["id"], "call_w");
    assert_eq!(
        std::fs::read_to_string(fresh.path().join("made.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(mock.requests().len(), 2, "replay never reached the server");
}
