//! Where the task comes from (SPEC §2): `-` and a piped stdin are read; a PROMPT
//! argument means stdin is never touched, even when it is an open pipe that never ends.

use crate::support::*;

#[test]
fn dash_reads_the_task_from_stdin() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let out = env.run_with_stdin(&["run", "-"], "summarise the repo in five lines\n");
    out.assert_code(0).assert_no_secret();
    let first = env.server.requests()[0].first_user_text();
    assert!(
        first.contains("summarise the repo in five lines"),
        "{first}"
    );
    env.server.assert_invariants();
}

#[test]
fn no_prompt_and_piped_stdin_reads_stdin() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let out = env.run_with_stdin(&["run", "--json"], "task from the pipe");
    out.assert_code(0);
    let first = env.server.requests()[0].first_user_text();
    assert!(first.contains("task from the pipe"), "{first}");
    env.server.assert_invariants();
}

#[test]
fn prompt_file_is_read() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    std::fs::write(env.out("task.md"), "task from a file").unwrap();
    let out = env.run(&["run", "--prompt-file", env.out("task.md").to_str().unwrap()]);
    out.assert_code(0);
    assert!(
        env.server.requests()[0]
            .first_user_text()
            .contains("task from a file")
    );
    env.server.assert_invariants();
}

#[test]
fn prompt_argument_never_reads_an_open_stdin() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("did not wait"))]);
    // The pipe stays open (the test holds its write end) until the run has exited.
    let running = env.spawn(&["run", "the real task"]);
    let out = running.wait();
    out.assert_code(0).assert_no_secret();
    assert_eq!(out.stdout.trim_end(), "did not wait");
    assert!(
        env.server.requests()[0]
            .first_user_text()
            .contains("the real task")
    );
    env.server.assert_invariants();
}

#[test]
fn empty_stdin_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    let out = env.run_with_stdin(&["run", "-"], "  \n");
    out.assert_code(2);
    assert_eq!(env.server.request_count(), 0);
}
