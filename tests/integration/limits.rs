//! The ways a run is stopped from outside its normal end: `--max-turns` (exit 3),
//! `--timeout` (exit 124), SIGTERM/SIGINT (exit 130), SIGKILL (the last checkpoint) —
//! each leaving the `-o` transcript on disk. Signals are sent once the mock has the
//! request in hand (synchronised on its request record, never on a sleep).

use crate::support::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn glob_turn(id: &str) -> Reply {
    Reply::Sse(turn_tools(&[(id, "Glob", json!({"pattern": "*"}))]))
}

#[test]
fn max_turns_is_exit_3_and_the_last_calls_are_not_run() {
    let env = TestEnv::new(vec![
        glob_turn("toolu_1"),
        glob_turn("toolu_2"),
        glob_turn("toolu_3"),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--json",
        "--max-turns",
        "2",
        "-o",
        out_file.to_str().unwrap(),
        "loop",
    ]);
    out.assert_code(3).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "max_turns");
    assert_eq!(t["is_error"], true);
    assert_eq!(t["num_turns"], 2);
    assert_eq!(env.server.request_count(), 2);
    let calls = t["tool_calls"].as_array().unwrap();
    assert_eq!(
        calls.len(),
        1,
        "the 2nd turn's calls are not executed: {calls:?}"
    );
    assert_eq!(calls[0]["id"], "toolu_1");
    assert_eq!(read_json(&out_file)["status"], "max_turns");
    env.server.assert_invariants();
}

#[test]
fn timeout_is_exit_124_with_the_output_file() {
    let env = TestEnv::new(vec![
        glob_turn("toolu_1"),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--json",
        "--timeout",
        "1s",
        "-o",
        out_file.to_str().unwrap(),
        "slow",
    ]);
    out.assert_code(124).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "timeout");
    assert_eq!(t["is_error"], true);
    let file = read_json(&out_file);
    assert_eq!(file["status"], "timeout");
    assert_eq!(file["num_turns"], 1, "the completed turn is kept");
    assert_eq!(file["tool_calls"][0]["id"], "toolu_1");
    assert_eq!(env.server.request_count(), 2);
    env.server.assert_invariants();
}

/// Runs until the mock holds the second request (hanging), then sends `sig`.
fn interrupted_by(sig: i32) {
    let env = TestEnv::new(vec![
        glob_turn("toolu_1"),
        Reply::Hang(vec![sse::message_start(10, 0, 0), sse::ping()]),
    ]);
    let out_file = env.out("t.json");
    let running = env.spawn(&["run", "--json", "-o", out_file.to_str().unwrap(), "wait"]);
    env.server.wait_for_requests(2);
    running.signal(sig);
    let out = running.wait();
    out.assert_code(130).assert_no_secret();
    assert_eq!(out.json()["status"], "interrupted");
    let file = read_json(&out_file);
    assert_eq!(file["status"], "interrupted");
    assert_eq!(file["is_error"], true);
    assert_eq!(file["num_turns"], 1);
    let msgs = file["messages"].as_array().unwrap();
    assert!(msgs.len() >= 3, "the first turn and its results: {msgs:?}");
    assert!(file["messages"].to_string().contains("toolu_1"));
    env.server.assert_invariants();
}

#[test]
fn sigterm_is_exit_130_with_the_output_file() {
    interrupted_by(libc::SIGTERM);
}

#[test]
fn sigint_is_exit_130_with_the_output_file() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sigkill_leaves_the_last_complete_turn_on_disk() {
    let env = TestEnv::new(vec![
        glob_turn("toolu_1"),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
    ]);
    let out_file = env.out("t.json");
    let running = env.spawn(&["run", "-o", out_file.to_str().unwrap(), "wait"]);
    env.server.wait_for_requests(2);
    running.signal(libc::SIGKILL);
    let out = running.wait();
    assert_eq!(out.code(), None, "killed by the signal");
    // -o names the journal the later checkpoints went to.
    let file = crate::journal::read_checkpoint(&out_file);
    assert_eq!(file["num_turns"], 1);
    assert_eq!(file["tool_calls"][0]["id"], "toolu_1");
    assert!(file["messages"].to_string().contains("toolu_1"));
    env.server.assert_invariants();
}

