//! SPEC §6 end to end: permission rules, hooks, `--on-deny`, the Landlock sandbox and
//! secret scrubbing, through the built binary. The model's turns come from a cassette
//! written by the test (`--replay`), so tools really run and the transcript's `messages`
//! hold exactly the tool_results the next request would send.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{RunOutput, TestEnv, Turn};

const ALL_TOOLS: &[&str] = &["Bash", "EditFile", "Glob", "Grep", "ReadFile", "WriteFile"];

/// The SSE text of one assistant turn making `calls` (`(id, name, input)`), or, with no
/// calls, ending the run with `text`.
fn turn_sse(calls: &[(&str, &str, Value)], text: &str) -> String {
    let mut turn = Turn::new();
    if !text.is_empty() {
        turn = turn.text(text);
    }
    for (id, name, input) in calls {
        turn = turn.tool(id, name, input.clone());
    }
    turn.frames().concat()
}

/// A workspace (in a `TestEnv`: scrubbed environment, hang guard), a cassette of
/// scripted turns, and the `agent run` command over them.
struct Run {
    env: TestEnv,
    ws: PathBuf,
    cassette: PathBuf,
}

impl Run {
    /// `turns`: each a list of tool calls; a final `end_turn` turn is appended.
    fn new(turns: &[Vec<(&str, &str, Value)>]) -> Run {
        Run::in_env(TestEnv::new(vec![]), turns)
    }

    /// A workspace outside the temp directory (which `--sandbox workspace-write` allows).
    fn outside_tmp(turns: &[Vec<(&str, &str, Value)>]) -> Run {
        Run::in_env(TestEnv::outside_temp("policy-tests", vec![]), turns)
    }

    fn in_env(env: TestEnv, turns: &[Vec<(&str, &str, Value)>]) -> Run {
        let ws = env.ws();
        let cassette = env.out("run.cassette.jsonl");
        let mut lines = vec![
            json!({"type": "header", "format": 1, "provider": "anthropic",
            "model": "claude-test", "agent_version": "0.1.0",
            "workspace": ws.display().to_string(), "tools": ALL_TOOLS}),
        ];
        for (i, calls) in turns.iter().enumerate() {
            lines.push(json!({"type": "turn", "index": i + 1,
                "request": {"messages": 2 * i + 1, "tools": ALL_TOOLS},
                "sse": turn_sse(calls, "")}));
        }
        lines.push(json!({"type": "turn", "index": turns.len() + 1,
            "request": {"messages": 2 * turns.len() + 1, "tools": ALL_TOOLS},
            "sse": turn_sse(&[], "Done.")}));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&cassette, text).unwrap();
        Run { env, ws, cassette }
    }

    /// `agent run --replay` over the cassette; no API key (replay needs none).
    fn cmd(&self, extra: &[&str]) -> Command {
        let (cassette, ws) = (self.cassette.to_str().unwrap(), self.ws.to_str().unwrap());
        let mut args = vec![
            "run",
            "--replay",
            cassette,
            "-C",
            ws,
            "--json",
            "--full-auto",
        ];
        args.extend_from_slice(extra);
        args.push("do the task");
        let mut c = self.env.command(&args);
        c.env_remove("ANTHROPIC_API_KEY");
        c
    }

    /// Runs a prepared command to completion (killed if it hangs).
    fn output(&self, c: Command) -> RunOutput {
        self.env.spawn_command(c).wait()
    }

    fn run(&self, extra: &[&str]) -> (RunOutput, Value) {
        let out = self.output(self.cmd(extra));
        let doc = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        (out, doc)
    }

    fn settings(&self, json: &str) {
        std::fs::create_dir_all(self.ws.join(".agent")).unwrap();
        std::fs::write(self.ws.join(".agent/settings.json"), json).unwrap();
    }
}

fn stderr(o: &RunOutput) -> String {
    o.stderr.clone()
}

