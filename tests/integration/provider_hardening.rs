//! Provider hardening: redirects are never followed, so the key reaches no
//! other host; numbers in tool inputs keep every digit; one tool_use id is one call (a
//! gateway's per-fragment blocks merge, a real duplicate fails the turn before anything
//! runs); an OpenAI tool call without a name is answered, not fatal.

use crate::support::sse::{
    Usage, block_delta, block_start, block_stop, message_delta, message_start, message_stop,
};
use crate::support::*;
use serde_json::json;

/// The assistant's tool_use inputs and the user's tool_results, as sent back in request `n`.
fn results_of(env: &TestEnv, n: usize) -> Vec<ToolResultSeen> {
    env.server.requests()[n].tool_results()
}

#[test]
fn a_redirect_is_an_error_naming_it_and_the_other_host_sees_nothing() {
    for (code, provider) in [(302, "anthropic"), (307, "anthropic"), (301, "openai")] {
        let other = MockServer::start(vec![Reply::turn(Turn::new().text("from elsewhere"))]);
        let target = match provider {
            "openai" => format!("{}/chat/completions", other.openai_url()),
            _ => format!("{}/v1/messages", other.url()),
        };
        let env = TestEnv::new(vec![Reply::redirect(code, &target)]);
        let base = match provider {
            "openai" => env.server.openai_url(),
            _ => env.server.url(),
        };
        let out = env.run_with_env(
            &[
                "run",
                "--json",
                "--provider",
                provider,
                "-m",
                "m",
                "--base-url",
                &base,
                "hi",
            ],
            &[("OPENAI_API_KEY", OPENAI_KEY)],
        );
        out.assert_code(1).assert_no_secret();
        let t = out.json();
        assert_eq!(t["status"], "error");
        assert_eq!(t["error"]["kind"], "api_error");
        let message = t["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("HTTP {code} redirect to {target}")),
            "{message}"
        );
        assert_eq!(env.server.request_count(), 1, "not retried");
        assert_eq!(other.request_count(), 0, "{provider} {code}: followed");
    }
}

#[test]
fn floats_in_tool_inputs_go_back_digit_for_digit_and_wide_integers_are_refused() {
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .tool_raw(
                    "toolu_f",
                    "Glob",
                    r#"{"pattern": "*.x", "x": 923.5730667252267}"#,
                )
                .tool_raw(
                    "toolu_n",
                    "Glob",
                    r#"{"pattern": "*", "n": 18446744073709551616}"#,
                ),
        ),
        Reply::turn(Turn::new().text("done")),
    ]);
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0);
    let reqs = env.server.requests();
    let sent = String::from_utf8_lossy(&reqs[1].raw_body).to_string();
    assert!(
        sent.contains("923.5730667252267"),
        "the history keeps the float"
    );
    assert!(!sent.contains("923.5730667252268"));
    let results = results_of(&env, 1);
    assert_eq!(results.len(), 2);
    let wide = &results[1];
    assert_eq!(wide.tool_use_id, "toolu_n");
    assert!(wide.is_error);
    assert!(
        wide.content.contains("the integer 18446744073709551616")
            && wide.content.contains("as a string"),
        "{}",
        wide.content
    );
    env.server.assert_invariants();
}

/// LiteLLM's Anthropic endpoint in front of llama.cpp opens a tool_use block per argument
/// fragment, all with one id.
#[test]
fn per_fragment_blocks_with_one_id_run_as_one_call() {
    let tool = json!({"type": "tool_use", "id": "toolu_x", "name": "ReadFile", "input": {}});
    let fragment = |i: usize, part: &str| {
        vec![
            block_start(i, tool.clone()),
            block_delta(i, json!({"type": "input_json_delta", "partial_json": part})),
            block_stop(i),
        ]
    };
    let mut frames = vec![message_start(10, 0, 0)];
    for (i, part) in ["", r#"{"pa"#, r#"th": "no"#, r#"tes.txt"}"#]
        .iter()
        .enumerate()
    {
        frames.extend(fragment(i, part));
    }
    frames.push(message_delta("tool_use", &Usage::default()));
    frames.push(message_stop());
    let env = TestEnv::new(vec![
        Reply::Sse(frames),
        Reply::turn(Turn::new().text("ok")),
    ]);
    env.write("notes.txt", "alpha\n");
    let out = env.run(&["run", "--json", "hi"]);
    out.assert_code(0);
    let results = results_of(&env, 1);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].tool_use_id, "toolu_x");
    assert!(!results[0].is_error, "{}", results[0].content);
    assert!(
        results[0].content.contains("alpha"),
        "{}",
        results[0].content
    );
    let history = env.server.requests()[1].messages()[1].clone();
    assert_eq!(history["content"].as_array().unwrap().len(), 1, "{history}");
    assert_eq!(history["content"][0]["input"], json!({"path": "notes.txt"}));
    env.server.assert_invariants();
}

#[test]
fn one_id_for_two_calls_fails_the_turn_and_nothing_runs() {
    let twice = || {
        Reply::turn(
            Turn::new()
                .tool("toolu_x", "Bash", json!({"command": "touch ran.txt"}))
                .tool("toolu_x", "Bash", json!({"command": "touch ran.txt"})),
        )
    };
    let env = TestEnv::new(vec![twice(), twice()]);
    let out = env.run(&["run", "--json", "--allow-bash", "--max-retries", "1", "hi"]);
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["error"]["kind"], "stream_error");
    let message = t["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("toolu_x") && message.contains("two calls"),
        "{message}"
    );
    assert!(
        out.stderr.contains("retrying"),
        "retried once: {}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 2);
    assert!(!env.path("ran.txt").exists(), "a call ran");
}

#[test]
fn an_openai_tool_call_without_a_name_gets_an_error_result_and_the_run_goes_on() {
    let nameless = vec![
        chat::delta(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_n",
                   "type": "function", "function": {"arguments": "{}"}}]}),
            None,
        ),
        chat::delta(json!({}), Some("tool_calls")),
        chat::done(),
    ];
    let env = TestEnv::new(vec![
        Reply::Sse(nameless),
        Reply::turn(Turn::new().text("recovered")),
    ]);
    let base = env.server.openai_url();
    let out = env.run(&[
        "run",
        "--json",
        "--provider",
        "openai",
        "-m",
        "m",
        "--base-url",
        &base,
        "hi",
    ]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "recovered");
    let messages = env.server.requests()[1].body["messages"].clone();
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    assert_eq!(tool["tool_call_id"], "call_n");
    let content = tool["content"].as_str().unwrap();
    assert!(
        content.starts_with("Error: unknown tool \"\"; the enabled tools are: "),
        "{content}"
    );
}
