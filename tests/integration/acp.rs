//! `agent acp` driven by a small hand-written ACP client (`support::acp`), every message it
//! sends checked against the published ACP schema: initialize, sessions, two prompts whose
//! second carries the first's history, chunks in order, tool calls of a parallel batch
//! (proven by a barrier) and of a serial call, permission requests allowed then rejected,
//! cancel during a long command, session/load in a new process, config options, and the
//! hostile client's cases (bad JSON, unknown methods, requests before initialize, unknown
//! sessions, an oversized line, a second prompt while one runs, stdin closed).

use serde_json::{Value, json};

use crate::support::acp::{AcpClient, open_session, text_prompt};
use crate::support::{Reply, TestEnv, Turn, turn_text, turn_tools};

fn texts(updates: &[Value], kind: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["params"]["update"]["sessionUpdate"] == kind)
        .map(|u| {
            u["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The user texts of a model request's messages.
fn user_texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| match &m["content"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|b| b["text"].as_str().map(String::from))
                .collect(),
            _ => vec![],
        })
        .collect()
}

#[test]
fn two_prompts_in_one_session_the_second_carries_the_first_and_chunks_come_in_order() {
    let env = TestEnv::keep_alive(vec![
        Reply::turn(
            Turn::new()
                .thinking("considering", "sig")
                .text("first answer, streamed in pieces")
                .usage(120, 30),
        ),
        Reply::turn(Turn::new().text("second answer").usage(200, 40)),
    ]);
    let mut c = AcpClient::start(&env, &[]);
    let (init, _) = c.call("initialize", json!({"protocolVersion": 1}));
    let caps = &init["result"]["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert_eq!(init["result"]["authMethods"], json!([]));
    let (new, _) = c.call("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    let options = new["result"]["configOptions"].as_array().unwrap();
    assert!(options.iter().any(|o| o["id"] == "model"), "{new}");

    let (r1, u1) = c.call("session/prompt", text_prompt(&sid, "say one"));
    assert_eq!(r1["result"]["stopReason"], "end_turn", "{r1}");
    assert_eq!(r1["result"]["usage"]["inputTokens"], 120);
    assert_eq!(r1["result"]["usage"]["outputTokens"], 30);
    // The text came as it streamed: several chunks, in order, nothing twice.
    let pieces = texts(&u1, "agent_message_chunk");
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), "first answer, streamed in pieces");
    assert_eq!(texts(&u1, "agent_thought_chunk"), ["considering"]);
    let (r2, u2) = c.call("session/prompt", text_prompt(&sid, "say two"));
    assert_eq!(r2["result"]["stopReason"], "end_turn", "{r2}");
    assert_eq!(texts(&u2, "agent_message_chunk").concat(), "second answer");
    // Every update of a prompt came before its answer, in the session it belongs to.
    assert!(
        u1.iter()
            .chain(&u2)
            .all(|u| u["params"]["sessionId"] == sid)
    );

    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    let second = reqs[1].messages();
    assert_eq!(user_texts(second), ["say one", "say two"], "{second:?}");
    assert!(
        second.iter().any(|m| m["role"] == "assistant"
            && m["content"].to_string().contains("first answer, streamed"))
    );
    env.server.assert_invariants();
    let (code, _) = c.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn a_parallel_batch_starts_every_call_before_any_ends_and_a_serial_call_follows() {
    // Three read-only MCP calls that return only once all three have arrived (a barrier
    // in the server): they cannot end unless all started. The server comes in session/new.
    let call = |id| (id, "mcp__t__barrier", json!({"parties": 3}));
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[call("b1"), call("b2"), call("b3")])),
        Reply::Sse(turn_tools(&[(
            "s1",
            "Bash",
            json!({"command": "echo serial"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    c.call("initialize", json!({"protocolVersion": 1}));
    let server = json!({"name": "t", "command": env!("CARGO_BIN_EXE_mcp-test-server"),
                        "args": [], "env": []});
    let (new, _) = c.call(
        "session/new",
        json!({"cwd": env.ws(), "mcpServers": [server]}),
    );
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    let (r, updates) = c.call("session/prompt", text_prompt(&sid, "go"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let tool_updates: Vec<(String, String, String)> = updates
        .iter()
        .map(|u| &u["params"]["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
        .map(|u| {
            (
                u["sessionUpdate"].as_str().unwrap().to_string(),
                u["toolCallId"].as_str().unwrap().to_string(),
                u["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let ended =
        |k: &str, st: &str| k == "tool_call_update" && (st == "completed" || st == "failed");
    let first_end = tool_updates
        .iter()
        .position(|(k, _, st)| ended(k, st))
        .unwrap();
    let started: Vec<&str> = tool_updates[..first_end]
        .iter()
        .filter(|(k, _, _)| k == "tool_call")
        .map(|(_, id, _)| id.as_str())
        .collect();
    assert_eq!(started.len(), 3, "{tool_updates:?}");
    for id in ["b1", "b2", "b3"] {
        assert!(started.contains(&id), "{tool_updates:?}");
        assert!(tool_updates.contains(&("tool_call_update".into(), id.into(), "completed".into())));
    }
    // The serial call starts after the batch ended, and ends after it started.
    let s1_start = tool_updates
        .iter()
        .position(|(k, id, _)| k == "tool_call" && id == "s1")
        .unwrap();
    let s1_end = tool_updates
        .iter()
        .position(|(k, id, st)| ended(k, st) && id == "s1")
        .unwrap();
    let batch_last_end = tool_updates
        .iter()
        .rposition(|(k, id, st)| ended(k, st) && id.starts_with('b'))
        .unwrap();
    assert!(
        batch_last_end < s1_start && s1_start < s1_end,
        "{tool_updates:?}"
    );
    let bash = updates
        .iter()
        .map(|u| &u["params"]["update"])
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "s1")
        .unwrap();
    assert_eq!(bash["kind"], "execute");
    assert_eq!(bash["title"], "Bash echo serial");
    // Each barrier call returned only once all three had arrived.
    let together = updates
        .iter()
        .filter(|u| u.to_string().contains("all 3 calls arrived together"))
        .count();
    assert_eq!(together, 3, "{updates:?}");
}

#[test]
fn a_permission_request_allowed_runs_the_call_and_one_rejected_does_not() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[(
            "w1",
            "Bash",
            json!({"command": "echo yes > allowed.txt"}),
        )])),
        Reply::Sse(turn_tools(&[(
            "w2",
            "Bash",
            json!({"command": "echo no > rejected.txt"}),
        )])),
        Reply::Sse(turn_tools(&[(
            "w3",
            "ReadFile",
            json!({"path": "allowed.txt"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    let mut c = AcpClient::start(&env, &["--", "--full-auto"]);
    let sid = open_session(&mut c, &env.ws());
    let id = c.send("session/prompt", text_prompt(&sid, "write"));
    let mut asked = Vec::new();
    let (r, updates) = c.until_response(id, |c, req| {
        assert_eq!(req["method"], "session/request_permission", "{req}");
        let call = req["params"]["toolCall"]["toolCallId"]
            .as_str()
            .unwrap()
            .to_string();
        let option = if call == "w1" {
            "allow_once"
        } else {
            "reject_once"
        };
        asked.push(call);
        c.reply(
            &req["id"],
            json!({"outcome": {"outcome": "selected", "optionId": option}}),
        );
    });
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // ReadFile is read-only: never asked under the default mode.
    assert_eq!(asked, ["w1", "w2"]);
    assert_eq!(env.read("allowed.txt").trim(), "yes");
    assert!(!env.path("rejected.txt").exists());
    // Each asked call's statuses, in the order the client saw them: the `tool_call`
    // pending before its permission request, then in_progress once allowed (never for
    // the rejected one), then its end.
    let seen = |id: &str| -> Vec<String> {
        updates
            .iter()
            .filter_map(|m| {
                if m["method"] == "session/request_permission"
                    && m["params"]["toolCall"]["toolCallId"] == id
                {
                    return Some("asked".to_string());
                }
                let u = &m["params"]["update"];
                (u["toolCallId"] == id).then(|| {
                    format!(
                        "{} {}",
                        u["sessionUpdate"].as_str().unwrap(),
                        u["status"].as_str().unwrap_or("-")
                    )
                })
            })
            .collect()
    };
    assert_eq!(
        seen("w1"),
        [
            "tool_call pending",
            "asked",
            "tool_call_update in_progress",
            "tool_call_update completed"
        ]
    );
    assert_eq!(
        seen("w2"),
        ["tool_call pending", "asked", "tool_call_update failed"]
    );
    // A call nobody is asked about goes pending, in_progress, completed.
    assert_eq!(
        seen("w3"),
        [
            "tool_call pending",
            "tool_call_update in_progress",
            "tool_call_update completed"
        ]
    );
    let results = env.server.requests()[2].tool_results();
    assert!(
        results[0].is_error && results[0].content.contains("denied by the user"),
        "{:?}",
        results[0].content
    );
}

#[test]
fn cancel_during_a_long_command_kills_it_and_answers_cancelled() {
    let env = TestEnv::keep_alive(vec![Reply::Sse(turn_tools(&[(
        "long",
        "Bash",
        json!({"command": "echo $$ > pid.txt; exec sleep 300", "timeout": 600}),
    )]))]);
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    let sid = open_session(&mut c, &env.ws());
    let id = c.send("session/prompt", text_prompt(&sid, "wait"));
    // The call is running once its tool_call came and the shell wrote its pid.
    loop {
        let v = c.next();
        if v["params"]["update"]["sessionUpdate"] == "tool_call" {
            break;
        }
    }
    let started = std::time::Instant::now();
    let pid: i32 = loop {
        if let Ok(t) = std::fs::read_to_string(env.path("pid.txt"))
            && let Ok(p) = t.trim().parse()
        {
            break p;
        }
        assert!(
            started.elapsed().as_secs() < 60,
            "the command never ran: {:?}",
            c.log
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    c.notify("session/cancel", json!({"sessionId": sid}));
    let (r, _) = c.until_response(id, |_, req| panic!("unexpected {req}"));
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    // SAFETY: kill(pid, 0) only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(
        !alive,
        "the command (pid {pid}) outlived the cancelled prompt"
    );
    // The session takes the next prompt.
    let (code, _) = c.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn a_session_is_loaded_in_a_new_process_with_its_history() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_text("remembered")),
        Reply::Sse(turn_text("still here")),
    ]);
    let mut c = AcpClient::start(&env, &[]);
    let sid = open_session(&mut c, &env.ws());
    let (r, _) = c.call("session/prompt", text_prompt(&sid, "remember this"));
    assert_eq!(r["result"]["stopReason"], "end_turn");
    assert_eq!(c.finish().0, Some(0));

    let mut c = AcpClient::start(&env, &[]);
    c.call("initialize", json!({"protocolVersion": 1}));
    let (r, replay) = c.call(
        "session/load",
        json!({"sessionId": sid, "cwd": env.ws(), "mcpServers": []}),
    );
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(texts(&replay, "user_message_chunk"), ["remember this"]);
    assert_eq!(texts(&replay, "agent_message_chunk"), ["remembered"]);
    let (r, _) = c.call("session/prompt", text_prompt(&sid, "and now"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(
        user_texts(env.server.requests()[1].messages()),
        ["remember this", "and now"]
    );
    // The session's transcript is an ordinary one: `agent summary` reads it.
    let sessions = env.out("acp-sessions");
    let transcript = sessions.join(&sid).join("transcript.json");
    let summary = env.run(&["summary", transcript.to_str().unwrap()]);
    summary.assert_code(0);
}

#[test]
fn the_model_option_changes_the_model_of_the_next_prompt() {
    // The run flags name a model too (as Harbor's registry entry does): the option replaces it.
    let env = TestEnv::keep_alive(vec![Reply::Sse(turn_text("ok"))]);
    let mut c = AcpClient::start(&env, &["--", "--model", "claude-flag-model"]);
    let sid = open_session(&mut c, &env.ws());
    let (r, _) = c.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "mode", "value": "rules"}),
    );
    let current = |r: &Value| {
        r["result"]["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == "model")
            .unwrap()["currentValue"]
            .clone()
    };
    assert_eq!(current(&r), "claude-flag-model", "{r}");
    let (r, _) = c.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "model", "value": "claude-other-model"}),
    );
    let model = r["result"]["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap();
    assert_eq!(model["currentValue"], "claude-other-model", "{r}");
    let (r, _) = c.call("session/prompt", text_prompt(&sid, "hi"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(env.server.requests()[0].body["model"], "claude-other-model");
}

#[test]
fn a_hostile_client_gets_the_specified_errors_and_never_a_crash() {
    let env = TestEnv::keep_alive(vec![Reply::Sse(turn_tools(&[(
        "slow",
        "Bash",
        json!({"command": "exec sleep 300", "timeout": 600}),
    )]))]);
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap();
    // Before initialize.
    let (r, _) = c.call("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
    assert_eq!(code(&r), -32600, "{r}");
    // Malformed JSON and a non-request: errors with a null id.
    c.send_raw(b"{not json");
    assert_eq!(code(&c.next()), -32700);
    c.send_raw(b"[1,2,3]");
    assert_eq!(code(&c.next()), -32600);
    c.send_raw(br#"{"jsonrpc":"1.0","id":7,"method":"initialize"}"#);
    let v = c.next();
    assert_eq!((code(&v), v["id"].as_i64()), (-32600, Some(7)));
    // A version that is not an integer.
    let (r, _) = c.call("initialize", json!({"protocolVersion": "1.0"}));
    assert_eq!(code(&r), -32602);
    let (r, _) = c.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(r["result"]["protocolVersion"], 1);
    // Unknown method, unknown session, bad params.
    let (r, _) = c.call("session/fly", json!({}));
    assert_eq!(code(&r), -32601);
    let (r, _) = c.call("session/prompt", text_prompt("nope", "hi"));
    assert_eq!(code(&r), -32002);
    let (r, _) = c.call(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(code(&r), -32602);
    let (r, _) = c.call(
        "session/load",
        json!({"sessionId": "../../etc", "cwd": env.ws(), "mcpServers": []}),
    );
    assert_eq!(code(&r), -32002);
    // An oversized line (more than 16 MiB) is refused and the connection goes on.
    let mut big = br#"{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"x":""#.to_vec();
    big.resize(big.len() + 17 * 1024 * 1024, b'a');
    big.extend_from_slice(br#""}}"#);
    c.send_raw(&big);
    let v = c.next();
    assert_eq!(code(&v), -32600, "{v}");
    // A second prompt while one runs.
    let (new, _) = c.call("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    let first = c.send("session/prompt", text_prompt(&sid, "one"));
    loop {
        if c.next()["params"]["update"]["sessionUpdate"] == "tool_call" {
            break;
        }
    }
    let (r, _) = c.call("session/prompt", text_prompt(&sid, "two"));
    assert_eq!(code(&r), -32600, "{r}");
    // stdin closed while the prompt runs: it is ended and answered, and agent exits.
    let (exit, rest) = c.finish();
    assert_eq!(exit, Some(0));
    let answer = rest
        .iter()
        .find(|v| v["id"] == first)
        .expect("the running prompt is answered");
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
}

#[test]
fn bad_run_flags_are_a_usage_error_naming_the_flag() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["acp", "--", "--json"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--json"), "{}", out.stderr);
    let out = env.run(&["acp", "--", "--no-such-flag"]);
    out.assert_code(2);
}

#[test]
fn events_file_gets_each_prompts_jsonl_stream_beside_the_protocol() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_text("one")),
        Reply::Sse(turn_text("two")),
    ]);
    let events = env.out("events.jsonl");
    let mut c = AcpClient::start(&env, &["--events", events.to_str().unwrap()]);
    let sid = open_session(&mut c, &env.ws());
    c.call("session/prompt", text_prompt(&sid, "a"));
    c.call("session/prompt", text_prompt(&sid, "b"));
    assert_eq!(c.finish().0, Some(0));
    let text = std::fs::read_to_string(&events).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "run.finished")
        .collect();
    assert_eq!(finished.len(), 2, "one run per prompt");
    assert!(lines.iter().any(|l| l["type"] == "assistant.delta"));
    assert_eq!(finished[1]["transcript"]["status"], "success");
}

#[test]
fn an_unanswered_permission_request_is_denied_after_the_timeout() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[(
            "w",
            "Bash",
            json!({"command": "echo x > never.txt"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    let mut c = AcpClient::start(
        &env,
        &["--acp-permission-timeout", "1s", "--", "--full-auto"],
    );
    let sid = open_session(&mut c, &env.ws());
    let id = c.send("session/prompt", text_prompt(&sid, "write"));
    let mut asked = 0;
    let (r, _) = c.until_response(id, |_, req| {
        assert_eq!(req["method"], "session/request_permission");
        asked += 1; // never answered
    });
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(asked, 1);
    assert!(!env.path("never.txt").exists());
    let results = env.server.requests()[1].tool_results();
    assert!(
        results[0].content.contains("--acp-permission-timeout"),
        "{}",
        results[0].content
    );
}

#[test]
fn a_client_that_closes_its_end_of_stdout_does_not_keep_agent_waiting() {
    use std::io::Write;
    use wait_timeout::ChildExt;
    let env = TestEnv::new(vec![]);
    let sessions = env.out("acp-sessions");
    let mut cmd = env.command(&["acp", "--sessions-dir", sessions.to_str().unwrap()]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Far more answers than the pipe and the queue hold, to a reader that is gone: each
    // write fails, what is left is dropped, and stdin is still read to its end.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    for i in 0..5000 {
        let line = json!({"jsonrpc": "2.0", "id": i, "method": "initialize",
                          "params": {"protocolVersion": 1}});
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let status = child
        .wait_timeout(std::time::Duration::from_secs(60))
        .unwrap()
        .expect("agent acp kept waiting on a client that stopped reading");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_workspaces_skills_are_offered_as_available_commands() {
    let env = TestEnv::new(vec![]);
    env.write(
        ".agents/skills/changelog/SKILL.md",
        "---\nname: changelog\ndescription: Update CHANGELOG.md from the commits since the last tag.\n---\nSteps.\n",
    );
    let mut c = AcpClient::start(&env, &[]);
    c.call("initialize", json!({"protocolVersion": 1}));
    let (new, _) = c.call("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    let update = c.next();
    assert_eq!(update["params"]["sessionId"], sid.as_str());
    let u = &update["params"]["update"];
    assert_eq!(u["sessionUpdate"], "available_commands_update", "{update}");
    assert_eq!(u["availableCommands"][0]["name"], "changelog");
    assert!(
        u["availableCommands"][0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Update CHANGELOG.md")
    );
}

#[test]
fn an_image_in_a_prompt_reaches_the_model_and_stays_in_the_history() {
    use base64::Engine as _;
    let img = image::RgbImage::from_fn(4, 3, |x, y| image::Rgb([x as u8, y as u8, 9]));
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(png.into_inner());
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_text("a small picture")),
        Reply::Sse(turn_text("still there")),
    ]);
    let mut c = AcpClient::start(&env, &[]);
    let (init, _) = c.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );
    let (r, _) = c.call("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
    let sid = r["result"]["sessionId"].as_str().unwrap().to_string();
    let (r, _) = c.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "mimeType": "image/png", "data": data}
        ]}),
    );
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let (r, _) = c.call("session/prompt", text_prompt(&sid, "and now?"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let requests = env.server.requests();
    for (i, req) in requests.iter().enumerate() {
        let first = &req.body["messages"][0]["content"];
        let image = first
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "image")
            .unwrap_or_else(|| panic!("request {i}: no image in {first}"));
        assert_eq!(image["source"]["media_type"], "image/png");
        assert_eq!(image["source"]["data"], data.as_str());
    }
    // Not base64: the specified invalid-params error, and the session goes on.
    let (r, _) = c.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [
            {"type": "text", "text": "x"},
            {"type": "image", "mimeType": "image/png", "data": "%%%"}
        ]}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[test]
fn sessions_are_listed_closed_and_resumed_without_a_replay() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_text("first")),
        Reply::Sse(turn_text("after resume")),
    ]);
    let sub = env.ws().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut c = AcpClient::start(&env, &[]);
    let (init, _) = c.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(
        init["result"]["agentCapabilities"]["sessionCapabilities"],
        json!({"list": {}, "close": {}, "resume": {}})
    );
    let new = |c: &mut AcpClient, cwd: &std::path::Path| {
        let (r, _) = c.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        r["result"]["sessionId"].as_str().unwrap().to_string()
    };
    let a = new(&mut c, &env.ws());
    let b = new(&mut c, &sub);
    let (r, _) = c.call("session/prompt", text_prompt(&a, "remember"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let ids = |r: &Value| -> Vec<String> {
        r["result"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_string())
            .collect()
    };
    let (all, _) = c.call("session/list", json!({}));
    let mut listed = ids(&all);
    listed.sort();
    let mut both = vec![a.clone(), b.clone()];
    both.sort();
    assert_eq!(listed, both, "{all}");
    assert!(
        all["result"]["sessions"][0]["updatedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let (in_sub, _) = c.call("session/list", json!({"cwd": sub}));
    assert_eq!(ids(&in_sub), [b.as_str()], "{in_sub}");
    let (bad, _) = c.call("session/list", json!({"cwd": "relative"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    // Closed: this process forgets it (its files stay), so a prompt is an unknown session.
    let (closed, _) = c.call("session/close", json!({"sessionId": a}));
    assert_eq!(closed["result"], json!({}), "{closed}");
    let (r, _) = c.call("session/prompt", text_prompt(&a, "gone?"));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert_eq!(c.finish().0, Some(0));

    // Resumed in a new process: no replay, and the next prompt carries the history.
    let mut c = AcpClient::start(&env, &[]);
    c.call("initialize", json!({"protocolVersion": 1}));
    let (r, before) = c.call(
        "session/resume",
        json!({"sessionId": a, "cwd": env.ws(), "mcpServers": []}),
    );
    assert!(r["result"]["configOptions"].is_array(), "{r}");
    assert!(
        before.iter().all(|m| m["method"] != "session/update"),
        "{before:?}"
    );
    let (r, _) = c.call("session/prompt", text_prompt(&a, "and now?"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let second = &env.server.requests()[1];
    assert_eq!(
        user_texts(second.messages()),
        ["remember", "and now?"],
        "the resumed prompt carries the first"
    );
    assert_eq!(c.finish().0, Some(0));
}
