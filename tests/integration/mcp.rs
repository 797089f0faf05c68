//! MCP servers end to end: the built binary starts `mcp-test-server` (stdio, or
//! streamable HTTP with JSON and SSE answers) from a Claude Code style configuration,
//! and the mock model calls its tools through the normal pipeline.

use serde_json::{Value, json};

#[path = "../support/mcp.rs"]
mod mcp_support;

mod hardening;
mod list_changed;
mod oauth;
mod ways_out;

use crate::support::{Reply, TestEnv, turn_text, turn_tools};
use mcp_support::{HttpServer, logged_methods, read_log, stdio_entry, write_config};

/// A secret the server gets through its `env`; it must never be printed.
const SECRET: &str = "mcp-secret-value-0123456789";

/// A keep-alive mock that makes `calls` (one turn each), then answers "done".
fn env_with_turns(turns: Vec<Vec<(&str, &str, Value)>>) -> TestEnv {
    let mut script: Vec<Reply> = turns
        .iter()
        .map(|calls| Reply::Sse(turn_tools(calls)))
        .collect();
    script.push(Reply::Sse(turn_text("done")));
    TestEnv::keep_alive(script)
}

/// Writes a config with one stdio server `t` (args given) and returns its path.
fn config(env: &TestEnv, args: &[&str]) -> String {
    write_config(
        &env.out("mcp.json"),
        json!({"t": stdio_entry(args, json!({"MCP_TEST_SECRET": SECRET}))}),
    )
}

/// The tool results the model got, in order over the whole run.
fn results(env: &TestEnv) -> Vec<(String, bool)> {
    let reqs = env.server.requests();
    let mut seen = Vec::new();
    for r in &reqs {
        for t in r.tool_results() {
            if !seen
                .iter()
                .any(|(id, _, _): &(String, String, bool)| *id == t.tool_use_id)
            {
                seen.push((t.tool_use_id.clone(), t.content.clone(), t.is_error));
            }
        }
    }
    seen.into_iter().map(|(_, c, e)| (c, e)).collect()
}

fn tool_names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn read_only_tools_run_in_parallel_proven_by_a_barrier() {
    let call = |id| (id, "mcp__t__barrier", json!({"parties": 3}));
    let env = env_with_turns(vec![vec![call("b1"), call("b2"), call("b3")]]);
    let cfg = config(&env, &[]);
    let out = env.run(&["run", "go", "--json", "--mcp-config", &cfg]);
    out.assert_code(0);
    let r = results(&env);
    assert_eq!(r.len(), 3, "{r:?}");
    for (content, is_error) in &r {
        assert!(!is_error, "{content}");
        assert_eq!(content, "all 3 calls arrived together");
    }
    let t = out.json();
    let calls = t["tool_calls"].as_array().unwrap();
    assert!(
        calls.iter().all(|c| c["metadata"]["server"] == "t"),
        "{calls:?}"
    );
    assert!(calls.iter().all(|c| c["metadata"]["mcp_tool"] == "barrier"));
    assert!(
        calls.iter().all(|c| c["batch"] == calls[0]["batch"]),
        "one parallel batch"
    );
}

#[test]
fn enabling_follows_the_built_in_rule() {
    let env = TestEnv::new(vec![]);
    let cfg = config(&env, &[]);
    let listed = |flags: &[&str]| {
        let mut args = vec!["tools", "--json", "--mcp-config", &cfg];
        args.extend_from_slice(flags);
        let out = env.run(&args);
        out.assert_code(0);
        tool_names(&out.json()["tools"])
    };
    let default = listed(&[]);
    assert!(default.contains(&"mcp__t__echo".to_string()), "{default:?}");
    assert!(
        !default.contains(&"mcp__t__write_note".to_string()),
        "destructive: off"
    );
    assert!(
        !default.contains(&"mcp__t__slow".to_string()),
        "writable: off"
    );
    for flags in [&["--allow-mcp"][..], &["--full-auto"]] {
        let all = listed(flags);
        assert!(all.contains(&"mcp__t__write_note".to_string()), "{flags:?}");
        assert!(all.contains(&"mcp__t__slow".to_string()), "{flags:?}");
    }
    assert!(!listed(&["--allow-write", "--allow-bash"]).contains(&"mcp__t__slow".to_string()));
    assert_eq!(
        listed(&["--allowed-tools", "ReadFile,mcp__t__write_note"]),
        ["ReadFile", "mcp__t__write_note"]
    );
    let out = env.run(&[
        "tools",
        "--json",
        "--mcp-config",
        &cfg,
        "--allowed-tools",
        "mcp__x",
    ]);
    out.assert_code(0);
    assert!(
        out.stderr.contains("\"mcp__x\"") && out.stderr.contains("names no tool"),
        "a name that matches no MCP tool is warned about: {}",
        out.stderr
    );
    let server = listed(&["--allowed-tools", "mcp__t"]);
    assert_eq!(server.len(), 10, "every tool of t: {server:?}");
    assert_eq!(listed(&["--allowed-tools", "mcp__t__*"]), server);
    let without = listed(&[
        "--allow-mcp",
        "--disallowed-tools",
        "mcp__t__write_note,mcp__t__echo",
    ]);
    assert!(!without.contains(&"mcp__t__write_note".to_string()));
    assert!(!without.contains(&"mcp__t__echo".to_string()));
    assert!(without.contains(&"mcp__t__slow".to_string()));
}

