//! Background commands (Bash `run_in_background`, BashOutput, KillBash) driven by a
//! scripted model: a real HTTP server started in the background, fetched by a later Bash
//! call, its log read and filtered, then killed; and a background command still running
//! when the run ends, killed (its pid checked) on success, `--timeout`, SIGTERM and
//! SIGKILL, and listed in the transcript.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// A real HTTP server (python's http.server), which writes its port to `port` once it
/// listens (renamed into place, so a reader never sees half of it) and logs each request
/// to stderr (merged into the command's output).
const SERVER: &str = "python3 -u -c \"\
import http.server as h, os\n\
s = h.HTTPServer(('127.0.0.1', 0), h.SimpleHTTPRequestHandler)\n\
open('port.tmp', 'w').write(str(s.server_port)); os.rename('port.tmp', 'port')\n\
print('listening', flush=True)\n\
s.serve_forever()\"";

/// Waits (bounded) for the port file, then fetches two paths.
const FETCH: &str = "for i in $(seq 200); do [ -s port ] && break; sleep 0.05; done; \
    curl -s http://127.0.0.1:$(cat port)/hello.txt; \
    curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:$(cat port)/missing";

/// A background command left running: it records its pid, then sleeps until killed.
const LEFT: &str = "echo $$ > left.pid; exec sleep 1301";

/// Hang guard only.
const GUARD: Duration = Duration::from_secs(30);

fn tool(id: &str, name: &str, input: Value) -> Reply {
    Reply::Sse(turn_tools(&[(id, name, input)]))
}

/// The tool result the transcript holds for `id`.
fn result_of(t: &Value, id: &str) -> String {
    for m in t["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" && b["tool_use_id"] == id {
                return match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
            }
        }
    }
    panic!("no result for {id}: {t}");
}

fn alive(pid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
}

