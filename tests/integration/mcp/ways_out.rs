//! What the transcript keeps when a way out (`--timeout`, SIGTERM) comes while an MCP
//! server is still starting (the transcript is written, the server listed as starting
//! and stopped), or while a call runs: the call's turn (its message, usage, the model the
//! API reported) whatever the call, early-started read-only MCP calls included, and an
//! MCP call's `server` and `mcp_tool` in its unfinished `tool_calls` entry.

use serde_json::{Value, json};

use super::hardening::Way;
use super::{alive, config, logged_pid};
use crate::support::{Reply, RunOutput, TestEnv, Turn, read_json, turn_text};

/// The model the mock's turn says answered (not the one asked for).
const REPORTED: &str = "claude-reported-by-the-api";

/// A run whose one turn calls `name` with `input` (reporting usage 123/45 and the model
/// `REPORTED`), stopped `way` while the call runs; `is_call` finds the call in the MCP
/// server's log (SIGTERM waits for it).
fn stopped_during(
    name: &str,
    input: Value,
    way: Way,
    extra: &[&str],
    is_call: impl Fn(&Value) -> bool,
) -> RunOutput {
    let env = TestEnv::keep_alive(vec![
        Reply::turn(
            Turn::new()
                .text("Calling it.")
                .tool("toolu_1", name, input)
                .model(REPORTED)
                .usage(123, 45),
        ),
        Reply::Sse(turn_text("never reached")),
    ]);
    let log = env.out("log.jsonl");
    let cfg = config(&env, &["--log", log.to_str().unwrap()]);
    let mut args = vec!["run", "go", "--json", "--mcp-config", &cfg];
    args.extend(extra);
    way.stop(&env, args, &log, is_call)
}

/// The turn is recorded as it came, and the call is listed unfinished.
fn assert_turn_kept(t: &Value, name: &str, mcp: Option<(&str, &str)>) {
    assert_eq!(t["num_turns"], 1, "{t}");
    assert_eq!(t["usage"]["input_tokens"], 123, "{t}");
    assert_eq!(t["usage"]["output_tokens"], 45, "{t}");
    assert_eq!(t["model"], REPORTED, "{t}");
    let messages = t["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{t}");
    assert_eq!(messages[1]["role"], "assistant");
    let tool_use = &messages[1]["content"][1];
    assert_eq!(tool_use["type"], "tool_use", "{t}");
    assert_eq!(tool_use["id"], "toolu_1");
    let call = &t["tool_calls"][0];
    assert_eq!(call["id"], "toolu_1", "{t}");
    assert_eq!(call["name"], name);
    assert_eq!(call["turn"], 1);
    assert_eq!(call["model"], REPORTED);
    assert_eq!(call["metadata"]["unfinished"], true, "{t}");
    match mcp {
        Some((server, tool)) => {
            assert_eq!(call["metadata"]["server"], server, "{t}");
            assert_eq!(call["metadata"]["mcp_tool"], tool, "{t}");
        }
        None => assert!(call["metadata"].get("server").is_none(), "{t}"),
    }
}

#[test]
fn a_read_only_mcp_call_running_at_a_way_out_keeps_its_turn() {
    // `barrier` is read-only, so it starts while the response streams, and one call
    // alone waits for its partner (20 s) until the run is stopped.
    for way in [Way::Timeout, Way::Sigterm] {
        let is_call = |e: &Value| e["msg"]["params"]["name"] == "barrier";
        let out = stopped_during("mcp__t__barrier", json!({"parties": 2}), way, &[], is_call);
        assert_turn_kept(&out.json(), "mcp__t__barrier", Some(("t", "barrier")));
    }
}

#[test]
fn a_writing_mcp_call_and_a_bash_call_running_at_a_way_out_keep_their_turn_too() {
    for way in [Way::Timeout, Way::Sigterm] {
        let is_call = |e: &Value| e["msg"]["params"]["name"] == "slow";
        let input = json!({"ms": 60_000});
        let out = stopped_during("mcp__t__slow", input, way, &["--allow-mcp"], is_call);
        assert_turn_kept(&out.json(), "mcp__t__slow", Some(("t", "slow")));
    }
    let input = json!({"command": "sleep 60"});
    let out = stopped_during("Bash", input, Way::Timeout, &["--allow-bash"], |_| true);
    assert_turn_kept(&out.json(), "Bash", None);
}

/// The transcript of a run stopped while server `t` was starting.
fn assert_stopped_while_starting(t: &Value, status: &str) {
    assert_eq!(t["status"], status, "{t}");
    assert_eq!(t["num_turns"], 0, "{t}");
    let servers = t["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{t}");
    assert_eq!(servers[0]["name"], "t");
    assert_eq!(servers[0]["transport"], "stdio");
    assert_eq!(servers[0]["status"], "starting", "{t}");
    assert_eq!(servers[0]["tools"], json!([]));
}

#[test]
fn a_way_out_during_mcp_start_up_writes_the_transcript_listing_the_server_as_starting() {
    // The server never answers `initialize` (within the 60 s start-up bound).
    for way in [Way::Timeout, Way::Sigterm] {
        for jsonl in [false, true] {
            let env = TestEnv::new(vec![]);
            let log = env.out("log.jsonl");
            let cfg = config(&env, &["--log", log.to_str().unwrap(), "--hang-on-init"]);
            let out_file = env.out("t.json");
            let output = if jsonl { "--jsonl" } else { "--json" };
            let mut args = vec!["run", "go", output, "--mcp-config", &cfg];
            args.extend(["-o", out_file.to_str().unwrap()]);
            if let Way::Sigterm = way {
                // The start-up fails because of the way out: not a --strict-mcp exit 2.
                args.push("--strict-mcp");
            }
            let status = way.status();
            let out = way.stop(&env, args, &log, |e| e["msg"]["method"] == "initialize");
            let t = if jsonl {
                let last = out.stdout.lines().last().unwrap_or_default();
                let finished: Value = serde_json::from_str(last).unwrap();
                assert_eq!(finished["type"], "run.finished", "{way:?}: {}", out.stdout);
                finished["transcript"].clone()
            } else {
                out.json()
            };
            assert_stopped_while_starting(&t, status);
            assert_stopped_while_starting(&read_json(&out_file), status);
            assert_eq!(env.server.request_count(), 0, "no request was made");
            assert!(
                !alive(logged_pid(&log, "pid")),
                "{way:?}: the server was stopped"
            );
        }
    }
}