/// Whether a process with this pid still exists (zombies awaiting their reaper count
/// as gone after a short grace: init reaps orphans asynchronously).
fn process_gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // SAFETY: signal 0 only checks existence.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return true;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
        {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_kills_a_running_bash_command() {
    let env = TestEnv::new(vec![Reply::Sse(turn_tools(&[(
        "toolu_sleep",
        "Bash",
        json!({"command": "sleep 30 & echo $! > pid.txt; wait"}),
    )]))]);
    let out_file = env.out("t.json");
    let running = env.spawn(&[
        "run",
        "--allow-bash",
        "-o",
        out_file.to_str().unwrap(),
        "sleep",
    ]);
    // Synchronise on the command having started (the pid file it writes).
    let pid_file = env.path("pid.txt");
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid: i32 = loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if text.ends_with('\n') {
            break text.trim().parse().unwrap();
        }
        assert!(Instant::now() < deadline, "Bash never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    running.signal(libc::SIGTERM);
    let out = running.wait();
    out.assert_code(130);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "interrupted");
    // The call that was running is in the transcript, marked unfinished.
    let call = &t["tool_calls"][0];
    assert_eq!(
        (
            &call["id"],
            &call["is_error"],
            &call["metadata"]["unfinished"]
        ),
        (&json!("toolu_sleep"), &json!(true), &json!(true)),
        "{call}"
    );
    assert!(process_gone(pid), "the Bash command's child {pid} survived");
    env.server.assert_invariants();
}

/// A signal while the task is still being read (before the run exists) is exit 130 too,
/// not the default 143: the watcher is the first thing `agent run` starts.
#[test]
fn sigterm_while_reading_the_task_is_exit_130() {
    let env = TestEnv::new(vec![]);
    let running = env.spawn(&["run", "-"]); // stdin is a pipe the test never closes
    // Synchronise on the watcher thread existing (a second task in /proc), not a sleep.
    let tasks = format!("/proc/{}/task", running.pid());
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&tasks).map(|d| d.count()).unwrap_or(0) < 2 {
        assert!(Instant::now() < deadline, "no watcher thread appeared");
        std::thread::yield_now();
    }
    running.signal(libc::SIGTERM);
    let out = running.wait();
    out.assert_code(130);
    assert!(
        out.stderr.contains("before the run started"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 0);
}

/// A process that escapes its command's group (`setsid`) does not outlive the run: the
/// agent adopts orphans and kills what is left when the run ends.
#[test]
fn a_process_that_escaped_its_group_is_killed_when_the_run_ends() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[(
            "toolu_escape",
            "Bash",
            // The command returns only once the child has left the group (it writes its
            // pid after setsid), so the group kill cannot catch it first.
            json!({"command": "setsid sh -c 'echo $$ > pid.txt; exec sleep 299' >/dev/null 2>&1 & \
                               while [ ! -s pid.txt ]; do sleep 0.01; done"}),
        )])),
        Reply::Sse(turn_text("left a daemon behind")),
    ]);
    let out = env.run(&["run", "--allow-bash", "escape"]);
    out.assert_code(0);
    let pid: i32 = env.read("pid.txt").trim().parse().unwrap();
    // Alive means: /proc still has it, running `sleep 299`, and it is not a zombie.
    let alive = || {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        String::from_utf8_lossy(&cmd).contains("299")
            && !stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    let survived = alive();
    if survived {
        // SAFETY: cleaning up the process this test made escape.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!survived, "the escaped process {pid} survived the run");
    assert!(
        out.stderr.contains("left running in the background"),
        "{}",
        out.stderr
    );
}

/// Orphans adopted from a command that died with its group are reaped as the run goes,
/// not left as zombies until the end.
#[test]
fn adopted_orphans_are_reaped_during_the_run() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[(
            "toolu_1",
            "Bash",
            json!({"command": "for i in 1 2 3; do ( sleep 30 & ); done; true"}),
        )])),
        Reply::Sse(turn_tools(&[(
            "toolu_2",
            "Bash",
            json!({"command": "true"}),
        )])),
        Reply::Sse(turn_tools(&[(
            "toolu_3",
            "Bash",
            // The agent is the parent of the shell's supervisor.
            json!({"command": "ps -o stat= --ppid $(ps -o ppid= -p $PPID) | grep -c Z; true"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    let out = env.run(&["run", "--allow-bash", "--json", "zombies"]);
    out.assert_code(0);
    let t = out.json();
    let last = t["messages"][6]["content"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(last.starts_with("<output>0"), "zombies left: {last}");
}
