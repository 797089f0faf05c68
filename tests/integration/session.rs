//! A whole fix-the-bug session as a user would run it: parallel reads, an edit, a Bash
//! check and a final answer, checked on disk, in the transcript and in the requests the
//! model server received.

use crate::support::*;
use serde_json::{Value, json};

const BUGGY_LIB: &str = "add() {\n  echo $(( $1 - $2 ))\n}\n";
const TEST_SH: &str =
    ". ./lib.sh\nif [ \"$(add 2 3)\" = 5 ]; then echo PASS; else echo FAIL; exit 1; fi\n";
const FINAL: &str = "Fixed `add` in lib.sh: it subtracted instead of adding. test.sh passes.";

/// (input, output) tokens of the four turns, distinct so that the sums prove summing.
const USAGE: [(u64, u64); 4] = [(100, 11), (220, 22), (340, 33), (460, 44)];

fn script() -> Vec<Reply> {
    vec![
        Reply::Sse(
            Turn::new()
                .text("Let me look at the code and the test.")
                .tool("toolu_read", "ReadFile", json!({"path": "lib.sh"}))
                .tool("toolu_glob", "Glob", json!({"pattern": "*.sh"}))
                .tool(
                    "toolu_grep",
                    "Grep",
                    json!({"pattern": "add", "glob": "*.sh"}),
                )
                .usage(USAGE[0].0, USAGE[0].1)
                .cache(5, 0)
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .thinking("The operator is wrong.", "c2lnbmF0dXJl")
                .text("The function subtracts; fixing it.")
                .tool(
                    "toolu_edit",
                    "EditFile",
                    json!({"path": "lib.sh", "old_string": "$1 - $2", "new_string": "$1 + $2"}),
                )
                .usage(USAGE[1].0, USAGE[1].1)
                .cache(0, 7)
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .tool("toolu_bash", "Bash", json!({"command": "sh test.sh"}))
                .usage(USAGE[2].0, USAGE[2].1)
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .text(FINAL)
                .usage(USAGE[3].0, USAGE[3].1)
                .frames(),
        ),
    ]
}

fn setup() -> TestEnv {
    let env = TestEnv::keep_alive(script());
    env.write("lib.sh", BUGGY_LIB);
    env.write("test.sh", TEST_SH);
    env
}

fn result_of<'a>(results: &'a [ToolResultSeen], id: &str) -> &'a ToolResultSeen {
    results.iter().find(|r| r.tool_use_id == id).unwrap()
}