/// True once `pid` is gone (bounded: SIGKILL and the reaping are asynchronous).
fn gone(pid: i64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The pid the left-running command wrote, once it has.
fn left_pid(env: &TestEnv) -> i64 {
    let started = Instant::now();
    loop {
        let t = std::fs::read_to_string(env.path("left.pid")).unwrap_or_default();
        if t.ends_with('\n') {
            return t.trim().parse().unwrap();
        }
        assert!(started.elapsed() < GUARD, "left.pid was never written");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills `pid` if a failed test left it running.
struct Stray(i64);
impl Drop for Stray {
    fn drop(&mut self) {
        if alive(self.0) {
            // SAFETY: kill(2) on a pid this test saw running its own command.
            unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
        }
    }
}

#[test]
fn a_server_in_the_background_is_fetched_read_and_killed_and_one_left_running_dies_at_the_end() {
    let env = TestEnv::new(vec![
        tool(
            "toolu_srv",
            "Bash",
            json!({"command": SERVER, "run_in_background": true}),
        ),
        tool("toolu_get", "Bash", json!({"command": FETCH})),
        tool(
            "toolu_log",
            "BashOutput",
            json!({"bash_id": "bash_1", "filter": "GET /"}),
        ),
        tool("toolu_kill", "KillBash", json!({"bash_id": "bash_1"})),
        tool("toolu_after", "BashOutput", json!({"bash_id": "bash_1"})),
        tool(
            "toolu_left",
            "Bash",
            json!({"command": LEFT, "run_in_background": true}),
        ),
        tool(
            "toolu_up",
            "Bash",
            json!({"command": "until [ -s left.pid ]; do sleep 0.01; done"}),
        ),
        Reply::Sse(turn_text("served")),
    ]);
    env.write("hello.txt", "hello from the background\n");
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--allow-bash",
        "--jsonl",
        "-o",
        out_file.to_str().unwrap(),
        "serve it",
    ]);
    out.assert_code(0);
    let t = read_json(&out_file);

    let started = result_of(&t, "toolu_srv");
    assert!(
        started.contains("bash_1") && started.contains("pid"),
        "{started}"
    );
    let fetched = result_of(&t, "toolu_get");
    assert!(fetched.contains("hello from the background"), "{fetched}");
    assert!(fetched.contains("404"), "{fetched}");
    // The log since the start, filtered to the request lines.
    let log = result_of(&t, "toolu_log");
    assert!(log.contains("\"GET /hello.txt HTTP/1.1\" 200"), "{log}");
    assert!(log.contains("\"GET /missing HTTP/1.1\" 404"), "{log}");
    assert!(
        !log.contains("listening"),
        "the filter drops other lines: {log}"
    );
    assert!(log.contains("<status>running</status>"), "{log}");
    let killed = result_of(&t, "toolu_kill");
    assert!(killed.contains("status: killed"), "{killed}");
    let after = result_of(&t, "toolu_after");
    assert!(after.contains("<status>killed</status>"), "{after}");

    let bg = t["background"].as_array().unwrap();
    assert_eq!(bg.len(), 2, "{bg:?}");
    let (server, left) = (&bg[0], &bg[1]);
    assert_eq!(server["id"], "bash_1");
    assert_eq!(server["command"], SERVER);
    assert_eq!(server["killed"], true);
    assert_eq!(server["killed_at_end"], false);
    assert!(server["ended_ms"].as_u64() >= server["started_ms"].as_u64());
    assert!(
        gone(server["pid"].as_i64().unwrap()),
        "KillBash left the server"
    );
    assert_eq!(left["id"], "bash_2");
    assert_eq!(left["killed_at_end"], true);
    assert_eq!(left["exit_code"], Value::Null);
    let pid = left["pid"].as_i64().unwrap();
    let _stray = Stray(pid);
    assert_eq!(
        pid,
        left_pid(&env),
        "the pid Bash reported is the command's"
    );
    assert!(gone(pid), "the background command outlived the run");
    assert!(
        out.stderr
            .contains("1 background command still running at the end (killed)"),
        "{}",
        out.stderr
    );

    // --jsonl: a started and a finished event for each.
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let started = of("background.started");
    assert_eq!(started.len(), 2);
    assert_eq!(started[0]["id"], "bash_1");
    assert_eq!(started[0]["pid"], server["pid"]);
    let finished = of("background.finished");
    assert_eq!(finished.len(), 2, "{finished:?}");
    assert_eq!(finished[0]["id"], "bash_1");
    assert_eq!(finished[0]["killed"], true);
    assert_eq!(finished[1]["id"], "bash_2");
    assert_eq!(finished[1]["killed_at_end"], true);
    // Before run.finished, which is last.
    assert_eq!(events.last().unwrap()["type"], "run.finished");
    assert_eq!(
        events.last().unwrap()["transcript"]["background"][1]["killed_at_end"],
        true
    );
}

/// A run whose model starts LEFT in the background, then hangs on the next turn.
fn left_then_hang() -> TestEnv {
    TestEnv::new(vec![
        tool(
            "toolu_left",
            "Bash",
            json!({"command": LEFT, "run_in_background": true}),
        ),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
    ])
}

/// The `-o` transcript lists the command as killed at the end, and it is gone.
fn assert_killed_at_end(out_file: &std::path::Path, pid: i64) {
    let t = read_json(out_file);
    let bg = t["background"].as_array().unwrap();
    assert_eq!(bg.len(), 1, "{t}");
    assert_eq!(bg[0]["pid"], pid);
    assert_eq!(bg[0]["killed_at_end"], true);
    assert!(bg[0]["ended_ms"].is_u64());
    assert!(gone(pid), "the background command outlived the run");
}

#[test]
fn a_timeout_kills_the_background_commands() {
    let env = left_then_hang();
    let out_file = env.out("t.json");
    let running = env.spawn(&[
        "run",
        "--allow-bash",
        "--timeout",
        "3s",
        "-o",
        out_file.to_str().unwrap(),
        "go",
    ]);
    let pid = left_pid(&env);
    let _stray = Stray(pid);
    assert!(alive(pid), "control: it runs while the agent does");
    let out = running.wait();
    out.assert_code(124);
    assert_killed_at_end(&out_file, pid);
    assert!(
        out.stderr.contains("1 background command still running"),
        "{}",
        out.stderr
    );
}

#[test]
fn sigterm_kills_the_background_commands() {
    let env = left_then_hang();
    let out_file = env.out("t.json");
    let running = env.spawn(&[
        "run",
        "--allow-bash",
        "-o",
        out_file.to_str().unwrap(),
        "go",
    ]);
    let pid = left_pid(&env);
    let _stray = Stray(pid);
    // The second request means the Bash call returned: the command runs in the background.
    env.server.wait_for_requests(2);
    assert!(alive(pid));
    running.signal(libc::SIGTERM);
    let out = running.wait();
    out.assert_code(130);
    assert_killed_at_end(&out_file, pid);
}

#[test]
fn sigkill_of_the_agent_takes_the_background_commands_with_it() {
    let env = left_then_hang();
    let running = env.spawn(&["run", "--allow-bash", "go"]);
    let pid = left_pid(&env);
    let _stray = Stray(pid);
    env.server.wait_for_requests(2);
    assert!(alive(pid));
    running.signal(libc::SIGKILL);
    let _ = running.wait();
    assert!(gone(pid), "the supervisor did not kill it");
}

#[test]
fn max_background_refuses_one_more_and_a_bad_value_is_exit_2() {
    let env = TestEnv::new(vec![
        tool(
            "toolu_a",
            "Bash",
            json!({"command": "sleep 1302", "run_in_background": true}),
        ),
        tool(
            "toolu_b",
            "Bash",
            json!({"command": "sleep 1303", "run_in_background": true}),
        ),
        Reply::Sse(turn_text("done")),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--allow-bash",
        "--max-background",
        "1",
        "-o",
        out_file.to_str().unwrap(),
        "two",
    ]);
    out.assert_code(0);
    let t = read_json(&out_file);
    assert!(result_of(&t, "toolu_a").contains("bash_1"));
    let refused = result_of(&t, "toolu_b");
    assert!(refused.contains("--max-background 1"), "{refused}");
    assert_eq!(t["background"].as_array().unwrap().len(), 1);
    let pid = t["background"][0]["pid"].as_i64().unwrap();
    let _stray = Stray(pid);
    assert!(gone(pid));

    let bad = env.run(&["run", "--max-background", "99", "x"]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("--max-background"), "{}", bad.stderr);
}