#[test]
fn tools_listing_shows_metadata_server_and_the_shortened_name() {
    let env = TestEnv::new(vec![]);
    let log = env.out("log.jsonl");
    let cfg = config(&env, &["--page-size", "1", "--log", log.to_str().unwrap()]);
    let out = env.run(&["tools", "--json", "--allow-mcp", "--mcp-config", &cfg]);
    out.assert_code(0);
    let v = out.json();
    let tools = v["tools"].as_array().unwrap();
    let mcp: Vec<_> = tools.iter().filter(|t| t["category"] == "mcp").collect();
    assert_eq!(mcp.len(), 10, "all ten tools over ten pages: {mcp:?}");
    let methods = logged_methods(&read_log(&log));
    assert_eq!(
        methods.iter().filter(|m| *m == "tools/list").count(),
        10,
        "{methods:?}"
    );
    assert_eq!(methods[..2], ["initialize", "notifications/initialized"]);
    let echo = mcp.iter().find(|t| t["name"] == "mcp__t__echo").unwrap();
    assert_eq!(echo["server"], "t");
    assert_eq!(echo["read_only"], true);
    assert_eq!(echo["concurrency_safe"], true);
    assert_eq!(echo["destructive"], false);
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    let note = mcp
        .iter()
        .find(|t| t["name"] == "mcp__t__write_note")
        .unwrap();
    assert_eq!(
        (note["read_only"].clone(), note["destructive"].clone()),
        (json!(false), json!(true))
    );
    let slow = mcp.iter().find(|t| t["name"] == "mcp__t__slow").unwrap();
    assert_eq!(
        (slow["read_only"].clone(), slow["destructive"].clone()),
        (json!(false), json!(false))
    );
    let long = mcp
        .iter()
        .find(|t| t["mcp_tool"].as_str().unwrap().starts_with("a_tool_with"))
        .unwrap();
    let name = long["name"].as_str().unwrap();
    assert!(
        name.len() <= 64 && name.starts_with("mcp__t__a_tool_with"),
        "{name}"
    );
    // The text listing shows the mapping.
    let text = env.run(&["tools", "--mcp-config", &cfg]);
    text.assert_code(0);
    assert!(text.stdout.contains(name), "{}", text.stdout);
    assert!(
        text.stdout
            .contains("a_tool_with_a_name_so_long_that_the_full_mcp_name_exceeds_the_api_limit"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_destructive_tool_runs_only_when_enabled() {
    let call = vec![(
        "w1",
        "mcp__t__write_note",
        json!({"path": "note.txt", "text": "hi"}),
    )];
    let env = env_with_turns(vec![call.clone()]);
    let cfg = config(&env, &[]);
    env.run(&["run", "go", "--json", "--mcp-config", &cfg])
        .assert_code(0);
    let (content, is_error) = results(&env).remove(0);
    assert!(is_error, "{content}");
    assert!(!env.path("note.txt").exists());

    let env = env_with_turns(vec![call]);
    let cfg = config(&env, &[]);
    let out = env.run(&["run", "go", "--json", "--allow-mcp", "--mcp-config", &cfg]);
    out.assert_code(0);
    assert_eq!(results(&env), [("wrote note.txt".to_string(), false)]);
    assert_eq!(
        env.read("note.txt"),
        "hi",
        "the server runs in the workspace"
    );
}

#[test]
fn a_crash_mid_call_is_an_error_naming_the_server_and_later_calls_fail_fast() {
    let env = env_with_turns(vec![
        vec![("c1", "mcp__t__crash", json!({}))],
        vec![("e1", "mcp__t__echo", json!({"text": "x"}))],
    ]);
    let cfg = config(&env, &[]);
    let out = env.run(&["run", "go", "--json", "--mcp-config", &cfg]);
    out.assert_code(0);
    let r = results(&env);
    assert_eq!(r.len(), 2, "{r:?}");
    for (content, is_error) in &r {
        assert!(is_error, "{content}");
        assert!(content.contains("MCP server \"t\""), "{content}");
        assert!(content.contains("not running"), "{content}");
    }
    assert!(r[0].0.contains("exited with status 3"), "{}", r[0].0);
    let t = out.json();
    assert!(
        t["tool_calls"][1]["duration_ms"].as_u64().unwrap() < 1_000,
        "fails fast"
    );
}

#[test]
fn a_call_over_mcp_timeout_is_an_error_and_the_server_lives_on() {
    let env = env_with_turns(vec![
        vec![("s1", "mcp__t__slow", json!({"ms": 20_000}))],
        vec![("e1", "mcp__t__echo", json!({"text": "still here"}))],
    ]);
    let log = env.out("log.jsonl");
    let cfg = config(&env, &["--log", log.to_str().unwrap()]);
    let out = env.run(&[
        "run",
        "go",
        "--json",
        "--allow-mcp",
        "--mcp-timeout",
        "300ms",
        "--mcp-config",
        &cfg,
    ]);
    out.assert_code(0);
    let r = results(&env);
    assert!(r[0].1, "{r:?}");
    assert!(
        r[0].0.contains("MCP server \"t\"") && r[0].0.contains("--mcp-timeout"),
        "{r:?}"
    );
    assert_eq!(r[1], ("echo: still here".to_string(), false));
    let log = read_log(&log);
    let cancel = log
        .iter()
        .find(|e| e["msg"]["method"] == "notifications/cancelled")
        .expect("the timed-out request is cancelled");
    let slow_id = log
        .iter()
        .find(|e| e["msg"]["params"]["name"] == "slow")
        .map(|e| e["msg"]["id"].clone())
        .unwrap();
    assert_eq!(cancel["msg"]["params"]["requestId"], slow_id);
}

#[test]
fn the_env_secret_is_redacted_and_the_agent_env_is_scrubbed() {
    let env = env_with_turns(vec![vec![
        ("e1", "mcp__t__env", json!({"name": "MCP_TEST_SECRET"})),
        ("e2", "mcp__t__env", json!({"name": "ANTHROPIC_API_KEY"})),
    ]]);
    let cfg = config(&env, &[]);
    let out = env.run(&["run", "go", "--json", "-v", "--mcp-config", &cfg]);
    out.assert_code(0).assert_no_secret();
    let r = results(&env);
    // The server got its secret (the model may need what the tool returns)...
    assert_eq!(r[0].0, format!("MCP_TEST_SECRET={SECRET}"));
    // ...but not the agent's own key.
    assert_eq!(r[1].0, "ANTHROPIC_API_KEY=<unset>");
    // The transcript and the -v log (server stderr included) never show it.
    assert!(!out.stdout.contains(SECRET), "secret in the transcript");
    assert!(
        !out.stderr.contains(SECRET),
        "secret in the log:\n{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("mcp t stderr: mcp-test-server starting, secret=[REDACTED]"),
        "{}",
        out.stderr
    );
}

#[test]
fn mcp_servers_field_reports_connected_and_failed_servers() {
    let env = env_with_turns(vec![]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({
            "good": stdio_entry(&["--protocol", "2025-03-26"], json!({})),
            "bad": stdio_entry(&["--crash-on-start"], json!({})),
        }),
    );
    let out = env.run(&["run", "go", "--json", "--mcp-config", &cfg]);
    out.assert_code(0);
    assert!(
        out.stderr.contains("MCP server \"bad\"") && out.stderr.contains("not available"),
        "{}",
        out.stderr
    );
    let t = out.json();
    let servers = t["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2);
    let bad = &servers[0];
    assert_eq!(bad["name"], "bad");
    assert_eq!(bad["status"], "failed");
    assert_eq!(bad["transport"], "stdio");
    let error = bad["error"].as_str().unwrap();
    assert!(error.contains("exited with status 7"), "{bad}");
    assert!(
        error.contains("crashing on start as asked"),
        "its stderr explains: {bad}"
    );
    assert_eq!(bad["tools"], json!([]));
    let good = &servers[1];
    assert_eq!(good["status"], "connected");
    assert_eq!(
        good["protocol_version"], "2025-03-26",
        "an older revision is accepted"
    );
    assert_eq!(good["server_info"]["name"], "mcp-test-server");
    assert_eq!(good["server_info"]["version"], "1.2.3");
    assert!(good["error"].is_null());
    let tools = tool_names(
        &good["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| json!({"name": n}))
            .collect(),
    );
    assert_eq!(tools.len(), 10);
    assert!(
        t["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__good__echo"))
    );

    // --strict-mcp: a server that fails is exit 2, naming it, before any request.
    let out = env.run(&["run", "go", "--json", "--strict-mcp", "--mcp-config", &cfg]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("\"bad\"") && out.stderr.contains("--strict-mcp"),
        "{}",
        out.stderr
    );
}

#[test]
fn jsonl_emits_mcp_started_per_server() {
    let env = env_with_turns(vec![]);
    let cfg = config(&env, &[]);
    let out = env.run(&["run", "go", "--jsonl", "--mcp-config", &cfg]);
    out.assert_code(0);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "mcp.started")
        .collect();
    assert_eq!(started.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "run.started");
    assert_eq!(events[1]["type"], "mcp.started");
    assert_eq!(started[0]["name"], "t");
    assert_eq!(started[0]["status"], "connected");
    assert_eq!(started[0]["protocol_version"], "2025-11-25");
    assert_eq!(started[0]["tools"].as_array().unwrap().len(), 10);
}

#[test]
fn server_requests_get_method_not_found_and_ping_is_answered() {
    let env = env_with_turns(vec![vec![("a1", "mcp__t__ask", json!({}))]]);
    let log = env.out("log.jsonl");
    let cfg = config(&env, &["--log", log.to_str().unwrap()]);
    let out = env.run(&["run", "go", "--json", "-v", "--mcp-config", &cfg]);
    out.assert_code(0);
    assert_eq!(
        results(&env),
        [(
            "sampling/createMessage=-32601 roots/list=-32601 ping=ok".to_string(),
            false
        )]
    );
    assert!(
        out.stderr.contains("asking the client"),
        "notification logged:\n{}",
        out.stderr
    );
    // The answer to request id 0 carries id 0.
    let log = read_log(&log);
    let zero = log
        .iter()
        .find(|e| e["msg"]["id"] == 0 && e["msg"].get("error").is_some())
        .expect("an answer with id 0");
    assert_eq!(zero["msg"]["error"]["code"], -32601);
    let init = log
        .iter()
        .find(|e| e["msg"]["method"] == "initialize")
        .unwrap();
    assert_eq!(
        init["msg"]["params"]["capabilities"],
        json!({}),
        "no roots capability"
    );
    assert_eq!(init["msg"]["params"]["protocolVersion"], "2025-11-25");
}

#[test]
fn non_text_content_and_big_results() {
    let big = "y".repeat(40_000);
    let env = env_with_turns(vec![vec![
        ("p1", "mcp__t__picture", json!({})),
        ("e1", "mcp__t__echo", json!({"text": big})),
    ]]);
    let cfg = config(&env, &[]);
    env.run(&["run", "go", "--json", "--mcp-config", &cfg])
        .assert_code(0);
    let r = results(&env);
    assert_eq!(
        r[0].0,
        "{\"height\":2,\"width\":1}\n[the image (image/png) is attached]\n[the image \
         (image/png) not sent: the image is not a PNG, JPEG, GIF, WebP or PDF file (by its \
         content, whatever its name)]"
    );
    // The real one reaches the model as an image block of the tool_result.
    let requests = env.server.requests();
    let result = requests[1].last_blocks()[0].clone();
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
    assert!(r[1].0.len() < 40_000, "spilled like any tool result");
    assert!(
        r[1].0.contains("result-e1"),
        "{}",
        &r[1].0[..r[1].0.len().min(500)]
    );
}

#[test]
fn cassette_header_lists_mcp_tools_and_replay_warns_on_a_mismatch() {
    let env = env_with_turns(vec![vec![("e1", "mcp__t__echo", json!({"text": "rec"}))]]);
    let cfg = config(&env, &[]);
    let cassette = env.out("c.jsonl");
    let c = cassette.to_str().unwrap();
    env.run(&["run", "go", "--json", "--record", c, "--mcp-config", &cfg])
        .assert_code(0);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&cassette)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let tools = header["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__t__echo")), "{header}");
    // Replay starts the servers: the tool really runs again.
    let out = env.run(&["run", "go", "--json", "--replay", c, "--mcp-config", &cfg]);
    out.assert_code(0);
    assert!(!out.stderr.contains("differ"), "{}", out.stderr);
    let t = out.json();
    assert_eq!(t["tool_calls"][0]["metadata"]["server"], "t");
    // Without the server, the offered tools differ: warned.
    let out = env.run(&["run", "go", "--json", "--replay", c]);
    assert!(out.stderr.contains("differ"), "{}", out.stderr);
}

