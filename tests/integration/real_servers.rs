//! Streams in the shapes of real third-party servers (`tests/fixtures/servers/`), replayed
//! through the loopback mock: llama.cpp's `llama-server`, llama-cpp-python's server and
//! LiteLLM's proxy on both its chat-completions and its Anthropic-format endpoints. Each
//! session is a tool call (`ReadFile`) and then an answer; the transcript must hold the
//! decoded call, the text and the usage the server reported.

use serde_json::{Value, json};

use crate::support::*;

/// A workspace with `notes.txt` and a mock that replays these recordings in order.
fn env_replaying(recordings: &[&str]) -> TestEnv {
    let env = TestEnv::new(recordings.iter().map(|r| Reply::recorded(r)).collect());
    env.write("notes.txt", "alpha\nbeta\n");
    env
}

/// `agent run --provider openai` at the mock, with a key, to completion.
fn run_openai(env: &TestEnv) -> RunOutput {
    env.run_openai("smollm2", &["--json", "read notes.txt and summarise it"])
}

/// The one decoded call: `ReadFile` of notes.txt with the server's id, run successfully,
/// its result sent back on the second request, tool_use paired in the messages.
fn assert_one_read_call(env: &TestEnv, t: &Value, id: &str) {
    let calls = t["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["id"], id);
    assert_eq!(calls[0]["name"], "ReadFile");
    assert_eq!(calls[0]["input"], json!({"path": "notes.txt"}));
    assert_eq!(calls[0]["is_error"], false);
    let tool_use = &t["messages"][1]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["name"], "ReadFile");
    assert_eq!(tool_use["input"], json!({"path": "notes.txt"}));
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests[1].body.to_string();
    assert!(sent.contains("alpha") && sent.contains(id), "{sent}");
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn llama_server_with_timings_in_its_usage_chunk() {
    let env = env_replaying(&["llama_server_tool_call.sse", "llama_server_text.sse"]);
    let out = run_openai(&env);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "notes.txt holds two lines: alpha and beta.");
    assert_eq!(t["num_turns"], 2);
    assert_one_read_call(&env, &t, "Xk3v9QpL2mRt8sWz1bNc4yHd7fJa0eUo");
    assert_eq!(t["usage"]["input_tokens"], 412 + 440);
    assert_eq!(t["usage"]["output_tokens"], 21 + 9);
}

#[test]
fn llama_cpp_python_repeating_the_call_in_every_delta() {
    let env = env_replaying(&[
        "llama_cpp_python_tool_call.sse",
        "llama_cpp_python_text.sse",
    ]);
    let out = run_openai(&env);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "notes.txt holds alpha\u{a0}and beta.");
    assert_one_read_call(
        &env,
        &t,
        "call__0_ReadFile_chatcmpl-5e0c7b1a-3f9d-4c2e-8a61-d2b7f4e90a13",
    );
}

#[test]
fn llama_cpp_python_sending_no_usage_leaves_the_counts_unknown() {
    let env = env_replaying(&[
        "llama_cpp_python_tool_call.sse",
        "llama_cpp_python_text.sse",
    ]);
    let out = run_openai(&env);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["usage"]["input_tokens"], Value::Null, "{}", t["usage"]);
    assert_eq!(t["usage"]["output_tokens"], Value::Null, "{}", t["usage"]);
    assert_eq!(t["cost_usd"], Value::Null);
}

#[test]
fn litellm_chat_with_null_fragments_and_a_usage_chunk_with_choices() {
    let env = env_replaying(&["litellm_chat_tool_call.sse", "litellm_chat_text.sse"]);
    let out = run_openai(&env);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "notes.txt lists alpha and beta.");
    assert_one_read_call(&env, &t, "call_7d1e0b4c9a2f4e6b8c3d5a1f");
    assert_eq!(t["usage"]["input_tokens"], 398 + 431);
    assert_eq!(t["usage"]["output_tokens"], 18 + 8);
}

#[test]
fn litellm_messages_reporting_input_tokens_only_in_message_delta() {
    let env = env_replaying(&[
        "litellm_messages_tool_call.sse",
        "litellm_messages_text.sse",
    ]);
    let out = env.run(&["run", "-m", "smollm2", "--json", "read notes.txt"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "notes.txt has two lines: alpha, beta.");
    assert_one_read_call(&env, &t, "call_2c9e4a7b1f0d4b8e9a6c3d5e");
    assert_eq!(env.server.requests()[0].wire, Wire::Anthropic);
    assert_eq!(t["usage"]["input_tokens"], 405 + 436);
    assert_eq!(t["usage"]["output_tokens"], 17 + 10);
}
