//! The task's size cap and `--stdin-context`: an endless source is a usage error naming
//! where it came from, and stdin is appended only when asked for.

use std::io::Write;
use std::process::Stdio;

use crate::support::*;

/// A pipe already holding `data` (writer closed), for a stdin with data ready at start.
fn stdin_with(data: &str) -> Stdio {
    let (r, mut w) = std::io::pipe().unwrap();
    w.write_all(data.as_bytes()).unwrap();
    Stdio::from(r)
}

#[test]
fn an_endless_prompt_file_is_a_usage_error_naming_the_flag() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--prompt-file", "/dev/zero"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--prompt-file /dev/zero"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("10 MiB"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn an_endless_stdin_task_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    let mut c = env.command(&["run", "-"]);
    c.stdin(std::fs::File::open("/dev/zero").unwrap());
    let out = env.spawn_command(c).wait();
    out.assert_code(2);
    assert!(out.stderr.contains("stdin (`-`)"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn stdin_context_is_appended_as_a_block() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("reviewed"))]);
    let mut c = env.command(&["run", "--stdin-context", "review this"]);
    c.stdin(stdin_with("diff --git a/x b/x\n+line\n"));
    let out = env.spawn_command(c).wait();
    out.assert_code(0);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let first = env.server.requests()[0].first_user_text();
    assert!(
        first.contains("review this\n\n<stdin>\ndiff --git a/x b/x\n+line\n</stdin>"),
        "{first}"
    );
    env.server.assert_invariants();
}

#[test]
fn stdin_context_with_dash_or_without_a_task_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    for args in [
        &["run", "--stdin-context", "-"][..],
        &["run", "--stdin-context"],
    ] {
        let out = env.run_with_stdin(args, "data");
        out.assert_code(2);
        assert!(out.stderr.contains("--stdin-context"), "{}", out.stderr);
    }
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn piped_data_beside_a_prompt_is_not_read_but_warned_about() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let mut c = env.command(&["run", "the task"]);
    c.stdin(stdin_with("unread data"));
    let out = env.spawn_command(c).wait();
    out.assert_code(0);
    let warnings: Vec<_> = out
        .stderr
        .lines()
        .filter(|l| l.contains("--stdin-context"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    let first = env.server.requests()[0].first_user_text();
    assert!(!first.contains("unread data"), "{first}");
}

#[test]
fn an_empty_open_pipe_beside_a_prompt_gives_no_warning() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let out = env.spawn(&["run", "the task"]).wait();
    out.assert_code(0);
    assert!(!out.stderr.contains("--stdin-context"), "{}", out.stderr);
}

#[test]
fn exit_2_prints_no_document_and_writes_no_output_file() {
    let env = TestEnv::new(vec![]);
    let out_file = env.out("t.json");
    let o = out_file.to_str().unwrap();
    for args in [
        &["run", "--json", "-o", o, "--max-turns", "0", "task"][..],
        &["run", "--jsonl", "-o", o, "--prompt-file", "/dev/zero"],
    ] {
        let out = env.run(args);
        out.assert_code(2);
        assert_eq!(out.stdout, "", "{args:?}");
        assert!(out.stderr.starts_with("agent: error: "), "{}", out.stderr);
        assert!(!out_file.exists(), "{args:?} wrote -o");
    }
}

#[test]
fn parser_errors_are_printed_by_the_parser() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--json", "--no-such-flag", "task"]);
    out.assert_code(2);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
}
