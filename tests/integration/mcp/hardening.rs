//! MCP servers that misbehave, and the ways out of a run: a stderr line with no end, a
//! server that stops reading its stdin, the cancellation and session end HTTP servers
//! get on `--timeout` and SIGTERM, and the spec's shutdown of stdio servers (stdin
//! closed, then SIGTERM, then SIGKILL) on every way out.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp_support::{HttpServer, read_log, write_config};
use super::{alive, config, env_with_turns, logged_pid, results};
use crate::support::{RunOutput, Running, TestEnv};

/// Longest wait for the test server to log something a run has set in motion; far
/// longer than it takes, so only a broken run reaches it.
const LOG_WAIT: Duration = Duration::from_secs(30);
/// A run that takes longer than this is hung (as `TestEnv`'s own guard).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Runs `cmd` to its end (killed after `RUN_LIMIT`, failing the test) and returns its
/// output and its peak resident set in KiB: `ru_maxrss`, the agent's own and that of the
/// children it reaped. Measured by the small `mcp-test-server --measure-rss`, which
/// starts the agent: a child forked from this test process (hundreds of tests, their
/// outputs held) would start with this process's resident set as its peak.
fn run_measuring_rss(cmd: Command) -> (RunOutput, u64) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("maxrss");
    let mut wrapper = Command::new(super::mcp_support::server_bin());
    wrapper
        .arg("--measure-rss")
        .arg(&file)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_clear()
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(d) = cmd.get_current_dir() {
        wrapper.current_dir(d);
    }
    let mut child = wrapper.spawn().unwrap();
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait().unwrap());
    });
    let Ok(status) = rx.recv_timeout(RUN_LIMIT) else {
        // SAFETY: kill(2) on our child (the measuring wrapper), not reaped yet.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        panic!("agent did not exit within {RUN_LIMIT:?}");
    };
    let output = RunOutput {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    let max_rss = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("the wrapper wrote no peak RSS ({e}): {}", output.stderr))
        .trim()
        .parse()
        .unwrap();
    (output, max_rss)
}

#[test]
fn a_stderr_line_with_no_newline_is_cut_and_memory_stays_bounded() {
    const FLOOD_MIB: u64 = 256;
    let env = env_with_turns(vec![vec![("e1", "mcp__t__echo", json!({"text": "x"}))]]);
    let cfg = config(&env, &["--flood-stderr", &FLOOD_MIB.to_string()]);
    let cmd = env.command(&["run", "go", "--json", "-v", "--mcp-config", &cfg]);
    let (out, max_rss_kib) = run_measuring_rss(cmd);
    out.assert_code(0);
    assert_eq!(results(&env), [("echo: x".to_string(), false)]);
    eprintln!("peak RSS {max_rss_kib} KiB after {FLOOD_MIB} MiB of stderr in one line");
    // Half the flood: holding the line takes all of it (280 MB before the cap), while a
    // debug binary's own pages (about 70 MB of file, resident as it is touched) and the
    // heap stay well below.
    assert!(
        max_rss_kib < FLOOD_MIB * 1024 / 2,
        "the agent's peak RSS is {max_rss_kib} KiB: it held the line"
    );
    assert!(
        out.stderr.contains("line cut at 8 KiB"),
        "the cut line is logged with a marker: {}",
        &out.stderr[..out.stderr.len().min(3000)]
    );
    assert!(
        out.stderr.contains("mcp t stderr: after the flood"),
        "the next line is logged whole"
    );
    assert!(
        out.stderr.len() < 1 << 20,
        "the rest of the line is discarded"
    );
}