#[test]
fn project_mcp_json_is_read_unless_no_project_settings() {
    let env = env_with_turns(vec![]);
    write_config(
        &env.path(".mcp.json"),
        json!({"p": stdio_entry(&[], json!({}))}),
    );
    let out = env.run(&["tools", "--json"]);
    out.assert_code(0);
    assert!(tool_names(&out.json()["tools"]).contains(&"mcp__p__echo".to_string()));
    let out = env.run(&["tools", "--json", "--no-project-settings"]);
    out.assert_code(0);
    assert!(
        !tool_names(&out.json()["tools"])
            .iter()
            .any(|n| n.starts_with("mcp__"))
    );
}

#[test]
fn bad_configuration_files_are_exit_2_naming_file_and_server() {
    let env = TestEnv::new(vec![]);
    for (i, (text, needle)) in [
        ("{not json", "invalid JSON"),
        (r#"{"mcpServers": {"a__b": {"command": "x"}}}"#, "\"a__b\""),
        (
            r#"{"mcpServers": {"bad name": {"command": "x"}}}"#,
            "\"bad name\"",
        ),
        (
            r#"{"mcpServers": {"s": {"args": []}}}"#,
            "\"command\" is missing",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "extra": true}}}"#,
            "extra",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "${MCP_UNSET_VAR}"}}}"#,
            "MCP_UNSET_VAR",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "http", "url": "file:///x"}}}"#,
            "http://",
        ),
        (r#"{"servers": {}}"#, "unknown key"),
    ]
    .into_iter()
    .enumerate()
    {
        let path = env.out(&format!("bad{i}.json"));
        std::fs::write(&path, text).unwrap();
        let p = path.to_str().unwrap();
        for args in [
            vec!["run", "go", "--mcp-config", p],
            vec!["tools", "--mcp-config", p],
        ] {
            let out = env.run(&args);
            out.assert_code(2);
            assert!(out.stderr.contains(p), "{text}: {}", out.stderr);
            assert!(out.stderr.contains(needle), "{text}: {}", out.stderr);
        }
    }
    let out = env.run(&["run", "go", "--mcp-config", "/no/such/mcp.json"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--mcp-config /no/such/mcp.json"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 0);
}

/// One HTTP test: the server answers with JSON or SSE.
fn http_run(sse: bool) {
    let mut turns = vec![vec![("e1", "mcp__h__echo", json!({"text": "over http"}))]];
    if sse {
        // Only an SSE stream can carry the server's own requests before the answer.
        turns.push(vec![("a1", "mcp__h__ask", json!({}))]);
    }
    let env = env_with_turns(turns);
    let log = env.out("http-log.jsonl");
    let server = HttpServer::start(log.clone(), if sse { &["--sse"] } else { &[] });
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"h": {"type": "http", "url": server.url,
                     "headers": {"Authorization": "Bearer ${MCP_HTTP_TOKEN}"}}}),
    );
    let mut cmd = env.command(&["run", "go", "--json", "--mcp-config", &cfg]);
    cmd.env("MCP_HTTP_TOKEN", SECRET);
    let out = env.spawn_command(cmd).wait();
    out.assert_code(0).assert_no_secret();
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));
    let r = results(&env);
    assert_eq!(r[0], ("echo: over http".to_string(), false));
    if sse {
        let asked = "sampling/createMessage=-32601 roots/list=-32601 ping=ok";
        assert_eq!(r[1], (asked.to_string(), false));
    }
    let t = out.json();
    assert_eq!(t["mcp_servers"][0]["transport"], "http");
    assert_eq!(t["mcp_servers"][0]["status"], "connected");
    let log = read_log(&server.log);
    let posts: Vec<_> = log.iter().filter(|e| e["what"] == "http").collect();
    assert_eq!(posts[0]["msg"]["body"]["method"], "initialize");
    assert!(posts[0]["msg"]["headers"]["session"].is_null());
    for p in &posts[1..] {
        assert_eq!(p["msg"]["headers"]["session"], "test-session-7f3a", "{p}");
        assert_eq!(p["msg"]["headers"]["protocol"], "2025-11-25", "{p}");
    }
    for p in &posts {
        assert_eq!(
            p["msg"]["headers"]["accept"],
            "application/json, text/event-stream"
        );
        assert_eq!(
            p["msg"]["headers"]["authorization"],
            format!("Bearer {SECRET}")
        );
    }
    let deleted = log
        .iter()
        .any(|e| e["what"] == "http-delete" && e["msg"]["session"] == "test-session-7f3a");
    assert!(deleted, "the session is ended: {log:?}");
}