/// The tool_result blocks the transcript's messages hold (what the model is sent).
fn tool_results(doc: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for m in doc["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push((
                    b["tool_use_id"].as_str().unwrap().to_string(),
                    b["content"].as_str().unwrap_or_default().to_string(),
                    b["is_error"].as_bool().unwrap_or(false),
                ));
            }
        }
    }
    out
}

fn bash(id: &'static str, command: &str) -> (&'static str, &'static str, Value) {
    (id, "Bash", json!({"command": command}))
}

#[test]
fn deny_rule_blocks_rm_and_the_run_goes_on() {
    let r = Run::new(&[vec![
        bash("t1", "rm victim"),
        bash("t2", "echo ok && rm victim"),
        bash("t3", "echo fine"),
    ]]);
    std::fs::write(r.ws.join("victim"), "x").unwrap();
    r.settings(r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#);
    let (out, doc) = r.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(r.ws.join("victim").exists());
    assert_eq!(doc["status"], "success");
    let results = tool_results(&doc);
    assert_eq!(results[0].1, "denied by policy: Bash(rm:*)");
    assert!(results[0].2);
    assert_eq!(results[1].1, "denied by policy: Bash(rm:*)");
    assert!(results[2].1.contains("fine") && !results[2].2);
    let denials = doc["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 2);
    assert_eq!(denials[0]["tool_name"], "Bash");
    assert_eq!(denials[0]["tool_input"]["command"], "rm victim");
    assert_eq!(denials[0]["reason"], "denied by policy: Bash(rm:*)");
}

#[test]
fn on_deny_fail_ends_the_run_with_exit_5() {
    let r = Run::new(&[vec![bash("t1", "rm victim"), bash("t2", "touch later")]]);
    std::fs::write(r.ws.join("victim"), "x").unwrap();
    let settings = r.ws.join("../rules.json");
    std::fs::write(&settings, r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#).unwrap();
    let (out, doc) = r.run(&[
        "--settings",
        settings.to_str().unwrap(),
        "--on-deny",
        "fail",
    ]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(doc["status"], "denied");
    assert!(r.ws.join("victim").exists());
    assert!(!r.ws.join("later").exists(), "a call after the denial ran");
    let denials = doc["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0]["reason"], "denied by policy: Bash(rm:*)");
    assert!(stderr(&out).contains("denied"), "{}", stderr(&out));
}

#[test]
fn allow_rules_refuse_other_commands_and_read_denies_apply() {
    let r = Run::new(&[vec![
        bash("t1", "echo hi"),
        bash("t2", "echo hi; touch pwned"),
        ("t3", "ReadFile", json!({"path": ".env"})),
        ("t4", "ReadFile", json!({"path": "./sub/../.env"})),
    ]]);
    std::fs::write(r.ws.join(".env"), "SECRET=1").unwrap();
    r.settings(r#"{"permissions": {"allow": ["Bash(echo:*)"], "deny": ["ReadFile(.env)"]}}"#);
    let (out, doc) = r.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&doc);
    assert!(!results[0].2, "{:?}", results[0]);
    assert!(
        results[1].1.contains("`touch pwned` matches no allow rule"),
        "{:?}",
        results[1]
    );
    assert!(!r.ws.join("pwned").exists());
    assert_eq!(results[2].1, "denied by policy: ReadFile(.env)");
    assert_eq!(results[3].1, "denied by policy: ReadFile(.env)");
    assert_eq!(doc["permission_denials"].as_array().unwrap().len(), 3);
}

#[test]
fn bad_settings_are_usage_errors_naming_the_file() {
    let r = Run::new(&[]);
    r.settings("{ not json");
    let (out, _) = r.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(".agent/settings.json"),
        "{}",
        stderr(&out)
    );
    // --no-project-settings skips it.
    let (out, _) = r.run(&["--no-project-settings"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = r.ws.join("../mine.json");
    std::fs::write(&file, r#"{"permissions": {"deny": ["Shell(rm:*)"]}}"#).unwrap();
    let (out, _) = r.run(&[
        "--no-project-settings",
        "--settings",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("mine.json") && e.contains("unknown tool \"Shell\""),
        "{e}"
    );
}

#[test]
fn pre_hook_exit_2_blocks_and_its_stderr_reaches_the_model() {
    let r = Run::new(&[vec![bash("t1", "touch made")]]);
    r.settings(
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash|WriteFile",
            "command": "cat > hook-input.json; echo 'no touching today' >&2; exit 2"}]}}"#,
    );
    let (out, doc) = r.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!r.ws.join("made").exists());
    let results = tool_results(&doc);
    assert_eq!(results[0].1, "no touching today");
    assert!(results[0].2);
    let denials = doc["permission_denials"].as_array().unwrap();
    assert_eq!(denials[0]["reason"], "no touching today");
    // The hook received the documented JSON.
    let seen: Value =
        serde_json::from_slice(&std::fs::read(r.ws.join("hook-input.json")).unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "touch made"}, "tool_use_id": "t1",
               "cwd": r.ws.display().to_string()})
    );
    // --no-project-settings: the hook does not run.
    let (out, _) = r.run(&["--no-project-settings"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(r.ws.join("made").exists());
}

#[test]
fn failing_or_hanging_hooks_fail_closed() {
    for (hook, needle) in [
        (
            r#"{"command": "echo broken >&2; exit 1"}"#,
            "failed (exit 1): broken",
        ),
        (
            r#"{"command": "sleep 30", "timeout": "300ms"}"#,
            "timed out after 300ms",
        ),
        (r#"{"command": "./does-not-exist"}"#, "failed (exit 127)"),
    ] {
        let r = Run::new(&[vec![bash("t1", "touch made")]]);
        r.settings(&format!(r#"{{"hooks": {{"PreToolUse": [{hook}]}}}}"#));
        let (out, doc) = r.run(&["--on-deny", "fail"]);
        assert_eq!(out.status.code(), Some(5), "{hook}: {}", stderr(&out));
        assert!(!r.ws.join("made").exists(), "{hook}");
        let denials = doc["permission_denials"].as_array().unwrap();
        let reason = denials[0]["reason"].as_str().unwrap();
        assert!(
            reason.contains(needle) && reason.contains("fail closed"),
            "{hook}: {reason}"
        );
    }
}

#[test]
fn post_hook_sees_the_result_and_can_add_to_it() {
    let r = Run::new(&[vec![bash("t1", "echo the-output")]]);
    r.settings(
        r#"{"hooks": {"PostToolUse": [{"matcher": "*",
            "command": "cat > post.json; echo 'reviewer: looks odd' >&2; exit 2"}]}}"#,
    );
    let (out, doc) = r.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen: Value =
        serde_json::from_slice(&std::fs::read(r.ws.join("post.json")).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PostToolUse");
    assert_eq!(seen["tool_use_id"], "t1");
    assert!(
        seen["tool_result"]["content"]
            .as_str()
            .unwrap()
            .contains("the-output"),
        "{seen}"
    );
    assert_eq!(seen["tool_result"]["is_error"], false);
    let results = tool_results(&doc);
    assert!(results[0].1.contains("the-output"));
    assert!(
        results[0].1.ends_with("reviewer: looks odd"),
        "{:?}",
        results[0]
    );
    assert!(doc["permission_denials"].as_array().unwrap().is_empty());
}

fn kernel_has_landlock(abi: i32) -> bool {
    // The probe the agent makes, through the agent: a flag it refuses names the ABI.
    let r = Run::new(&[]);
    let flag = if abi >= 4 {
        "--no-network"
    } else {
        "--sandbox=read-only"
    };
    let (out, _) = r.run(&[flag]);
    let ok = out.status.code() == Some(0);
    if !ok {
        eprintln!("skipped: {}", stderr(&out));
    }
    ok
}

#[test]
fn sandbox_workspace_write_confines_bash_writes() {
    if !kernel_has_landlock(3) {
        return;
    }
    let outside = tempfile::tempdir_in(crate::support::dir_outside_temp("policy-tests")).unwrap();
    let extra = tempfile::tempdir_in(crate::support::dir_outside_temp("policy-tests")).unwrap();
    let tmp_file = std::env::temp_dir().join(format!("agent-sbx-{}", std::process::id()));
    let cmd = format!(
        "touch {o}/escaped; echo out=$?; touch inside; echo in=$?; touch {t}; echo tmp=$?; \
         touch {e}/ok; echo extra=$?",
        o = outside.path().display(),
        t = tmp_file.display(),
        e = extra.path().display()
    );
    let r = Run::outside_tmp(&[vec![bash("t1", &cmd)]]);
    let (out, doc) = r.run(&[
        "--sandbox",
        "workspace-write",
        "--writable",
        extra.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = &tool_results(&doc)[0].1;
    assert!(result.contains("out=1"), "{result}");
    assert!(
        result.contains("in=0") && result.contains("tmp=0"),
        "{result}"
    );
    assert!(result.contains("extra=0"), "{result}");
    assert!(!outside.path().join("escaped").exists());
    assert!(r.ws.join("inside").exists());
    let _ = std::fs::remove_file(&tmp_file);
    // The agent itself is not confined: its own file tools still work (WriteFile).
}

#[test]
fn sandbox_read_only_allows_no_writes() {
    if !kernel_has_landlock(3) {
        return;
    }
    let r = Run::outside_tmp(&[vec![bash(
        "t1",
        "touch inside; echo in=$?; echo x > /dev/null; echo null=$?; cat /etc/hostname >/dev/null; echo read=$?",
    )]]);
    let (out, doc) = r.run(&["--sandbox", "read-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = &tool_results(&doc)[0].1;
    assert!(
        result.contains("in=1") && result.contains("null=0"),
        "{result}"
    );
    assert!(!r.ws.join("inside").exists());
}

#[test]
fn no_network_blocks_a_loopback_connect() {
    if !kernel_has_landlock(4) {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused"
    );
    let r = Run::new(&[vec![bash("t1", &cmd)]]);
    let (out, doc) = r.run(&["--no-network"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tool_results(&doc)[0].1.contains("refused"), "{doc}");
    // Control: without the flag the same command connects, so the check can fail.
    let (_, doc) = r.run(&[]);
    assert!(tool_results(&doc)[0].1.contains("connected"), "{doc}");
}

#[test]
fn sandbox_on_a_kernel_without_landlock_is_refused() {
    let r = Run::new(&[vec![bash("t1", "touch made")]]);
    for (abi, flags, needle) in [
        (
            "0",
            vec!["--sandbox", "workspace-write"],
            "no Landlock support",
        ),
        ("0", vec!["--sandbox", "read-only"], "no Landlock support"),
        ("2", vec!["--sandbox", "workspace-write"], "Landlock ABI 2"),
        (
            "3",
            vec!["--no-network"],
            "--no-network needs Landlock ABI 4",
        ),
    ] {
        let mut c = r.cmd(&flags);
        c.env("AGENT_TEST_LANDLOCK_ABI", abi);
        let out = r.output(c);
        assert_eq!(out.status.code(), Some(2), "{abi} {flags:?}");
        assert!(
            stderr(&out).contains(needle),
            "{abi} {flags:?}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty());
        assert!(!r.ws.join("made").exists());
    }
    // --sandbox off needs nothing from the kernel.
    let mut c = r.cmd(&["--sandbox", "off"]);
    c.env("AGENT_TEST_LANDLOCK_ABI", "0");
    let out = r.output(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn secrets_from_token_variables_never_reach_the_transcript_or_logs() {
    const SECRET: &str = "ghp_s3cr3tVALUEforTests123";
    let r = Run::new(&[vec![
        bash("t1", "cat token.txt"),
        bash("t2", "echo \"env:${MY_CI_TOKEN:-missing}\""),
    ]]);
    std::fs::write(r.ws.join("token.txt"), SECRET).unwrap();
    let out_file = r.ws.join("../transcript.json");
    let mut c = r.cmd(&["-v", "-o", out_file.to_str().unwrap()]);
    c.env("MY_CI_TOKEN", SECRET);
    let out = r.output(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = out.stdout.clone();
    let file = std::fs::read_to_string(&out_file).unwrap();
    for (what, text) in [
        ("stdout", &*stdout),
        ("stderr", &stderr(&out)),
        ("-o", &file),
    ] {
        assert!(!text.contains(SECRET), "{what} leaks the secret: {text}");
    }
    assert!(stdout.contains("[REDACTED]"), "{stdout}");
    // Bash never saw the variable.
    assert!(stdout.contains("env:missing"), "{stdout}");
    // --keep-env passes it through to Bash (and it is still redacted in the output).
    let mut c = r.cmd(&["--keep-env", "MY_CI_TOKEN"]);
    c.env("MY_CI_TOKEN", SECRET);
    let doc: Value = serde_json::from_str(&r.output(c).stdout).unwrap();
    let results = tool_results(&doc);
    assert!(results[1].1.contains("env:[REDACTED]"), "{:?}", results[1]);
}

/// A gateway's headers (`ANTHROPIC_CUSTOM_HEADERS`, which may carry its credential) are
/// the agent's, not the commands': Bash never sees them, and their value is redacted.
#[test]
fn gateway_headers_from_the_environment_never_reach_bash() {
    const HEADERS: &str = "X-Gateway-Auth: gw_s3cr3tHEADERvalue42";
    let r = Run::new(&[vec![bash(
        "t1",
        "echo \"headers:${ANTHROPIC_CUSTOM_HEADERS:-missing}\"",
    )]]);
    let mut c = r.cmd(&[]);
    c.env("ANTHROPIC_CUSTOM_HEADERS", HEADERS);
    let out = r.output(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = tool_results(&doc);
    assert!(results[0].1.contains("headers:missing"), "{:?}", results[0]);
    assert!(!out.stdout.contains("gw_s3cr3t"), "{}", out.stdout);
}

/// Against a live (loopback) server: the hook's message is in the very next request the
/// model gets, and a secret the model echoes never reaches the `--record` cassette.
#[test]
fn hook_message_reaches_the_next_request_and_cassettes_are_scrubbed() {
    use crate::support::Reply;
    const SECRET: &str = "tok_live_9f8e7d6c5b4a3210";
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool("call_1", "Bash", json!({"command": "touch made"}))),
        // The secret lies whole in one delta (the chat wire splits text in half).
        Reply::turn(Turn::new().text(&format!(
            "{SECRET} is the token; the file said so, and so did the logs."
        ))),
    ]);
    env.write(
        ".agent/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash",
            "command": "echo 'blocked: use the Makefile' >&2; exit 2"}]}}"#,
    );
    let ws = env.ws();
    let cassette = env.out("rec.jsonl");
    let out = env.run_with_env(
        &[
            "run",
            "--provider",
            "openai",
            "--base-url",
            &env.server.openai_url(),
            "-m",
            "local-model",
            "--full-auto",
            "--json",
            "--record",
            cassette.to_str().unwrap(),
            "task",
        ],
        &[("DEPLOY_TOKEN", SECRET)],
    );
    let doc = out.json();
    assert_eq!(doc["status"], "success", "{}", out.stderr);
    assert!(!ws.join("made").exists());
    env.server.assert_invariants();
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let tool_msg = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap_or_else(|| panic!("no tool message in {}", requests[1].body));
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(
        tool_msg["content"]
            .as_str()
            .is_some_and(|c| c.contains("blocked: use the Makefile")),
        "{tool_msg}"
    );
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(recorded.contains("[REDACTED] is the token"), "{recorded}");
    assert!(!recorded.contains(SECRET), "the cassette leaks the secret");
    assert!(!out.stdout.contains(SECRET));
}

/// Issue 29: `function` hid its body from every rule. A deny rule now sees the body of a
/// definition in each syntax, and the file the body would delete survives.
#[test]
fn deny_rules_see_function_bodies() {
    let calls = [
        "function g { rm -f victim; }; g",
        "function g() { rm -f victim; }; g",
        "g() ( rm -f victim ); g",
        "g() if true; then rm -f victim; fi; g",
    ];
    let r = Run::new(&[calls
        .iter()
        .enumerate()
        .map(|(i, c)| (["t1", "t2", "t3", "t4"][i], "Bash", json!({"command": c})))
        .collect()]);
    std::fs::write(r.ws.join("victim"), "x").unwrap();
    let (out, doc) = r.run(&["--disallowed-tools", "Bash(rm:*)"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        r.ws.join("victim").exists(),
        "a function body deleted the file"
    );
    let results = tool_results(&doc);
    assert_eq!(results.len(), calls.len());
    for (call, (_, content, is_error)) in calls.iter().zip(&results) {
        assert_eq!(content, "denied by policy: Bash(rm:*)", "{call}");
        assert!(is_error, "{call}");
    }
    assert_eq!(
        doc["permission_denials"].as_array().unwrap().len(),
        calls.len()
    );
}

/// Issue 43: the shell-parser differential's bypasses. Each of these deleted the canary
/// under `Bash(rm:*)` (a shell fed a here-document or here-string, `find -exec`, `env
/// -S`), or runs what no rule can see (opaque: a deny rule refuses it; `--deny-opaque`
/// does with no rule at all).
#[test]
fn deny_rules_see_heredoc_scripts_find_exec_env_split_and_refuse_opaque_commands() {
    let calls = [
        "bash <<'EOF'\nrm -f victim\nEOF",
        "sh -s <<< 'rm -f victim'",
        "find . -name victim -exec rm -f {} \\;",
        "env -S 'rm -f' victim",
        "x=rm; $x -f victim",
        "$(echo rm) -f victim",
        "echo 'rm -f victim' | bash",
    ];
    let ids = ["t1", "t2", "t3", "t4", "t5", "t6", "t7"];
    let turns = [calls
        .iter()
        .zip(ids)
        .map(|(c, id)| (id, "Bash", json!({"command": c})))
        .collect()];
    for flags in [
        &["--disallowed-tools", "Bash(rm:*)"][..],
        &["--deny-opaque", "--disallowed-tools", "Bash(rm:*)"][..],
    ] {
        let r = Run::new(&turns);
        std::fs::write(r.ws.join("victim"), "x").unwrap();
        let (out, doc) = r.run(flags);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(r.ws.join("victim").exists(), "the canary was deleted");
        let results = tool_results(&doc);
        assert_eq!(results.len(), calls.len());
        for (call, (_, content, is_error)) in calls.iter().zip(&results) {
            assert!(content.starts_with("denied by policy"), "{call}: {content}");
            assert!(is_error, "{call}");
        }
    }
    // With no rule, `--deny-opaque` alone refuses the opaque ones; the rest run.
    let r = Run::new(&turns);
    std::fs::write(r.ws.join("victim"), "x").unwrap();
    let (out, doc) = r.run(&["--deny-opaque"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(&doc);
    for (call, (_, content, _)) in calls.iter().zip(&results).skip(4) {
        assert!(content.contains("(--deny-opaque)"), "{call}: {content}");
    }
}

/// Issue 29: under the allow list `Bash(cargo test:*)` (the allow list docs/security.md recommends), a
/// function named `cargo` ran in place of cargo. Its body is checked now, and even a body
/// of allowed commands is refused: the name no longer means the command the rule names.
/// An allow list vouches for the command, not for a variable set before it: `PATH=./bin
/// ls` runs `./bin/ls`, whatever that is. `RUST_BACKTRACE=1`-style tuning still passes.
#[test]
fn an_allow_list_refuses_a_variable_that_changes_what_an_allowed_command_runs() {
    let r = Run::new(&[vec![
        bash("t1", "PATH=./bin:$PATH ls"),
        bash("t2", "PATH=./bin; ls"),
        bash("t3", "LANG=C ls"),
    ]]);
    std::fs::create_dir_all(r.ws.join("bin")).unwrap();
    let fake = r.ws.join("bin/ls");
    std::fs::write(&fake, "#!/bin/sh\necho PWNED > pwned\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (out, doc) = r.run(&["--allowed-tools", "Bash(ls:*)"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!r.ws.join("pwned").exists(), "the fake ls ran");
    let results = tool_results(&doc);
    for (id, content, is_error) in &results[..2] {
        assert!(
            *is_error && content.contains("sets `PATH`"),
            "{id}: {content}"
        );
    }
    assert!(!results[2].2, "LANG=C ls is allowed: {:?}", results[2]);
    assert!(results[2].1.contains("bin"), "{:?}", results[2]);
}

#[test]
fn an_allow_list_refuses_a_function_standing_in_for_an_allowed_command() {
    for (rules, needle) in [
        ("Bash(cargo test:*)", "`echo PWNED` matches no allow rule"),
        (
            "Bash(cargo test:*),Bash(echo:*)",
            "defines `cargo` (a function",
        ),
    ] {
        let r = Run::new(&[vec![
            bash("t1", "function cargo { echo PWNED > y; }; cargo test"),
            bash("t2", "cargo() { echo PWNED > y; }; cargo test"),
        ]]);
        let (out, doc) = r.run(&["--allowed-tools", rules]);
        assert_eq!(out.status.code(), Some(0), "{rules}: {}", stderr(&out));
        assert!(!r.ws.join("y").exists(), "{rules}: the function ran");
        let results = tool_results(&doc);
        assert_eq!(results.len(), 2, "{rules}");
        for (id, content, is_error) in &results {
            assert!(
                *is_error && content.contains(needle),
                "{rules} {id}: {content}"
            );
        }
        assert_eq!(doc["permission_denials"].as_array().unwrap().len(), 2);
    }
}

/// `agent tools --split-commands` (the differential's view of the policy) gives, beside
/// each line's commands, the verdict of the tool flags' rules, null when the call may run.
#[test]
fn split_commands_reports_the_rules_verdict_for_each_line() {
    let env = TestEnv::new(vec![]);
    let lines = [
        "\"ls -l; rm -f x\"",
        "\"cat <<'EOF'\\nrm x\\nEOF\"",
        "\"x=rm; $x f\"",
    ];
    let out = env.run_with_stdin(
        &[
            "tools",
            "--split-commands",
            "--disallowed-tools",
            "Bash(rm:*)",
        ],
        &(lines.join("\n") + "\n"),
    );
    out.assert_code(0);
    let views: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(views.len(), 3, "{}", out.stdout);
    assert_eq!(
        views[0]["commands"],
        json!([["ls", "-l"], ["rm", "-f", "x"]])
    );
    assert!(views[0]["denied"].as_str().unwrap().contains("Bash(rm:*)"));
    assert_eq!(
        views[1]["denied"],
        Value::Null,
        "a here-document to cat runs nothing"
    );
    assert!(views[2]["denied"].as_str().unwrap().contains("opaque"));
    // With no rule, nothing is denied.
    let out = env.run_with_stdin(&["tools", "--split-commands"], &(lines.join("\n") + "\n"));
    out.assert_code(0);
    assert!(
        out.stdout.lines().all(|l| l.contains("\"denied\":null")),
        "{}",
        out.stdout
    );
}
