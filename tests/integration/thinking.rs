//! Extended thinking and reasoning effort: `--thinking-budget` and `--effort` in the
//! request (thinking object, raised max_tokens, interleaved-thinking beta, OpenAI's
//! `reasoning_effort`), thinking blocks sent back byte for byte over several tool turns
//! of a stream in the real API's shape (`tests/fixtures/servers/anthropic_thinking_*`),
//! redacted thinking kept opaque, a server's reasoning kept out of requests and answers,
//! and the bad values refused with exit 2.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::*;

const INTERLEAVED: &str = "interleaved-thinking-2025-05-14";

/// The three turns of the recorded-shape session: think, read notes.txt; think (and a
/// redacted block), read todo.txt; think, answer.
const RECORDINGS: [&str; 3] = [
    "anthropic_thinking_1.sse",
    "anthropic_thinking_2.sse",
    "anthropic_thinking_3.sse",
];

const ANSWER: &str = "notes.txt lists alpha and beta; todo.txt has one open item: ship it.";

/// A thinking or redacted_thinking block as a stream delivered it.
#[derive(Debug, Default)]
struct Streamed {
    kind: String,
    thinking: String,
    signature: String,
    data: String,
}

impl Streamed {
    /// The block's JSON as the API must get it back: its own fields, nothing added.
    fn wire_json(&self) -> String {
        let s = |v: &str| serde_json::to_string(v).unwrap();
        match self.kind.as_str() {
            "thinking" => format!(
                "{{\"type\":\"thinking\",\"thinking\":{},\"signature\":{}}}",
                s(&self.thinking),
                s(&self.signature)
            ),
            "redacted_thinking" => format!(
                "{{\"type\":\"redacted_thinking\",\"data\":{}}}",
                s(&self.data)
            ),
            other => panic!("not a thinking block: {other}"),
        }
    }
}

/// The thinking blocks of a recording, by index, decoded here from its `data:` lines
/// (independently of the binary's decoder).
fn streamed_blocks(name: &str) -> Vec<Streamed> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/servers")
        .join(name);
    let mut blocks: BTreeMap<u64, Streamed> = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let event: Value = serde_json::from_str(data).unwrap();
        let index = event["index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap() {
            "content_block_start" => {
                let b = &event["content_block"];
                let kind = b["type"].as_str().unwrap();
                if kind.ends_with("thinking") {
                    blocks.insert(
                        index,
                        Streamed {
                            kind: kind.to_string(),
                            data: b["data"].as_str().unwrap_or("").to_string(),
                            ..Streamed::default()
                        },
                    );
                }
            }
            "content_block_delta" => {
                let Some(block) = blocks.get_mut(&index) else {
                    continue;
                };
                let d = &event["delta"];
                match d["type"].as_str().unwrap() {
                    "thinking_delta" => block.thinking += d["thinking"].as_str().unwrap(),
                    "signature_delta" => block.signature += d["signature"].as_str().unwrap(),
                    other => panic!("unexpected delta {other}"),
                }
            }
            _ => {}
        }
    }
    blocks.into_values().collect()
}

/// The run over the three recordings, with `extra` flags.
fn run_recorded_session(extra: &[&str]) -> (TestEnv, RunOutput) {
    let env = TestEnv::new(RECORDINGS.iter().map(|r| Reply::recorded(r)).collect());
    env.write("notes.txt", "alpha\nbeta\nsee todo.txt\n");
    env.write("todo.txt", "- ship it\n");
    let mut args = vec!["run"];
    args.extend_from_slice(extra);
    args.push("summarise notes.txt");
    let out = env.run(&args);
    (env, out)
}

/// The raw bytes of request `n` (0-based) as text, from its `messages` on (the part
/// the tests look at, and what a failure shows).
fn raw_body(env: &TestEnv, n: usize) -> String {
    let body = String::from_utf8(env.server.requests()[n].raw_body.clone()).unwrap();
    let from = body.find("\"messages\":").expect("a messages array");
    body[from..].to_string()
}

