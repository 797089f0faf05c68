//! Tool flags a switching user looks for: the Bash timeout the model is told (`--bash-timeout`), rules on
//! the command line (`--allowed-tools` / `--disallowed-tools` rules, `--settings` JSON),
//! and `--add-dir`.

use serde_json::Value;

use crate::support::*;

/// The Bash tool as the first request sent it, after a run with `flags`.
fn bash_tool_sent(flags: &[&str]) -> Value {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("Done."))]);
    let mut args = vec!["run", "--allow-bash"];
    args.extend_from_slice(flags);
    args.push("hi");
    env.run(&args).assert_code(0);
    let reqs = env.server.requests();
    reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Bash")
        .cloned()
        .expect("Bash in the request's tools")
}

#[test]
fn bash_description_states_the_runs_default_timeout() {
    let t = bash_tool_sent(&[]);
    let d = t["description"].as_str().unwrap();
    assert!(
        d.contains("- Timeout: 2 minutes unless you set `timeout` in seconds (1 to 600)."),
        "{d}"
    );
    assert_eq!(t["input_schema"]["properties"]["timeout"]["maximum"], 600);

    let t = bash_tool_sent(&["--bash-timeout", "90s"]);
    let d = t["description"].as_str().unwrap();
    assert!(d.contains("- Timeout: 90 seconds unless"), "{d}");
    assert_eq!(t["input_schema"]["properties"]["timeout"]["maximum"], 600);

    // A default over 10 minutes raises the maximum the model may ask for.
    let t = bash_tool_sent(&["--bash-timeout", "15m"]);
    let d = t["description"].as_str().unwrap();
    assert!(
        d.contains("15 minutes unless") && d.contains("(1 to 900)"),
        "{d}"
    );
    assert_eq!(t["input_schema"]["properties"]["timeout"]["maximum"], 900);
    let schema_text = t["input_schema"]["properties"]["timeout"]["description"]
        .as_str()
        .unwrap();
    assert!(schema_text.contains("Default: 15 minutes"), "{schema_text}");
}

/// Which of `calls` were denied, by id, in a run with `flags` whose first turn makes
/// them all.
fn denied_ids(env: &TestEnv, flags: &[&str], calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut args = vec!["run", "--json"];
    args.extend_from_slice(flags);
    args.push("go");
    let out = env.run(&args);
    out.assert_code(0);
    let doc = out.json();
    let ids: Vec<String> = doc["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["tool_use_id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        ids.iter().all(|id| calls.iter().any(|(c, _, _)| c == id)),
        "{ids:?}"
    );
    ids
}

fn script(calls: &[(&str, &str, Value)]) -> Vec<Reply> {
    let mut turn = Turn::new();
    for (id, name, input) in calls {
        turn = turn.tool(id, name, input.clone());
    }
    vec![Reply::turn(turn), Reply::turn(Turn::new().text("Done."))]
}

/// The same rules from the command line and from a settings file deny and allow exactly
/// the same calls, and an allow rule on the command line enables its tool.
#[test]
fn command_line_rules_judge_as_settings_rules_do() {
    use serde_json::json;
    let bash = |id: &'static str, cmd: &str| (id, "Bash", json!({"command": cmd}));
    let edit = |id: &'static str, path: &str| {
        (
            id,
            "EditFile",
            json!({"path": path, "old_string": "a", "new_string": "b"}),
        )
    };
    let read = |id: &'static str, path: &str| (id, "ReadFile", json!({"path": path}));
    // (allow or deny, rules, tools the settings form enables by name, calls, denied ids)
    type Case = (
        bool,
        Vec<&'static str>,
        Vec<&'static str>,
        Vec<(&'static str, &'static str, Value)>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            true,
            vec!["Bash(true)", "Bash(echo a:*)"],
            vec!["Bash"],
            vec![
                bash("c1", "true"),
                bash("c2", "echo a b"),
                bash("c3", "echo b"),
                bash("c4", "true && echo a"),
                bash("c5", "true && ls"),
            ],
            vec!["c3", "c5"],
        ),
        (
            true,
            vec!["EditFile(src/**)", "Bash(echo a,b)"],
            vec!["EditFile", "Bash"],
            vec![
                edit("e1", "src/x.txt"),
                edit("e2", "x.txt"),
                bash("e3", "echo a,b"),
                bash("e4", "echo a"),
            ],
            vec!["e2", "e4"],
        ),
        (
            false,
            vec!["Bash(rm:*)", "ReadFile(secret.txt)"],
            vec![],
            vec![
                bash("d1", "rm -f nothing"),
                bash("d2", "echo rm"),
                read("d3", "secret.txt"),
                read("d4", "src/x.txt"),
            ],
            vec!["d1", "d3"],
        ),
    ];
    for (allow, rules, names, calls, want) in cases {
        let key = if allow { "allow" } else { "deny" };
        let settings = json!({"permissions": {key: rules}}).to_string();
        let joined = rules.join(",");
        let cli: Vec<&str> = if allow {
            vec!["--allowed-tools", &joined]
        } else {
            vec!["--full-auto", "--disallowed-tools", &joined]
        };
        let names_joined = names.join(",");
        let from_file: Vec<&str> = if allow {
            vec!["--allowed-tools", &names_joined, "--settings", "rules.json"]
        } else {
            vec!["--full-auto", "--settings", "rules.json"]
        };
        let mut verdicts = Vec::new();
        for flags in [cli, from_file] {
            let env = TestEnv::new(script(&calls));
            env.write("src/x.txt", "a\n");
            env.write("x.txt", "a\n");
            env.write("secret.txt", "s\n");
            env.write("rules.json", &settings);
            verdicts.push(denied_ids(&env, &flags, &calls));
        }
        assert_eq!(verdicts[0], want, "command line: {rules:?}");
        assert_eq!(verdicts[1], want, "settings file: {rules:?}");
    }
}

#[test]
fn a_bad_command_line_rule_is_a_usage_error_naming_the_flag() {
    let env = TestEnv::new(vec![]);
    for (flag, rule, needle) in [
        ("--allowed-tools", "Bash(a && b)", "one simple command"),
        ("--disallowed-tools", "Nope(x)", "unknown tool \"Nope\""),
        ("--allowed-tools", "ReadFile([)", "bad glob"),
    ] {
        let out = env.run(&["run", flag, rule, "hi"]);
        out.assert_code(2);
        assert!(
            out.stderr.contains(flag) && out.stderr.contains(needle),
            "{flag} {rule}: {}",
            out.stderr
        );
    }
    assert_eq!(env.server.request_count(), 0);
}
