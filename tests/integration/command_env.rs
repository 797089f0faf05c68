//! `--command-env allow|scrub` (issue 46, item 4): variables the job exported that look
//! like secrets (`NPM_TOKEN`, `MY_SECRET_PASSWORD`, a `DATABASE_URL` with a password)
//! reach no command, whether a Bash call, a hook or an MCP server, in either mode; in
//! `allow` only the listed names (and the basics) are there, in `scrub` everything else
//! is, and each removed variable is named on stderr (its value never).

use serde_json::json;

use crate::support::*;

const NPM: &str = "npm-secret-token-0123456789";
const PASSWORD: &str = "pw-secret-password-0123456789";
const DB_PASSWORD: &str = "dbpass0123456789";
const NAMES: [&str; 5] = [
    "NPM_TOKEN",
    "MY_SECRET_PASSWORD",
    "DATABASE_URL",
    "PLAIN_VAR",
    "KEEP_ME",
];

/// What each kind of command saw: Bash's `env`, the hook's `env`, and the MCP server's
/// answer for each of `NAMES` (`NAME=value` or `NAME=<unset>`).
struct Seen {
    bash: String,
    hook: String,
    mcp: Vec<String>,
    stderr: String,
}

fn run(mode: &str) -> Seen {
    let mut calls: Vec<(String, &str, serde_json::Value)> = NAMES
        .iter()
        .map(|n| (format!("toolu_mcp_{n}"), "mcp__t__env", json!({"name": n})))
        .collect();
    calls.insert(
        0,
        ("toolu_bash".to_string(), "Bash", json!({"command": "env"})),
    );
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, input)| (id.as_str(), *name, input.clone()))
        .collect();
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&calls)),
        Reply::Sse(turn_text("done")),
    ]);
    let mcp = env.out("mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"t": {"type": "stdio",
            "command": env!("CARGO_BIN_EXE_mcp-test-server"), "args": [], "env": {}}}})
        .to_string(),
    )
    .unwrap();
    let hook_out = env.out("hook-env.txt");
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
        "command": format!("env > '{}'", hook_out.display())}]}});
    let out = env.run_with_env(
        &[
            "run",
            "--allow-bash",
            "--command-env",
            mode,
            "--command-env-pass",
            "KEEP_*",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--settings",
            &settings.to_string(),
            "go",
        ],
        &[
            ("NPM_TOKEN", NPM),
            ("MY_SECRET_PASSWORD", PASSWORD),
            (
                "DATABASE_URL",
                &format!("postgres://app:{DB_PASSWORD}@db.internal:5432/app"),
            ),
            ("PLAIN_VAR", "plain-value"),
            ("KEEP_ME", "kept-value"),
        ],
    );
    out.assert_code(0);
    let results = env.server.requests()[1].tool_results();
    let text = |id: &str| {
        results
            .iter()
            .find(|r| r.tool_use_id == id)
            .unwrap_or_else(|| panic!("no result for {id}"))
            .content
            .clone()
    };
    Seen {
        bash: text("toolu_bash"),
        hook: std::fs::read_to_string(&hook_out).unwrap(),
        mcp: NAMES
            .iter()
            .map(|n| text(&format!("toolu_mcp_{n}")))
            .collect(),
        stderr: out.stderr.clone(),
    }
}

fn assert_no_secret(seen: &Seen) {
    for (what, text) in [("bash", &seen.bash), ("hook", &seen.hook)] {
        for name in &NAMES[..3] {
            assert!(
                !text.lines().any(|l| l.starts_with(&format!("{name}="))),
                "{what} got {name}: {text}"
            );
        }
        for value in [NPM, PASSWORD, DB_PASSWORD] {
            assert!(!text.contains(value), "{what} got a secret: {text}");
        }
    }
    for (name, answer) in NAMES[..3].iter().zip(&seen.mcp) {
        assert_eq!(answer, &format!("{name}=<unset>"));
    }
    for value in [NPM, PASSWORD, DB_PASSWORD] {
        assert!(!seen.stderr.contains(value), "{}", seen.stderr);
    }
}

#[test]
fn scrub_removes_secret_looking_variables_from_bash_hooks_and_mcp_servers_and_names_them() {
    let seen = run("scrub");
    assert_no_secret(&seen);
    // Everything else passes.
    for text in [&seen.bash, &seen.hook] {
        assert!(text.contains("PLAIN_VAR=plain-value"), "{text}");
        assert!(text.contains("KEEP_ME=kept-value"), "{text}");
    }
    assert_eq!(seen.mcp[3], "PLAIN_VAR=plain-value");
    assert_eq!(seen.mcp[4], "KEEP_ME=kept-value");
    // One warning naming each removed variable (names only).
    let warning = seen
        .stderr
        .lines()
        .find(|l| l.contains("not passed to commands"))
        .unwrap_or_else(|| panic!("no warning: {}", seen.stderr));
    for name in &NAMES[..3] {
        assert!(warning.contains(name), "{warning}");
    }
    assert!(!warning.contains("PLAIN_VAR"), "{warning}");
}

#[test]
fn allow_passes_only_the_listed_names() {
    let seen = run("allow");
    assert_no_secret(&seen);
    for text in [&seen.bash, &seen.hook] {
        assert!(!text.contains("PLAIN_VAR"), "{text}");
        assert!(text.contains("KEEP_ME=kept-value"), "{text}");
        assert!(text.lines().any(|l| l.starts_with("PATH=")), "{text}");
        // Only the allow list, the passed name and what the shell or the agent set.
        for line in text.lines().filter(|l| !l.starts_with("</")) {
            // Bash's result is wrapped in `<output>` tags.
            let line = line.trim_start_matches("<output>");
            let name = line.split('=').next().unwrap_or("");
            assert!(
                [
                    "PATH",
                    "HOME",
                    "LANG",
                    "TERM",
                    "TMPDIR",
                    "TZ",
                    "USER",
                    "KEEP_ME",
                    "PWD",
                    "SHLVL",
                    "_",
                    "OLDPWD",
                    "TRACEPARENT",
                    "CI",
                    "NO_COLOR"
                ]
                .contains(&name)
                    || name.starts_with("LC_")
                    || name.starts_with("GITHUB_")
                    || name.starts_with("RUNNER_")
                    || name.starts_with("AGENT_")
                    || line.starts_with(' ')
                    || !line.contains('='),
                "{name} passed in allow mode: {text}"
            );
        }
    }
    assert_eq!(seen.mcp[3], "PLAIN_VAR=<unset>");
    assert_eq!(seen.mcp[4], "KEEP_ME=kept-value");
    assert!(
        !seen.stderr.contains("not passed to commands"),
        "{}",
        seen.stderr
    );
}
