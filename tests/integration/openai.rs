//! `agent run --provider openai` against the loopback mock speaking the OpenAI-compatible
//! chat-completions wire: a whole multi-turn session (tools run, `role: "tool"` results
//! paired by id in order), the faults (429 with retry-after, a dropped stream, a 400
//! error body), usage errors, and a record/replay round trip. Every run goes through
//! `TestEnv` (scrubbed environment, hang guard); the key is checked in stdout, stderr
//! and every file written.

use serde_json::{Value, json};

use crate::support::*;

/// A mock whose workspace holds `notes.txt`.
fn env_with_notes(script: Vec<Reply>) -> TestEnv {
    let env = TestEnv::new(script);
    env.write("notes.txt", "alpha\nbeta\n");
    env
}

/// `--provider openai` at the mock, with a model, tools allowed and `--json`, then `extra`.
fn openai_args(env: &TestEnv, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--provider",
        "openai",
        "--base-url",
        &env.server.openai_url(),
        "-m",
        "mock-model",
        "--full-auto",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn refs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `agent run ARGS` with OPENAI_API_KEY set (or not).
fn run(env: &TestEnv, args: &[String], with_key: bool) -> RunOutput {
    let mut all = vec!["run"];
    all.extend(refs(args));
    let vars: &[(&str, &str)] = if with_key {
        &[("OPENAI_API_KEY", OPENAI_KEY)]
    } else {
        &[]
    };
    env.run_with_env(&all, vars)
}

/// A final answer with the usage the old builder gave text turns.
fn text_turn(text: &str) -> Reply {
    Reply::turn(Turn::new().text(text).usage(50, 7))
}

/// Optional text, then these calls; usage 100/20.
fn tool_turn(text: Option<&str>, calls: &[(&str, &str, Value)]) -> Turn {
    let mut t = Turn::new();
    if let Some(text) = text {
        t = t.text(text);
    }
    for (id, name, input) in calls {
        t = t.tool(id, name, input.clone());
    }
    t.usage(100, 20)
}

#[test]
fn a_multi_turn_session_runs_tools_and_pairs_results_by_id() {
    let env = env_with_notes(vec![
        Reply::turn(tool_turn(
            Some("Looking around."),
            &[
                ("call_read", "ReadFile", json!({"path": "notes.txt"})),
                ("call_glob", "Glob", json!({"pattern": "*.txt"})),
            ],
        )),
        Reply::turn(tool_turn(
            None,
            &[(
                "call_write",
                "WriteFile",
                json!({"path": "out.txt", "content": "gamma\n"}),
            )],
        )),
        text_turn("Wrote out.txt — done."),
    ]);
    let out = run(&env, &openai_args(&env, &["copy the notes"]), false);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
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
    assert_eq!(env.read("out.txt"), "gamma\n");
    // The transcript keeps the Anthropic message format whatever the provider.
    assert_eq!(t["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(t["messages"][2]["content"][0]["type"], "tool_result");

    env.server.assert_invariants();
    let requests = env.server.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.wire, Wire::OpenAi);
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
    let env = env_with_notes(vec![
        Reply::api_error(
            429,
            "rate_limit_exceeded",
            "Rate limit reached for requests",
        )
        .with_header("retry-after", "1"),
        text_turn("after the wait"),
    ]);
    let transcript = env.out("t.json");
    let args = openai_args(&env, &["-o", transcript.to_str().unwrap(), "hi"]);
    let out = run(&env, &args, true);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["result"], "after the wait");
    assert_eq!(t["retries"], 1);
    assert_eq!(read_json(&transcript)["result"], "after the wait");
    let err = &out.stderr;
    assert!(err.contains("retrying in 1.0s"), "{err}");
    assert!(
        err.contains("HTTP 429 rate_limit_exceeded: Rate limit reached"),
        "{err}"
    );
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {OPENAI_KEY}").as_str())
        );
    }
    env.server.assert_invariants();
}

#[test]
fn a_dropped_stream_is_retried_and_its_calls_never_run() {
    let partial = tool_turn(
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
    let env = env_with_notes(vec![
        Reply::turn(partial).with_fault(Fault::DropBeforeEnd),
        text_turn("clean answer"),
    ]);
    let out = run(&env, &openai_args(&env, &["hi"]), false);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["result"], "clean answer");
    assert_eq!(t["retries"], 1);
    assert_eq!(t["tool_calls"], json!([]));
    assert_eq!(t["messages"].as_array().unwrap().len(), 2);
    assert!(
        !env.path("partial.txt").exists(),
        "a failed attempt's call ran"
    );
    let err = &out.stderr;
    assert!(err.contains("retrying in"), "{err}");
    assert!(
        err.contains("mid-stream") || err.contains("before a finish_reason"),
        "{err}"
    );
    assert_eq!(env.server.requests().len(), 2);
    env.server.assert_invariants();
}

#[test]
fn a_400_error_body_is_surfaced_and_not_retried() {
    let env = env_with_notes(vec![
        Reply::api_error(
            400,
            "invalid_request_error",
            "The model `mock-model` does not exist",
        ),
        text_turn("never"),
    ]);
    let out = run(&env, &openai_args(&env, &["hi"]), true);
    out.assert_code(1).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert_eq!(t["error"]["kind"], "api_error");
    let expected = "HTTP 400 invalid_request_error: The model `mock-model` does not exist";
    assert_eq!(t["error"]["message"], expected);
    assert!(out.stderr.contains(expected), "{}", out.stderr);
    assert_eq!(env.server.requests().len(), 1);
}

#[test]
fn usage_errors_name_the_flag_or_variable() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--provider", "openai", "hi"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--model") && out.stderr.contains("AGENT_MODEL"),
        "{}",
        out.stderr
    );
    let out = env.run_with_env(&["run", "hi"], &[("AGENT_PROVIDER", "gemini")]);
    out.assert_code(2);
    assert!(out.stderr.contains("AGENT_PROVIDER"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn record_then_replay_an_openai_session() {
    let env = env_with_notes(vec![
        Reply::turn(tool_turn(
            None,
            &[(
                "call_w",
                "WriteFile",
                json!({"path": "made.txt", "content": "made\n"}),
            )],
        )),
        text_turn("made it"),
    ]);
    let cassette = env.out("openai.cassette.jsonl");
    let record = openai_args(&env, &["--record", cassette.to_str().unwrap(), "make it"]);
    let out = run(&env, &record, true);
    out.assert_code(0).assert_no_secret();
    let text = assert_file_has_no_secret(&cassette);
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["provider"], "openai");
    assert_eq!(text.lines().count(), 3);

    // Replay in a fresh workspace: no key, no server, no --provider; the tools run.
    let fresh = env_with_notes(vec![]);
    let mut c = fresh.command(&[
        "run",
        "--replay",
        cassette.to_str().unwrap(),
        "--full-auto",
        "--json",
        "make it",
    ]);
    c.env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL");
    let out = fresh.spawn_command(c).wait();
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["result"], "made it");
    assert_eq!(t["tool_calls"][0]["id"], "call_w");
    assert_eq!(fresh.read("made.txt"), "made\n");
    assert_eq!(
        env.server.requests().len(),
        2,
        "replay never reached the server"
    );
    assert_eq!(fresh.server.request_count(), 0);
}