#[test]
fn streamable_http_with_json_answers() {
    http_run(false);
}

#[test]
fn streamable_http_with_sse_answers() {
    http_run(true);
}

#[test]
fn a_server_that_hangs_at_start_up_fails_within_the_startup_timeout() {
    let env = env_with_turns(vec![]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"slow": stdio_entry(&["--hang-on-init"], json!({})), "t": stdio_entry(&[], json!({}))}),
    );
    let out = env.run(&[
        "run",
        "go",
        "--json",
        "--mcp-startup-timeout",
        "500ms",
        "--mcp-config",
        &cfg,
    ]);
    out.assert_code(0);
    let t = out.json();
    let slow = &t["mcp_servers"][0];
    assert_eq!(slow["status"], "failed");
    let error = slow["error"].as_str().unwrap();
    assert!(
        error.contains("initialize") && error.contains("--mcp-startup-timeout"),
        "{error}"
    );
    assert_eq!(
        t["mcp_servers"][1]["status"], "connected",
        "the other server is unaffected"
    );
}

#[test]
fn an_ended_http_session_is_replaced_by_a_new_one() {
    let env = env_with_turns(vec![vec![("e1", "mcp__h__echo", json!({"text": "again"}))]]);
    let log = env.out("http-log.jsonl");
    // initialize, initialized and tools/list fit in the first session; the call gets 404.
    let server = HttpServer::start(log, &["--expire-session-after", "3", "--page-size", "100"]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"h": {"type": "http", "url": server.url}}),
    );
    env.run(&["run", "go", "--json", "--mcp-config", &cfg])
        .assert_code(0);
    assert_eq!(results(&env), [("echo: again".to_string(), false)]);
    let log = read_log(&server.log);
    let posts: Vec<(String, Value)> = log
        .iter()
        .filter(|e| e["what"] == "http")
        .map(|e| {
            let m = &e["msg"]["body"];
            let what = m["method"].as_str().unwrap_or("response").to_string();
            (what, e["msg"]["headers"]["session"].clone())
        })
        .collect();
    let methods: Vec<&str> = posts.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(posts[3].1, "test-session-7f3a");
    assert!(posts[4].1.is_null(), "a new initialize carries no session");
    assert_eq!(posts[6].1, "test-session-7f3a-1");
}