#[test]
fn fix_the_bug_session() {
    let env = setup();
    let out_file = env.out("transcript.json");
    let out = env.run(&[
        "run",
        "--full-auto",
        "--json",
        "-m",
        sse::MOCK_MODEL,
        "-o",
        out_file.to_str().unwrap(),
        "fix the failing test",
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    env.server.assert_script_consumed();

    // On disk.
    assert_eq!(env.read("lib.sh"), "add() {\n  echo $(( $1 + $2 ))\n}\n");

    // The transcript.
    assert_version_first(&out.stdout);
    let t = out.json();
    assert_eq!(t["version"], 1);
    assert_eq!(t["status"], "success");
    assert_eq!(t["is_error"], false);
    assert!(t["error"].is_null(), "{}", t["error"]);
    assert_eq!(t["result"], FINAL);
    assert_eq!(t["model"], sse::MOCK_MODEL);
    assert_eq!(t["stop_reason"], "end_turn");
    assert_eq!(t["num_turns"], 4);
    assert_eq!(t["retries"], 0);
    assert!(t["duration_ms"].is_u64() && t["api_duration_ms"].is_u64());
    let sum = |f: fn(&(u64, u64)) -> u64| USAGE.iter().map(f).sum::<u64>();
    assert_eq!(t["usage"]["input_tokens"], sum(|u| u.0));
    assert_eq!(t["usage"]["output_tokens"], sum(|u| u.1));
    assert_eq!(t["usage"]["cache_creation_input_tokens"], 5);
    assert_eq!(t["usage"]["cache_read_input_tokens"], 7);
    assert_eq!(t["workspace"], env.ws().to_str().unwrap());
    let mut tools: Vec<&str> = t["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "Bash",
            "BashOutput",
            "EditFile",
            "Glob",
            "Grep",
            "KillBash",
            "ReadFile",
            "Task",
            "TodoWrite",
            "WriteFile"
        ]
    );
    assert_eq!(t["permission_denials"], json!([]));
    // Entries are {"path", "change"} (or bare paths); lib.sh modified, test.sh untouched.
    let changed: Vec<(String, String)> = t["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| match e.as_str() {
            Some(p) => (p.to_string(), String::new()),
            None => (
                e["path"].as_str().unwrap().to_string(),
                e["change"].as_str().unwrap_or("").to_string(),
            ),
        })
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].0.ends_with("lib.sh"), "{changed:?}");
    assert!(
        changed[0].1.is_empty() || changed[0].1 == "modified",
        "{changed:?}"
    );

    // tool_calls: in the model's order; three reads share batch 1, then 2 and 3.
    let calls = t["tool_calls"].as_array().unwrap();
    let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "toolu_read",
            "toolu_glob",
            "toolu_grep",
            "toolu_edit",
            "toolu_bash"
        ]
    );
    let batches: Vec<u64> = calls.iter().map(|c| c["batch"].as_u64().unwrap()).collect();
    assert_eq!(batches, [1, 1, 1, 2, 3]);
    for c in calls {
        assert_eq!(c["is_error"], false, "{c}");
        assert!(c["duration_ms"].is_u64() && c["started_ms"].is_u64(), "{c}");
    }
    assert_eq!(calls[3]["name"], "EditFile");
    assert_eq!(calls[3]["input"]["new_string"], "$1 + $2");

    // messages: the whole conversation in wire format, i.e. the last request plus the
    // final answer.
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 4);
    let msgs = t["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 8);
    let plain = |ms: &[Value]| without_cache_control(&Value::Array(ms.to_vec()));
    assert_eq!(plain(&msgs[..7]), plain(reqs[3].messages()));
    assert_eq!(msgs[7]["role"], "assistant");
    assert_eq!(mock::message_text(&msgs[7]), FINAL);
    assert!(
        msgs[3]["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "thinking" && b["signature"] == "c2lnbmF0dXJl"),
        "thinking block kept with its signature: {}",
        msgs[3]
    );

    // The -o file holds the same transcript.
    let file = read_json(&out_file);
    assert_eq!(file, t);

    // The requests.
    assert!(reqs[0].first_user_text().contains("fix the failing test"));
    for r in &reqs {
        assert_eq!(r.header("x-api-key"), Some(API_KEY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.body["model"], sse::MOCK_MODEL);
        assert_eq!(
            r.body["tools"], reqs[0].body["tools"],
            "tools sent every turn"
        );
    }
    let mut sent = reqs[0].tool_names();
    sent.sort();
    assert_eq!(sent, tools);
    // Each request extends the previous one by the assistant turn and the results.
    for w in reqs.windows(2) {
        assert_eq!(w[1].messages().len(), w[0].messages().len() + 2);
        let n = w[0].messages().len();
        assert_eq!(plain(&w[1].messages()[..n]), plain(w[0].messages()));
    }

    let r1 = reqs[1].tool_results();
    let order: Vec<&str> = r1.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(order, ["toolu_read", "toolu_glob", "toolu_grep"]);
    assert!(r1.iter().all(|r| !r.is_error), "{r1:?}");
    let read = &result_of(&r1, "toolu_read").content;
    assert!(read.contains("1\tadd() {"), "numbered lines: {read}");
    assert!(read.contains("2\t  echo $(( $1 - $2 ))"), "{read}");
    let glob = &result_of(&r1, "toolu_glob").content;
    assert!(
        glob.contains("lib.sh") && glob.contains("test.sh"),
        "{glob}"
    );
    let grep = &result_of(&r1, "toolu_grep").content;
    assert!(grep.contains("lib.sh:1:"), "{grep}");

    let r2 = reqs[2].tool_results();
    assert_eq!(r2.len(), 1);
    assert_eq!(r2[0].tool_use_id, "toolu_edit");
    assert!(!r2[0].is_error, "{:?}", r2[0]);
    assert!(
        r2[0].content.contains("$1 + $2"),
        "snippet: {}",
        r2[0].content
    );

    let r3 = reqs[3].tool_results();
    assert_eq!(r3.len(), 1);
    assert_eq!(r3[0].tool_use_id, "toolu_bash");
    assert!(!r3[0].is_error);
    assert!(r3[0].content.contains("<output>"), "{}", r3[0].content);
    assert!(r3[0].content.contains("PASS"), "{}", r3[0].content);
    assert!(
        r3[0].content.ends_with("<exit_code>0</exit_code>"),
        "{}",
        r3[0].content
    );
}

#[test]
fn request_tools_match_agent_tools_json() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    env.run(&["run", "--full-auto", "hi"]).assert_code(0);
    let listed: Value = env.run(&["tools", "--json", "--full-auto"]).json();
    // Exactly the listed array, prompt-cache breakpoint (SPEC §9) on the last tool included.
    let sent = env.server.requests()[0].body["tools"].clone();
    assert_eq!(sent, listed["api_tools"]);
    let last = sent.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["cache_control"]["type"], "ephemeral");
    env.server.assert_invariants();
}

#[test]
fn secrets_never_leak_to_bash_transcript_or_model() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[(
            "toolu_env",
            "Bash",
            json!({"command": "env"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    let out_file = env.out("t.json");
    let mut c = env.command(&[
        "run",
        "--allow-bash",
        "--json",
        "-v",
        "-o",
        out_file.to_str().unwrap(),
        "show env",
    ]);
    c.env("FOO_API_KEY", "foo-secret-value-1")
        .env("GITHUB_TOKEN", "ghp-secret-value-2")
        .env("VISIBLE_SETTING", "visible-value-3");
    let out = env.spawn_command(c).wait();
    out.assert_code(0).assert_no_secret();
    let reqs = env.server.requests();
    let env_out = &reqs[1].tool_results()[0].content;
    assert!(env_out.contains("visible-value-3"), "env ran: {env_out}");
    for secret in [API_KEY, "foo-secret-value-1", "ghp-secret-value-2"] {
        assert!(!env_out.contains(secret), "{secret} reached Bash");
        assert!(!out.stdout.contains(secret), "{secret} in stdout");
        assert!(!out.stderr.contains(secret), "{secret} in stderr");
    }
    for r in &reqs {
        assert!(
            !String::from_utf8_lossy(&r.raw_body).contains(API_KEY),
            "key sent to the model"
        );
    }
    read_json(&out_file); // asserts the key is absent
    env.server.assert_invariants();
}
