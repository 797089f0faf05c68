//! A server's tool list changing mid-run (`notifications/tools/list_changed`, on the
//! standalone GET stream over HTTP, inside a call over stdio): the next request offers
//! the new list, the new tool works, the removed one is an error result naming it, and
//! the transcript and `--jsonl` say what changed.

use serde_json::{Value, json};

use super::mcp_support::{HttpServer, logged_methods, read_log, stdio_entry, write_config};
use super::{env_with_turns, results};
use crate::support::TestEnv;

/// Turn 1 swaps the list; turn 2 calls the new tool and the removed one.
fn swap_env() -> TestEnv {
    env_with_turns(vec![
        vec![("w1", "mcp__s__swap", json!({}))],
        vec![
            ("f1", "mcp__s__fresh", json!({"text": "hi"})),
            ("e1", "mcp__s__echo", json!({"text": "gone?"})),
        ],
    ])
}

/// Runs against server `s` (`entry`) and checks everything the change must show; `how`
/// is where the server said so.
fn check_swap(env: &TestEnv, entry: Value, log: &std::path::Path, how: &str) {
    let cfg = write_config(&env.out("mcp.json"), json!({"s": entry}));
    let out_file = env.out("out.json");
    let out = env.run(&[
        "run",
        "go",
        "--jsonl",
        "-o",
        out_file.to_str().unwrap(),
        "--mcp-config",
        &cfg,
    ]);
    out.assert_code(0);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 3);
    let (first, second) = (reqs[0].tool_names(), reqs[1].tool_names());
    assert!(first.contains(&"mcp__s__echo".to_string()), "{first:?}");
    assert!(!first.contains(&"mcp__s__fresh".to_string()), "{first:?}");
    assert!(second.contains(&"mcp__s__fresh".to_string()), "{second:?}");
    assert!(!second.contains(&"mcp__s__echo".to_string()), "{second:?}");
    // Prompt caching: the array changes with the list and only then.
    assert_eq!(reqs[1].body["tools"], reqs[2].body["tools"]);

    let r = results(env);
    assert_eq!(r[0], (format!("swapped ({how})"), false));
    assert_eq!(r[1], ("fresh: hi".to_string(), false));
    assert!(r[2].1, "calling the removed tool is an error result: {r:?}");
    assert!(r[2].0.contains("mcp__s__echo"), "{r:?}");

    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let server = &t["mcp_servers"][0];
    assert_eq!(
        server["tools_changed"],
        json!([{"at_turn": 2, "added": ["mcp__s__fresh"], "removed": ["mcp__s__echo"],
                "changed": []}])
    );
    let now: Vec<&str> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(now.contains(&"mcp__s__fresh") && !now.contains(&"mcp__s__echo"));

    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let changed: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "mcp.tools_changed")
        .collect();
    assert_eq!(changed.len(), 1, "{events:?}");
    assert_eq!(changed[0]["name"], "s");
    assert_eq!(changed[0]["at_turn"], 2);
    assert_eq!(changed[0]["added"], json!(["mcp__s__fresh"]));
    assert_eq!(changed[0]["removed"], json!(["mcp__s__echo"]));

    // Listed again, once, every page as at start-up (two tools a page, as many tools).
    let methods = logged_methods(&read_log(log));
    let is_list = |m: &&String| *m == "tools/list";
    let at_start = methods
        .iter()
        .take_while(|m| *m != "tools/call")
        .filter(is_list)
        .count();
    assert!(at_start > 1, "paginated: {methods:?}");
    assert_eq!(
        methods.iter().filter(is_list).count(),
        2 * at_start,
        "{methods:?}"
    );
}

#[test]
fn a_list_change_on_the_standalone_stream_reaches_the_next_request() {
    let env = swap_env();
    let server = HttpServer::start(env.out("log.jsonl"), &["--standalone", "--sse", "--swap"]);
    let entry = json!({"type": "http", "url": server.url});
    check_swap(&env, entry, &server.log, "on the standalone stream");
}

#[test]
fn a_list_change_inside_a_stdio_call_reaches_the_next_request() {
    let env = swap_env();
    let log = env.out("log.jsonl");
    let entry = stdio_entry(&["--swap", "--log", log.to_str().unwrap()], json!({}));
    check_swap(&env, entry, &log, "inside the call");
}
