//! A CI log (stderr not a terminal): one plain line per turn and per tool call, no
//! spinner or colour; `-q` silences them; under GitHub Actions a failed run adds an
//! `::error::` annotation.

use serde_json::json;

use crate::support::*;

fn glob_then_text() -> Vec<Reply> {
    vec![
        Reply::Sse(turn_tools(&[(
            "toolu_1",
            "Glob",
            json!({"pattern": "*.rs"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]
}

#[test]
fn each_turn_and_tool_call_gets_a_plain_line() {
    let env = TestEnv::new(glob_then_text());
    let out = env.run(&["run", "find"]);
    out.assert_code(0);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines.contains(&"agent: turn 1: waiting for the model"),
        "{}",
        out.stderr
    );
    assert!(
        lines.contains(&r#"agent: turn 1: Glob {"pattern":"*.rs"}"#),
        "{}",
        out.stderr
    );
    assert!(
        lines.contains(&"agent: turn 2: waiting for the model"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains('\u{1b}'),
        "no escape sequences: {:?}",
        out.stderr
    );
}

#[test]
fn quiet_silences_the_progress_lines() {
    let env = TestEnv::new(glob_then_text());
    let out = env.run(&["run", "-q", "find"]);
    out.assert_code(0);
    assert!(!out.stderr.contains("turn 1"), "{}", out.stderr);
}

#[test]
fn a_failed_run_under_github_actions_is_annotated() {
    let env = TestEnv::new(vec![Reply::Sse(turn_tools(&[(
        "toolu_1",
        "Glob",
        json!({"pattern": "*"}),
    )]))]);
    let out = env.run_with_env(
        &["run", "-q", "--max-turns", "1", "find"],
        &[("GITHUB_ACTIONS", "true")],
    );
    out.assert_code(3);
    let annotation = out
        .stderr
        .lines()
        .find(|l| l.starts_with("::error"))
        .unwrap_or_else(|| panic!("no annotation: {}", out.stderr));
    assert!(
        annotation
            .starts_with("::error title=agent run max_turns::max_turns: reached --max-turns 1"),
        "{annotation}"
    );
}

#[test]
fn a_successful_run_under_github_actions_is_not_annotated() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("fine"))]);
    let out = env.run_with_env(&["run", "hi"], &[("GITHUB_ACTIONS", "true")]);
    out.assert_code(0);
    assert!(!out.stderr.contains("::error"), "{}", out.stderr);
}