#[test]
fn thinking_blocks_go_back_byte_for_byte_over_interleaved_tool_turns() {
    let (env, out) = run_recorded_session(&["--json", "--thinking-budget", "3000"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["result"], ANSWER, "the answer is the text alone");
    let turn1 = streamed_blocks(RECORDINGS[0]);
    let turn2 = streamed_blocks(RECORDINGS[1]);
    let turn3 = streamed_blocks(RECORDINGS[2]);
    assert_eq!(
        (turn1.len(), turn2.len(), turn3.len()),
        (1, 2, 1),
        "the recordings hold the blocks this test is about"
    );
    assert!(turn1[0].thinking.contains('🦀') && turn1[0].thinking.contains('\u{2028}'));
    assert_eq!(turn2[1].kind, "redacted_thinking");

    let requests = env.server.requests();
    assert_eq!(requests.len(), 3);
    // Request 2 carries turn 1's thinking block exactly as streamed, before its call.
    let second = raw_body(&env, 1);
    let block1 = turn1[0].wire_json();
    assert!(
        second.contains(&format!(
            "{{\"role\":\"assistant\",\"content\":[{block1},{{\"type\":\"tool_use\""
        )),
        "turn 1's thinking block, byte for byte, first in its message:\n{second}"
    );
    // Request 3: turn 1's block unchanged, and turn 2's thinking and redacted thinking
    // (thought after the first tool result) in their order, before turn 2's call.
    let third = raw_body(&env, 2);
    assert!(third.contains(&block1), "{third}");
    let blocks2 = format!("[{},{},", turn2[0].wire_json(), turn2[1].wire_json());
    assert!(
        third.contains(&format!("{{\"role\":\"assistant\",\"content\":{blocks2}")),
        "turn 2's blocks, byte for byte:\n{third}"
    );
    // The messages before the newest are the same bytes in every request: the signed
    // blocks never change on the way.
    let messages = |r: &Recorded| r.body["messages"].as_array().unwrap().clone();
    assert_eq!(messages(&requests[2])[..2], messages(&requests[1])[..2]);
    for r in &requests {
        assert_eq!(
            r.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 3000})
        );
        assert_eq!(r.body["max_tokens"], 8192 + 3000);
        assert_eq!(r.header("anthropic-beta"), Some(INTERLEAVED));
    }
    env.server.assert_invariants();
    env.server.assert_script_consumed();

    // The transcript keeps every block with its signature; none of it is the answer.
    let kept: Vec<&Value> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"].as_str().unwrap().ends_with("thinking"))
        .collect();
    let streamed: Vec<&Streamed> = turn1.iter().chain(&turn2).chain(&turn3).collect();
    assert_eq!(kept.len(), streamed.len());
    for (k, s) in kept.iter().zip(&streamed) {
        let expected: Value = serde_json::from_str(&s.wire_json()).unwrap();
        assert_eq!(**k, expected);
    }
    assert!(!out.stdout.contains("\"result\":\"Both files read"));
    // Text output prints the answer only.
    let (env, out) = run_recorded_session(&["--effort", "low"]);
    out.assert_code(0);
    assert_eq!(out.stdout.trim_end(), ANSWER);
    assert!(
        !out.stderr.contains("I have not seen it yet"),
        "{}",
        out.stderr
    );
    env.server.assert_invariants();
}

#[test]
fn effort_levels_set_the_budget_and_max_tokens_and_betas_merge_once() {
    let text = || Reply::turn(Turn::new().text("ok"));
    let env = TestEnv::new(vec![text(), text(), text(), text(), text()]);
    let cases: [(&[&str], Value, u64, Option<&str>); 5] = [
        (&[], Value::Null, 8192, None),
        (
            &["--effort", "low", "--max-tokens", "1000"],
            json!({"type": "enabled", "budget_tokens": 4096}),
            5096,
            Some(INTERLEAVED),
        ),
        (
            &["--effort", "medium"],
            json!({"type": "enabled", "budget_tokens": 8192}),
            16384,
            Some(INTERLEAVED),
        ),
        // --betas merge: the interleaved beta given again is sent once, in order.
        (
            &[
                "--effort",
                "high",
                "--betas",
                "context-1m-2025-08-07,interleaved-thinking-2025-05-14",
                "--context-1m",
            ],
            json!({"type": "enabled", "budget_tokens": 16384}),
            24576,
            Some("context-1m-2025-08-07,interleaved-thinking-2025-05-14"),
        ),
        // Claude 3.7 Sonnet thinks only before its first call: no interleaving beta.
        (
            &[
                "--thinking-budget",
                "1024",
                "-m",
                "claude-3-7-sonnet-20250219",
            ],
            json!({"type": "enabled", "budget_tokens": 1024}),
            9216,
            None,
        ),
    ];
    for (flags, _, _, _) in &cases {
        let mut args = vec!["run", "--json"];
        args.extend_from_slice(flags);
        args.push("hi");
        env.run(&args).assert_code(0);
    }
    let requests = env.server.requests();
    for (r, (flags, thinking, max_tokens, beta)) in requests.iter().zip(&cases) {
        assert_eq!(r.body["thinking"], *thinking, "{flags:?}");
        assert_eq!(r.body["max_tokens"], *max_tokens, "{flags:?}");
        assert_eq!(r.header("anthropic-beta"), *beta, "{flags:?}");
        assert!(r.body.get("temperature").is_none(), "{flags:?}");
    }
    env.server.assert_invariants();
}

