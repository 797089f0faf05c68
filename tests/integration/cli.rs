//! The command line: `agent tools`, usage errors (exit 2, naming what to fix, before any
//! request), and the flags and variables that shape the request.

use crate::support::*;
use serde_json::Value;

fn tools_json(env: &TestEnv, flags: &[&str]) -> Value {
    let mut args = vec!["tools", "--json"];
    args.extend_from_slice(flags);
    let out = env.run(&args);
    out.assert_code(0).assert_no_secret();
    out.json()
}

fn names(list: &Value) -> Vec<String> {
    let mut n: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

#[test]
fn tools_json_default_is_the_read_only_set() {
    let env = TestEnv::new(vec![]);
    let v = tools_json(&env, &[]);
    assert_eq!(
        names(&v["tools"]),
        ["Glob", "Grep", "ReadFile", "Task", "TodoWrite"]
    );
    assert_eq!(
        names(&v["api_tools"]),
        ["Glob", "Grep", "ReadFile", "Task", "TodoWrite"]
    );
    for t in v["tools"].as_array().unwrap() {
        assert_eq!(t["read_only"], true, "{t}");
        assert_eq!(t["destructive"], false, "{t}");
        assert_eq!(t["concurrency_safe"], true, "{t}");
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
        assert!(t["category"].is_string(), "{t}");
    }
    // The API array carries exactly what the API takes, the last tool with the
    // prompt-cache breakpoint.
    let api = v["api_tools"].as_array().unwrap();
    for (i, t) in api.iter().enumerate() {
        let mut keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        let expected: &[&str] = if i + 1 == api.len() {
            &["cache_control", "description", "input_schema", "name"]
        } else {
            &["description", "input_schema", "name"]
        };
        assert_eq!(keys, expected, "{t}");
    }
    assert_eq!(env.server.request_count(), 0);
    env.server.assert_invariants();
}

#[test]
fn tools_json_full_auto_has_every_builtin_with_metadata() {
    let env = TestEnv::new(vec![]);
    let v = tools_json(&env, &["--full-auto"]);
    assert_eq!(
        names(&v["tools"]),
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
    assert_eq!(names(&v["api_tools"]), names(&v["tools"]));
    let by_name = |n: &str| {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()
            .clone()
    };
    let bash = by_name("Bash");
    assert_eq!(bash["destructive"], true);
    assert_eq!(bash["read_only"], false);
    assert_eq!(bash["concurrency_safe"], false);
    assert_eq!(bash["category"], "shell");
    assert_eq!(by_name("WriteFile")["read_only"], false);
    assert_eq!(by_name("Grep")["category"], "search");
    assert_eq!(by_name("ReadFile")["category"], "file");
    for (tool, field) in [
        ("ReadFile", "path"),
        ("WriteFile", "content"),
        ("EditFile", "old_string"),
        ("Bash", "command"),
        ("Glob", "pattern"),
        ("Grep", "pattern"),
    ] {
        let required = by_name(tool)["input_schema"]["required"].clone();
        assert!(
            required.as_array().unwrap().iter().any(|r| r == field),
            "{tool} requires {field}: {required}"
        );
    }
}

#[test]
fn tools_json_permission_flags_refine_the_set() {
    let env = TestEnv::new(vec![]);
    assert_eq!(
        names(&tools_json(&env, &["--allow-write"])["tools"]),
        [
            "EditFile",
            "Glob",
            "Grep",
            "ReadFile",
            "Task",
            "TodoWrite",
            "WriteFile"
        ]
    );
    assert_eq!(
        names(&tools_json(&env, &["--allow-bash"])["tools"]),
        [
            "Bash",
            "BashOutput",
            "Glob",
            "Grep",
            "KillBash",
            "ReadFile",
            "Task",
            "TodoWrite"
        ]
    );
    assert_eq!(
        names(&tools_json(&env, &["--full-auto", "--disallowed-tools", "Bash,Grep"])["tools"]),
        [
            "EditFile",
            "Glob",
            "ReadFile",
            "Task",
            "TodoWrite",
            "WriteFile"
        ]
    );
}

#[test]
fn bad_flag_is_exit_2_naming_the_flag() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--frobnicate", "hi"]);
    out.assert_code(2).assert_no_secret();
    assert!(out.stderr.contains("--frobnicate"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    let out = env.run(&["tools", "--frobnicate"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--frobnicate"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn bad_duration_is_exit_2_naming_the_flag() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--timeout", "banana", "hi"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--timeout"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn missing_api_key_is_exit_2_naming_the_variable() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("never"))]);
    let mut c = env.command(&["run", "hi"]);
    c.env_remove("ANTHROPIC_API_KEY");
    let out = env.spawn_command(c).wait();
    out.assert_code(2);
    assert!(out.stderr.contains("ANTHROPIC_API_KEY"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn unknown_tool_name_in_allowed_tools_is_exit_2() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--allowed-tools", "ReadFile,Frobnicate", "hi"]);
    out.assert_code(2);
    assert!(out.stderr.contains("Frobnicate"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

/// Values that would otherwise lose the transcript or fail every request are refused
/// before any request, naming the flag.
#[test]
fn unusable_values_are_exit_2_naming_the_flag() {
    let env = TestEnv::new(vec![]);
    let missing = env.out("no/such/dir/t.json");
    let dir = env.out("");
    for (args, flag) in [
        (
            vec!["run", "-o", missing.to_str().unwrap(), "hi"],
            "-o/--output",
        ),
        (
            vec!["run", "-o", dir.to_str().unwrap(), "hi"],
            "-o/--output",
        ),
        (vec!["run", "--idle-timeout", "0s", "hi"], "--idle-timeout"),
        (vec!["run", "-m", "", "hi"], "--model"),
    ] {
        let out = env.run(&args);
        out.assert_code(2);
        assert!(out.stderr.contains(flag), "{args:?}: {}", out.stderr);
    }
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn empty_prompt_is_exit_2() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", ""]);
    out.assert_code(2);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn model_max_tokens_and_tools_reach_the_request() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let out = env.run(&[
        "run",
        "-m",
        "claude-flag-model",
        "--max-tokens",
        "1234",
        "hi",
    ]);
    out.assert_code(0).assert_no_secret();
    let req = &env.server.requests()[0];
    assert_eq!(req.body["model"], "claude-flag-model");
    assert_eq!(req.body["max_tokens"], 1234);
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.header("x-api-key"), Some(API_KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    let mut sent = req.tool_names();
    sent.sort();
    assert_eq!(
        sent,
        ["Glob", "Grep", "ReadFile", "Task", "TodoWrite"],
        "a disabled tool is not sent"
    );
    env.server.assert_invariants();
}

#[test]
fn agent_model_env_sets_the_model() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let mut c = env.command(&["run", "hi"]);
    c.env("AGENT_MODEL", "claude-env-model");
    env.spawn_command(c).wait().assert_code(0);
    assert_eq!(env.server.requests()[0].body["model"], "claude-env-model");
    env.server.assert_invariants();
}

#[test]
fn base_url_flag_wins_over_the_variable() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let url = env.server.url();
    let mut c = env.command(&["run", "--base-url", &url, "hi"]);
    // A port nobody listens on: reaching it would fail the run.
    c.env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
    env.spawn_command(c).wait().assert_code(0);
    assert_eq!(env.server.request_count(), 1);
    env.server.assert_invariants();
}

#[test]
fn system_prompt_replace_append_and_agents_md() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_text("ok")),
        Reply::Sse(turn_text("ok")),
    ]);
    env.write("AGENTS.md", "Project rule: always use tabs-zebra.\n");
    std::fs::write(env.out("sys.txt"), "You are the replaced prompt-koala.").unwrap();
    let sys = format!("@{}", env.out("sys.txt").display());
    env.run(&["run", "--append-system-prompt", "Extra-giraffe rule.", "hi"])
        .assert_code(0);
    env.run(&["run", "--system", &sys, "hi"]).assert_code(0);
    let reqs = env.server.requests();
    let first = reqs[0].system_text();
    assert!(first.contains("tabs-zebra"), "AGENTS.md appended: {first}");
    assert!(first.contains("Extra-giraffe rule."), "{first}");
    assert!(first.len() > 200, "the built-in prompt is kept: {first}");
    let second = reqs[1].system_text();
    assert!(
        second.contains("You are the replaced prompt-koala."),
        "{second}"
    );
    assert!(!second.contains("Extra-giraffe"), "{second}");
    env.server.assert_invariants();
}

#[test]
fn text_mode_stdout_is_only_the_final_text() {
    let env = TestEnv::new(vec![
        Reply::Sse(
            Turn::new()
                .text("Let me look first.")
                .tool("toolu_1", "Glob", serde_json::json!({"pattern": "*"}))
                .frames(),
        ),
        Reply::Sse(turn_text("The answer is 42.")),
    ]);
    env.write("a.txt", "x\n");
    let out = env.run(&["run", "what is the answer?"]);
    out.assert_code(0).assert_no_secret();
    assert_eq!(out.stdout.trim_end(), "The answer is 42.");
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn quiet_silences_stderr_and_verbose_logs_tool_calls() {
    let script = || {
        vec![
            Reply::Sse(turn_tools(&[(
                "toolu_1",
                "Glob",
                serde_json::json!({"pattern": "*.txt"}),
            )])),
            Reply::Sse(turn_text("ok")),
        ]
    };
    let quiet = TestEnv::new(script());
    quiet.write("a.txt", "x\n");
    let out = quiet.run(&["run", "-q", "hi"]);
    out.assert_code(0);
    assert_eq!(out.stderr, "", "-q leaves stderr empty on success");
    quiet.server.assert_invariants();

    let verbose = TestEnv::new(script());
    verbose.write("a.txt", "x\n");
    let out = verbose.run(&["run", "-v", "hi"]);
    out.assert_code(0).assert_no_secret();
    assert!(
        out.stderr.contains("Glob"),
        "-v logs the tool call: {}",
        out.stderr
    );
    assert_eq!(out.stdout.trim_end(), "ok");
    verbose.server.assert_invariants();
}

/// `agent run --help` is in sections, every option under one (only `-h, --help` stays in
/// clap's own "Options"); `-h` is the short form: one line per option.
#[test]
fn run_help_is_in_sections_and_h_is_one_line_per_option() {
    const SECTIONS: [&str; 9] = [
        "Input",
        "Output",
        "Model and provider",
        "Tools and permissions",
        "Sandbox",
        "CI and budgets",
        "MCP",
        "Context and sessions",
        "Skills",
    ];
    let env = TestEnv::new(vec![]);
    // `  -q, --quiet` or `      --json`, not a line of help text (`          - off: …`).
    let is_option = |line: &str| {
        (line.starts_with("  -") && !line.starts_with("  - ")) || line.starts_with("      --")
    };
    // (heading, option lines under it), in order.
    let sections = |text: &str| -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for line in text.lines() {
            if let Some(h) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
                out.push((h.to_string(), Vec::new()));
            } else if is_option(line)
                && let Some((_, options)) = out.last_mut()
            {
                options.push(line.trim().to_string());
            }
        }
        out
    };
    let long = env.run(&["run", "--help"]);
    long.assert_code(0);
    let short = env.run(&["run", "-h"]);
    short.assert_code(0);
    for out in [&long, &short] {
        let found = sections(&out.stdout);
        let names: Vec<&str> = found.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(names[..2], ["Arguments", "Options"], "{}", out.stdout);
        assert_eq!(names[2..], SECTIONS, "{}", out.stdout);
        assert_eq!(found[1].1.len(), 1, "only -h/--help outside the sections");
        assert!(found[1].1[0].starts_with("-h, --help"), "{:?}", found[1].1);
        for (heading, options) in &found[2..] {
            assert!(!options.is_empty(), "{heading} is empty");
        }
    }
    let count = |out: &RunOutput| -> usize {
        sections(&out.stdout)[2..]
            .iter()
            .map(|(_, o)| o.len())
            .sum()
    };
    assert!(count(&short) > 50, "{}", short.stdout);
    assert_eq!(count(&short), count(&long), "the same options in both");
    // -h: every line of a section is an option (no help text on lines of its own).
    let mut in_sections = false;
    for line in short.stdout.lines() {
        in_sections |= line == "Options:";
        if in_sections && !line.is_empty() && line.starts_with(' ') {
            assert!(is_option(line), "a wrapped -h line: {line:?}");
        }
    }
    assert!(
        short.stdout.lines().count() * 2 < long.stdout.lines().count(),
        "-h is not short: {} lines",
        short.stdout.lines().count()
    );
}
