//! What every way out of a run (normal end, `--timeout`, a signal) leaves behind:
//! `git_diff_stat` computed, and no warning about background processes for the command
//! the run itself just killed.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

/// A git repository in the workspace with one committed file, then changed.
fn dirty_repo(env: &TestEnv) {
    env.git(&["init", "-q"]);
    env.write("f.txt", "one\n");
    env.git(&["add", "f.txt"]);
    env.git(&["commit", "-q", "-m", "init"]);
    env.write("f.txt", "one\ntwo\n");
}

fn sleeping_bash() -> Reply {
    Reply::Sse(turn_tools(&[(
        "toolu_sleep",
        "Bash",
        json!({"command": "echo $$ > pid.txt; sleep 60"}),
    )]))
}

fn assert_clean_end(out: &RunOutput, transcript: &serde_json::Value) {
    assert!(
        !out.stderr.contains("left running in the background"),
        "the killed command is not a background process: {}",
        out.stderr
    );
    let stat = transcript["git_diff_stat"].as_str().unwrap_or_default();
    assert!(
        stat.contains("f.txt") && stat.contains("1 insertion"),
        "{transcript}"
    );
}

#[test]
fn a_timeout_during_a_command_keeps_the_diff_stat_and_warns_of_nothing() {
    let env = TestEnv::new(vec![sleeping_bash()]);
    dirty_repo(&env);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--allow-bash",
        "--timeout",
        "3s",
        "-o",
        out_file.to_str().unwrap(),
        "sleep",
    ]);
    out.assert_code(124);
    assert!(env.path("pid.txt").exists(), "the command was running");
    assert_clean_end(&out, &read_json(&out_file));
}

#[test]
fn an_interrupt_during_a_command_keeps_the_diff_stat_and_warns_of_nothing() {
    let env = TestEnv::new(vec![sleeping_bash()]);
    dirty_repo(&env);
    let out_file = env.out("t.json");
    let running = env.spawn(&[
        "run",
        "--allow-bash",
        "-o",
        out_file.to_str().unwrap(),
        "sleep",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(env.path("pid.txt")).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "Bash never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    running.signal(libc::SIGINT);
    let out = running.wait();
    out.assert_code(130);
    assert_clean_end(&out, &read_json(&out_file));
}

/// The command with a stdout pipe nobody reads (the returned end is held, never read)
/// and a task big enough that its first write fills the pipe.
fn unread_stdout(env: &TestEnv, args: &[&str]) -> (std::process::Command, std::io::PipeReader) {
    let task = "x".repeat(256 * 1024);
    std::fs::write(env.out("task.md"), task).unwrap();
    let mut c = env.command(args);
    c.args(["--prompt-file", env.out("task.md").to_str().unwrap()]);
    let (r, w) = std::io::pipe().unwrap();
    c.stdout(w);
    (c, r)
}

#[test]
fn a_timeout_ends_the_run_though_stdout_is_never_read() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("never printed"))]);
    let out_file = env.out("t.json");
    let (c, _unread) = unread_stdout(
        &env,
        &[
            "run",
            "--jsonl",
            "--timeout",
            "2s",
            "-o",
            out_file.to_str().unwrap(),
        ],
    );
    let out = env.spawn_command(c).wait();
    out.assert_code(124);
    assert_eq!(read_json(&out_file)["status"], "timeout");
    assert!(
        out.stderr.contains("stdout is not being read"),
        "{}",
        out.stderr
    );
}

#[test]
fn sigterm_ends_the_run_though_its_final_output_cannot_be_written() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("done"))]);
    let out_file = env.out("t.json");
    let (c, _unread) = unread_stdout(&env, &["run", "--json", "-o", out_file.to_str().unwrap()]);
    let running = env.spawn_command(c);
    // The -o file is written before stdout: once it says success, the run is blocked in
    // the final write of a transcript bigger than the pipe.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&out_file).is_ok_and(|t| t.contains("\"status\": \"success\"")) {
        assert!(Instant::now() < deadline, "the run never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
    running.signal(libc::SIGTERM);
    let out = running.wait();
    out.assert_code(1); // success, but the answer was never delivered
    assert_eq!(read_json(&out_file)["status"], "success");
}