#[test]
fn a_dropped_sse_stream_is_resumed_with_last_event_id() {
    let env = env_with_turns(vec![vec![(
        "e1",
        "mcp__h__echo",
        json!({"text": "resumed"}),
    )]]);
    let server = HttpServer::start(env.out("http-log.jsonl"), &["--sse", "--sse-drop"]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"h": {"type": "http", "url": server.url}}),
    );
    env.run(&["run", "go", "--json", "--mcp-config", &cfg])
        .assert_code(0);
    assert_eq!(results(&env), [("echo: resumed".to_string(), false)]);
    let log = read_log(&server.log);
    let get = log
        .iter()
        .find(|e| e["what"] == "http-get" && !e["msg"]["last_event_id"].is_null())
        .expect("a GET resumes");
    assert_eq!(get["msg"]["last_event_id"], "drop-1");
    assert_eq!(get["msg"]["headers"]["session"], "test-session-7f3a");
    assert_eq!(get["msg"]["headers"]["accept"], "text/event-stream");
}

#[test]
fn permission_rules_and_hook_matchers_name_mcp_tools() {
    let env = env_with_turns(vec![vec![
        ("e1", "mcp__t__echo", json!({"text": "a"})),
        ("v1", "mcp__t__env", json!({"name": "PATH"})),
        ("p1", "mcp__t__picture", json!({})),
    ]]);
    let cfg = config(&env, &[]);
    let settings = env.out("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"deny": ["mcp__t__echo"]},
               "hooks": {"PreToolUse": [{"matcher": "mcp__t__env|Bash",
                                         "command": "echo 'env is off limits' >&2; exit 2"}]}})
        .to_string(),
    )
    .unwrap();
    let s = settings.to_str().unwrap();
    let out = env.run(&["run", "go", "--json", "--settings", s, "--mcp-config", &cfg]);
    out.assert_code(0);
    let r = results(&env);
    assert_eq!(
        r[0],
        ("denied by policy: mcp__t__echo".to_string(), true),
        "{r:?}"
    );
    assert!(r[1].1 && r[1].0.contains("env is off limits"), "{r:?}");
    assert!(!r[2].1, "another tool of the server runs: {r:?}");
    let t = out.json();
    let denied: Vec<_> = t["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["tool_name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(denied, ["mcp__t__echo", "mcp__t__env"]);

    // A server-wide rule, `mcp__t` and `mcp__t__*` alike.
    for rule in ["mcp__t", "mcp__t__*"] {
        let env = env_with_turns(vec![vec![("e1", "mcp__t__echo", json!({"text": "a"}))]]);
        let cfg = config(&env, &[]);
        let settings = env.out("settings.json");
        std::fs::write(
            &settings,
            json!({"permissions": {"deny": [rule]}}).to_string(),
        )
        .unwrap();
        let s = settings.to_str().unwrap();
        env.run(&["run", "go", "--json", "--settings", s, "--mcp-config", &cfg])
            .assert_code(0);
        assert_eq!(
            results(&env),
            [(format!("denied by policy: {rule}"), true)],
            "{rule}"
        );
    }
    // An MCP rule takes no specifier; a plain unknown name is still a mistake.
    let env = TestEnv::new(vec![]);
    for (rule, needle) in [
        ("mcp__t__echo(x)", "no specifier"),
        ("Nope", "unknown tool"),
    ] {
        let settings = env.out("bad-settings.json");
        std::fs::write(
            &settings,
            json!({"permissions": {"deny": [rule]}}).to_string(),
        )
        .unwrap();
        let out = env.run(&["run", "go", "--settings", settings.to_str().unwrap()]);
        out.assert_code(2);
        assert!(out.stderr.contains(needle), "{rule}: {}", out.stderr);
    }
}

