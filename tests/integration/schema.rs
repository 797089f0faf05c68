//! `--output-schema`: the answer comes through the StructuredOutput tool, is checked
//! against the schema, violations go back to the model, `schema_failed` (exit 6) when it
//! never complies, exit 2 for a bad schema, and `--verify` still gates success.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

const SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0}
  },
  "required": ["name", "age"],
  "additionalProperties": false
}"#;

fn reply(turn: Turn) -> Reply {
    Reply::turn(turn)
}

fn answer(id: &str, value: Value) -> Reply {
    reply(Turn::new().tool(id, "StructuredOutput", value))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A TestEnv with the schema written outside the workspace.
fn env_with(script: Vec<Reply>) -> (TestEnv, String) {
    let env = TestEnv::new(script);
    let schema = env.out("schema.json");
    std::fs::write(&schema, SCHEMA).unwrap();
    (env, s(&schema).to_string())
}

#[test]
fn a_valid_first_answer_is_stdout_as_one_line_of_json() {
    let (env, schema) = env_with(vec![reply(Turn::new().text("Here is the answer.").tool(
        "toolu_ans",
        "StructuredOutput",
        json!({"name": "Ada", "age": 36}),
    ))]);
    let t = env.out("t.json");
    let out = env.run(&["run", "who?", "--output-schema", &schema, "-o", s(&t)]);
    out.assert_code(0).assert_no_secret();
    assert_eq!(
        out.stdout, "{\"age\":36,\"name\":\"Ada\"}\n",
        "exactly the value"
    );

    let requests = env.server.requests();
    assert_eq!(requests.len(), 1, "an accepted answer ends the run");
    let tools = requests[0].body["tools"].as_array().unwrap();
    let tool = tools
        .iter()
        .find(|t| t["name"] == "StructuredOutput")
        .unwrap();
    let mut expected: Value = serde_json::from_str(SCHEMA).unwrap();
    expected.as_object_mut().unwrap().remove("$schema");
    assert_eq!(without_cache_control(&tool["input_schema"]), expected);
    assert!(
        requests[0]
            .system_text()
            .contains("calling the StructuredOutput tool")
    );

    let tr = read_json(&t);
    assert_eq!(tr["status"], "success");
    assert_eq!(tr["structured_output"], json!({"name": "Ada", "age": 36}));
    assert_eq!(tr["result"], "{\"age\":36,\"name\":\"Ada\"}");
    assert_eq!(tr["tool_calls"][0]["name"], "StructuredOutput");
    assert_eq!(tr["tool_calls"][0]["is_error"], false);
}

#[test]
fn an_invalid_answer_is_corrected_after_an_error_result() {
    let (env, schema) = env_with(vec![
        answer("toolu_1", json!({"name": 7, "age": -1, "extra": true})),
        answer("toolu_2", json!({"name": "Ada", "age": 36})),
    ]);
    let out = env.run(&["run", "who?", "--output-schema", &schema, "--json"]);
    out.assert_code(0);
    let seen = env.server.requests()[1].tool_results();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].tool_use_id, "toolu_1");
    assert!(seen[0].is_error);
    let text = &seen[0].content;
    assert!(text.contains("(3 violations)"), "{text}");
    for needle in [
        "- /name: 7 is not of type \"string\"",
        "- /age: -1 is less than the minimum of 0",
        "- (root): Additional properties are not allowed ('extra' was unexpected)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    env.server.assert_invariants();
    let t = out.json();
    assert_eq!(t["structured_output"], json!({"name": "Ada", "age": 36}));
    assert_eq!(t["num_turns"], 2);
}

#[test]
fn never_valid_is_schema_failed_exit_6() {
    // One correction allowed: stopping without an answer counts, then a wrong answer.
    let (env, schema) = env_with(vec![
        reply(Turn::new().text("Ada, 36.")),
        answer("toolu_1", json!({"name": "Ada"})),
    ]);
    let t = env.out("t.json");
    let out = env.run(&[
        "run",
        "who?",
        "--output-schema",
        &schema,
        "--max-schema-retries",
        "1",
        "-o",
        s(&t),
    ]);
    out.assert_code(6);
    assert_eq!(out.stdout, "", "no answer on stdout");
    assert!(
        out.stderr.contains("--max-schema-retries 1"),
        "{}",
        out.stderr
    );
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let asked = mock::message_text(requests[1].messages().last().unwrap());
    assert!(
        asked.contains("Call the StructuredOutput tool now"),
        "{asked}"
    );
    let tr = read_json(&t);
    assert_eq!(tr["status"], "schema_failed");
    assert_eq!(tr["subtype"], "error_max_structured_output_retries");
    assert_eq!(tr["error"]["kind"], "schema_failed");
    assert!(
        tr["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"age\" is a required property")
    );
    assert_eq!(tr["structured_output"], Value::Null);
}