#[test]
fn openai_gets_reasoning_effort_and_a_servers_reasoning_stays_in_the_transcript() {
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .thinking("I should read notes.txt first.", "")
                .tool("call_1", "ReadFile", json!({"path": "notes.txt"})),
        ),
        Reply::turn(Turn::new().thinking("It says alpha.", "").text("alpha")),
        Reply::turn(Turn::new().text("plain")),
    ]);
    env.write("notes.txt", "alpha\n");
    let url = env.server.openai_url();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--json", "--provider", "openai", "--base-url", &url];
        args.extend_from_slice(&["-m", "deepseek-reasoner"]);
        args.extend_from_slice(extra);
        args.push("what does notes.txt say?");
        env.run_with_env(&args, &[("OPENAI_API_KEY", OPENAI_KEY)])
    };
    let out = run(&["--effort", "high"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["result"], "alpha");
    let thinking: Vec<&Value> = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "thinking")
        .collect();
    assert_eq!(
        thinking,
        [
            &json!({"type": "thinking", "thinking": "I should read notes.txt first.", "signature": ""}),
            &json!({"type": "thinking", "thinking": "It says alpha.", "signature": ""}),
        ]
    );
    let requests = env.server.requests();
    for r in &requests[..2] {
        assert_eq!(r.body["reasoning_effort"], "high");
        assert!(r.body.get("thinking").is_none());
        assert_eq!(r.header("anthropic-beta"), None);
    }
    let second = raw_body(&env, 1);
    assert!(
        !second.contains("read notes.txt first"),
        "never sent back: {second}"
    );
    assert!(!second.contains("reasoning_content"), "{second}");
    // Without --effort nothing is sent.
    run(&[]).assert_code(0);
    assert!(
        env.server.requests()[2]
            .body
            .get("reasoning_effort")
            .is_none()
    );
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn bad_thinking_flags_exit_2_naming_the_flag_before_any_request() {
    let env = TestEnv::new(vec![]);
    let url = env.server.openai_url();
    let openai = ["--provider", "openai", "--base-url", &url, "-m", "m"];
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec!["--thinking-budget", "1023"],
            &["--thinking-budget", "1024"],
        ),
        (vec!["--thinking-budget", "0"], &["--thinking-budget"]),
        (vec!["--thinking-budget", "lots"], &["--thinking-budget"]),
        (
            vec!["--effort", "extreme"],
            &["--effort", "low", "medium", "high"],
        ),
        (
            vec!["--effort", "low", "--thinking-budget", "2048"],
            &["--effort", "--thinking-budget"],
        ),
        (
            vec!["--tool-choice", "required", "--effort", "low"],
            &["--tool-choice", "--effort"],
        ),
        (
            vec!["--tool-choice", "required", "--thinking-budget", "4096"],
            &["--tool-choice", "--thinking-budget"],
        ),
        (
            [&openai[..], &["--thinking-budget", "4096"]].concat(),
            &["--thinking-budget", "--effort"],
        ),
    ];
    for (flags, named) in cases {
        let mut args = vec!["run"];
        args.extend_from_slice(&flags);
        args.push("hi");
        let out = env.run_with_env(&args, &[("OPENAI_API_KEY", OPENAI_KEY)]);
        out.assert_code(2);
        for name in named {
            assert!(
                out.stderr.contains(name),
                "{flags:?}: {name} in {}",
                out.stderr
            );
        }
    }
    assert_eq!(env.server.request_count(), 0);
    // What thinking allows goes through: tool_choice auto and none.
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().text("ok")),
        Reply::turn(Turn::new().text("ok")),
    ]);
    for choice in ["auto", "none"] {
        let args = ["run", "--tool-choice", choice, "--effort", "low", "hi"];
        env.run(&args).assert_code(0);
    }
    let sent: Vec<Value> = env
        .server
        .requests()
        .iter()
        .map(|r| r.body["tool_choice"].clone())
        .collect();
    assert_eq!(sent, [json!({"type": "auto"}), json!({"type": "none"})]);
}