/// Whether `pid` is still a live process after the kernel had a moment to deliver a
/// kill (polled: SIGKILL is asynchronous).
fn alive(pid: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running(pid) {
        if std::time::Instant::now() > deadline {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// Whether `pid` is a live process now (not gone, not a zombie).
fn running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s[s.rfind(')')? + 1..].trim_start().to_string();
            after.chars().next()
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

fn logged_pid(log: &std::path::Path, what: &str) -> u64 {
    read_log(log)
        .iter()
        .find(|e| e["what"] == what)
        .and_then(|e| e["msg"].as_u64())
        .expect("the server logged its pid")
}

#[test]
fn servers_are_killed_when_the_run_ends_normally_or_by_timeout() {
    // A normal end.
    let env = env_with_turns(vec![vec![("e1", "mcp__t__echo", json!({"text": "x"}))]]);
    let log = env.out("log.jsonl");
    let cfg = config(&env, &["--log", log.to_str().unwrap()]);
    env.run(&["run", "go", "--json", "--mcp-config", &cfg])
        .assert_code(0);
    let pid = logged_pid(&log, "pid");
    assert!(!alive(pid), "the server {pid} outlived the run");

    // The --timeout way out, with a call still running in the server.
    let env = env_with_turns(vec![vec![("s1", "mcp__t__slow", json!({"ms": 60_000}))]]);
    let log = env.out("log.jsonl");
    // The server starts a process of its own (as `npx` starts `node`): the whole group
    // goes, not only the process the agent started.
    let cfg = config(&env, &["--log", log.to_str().unwrap(), "--grandchild"]);
    let out = env.run(&[
        "run",
        "go",
        "--json",
        "--allow-mcp",
        "--timeout",
        "2s",
        "--mcp-config",
        &cfg,
    ]);
    out.assert_code(124);
    let pid = logged_pid(&log, "pid");
    assert!(!alive(pid), "the server {pid} outlived a timed-out run");
    let grandchild = logged_pid(&log, "grandchild");
    assert!(
        !alive(grandchild),
        "the server's child {grandchild} outlived the run"
    );
    assert!(
        !out.stderr.contains("left running in the background"),
        "the server is not an escaped process: {}",
        out.stderr
    );
    let t = out.json();
    assert_eq!(t["tool_calls"][0]["metadata"]["unfinished"], true, "{t}");
}

#[test]
fn servers_start_in_parallel() {
    let env = env_with_turns(vec![]);
    let marks = env.out("marks");
    std::fs::create_dir(&marks).unwrap();
    let m = marks.to_str().unwrap();
    let entry = || stdio_entry(&["--start-barrier", m, "3"], json!({}));
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"a": entry(), "b": entry(), "c": entry()}),
    );
    let out = env.run(&["run", "go", "--json", "--mcp-config", &cfg]);
    out.assert_code(0);
    let t = out.json();
    for s in t["mcp_servers"].as_array().unwrap() {
        assert_eq!(s["status"], "connected", "each waited for the others: {s}");
    }
}