#[test]
fn a_server_that_stops_reading_stdin_fails_the_call_within_mcp_timeout() {
    // Four times a pipe's 64 KiB buffer: the write blocks as with the 1 MiB,
    // which a debug build takes some 30 s to stream through the mock and the decoder.
    let big = "y".repeat(256 << 10);
    let env = env_with_turns(vec![
        vec![("e1", "mcp__t__echo", json!({"text": big}))],
        vec![("e2", "mcp__t__echo", json!({"text": "again"}))],
    ]);
    let cfg = config(&env, &["--stop-reading"]);
    let out = env.run(&[
        "run",
        "go",
        "--json",
        "--mcp-timeout",
        "2s",
        "--mcp-config",
        &cfg,
    ]);
    out.assert_code(0);
    let r = results(&env);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].1, "{r:?}");
    assert!(
        r[0].0.contains("MCP server \"t\"")
            && r[0].0.contains("does not read its input")
            && r[0].0.contains("--mcp-timeout"),
        "{}",
        r[0].0
    );
    assert!(r[1].1, "{r:?}");
    assert!(
        r[1].0.contains("MCP server \"t\"") && r[1].0.contains("not running"),
        "the server is broken for the rest of the run: {}",
        r[1].0
    );
}

/// Waits until the server's log has an entry `pred` accepts (the run got that far).
fn wait_for_log(log: &std::path::Path, pred: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + LOG_WAIT;
    while !read_log(log).iter().any(&pred) {
        assert!(Instant::now() < deadline, "the server never logged it");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How a run is stopped while something runs.
#[derive(Clone, Copy, Debug)]
pub(super) enum Way {
    Timeout,
    Sigterm,
}

impl Way {
    /// Runs `args` and stops it this way: `--timeout 2s` (exit 124), or SIGTERM once
    /// `is_logged` finds the awaited entry in the server's `log` (exit 130).
    pub(super) fn stop(
        self,
        env: &TestEnv,
        mut args: Vec<&str>,
        log: &std::path::Path,
        is_logged: impl Fn(&Value) -> bool,
    ) -> RunOutput {
        match self {
            Way::Timeout => {
                args.extend(["--timeout", "2s"]);
                let out = env.run(&args);
                out.assert_code(124);
                out
            }
            Way::Sigterm => {
                let run: Running = env.spawn(&args);
                wait_for_log(log, is_logged);
                run.signal(libc::SIGTERM);
                let out = run.wait();
                out.assert_code(130);
                out
            }
        }
    }

    /// The run's status after this way out.
    pub(super) fn status(self) -> &'static str {
        match self {
            Way::Timeout => "timeout",
            Way::Sigterm => "interrupted",
        }
    }
}

/// Runs `go` with a 60 s `slow` call of server `name` and stops it `way`; `is_call`
/// tells the logged call, so SIGTERM waits for it.
fn stop_run(
    env: &TestEnv,
    cfg: &str,
    way: Way,
    log: &std::path::Path,
    is_call: impl Fn(&Value) -> bool,
) -> RunOutput {
    let args = vec![
        "run",
        "go",
        "--json",
        "-v",
        "--allow-mcp",
        "--mcp-config",
        cfg,
    ];
    way.stop(env, args, log, is_call)
}

#[test]
fn http_servers_get_the_cancellation_and_the_session_delete_on_timeout_and_sigterm() {
    for way in [Way::Timeout, Way::Sigterm] {
        let env = env_with_turns(vec![vec![("s1", "mcp__h__slow", json!({"ms": 60_000}))]]);
        let server = HttpServer::start(env.out("http-log.jsonl"), &[]);
        let cfg = write_config(
            &env.out("mcp.json"),
            json!({"h": {"type": "http", "url": server.url}}),
        );
        let is_call = |e: &Value| e["msg"]["body"]["params"]["name"] == "slow";
        stop_run(&env, &cfg, way, &server.log, is_call);
        let log = read_log(&server.log);
        let slow_id = log
            .iter()
            .find(|e| is_call(e))
            .map(|e| e["msg"]["body"]["id"].clone())
            .unwrap();
        let cancel = log
            .iter()
            .position(|e| e["msg"]["body"]["method"] == "notifications/cancelled")
            .unwrap_or_else(|| panic!("{way:?}: no cancellation: {log:?}"));
        assert_eq!(
            log[cancel]["msg"]["body"]["params"]["requestId"], slow_id,
            "{way:?}"
        );
        assert_eq!(
            log[cancel]["msg"]["headers"]["session"],
            "test-session-7f3a"
        );
        let delete = log
            .iter()
            .position(|e| e["what"] == "http-delete" && e["msg"]["session"] == "test-session-7f3a")
            .unwrap_or_else(|| panic!("{way:?}: the session is not deleted: {log:?}"));
        assert!(
            cancel < delete,
            "{way:?}: the call is cancelled, then the session ends"
        );
    }
}

/// The `-v` line that says how server `t` ended.
fn end_line(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("mcp t: ") && (l.contains("exited") || l.contains("signal")))
        .unwrap_or_else(|| panic!("no line on how the server ended: {stderr}"))
        .to_string()
}

