//! `agent run --provider openai-responses` against the mock speaking OpenAI's Responses
//! API: a multi-turn session whose reasoning items go back byte for byte in the next
//! request (`store: false`, `include`, `prompt_cache_key` stable, `instructions`), usage
//! with cached and reasoning tokens and its cost, the `max_output_tokens` continuation,
//! `response.failed` retried or not by its class, an Azure-style base URL with an
//! `api-key` header, and record → replay → `--resume` of a Responses run.

use serde_json::{Value, json};

use crate::support::responses::{self, reasoning_item};
use crate::support::*;

const ENCRYPTED: &str = "gAAAA-enc/+==\u{e9}-1";

fn responses_args(env: &TestEnv, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "run",
        "--provider",
        "openai-responses",
        "--base-url",
        &env.server.openai_url(),
        "-m",
        "gpt-mock",
        "--full-auto",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(env: &TestEnv, args: &[String]) -> RunOutput {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run_with_env(&args, &[("OPENAI_API_KEY", OPENAI_KEY)])
}

fn input_of(body: &Value) -> &[Value] {
    body["input"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

#[test]
fn a_session_sends_reasoning_back_byte_for_byte_and_counts_its_tokens() {
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .thinking("Plan: read both.", ENCRYPTED)
                .text("Reading.")
                .tool("call_r", "ReadFile", json!({"path": "notes.txt"}))
                .tool("call_g", "Glob", json!({"pattern": "*.txt"}))
                .usage(200, 40)
                .cache(0, 1000),
        ),
        Reply::turn(Turn::new().text("Both read — done.").usage(300, 10)),
    ]);
    env.write("notes.txt", "alpha\n");
    env.write(
        ".agent/settings.json",
        r#"{"prices": {"gpt-mock": {"input": 1, "output": 10, "cache_read": 0.1}}}"#,
    );
    let out = run(
        &env,
        &responses_args(&env, &["--effort", "high", "--tool-choice", "auto", "look"]),
    );
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "Both read — done.");
    assert_eq!(t["usage"]["input_tokens"], 500);
    assert_eq!(t["usage"]["cache_read_input_tokens"], 1000);
    assert_eq!(t["usage"]["output_tokens"], 50);
    // 500 in at $1, 1000 cached at $0.1, 50 out at $10 per million.
    let cost = t["total_cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0011).abs() < 1e-9, "{cost}");
    // The transcript holds the reasoning item opaquely, never as the answer.
    let block = &t["messages"][1]["content"][0];
    assert_eq!(block["type"], "reasoning");
    assert_eq!(block["summary"], "Plan: read both.");
    assert_eq!(
        block["item"],
        reasoning_item(0, "Plan: read both.", ENCRYPTED)
    );

    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0];
    assert_eq!(first.path, "/v1/responses");
    assert_eq!(first.wire, Wire::Responses);
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    let b = &first.body;
    assert_eq!(b["store"], false);
    assert_eq!(b["stream"], true);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["reasoning"], json!({"effort": "high"}));
    assert_eq!(b["tool_choice"], "auto");
    assert_eq!(b["parallel_tool_calls"], true);
    assert_eq!(b["max_output_tokens"], 8192);
    assert!(b["instructions"].as_str().unwrap().len() > 20);
    assert_eq!(
        input_of(b),
        [json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "look"}]})]
    );
    let tools = b["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "ReadFile" && t["strict"] == false)
    );
    // One cache key for the run: its session id.
    assert_eq!(b["prompt_cache_key"], t["session_id"]);
    assert_eq!(reqs[1].body["prompt_cache_key"], t["session_id"]);

    // The second request: the reasoning item exactly as streamed, then the text, the
    // calls and their outputs in order.
    let raw = String::from_utf8(reqs[1].raw_body.clone()).unwrap();
    assert!(
        raw.contains(&reasoning_item(0, "Plan: read both.", ENCRYPTED)),
        "{raw}"
    );
    let input = input_of(&reqs[1].body);
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    assert_eq!(input[3]["call_id"], "call_r");
    assert_eq!(input[3]["arguments"], "{\"path\":\"notes.txt\"}");
    assert_eq!(input[5]["call_id"], "call_r");
    assert!(input[5]["output"].as_str().unwrap().contains("alpha"));
    assert_eq!(input[6]["call_id"], "call_g");
}

#[test]
fn a_max_output_tokens_stop_is_continued_and_joined() {
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .text("The first half, ")
                .stop_reason("max_tokens"),
        ),
        Reply::turn(Turn::new().text("and the second.")),
    ]);
    let out = run(&env, &responses_args(&env, &["explain"]));
    out.assert_code(0);
    assert_eq!(out.json()["result"], "The first half, and the second.");
    env.server.assert_invariants();
    let input = input_of(&env.server.requests()[1].body).to_vec();
    assert_eq!(input[1]["content"][0]["text"], "The first half, ");
}