#[test]
fn an_http_call_over_mcp_timeout_is_an_error_and_cancelled() {
    let env = env_with_turns(vec![
        vec![("s1", "mcp__h__slow", json!({"ms": 20_000}))],
        vec![("e1", "mcp__h__echo", json!({"text": "after"}))],
    ]);
    let server = HttpServer::start(env.out("http-log.jsonl"), &[]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"h": {"type": "http", "url": server.url}}),
    );
    let out = env.run(&[
        "run",
        "go",
        "--json",
        "--allow-mcp",
        "--mcp-timeout",
        "300ms",
        "--mcp-config",
        &cfg,
    ]);
    out.assert_code(0);
    let r = results(&env);
    assert!(r[0].1 && r[0].0.contains("--mcp-timeout"), "{r:?}");
    assert_eq!(r[1], ("echo: after".to_string(), false));
    let log = read_log(&server.log);
    let slow_id = log
        .iter()
        .find(|e| e["msg"]["body"]["params"]["name"] == "slow")
        .map(|e| e["msg"]["body"]["id"].clone())
        .unwrap();
    let cancel = log
        .iter()
        .find(|e| e["msg"]["body"]["method"] == "notifications/cancelled")
        .expect("the timed-out request is cancelled");
    assert_eq!(cancel["msg"]["body"]["params"]["requestId"], slow_id);
}