#[test]
fn stdio_servers_see_stdin_close_and_exit_on_their_own_on_every_way_out() {
    // The normal end.
    let env = env_with_turns(vec![vec![("e1", "mcp__t__echo", json!({"text": "x"}))]]);
    let log = env.out("log.jsonl");
    let cfg = config(&env, &["--log", log.to_str().unwrap()]);
    let out = env.run(&["run", "go", "--json", "-v", "--mcp-config", &cfg]);
    out.assert_code(0);
    assert!(
        read_log(&log).iter().any(|e| e["what"] == "eof"),
        "the server saw its stdin close"
    );
    let line = end_line(&out.stderr);
    assert!(line.contains("exited with status 0"), "{line}");
    assert!(!out.stderr.contains("signal 9"), "{}", out.stderr);

    // --timeout and SIGTERM with a call running: it is cancelled, then stdin closes.
    for way in [Way::Timeout, Way::Sigterm] {
        let env = env_with_turns(vec![vec![("s1", "mcp__t__slow", json!({"ms": 60_000}))]]);
        let log = env.out("log.jsonl");
        let cfg = config(&env, &["--log", log.to_str().unwrap()]);
        let is_call = |e: &Value| e["msg"]["params"]["name"] == "slow";
        let out = stop_run(&env, &cfg, way, &log, is_call);
        let entries = read_log(&log);
        let slow_id = entries
            .iter()
            .find(|e| is_call(e))
            .map(|e| e["msg"]["id"].clone())
            .unwrap();
        let cancel = entries
            .iter()
            .position(|e| e["msg"]["method"] == "notifications/cancelled")
            .unwrap_or_else(|| panic!("{way:?}: no cancellation: {entries:?}"));
        assert_eq!(entries[cancel]["msg"]["params"]["requestId"], slow_id);
        let eof = entries
            .iter()
            .position(|e| e["what"] == "eof")
            .unwrap_or_else(|| panic!("{way:?}: stdin never closed: {entries:?}"));
        assert!(cancel < eof, "{way:?}");
        let line = end_line(&out.stderr);
        assert!(line.contains("exited with status 0"), "{way:?}: {line}");
        assert!(!alive(logged_pid(&log, "pid")));
    }
}

#[test]
fn a_server_that_outlives_stdin_gets_sigterm_then_sigkill_and_no_blame() {
    // Ignores stdin's end: SIGTERM ends it.
    let env = env_with_turns(vec![]);
    let log = env.out("log.jsonl");
    let cfg = config(
        &env,
        &["--log", log.to_str().unwrap(), "--on-eof", "ignore"],
    );
    let out = env.run(&["run", "go", "--json", "-v", "--mcp-config", &cfg]);
    out.assert_code(0);
    assert!(read_log(&log).iter().any(|e| e["what"] == "eof"));
    let line = end_line(&out.stderr);
    assert!(
        line.contains("signal 15") && line.contains("the agent sent"),
        "{line}"
    );
    assert!(!alive(logged_pid(&log, "pid")));

    // Ignores SIGTERM too: SIGKILL ends it, and the run does not wait for it longer.
    let env = env_with_turns(vec![]);
    let log = env.out("log.jsonl");
    let cfg = config(
        &env,
        &["--log", log.to_str().unwrap(), "--on-eof", "ignore-term"],
    );
    let out = env.run(&["run", "go", "--json", "-v", "--mcp-config", &cfg]);
    out.assert_code(0);
    assert!(read_log(&log).iter().any(|e| e["what"] == "eof"));
    let line = end_line(&out.stderr);
    assert!(
        line.contains("signal 9") && line.contains("the agent sent"),
        "the kill is ours, not the server's fault: {line}"
    );
    assert!(!alive(logged_pid(&log, "pid")));
}