fn failed(code: &str) -> Reply {
    Reply::Sse(vec![
        responses::event(&json!({"type": "response.created", "response": {"id": "resp_f"}})),
        responses::event(
            &json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": code, "message": "it broke"}}}),
        ),
    ])
}

#[test]
fn a_failed_response_is_retried_by_its_class() {
    let env = TestEnv::new(vec![
        failed("server_error"),
        Reply::turn(Turn::new().text("ok")),
    ]);
    let out = run(&env, &responses_args(&env, &["--max-retries", "2", "hi"]));
    out.assert_code(0);
    assert_eq!(env.server.request_count(), 2);

    let env = TestEnv::new(vec![
        failed("invalid_prompt"),
        Reply::turn(Turn::new().text("no")),
    ]);
    let out = run(&env, &responses_args(&env, &["--max-retries", "2", "hi"]));
    assert_ne!(out.code(), Some(0));
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_prompt"),
        "{t}"
    );
    assert_eq!(
        env.server.request_count(),
        1,
        "a permanent class is not retried"
    );
}

#[test]
fn an_azure_style_base_url_and_api_key_header_are_used_as_given() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("hi from azure"))]);
    let base = format!("{}/openai/v1", env.server.url());
    let out = env.run(&[
        "run",
        "--provider",
        "openai-responses",
        "--base-url",
        &base,
        "-m",
        "my-deployment",
        "--header",
        "api-key: azure-secret-key-123456",
        "--json",
        "hi",
    ]);
    out.assert_code(0);
    assert!(!out.stdout.contains("azure-secret-key-123456"));
    let reqs = env.server.requests();
    assert_eq!(reqs[0].path, "/openai/v1/responses");
    assert_eq!(reqs[0].header("api-key"), Some("azure-secret-key-123456"));
    assert_eq!(
        reqs[0].header("authorization"),
        None,
        "no OPENAI_API_KEY, no bearer"
    );
    assert_eq!(reqs[0].body["model"], "my-deployment");
    env.server.assert_invariants();
}

#[test]
fn a_responses_run_is_recorded_replayed_and_resumed_with_its_reasoning() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().thinking("Write it.", ENCRYPTED).tool(
            "call_w",
            "WriteFile",
            json!({"path": "made.txt", "content": "made\n"}),
        )),
        Reply::turn(Turn::new().thinking("Done now.", "enc-2").text("made it")),
        Reply::turn(Turn::new().text("and again")),
    ]);
    let cassette = env.out("responses.cassette.jsonl");
    let transcript = env.out("run.json");
    let out = run(
        &env,
        &responses_args(
            &env,
            &[
                "--record",
                cassette.to_str().unwrap(),
                "-o",
                transcript.to_str().unwrap(),
                "make it",
            ],
        ),
    );
    out.assert_code(0).assert_no_secret();
    let text = assert_file_has_no_secret(&cassette);
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["provider"], "openai-responses");

    // Replay in a fresh workspace: no key, no server; the tool runs, the reasoning is kept.
    let fresh = TestEnv::new(vec![]);
    let out = fresh.run(&[
        "run",
        "--replay",
        cassette.to_str().unwrap(),
        "--full-auto",
        "--json",
        "make it",
    ]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["result"], "made it");
    assert_eq!(fresh.read("made.txt"), "made\n");
    assert_eq!(
        t["messages"][1]["content"][0]["item"],
        reasoning_item(0, "Write it.", ENCRYPTED)
    );
    assert_eq!(fresh.server.request_count(), 0);

    // --resume: the follow-up request carries both reasoning items byte for byte.
    let args = [
        "run",
        "--provider",
        "openai-responses",
        "--base-url",
        &env.server.openai_url(),
        "--resume",
        transcript.to_str().unwrap(),
        "--json",
        "once more",
    ];
    let out = env.run_with_env(&args, &[("OPENAI_API_KEY", OPENAI_KEY)]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "and again");
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 3);
    let raw = String::from_utf8(reqs[2].raw_body.clone()).unwrap();
    assert!(
        raw.contains(&reasoning_item(0, "Write it.", ENCRYPTED)),
        "{raw}"
    );
    assert!(
        raw.contains(&reasoning_item(0, "Done now.", "enc-2")),
        "{raw}"
    );
    assert_eq!(reqs[2].body["model"], "gpt-mock");
    let input = input_of(&reqs[2].body);
    assert_eq!(input.last().unwrap()["content"][0]["text"], "once more");
    env.server.assert_invariants();
}