#[test]
fn a_rule_for_server_s_does_not_cover_server_s_underscore() {
    // `s_`'s tool `write_note` is `mcp__s___write_note`: it starts with `mcp__s__`.
    let env = TestEnv::new(vec![]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"s": stdio_entry(&[], json!({})), "s_": stdio_entry(&[], json!({}))}),
    );
    let listed = |flags: &[&str]| {
        let mut args = vec!["tools", "--json", "--mcp-config", &cfg];
        args.extend_from_slice(flags);
        let out = env.run(&args);
        out.assert_code(0);
        let v = out.json();
        let by_server = |server: &str| -> Vec<String> {
            v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["server"] == server)
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        };
        (by_server("s"), by_server("s_"))
    };
    let (s, s_) = listed(&["--allowed-tools", "ReadFile,mcp__s"]);
    assert!(s.contains(&"mcp__s__write_note".to_string()), "{s:?}");
    assert!(s_.is_empty(), "mcp__s enables no tool of s_: {s_:?}");
    let (s, s_) = listed(&["--allowed-tools", "mcp__s__*"]);
    assert_eq!((s.len(), s_.len()), (10, 0), "{s:?} {s_:?}");
    let (s, s_) = listed(&["--allow-mcp", "--disallowed-tools", "mcp__s"]);
    assert!(s.is_empty(), "{s:?}");
    assert!(
        s_.contains(&"mcp__s___write_note".to_string()) && s_.len() == 10,
        "mcp__s removes no tool of s_: {s_:?}"
    );
    let (s, s_) = listed(&["--allowed-tools", "mcp__s_"]);
    assert_eq!((s.len(), s_.len()), (0, 10), "{s:?} {s_:?}");

    // A settings rule and a hook matcher on `mcp__s` leave `s_`'s calls alone.
    let blocked_by_hook = "hooked: s is off limits";
    for settings in [
        json!({"permissions": {"deny": ["mcp__s"]}}),
        json!({"hooks": {"PreToolUse": [{"matcher": "mcp__s",
            "command": format!("echo '{blocked_by_hook}' >&2; exit 2")}]}}),
    ] {
        let env = env_with_turns(vec![vec![
            ("a", "mcp__s__echo", json!({"text": "a"})),
            ("b", "mcp__s___echo", json!({"text": "b"})),
        ]]);
        let cfg = write_config(
            &env.out("mcp.json"),
            json!({"s": stdio_entry(&[], json!({})), "s_": stdio_entry(&[], json!({}))}),
        );
        let file = env.out("settings.json");
        std::fs::write(&file, settings.to_string()).unwrap();
        let s = file.to_str().unwrap();
        env.run(&["run", "go", "--json", "--settings", s, "--mcp-config", &cfg])
            .assert_code(0);
        let r = results(&env);
        assert!(
            r[0].1 && (r[0].0 == "denied by policy: mcp__s" || r[0].0.contains(blocked_by_hook)),
            "{settings}: {r:?}"
        );
        assert_eq!(r[1], ("echo: b".to_string(), false), "{settings}");
    }
}

#[test]
fn agent_tools_redacts_a_secret_a_server_puts_in_its_descriptions() {
    let env = TestEnv::new(vec![]);
    let token = "hx2-srv-token-5f0c9e1d7a";
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"k": stdio_entry(&["--describe-env", "MY_SRV_KEY"],
                                json!({"MY_SRV_KEY": "${HX2_SRV_TOKEN}"}))}),
    );
    for json_flag in [true, false] {
        let mut args = vec!["tools", "--allow-mcp", "--mcp-config", &cfg];
        if json_flag {
            args.push("--json");
        }
        let mut cmd = env.command(&args);
        cmd.env("HX2_SRV_TOKEN", token);
        let out = env.spawn_command(cmd).wait();
        out.assert_code(0).assert_no_secret();
        assert!(
            !out.stdout.contains(token),
            "--json {json_flag}: {}",
            out.stdout
        );
        assert!(!out.stderr.contains(token), "{}", out.stderr);
        if json_flag {
            let v = out.json();
            let echo = v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "mcp__k__echo")
                .unwrap();
            assert_eq!(
                echo["description"], "Echoes text. Uses MY_SRV_KEY=[REDACTED].",
                "the server did describe its key"
            );
        }
    }
}

#[test]
fn the_token_of_an_mcp_authorization_header_is_redacted_alone_too() {
    // The variable's name does not mark it as a secret: only the header does.
    let token = "mcp-http-cred-8d1e4b7c2a";
    let env = env_with_turns(vec![vec![("e1", "mcp__h__echo", json!({"text": token}))]]);
    let log = env.out("http-log.jsonl");
    let server = HttpServer::start(log, &[]);
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"h": {"type": "http", "url": server.url,
                     "headers": {"Authorization": "Bearer ${MCP_HTTP_CRED}"}}}),
    );
    let out_file = env.out("t.json");
    let mut cmd = env.command(&[
        "run",
        "go",
        "--json",
        "-o",
        out_file.to_str().unwrap(),
        "--mcp-config",
        &cfg,
    ]);
    cmd.env("MCP_HTTP_CRED", token);
    let out = env.spawn_command(cmd).wait();
    out.assert_code(0).assert_no_secret();
    // The server echoed the token alone (the model gets results as they are)...
    assert_eq!(results(&env), [(format!("echo: {token}"), false)]);
    // ...and the transcript, on stdout and in the -o file, never shows it.
    assert!(!out.stdout.contains(token), "{}", out.stdout);
    assert!(out.stdout.contains("echo: [REDACTED]"), "{}", out.stdout);
    let saved = std::fs::read_to_string(&out_file).unwrap();
    assert!(!saved.contains(token), "the -o file holds the token");
    assert!(saved.contains("echo: [REDACTED]"), "{saved}");
}
