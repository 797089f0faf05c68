//! What every way out of a run (normal end, `--timeout`, a signal) leaves behind:
//! `git_diff_stat` computed, and no warning about background processes for the command
//! the run itself just killed.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

/// A git repository in the workspace with one committed file, then changed.
fn dirty_repo(env: &TestEnv) {
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(env.ws())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    env.write("f.txt", "one\n");
    git(&["add", "f.txt"]);
    git(&["commit", "-q", "-m", "init"]);
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
