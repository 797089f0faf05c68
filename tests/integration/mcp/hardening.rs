//! MCP servers that misbehave: a stderr line with no end, a server that stops reading
//! its stdin.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::{config, env_with_turns, results};
use crate::support::RunOutput;

/// A run that takes longer than this is hung (as `TestEnv`'s own guard).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Runs `cmd` to its end (killed after `RUN_LIMIT`, failing the test) and returns its
/// output and its peak resident set in KiB: `wait4`'s `ru_maxrss`, the agent's own and
/// that of the children it reaped, whatever the other tests run at the same time.
#[allow(clippy::zombie_processes)] // reaped by wait4, which `Child` does not know of
fn run_measuring_rss(mut cmd: Command) -> (RunOutput, u64) {
    use std::os::unix::process::ExitStatusExt;
    let mut child = cmd.spawn().unwrap();
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
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own unreaped child, with valid out-pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(rc, pid, "wait4: {}", std::io::Error::last_os_error());
        let _ = tx.send((status, usage.ru_maxrss as u64));
    });
    let Ok((status, max_rss)) = rx.recv_timeout(RUN_LIMIT) else {
        // SAFETY: kill(2) on our child, which the waiter thread has not reaped yet.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("agent did not exit within {RUN_LIMIT:?}");
    };
    let output = RunOutput {
        status: std::process::ExitStatus::from_raw(status),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
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
    assert!(
        max_rss_kib < FLOOD_MIB * 1024 / 4,
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
