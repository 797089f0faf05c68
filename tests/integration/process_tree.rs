//! A command's whole process tree dies with the agent, even when the agent is killed by
//! SIGKILL: a background job in the command's group, a process that left the group
//! with `setsid`, and one that double-forked into a new session, each started by a Bash
//! call that is still running, directly under `agent run` and under `agent batch`; and a
//! daemon that a command which has already returned left behind.

use crate::support::*;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The Bash call: three kinds of process, each writing its pid once it is in place (the
/// escapees after `setsid`, so they have really left the group), then a wait that only
/// the kill ends. Each `sleep` has its own length, so a pid is only ever taken for ours
/// while its command line still says so.
const TREE: &str = "sleep 1001 & echo $! > bg.pid; \
    setsid sh -c 'echo $$ > escaped.pid; exec sleep 1002' & \
    ( setsid sh -c 'echo $$ > double.pid; exec sleep 1003' & ); \
    wait";

/// The pid files TREE writes, and what each process runs.
const PIDS: [(&str, &str); 3] = [
    ("bg.pid", "1001"),
    ("escaped.pid", "1002"),
    ("double.pid", "1003"),
];

/// Hang guard only: the command starts within milliseconds.
const START_GUARD: Duration = Duration::from_secs(60);

/// Polls until every pid file in `dir` holds a whole line; returns the pids.
fn wait_for_pids(dir: &Path) -> Vec<(i32, &'static str)> {
    wait_for(dir, &PIDS)
}

fn wait_for(dir: &Path, pids: &[(&str, &'static str)]) -> Vec<(i32, &'static str)> {
    let started = Instant::now();
    pids.iter()
        .map(|(file, arg)| {
            loop {
                let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
                if text.ends_with('\n') {
                    break (text.trim().parse().unwrap(), *arg);
                }
                assert!(started.elapsed() < START_GUARD, "{file} was never written");
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .collect()
}

/// The control: every one of `pids` is seen running (polled: one caught inside its
/// `exec` has, for that instant, no command line to read).
fn assert_all_run(pids: &[(i32, &'static str)]) {
    let started = Instant::now();
    for &(pid, arg) in pids {
        while !running(pid, arg) {
            assert!(
                started.elapsed() < START_GUARD,
                "sleep {arg} ({pid}) never ran"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Still running `sleep ARG` (not a zombie, not a reused pid).
fn running(pid: i32, arg: &str) -> bool {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit(')')
        .next()
        .is_some_and(|s| s.trim_start().starts_with('Z'));
    String::from_utf8_lossy(&cmd).contains(arg) && !zombie
}

/// SIGKILLs `running` (the agent or the batch) and checks that none of `strays` lives on.
fn kill_and_expect_none_left(running: Running, strays: &Strays, who: &str) {
    running.signal(libc::SIGKILL);
    let killed = running.wait();
    assert_eq!(killed.status.code(), None, "killed by the signal");
    let left = survivors(&strays.0);
    assert!(left.is_empty(), "outlived the {who}: {left:?}");
}

/// Kills what the test started if it fails before they are gone (a stray `sleep`
/// would otherwise outlive the test suite).
struct Strays(Vec<(i32, &'static str)>);

impl Drop for Strays {
    fn drop(&mut self) {
        for &(pid, arg) in &self.0 {
            if running(pid, arg) {
                // SAFETY: kill(2) on a pid just seen running our own `sleep`.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// Waits (bounded; SIGKILL and the clean-up are asynchronous) until none of `pids`
/// runs; returns the ones that still do.
fn survivors(pids: &[(i32, &'static str)]) -> Vec<(i32, &'static str)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = pids
            .iter()
            .copied()
            .filter(|&(pid, arg)| running(pid, arg))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tree_turn() -> Reply {
    Reply::Sse(turn_tools(&[(
        "toolu_tree",
        "Bash",
        json!({"command": TREE}),
    )]))
}

#[test]
fn a_sigkilled_agent_takes_its_running_commands_whole_tree_with_it() {
    let env = TestEnv::new(vec![tree_turn()]);
    let agent = env.spawn(&["run", "--allow-bash", "start a tree"]);
    let strays = Strays(wait_for_pids(&env.ws()));
    // Control: all three are up while the agent lives.
    assert_all_run(&strays.0);
    kill_and_expect_none_left(agent, &strays, "agent");
}

#[test]
fn a_sigkilled_batch_takes_its_tasks_commands_with_it() {
    let env = TestEnv::new(vec![tree_turn()]);
    env.write("proj/README", "x\n");
    env.write(
        "tasks.jsonl",
        "{\"id\":\"tree\",\"prompt\":\"start a tree\",\"workspace\":\"proj\",\
         \"args\":[\"--allow-bash\"]}\n",
    );
    let dir = env.out("results");
    let mut c = env.command(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
    c.stdin(std::process::Stdio::null());
    let batch = env.spawn_command(c);
    // The task runs in its own copy of the workspace.
    let strays = Strays(wait_for_pids(&dir.join("workspaces/tree")));
    assert_all_run(&strays.0);
    kill_and_expect_none_left(batch, &strays, "batch");
}

/// The command returns once the daemon (double fork, new session) is up; the agent is
/// killed later, while it waits on the model: the daemon still goes with it.
#[test]
fn a_daemon_left_by_a_finished_command_dies_with_the_agent() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[(
            "toolu_daemon",
            "Bash",
            json!({"command": "( setsid sh -c 'echo $$ > daemon.pid; exec sleep 1004' \
                                 >/dev/null 2>&1 & ); \
                               until [ -s daemon.pid ]; do sleep 0.01; done; echo up"}),
        )])),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
    ]);
    let agent = env.spawn(&["run", "--allow-bash", "start a daemon"]);
    // The second request carries the command's result: the command has returned.
    env.server.wait_for_requests(2);
    let strays = Strays(wait_for(&env.ws(), &[("daemon.pid", "1004")]));
    assert_all_run(&strays.0);
    kill_and_expect_none_left(agent, &strays, "agent");
}