#[test]
fn the_mock_refuses_what_the_api_refuses_with_thinking() {
    use crate::support::invariants::check_body;
    let thinking_block = json!({"type": "thinking", "thinking": "hm", "signature": "c2ln"});
    let body = |patch: Value, block: Value| {
        let mut b = json!({"model": "m", "max_tokens": 5000, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": "go"},
                         {"role": "assistant", "content": [block, {"type": "text", "text": "ok"}]},
                         {"role": "user", "content": "more"}]});
        for (k, v) in patch.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    assert_eq!(
        check_body(&body(json!({}), thinking_block.clone())),
        Vec::<String>::new()
    );
    let redacted = json!({"type": "redacted_thinking", "data": "opaque"});
    assert_eq!(check_body(&body(json!({}), redacted)), Vec::<String>::new());
    let bad_bodies = [
        json!({"thinking": {"type": "enabled", "budget_tokens": 1000}}),
        json!({"max_tokens": 1024}),
        json!({"tool_choice": {"type": "any"}}),
        json!({"tool_choice": {"type": "tool", "name": "X"}}),
        json!({"temperature": 0.2}),
    ];
    for patch in bad_bodies {
        let v = check_body(&body(patch.clone(), thinking_block.clone()));
        assert_eq!(v.len(), 1, "{patch}: {v:?}");
    }
    let bad_blocks = [
        json!({"type": "thinking", "thinking": "hm", "signature": ""}),
        json!({"type": "thinking", "thinking": "hm"}),
        json!({"type": "thinking", "signature": "c2ln"}),
        json!({"type": "thinking", "thinking": "hm", "signature": "c2ln",
               "cache_control": {"type": "ephemeral"}}),
        json!({"type": "redacted_thinking", "data": ""}),
    ];
    for block in bad_blocks {
        let v = check_body(&body(json!({}), block.clone()));
        assert_eq!(v.len(), 1, "{block}: {v:?}");
    }
}

#[test]
fn a_servers_reasoning_is_left_out_when_its_transcript_goes_on_with_anthropic() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().thinking("Read it first.", "").tool(
            "call_1",
            "ReadFile",
            json!({"path": "notes.txt"}),
        )),
        Reply::turn(Turn::new().thinking("It says alpha.", "").text("alpha")),
        Reply::turn(Turn::new().text("still alpha")),
    ]);
    env.write("notes.txt", "alpha\n");
    let first = env.out("first.json");
    let args = ["-o", first.to_str().unwrap(), "what does notes.txt say?"];
    env.run_openai("deepseek-reasoner", &args).assert_code(0);
    let kept = std::fs::read_to_string(&first).unwrap();
    assert!(kept.contains("Read it first.") && kept.contains("It says alpha."));
    let args = [
        "run",
        "--resume",
        first.to_str().unwrap(),
        "and now?",
        "--json",
    ];
    let out = env.run(&args);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "still alpha");
    let resumed = &env.server.requests()[2];
    assert_eq!(resumed.wire, Wire::Anthropic);
    let sent = raw_body(&env, 2);
    assert!(
        !sent.contains("Read it first.") && !sent.contains("It says alpha."),
        "{sent}"
    );
    // The rest of the conversation is there: the call, its result, the answer.
    assert!(
        sent.contains("call_1") && sent.contains("\"text\":\"alpha\""),
        "{sent}"
    );
    // The invariants refuse an unsigned thinking block: none was sent.
    env.server.assert_invariants();
}