#[test]
fn an_answer_on_the_last_turn_still_counts() {
    let (env, schema) = env_with(vec![answer("toolu_1", json!({"name": "Ada", "age": 1}))]);
    let out = env.run(&[
        "run",
        "who?",
        "--output-schema",
        &schema,
        "--max-turns",
        "1",
    ]);
    out.assert_code(0);
    assert_eq!(out.stdout, "{\"age\":1,\"name\":\"Ada\"}\n");
}

#[test]
fn a_bad_schema_is_exit_2_before_any_request() {
    let env = TestEnv::new(vec![]);
    let cases = [
        ("missing.json", None, "No such file"),
        ("broken.json", Some("{\"type\": "), "not valid JSON"),
        (
            "array.json",
            Some("{\"type\": \"array\"}"),
            "\"type\": \"object\"",
        ),
        (
            "typo.json",
            Some("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"strnig\"}}}"),
            "invalid JSON Schema",
        ),
    ];
    for (name, content, needle) in cases {
        let f = env.out(name);
        if let Some(c) = content {
            std::fs::write(&f, c).unwrap();
        }
        let out = env.run(&["run", "x", "--output-schema", s(&f)]);
        out.assert_code(2);
        assert!(out.stderr.contains("--output-schema"), "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{name}: {}", out.stderr);
    }
    // Inline JSON works the same way.
    let out = env.run(&[
        "run",
        "x",
        "--output-schema",
        "{\"type\": \"object\", \"required\": 3}",
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("invalid JSON Schema"), "{}", out.stderr);
    // --max-schema-retries means nothing without a schema.
    let out = env.run(&["run", "x", "--max-schema-retries", "2"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--output-schema"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn with_verify_the_answer_is_the_one_after_the_failed_verification() {
    let (env, schema) = env_with(vec![
        // Answers before the fix: verification fails, so this answer is discarded.
        answer("toolu_1", json!({"name": "early", "age": 1})),
        reply(Turn::new().text("Fixing it.").tool(
            "toolu_w",
            "WriteFile",
            json!({"path": "done.txt", "content": "ok"}),
        )),
        answer("toolu_2", json!({"name": "fixed", "age": 2})),
    ]);
    let out = env.run(&[
        "run",
        "fix and report",
        "--output-schema",
        &schema,
        "--allow-write",
        "--verify",
        "test -f done.txt",
        "--json",
    ]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["structured_output"], json!({"name": "fixed", "age": 2}));
    assert_eq!(t["result"], "{\"age\":2,\"name\":\"fixed\"}");
    let passed: Vec<bool> = t["verifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(passed, [false, true]);
    // The failure went back in the same user message as the answer's result.
    let second = &env.server.requests()[1];
    let last = second.messages().last().unwrap();
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["content"], "Answer accepted.");
    let text = last["content"][1]["text"].as_str().unwrap();
    assert!(
        text.contains("The verification command `test -f done.txt` failed"),
        "{text}"
    );
    env.server.assert_invariants();
}

/// docs/guide/structured-output.md, as a test: the shipped cassette fixes the demo project and
/// answers with the report schema, after one corrected answer.
#[test]
fn the_readme_structured_demo_runs() {
    let root = demo_dir();
    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    let out = env.run(&[
        "run",
        "--replay",
        s(&root.join("structured.cassette.jsonl")),
        "--full-auto",
        "--output-schema",
        s(&root.join("report.schema.json")),
        "Fix the failing tests and report what you did",
    ]);
    out.assert_code(0);
    let answer: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(out.stdout.lines().count(), 1);
    assert_eq!(answer["tests_passed"], 4);
    assert_eq!(answer["fixed"], true);
    assert!(
        !out.stderr.contains("differ from those recorded"),
        "{}",
        out.stderr
    );
    assert!(env.read("lib/stats.sh").contains("echo $((sum / n))"));
}

#[test]
fn the_openai_provider_gets_the_same_tool_and_the_same_corrections() {
    let (env, schema) = env_with(vec![
        answer("call_1", json!({"name": "Ada", "age": "36"})),
        answer("call_2", json!({"name": "Ada", "age": 36})),
    ]);
    let url = env.server.openai_url();
    let out = env.run_with_env(
        &[
            "run",
            "who?",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "-m",
            "mock-model",
            "--output-schema",
            &schema,
        ],
        &[("OPENAI_API_KEY", OPENAI_KEY)],
    );
    out.assert_code(0).assert_no_secret();
    assert_eq!(out.stdout, "{\"age\":36,\"name\":\"Ada\"}\n");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.wire == Wire::OpenAi));
    let function = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "StructuredOutput")
        .expect("the tool is offered as a function")["function"]
        .clone();
    assert_eq!(function["parameters"]["required"], json!(["name", "age"]));
    assert!(function.get("parameters").unwrap().get("$schema").is_none());
    let system = &requests[0].body["messages"][0];
    assert_eq!(system["role"], "system");
    assert!(
        system["content"]
            .as_str()
            .unwrap()
            .contains("StructuredOutput tool")
    );
    let tool_msg = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    let text = tool_msg["content"].as_str().unwrap();
    assert!(
        text.contains("- /age: \"36\" is not of type \"integer\""),
        "{text}"
    );
    env.server.assert_invariants();
}
