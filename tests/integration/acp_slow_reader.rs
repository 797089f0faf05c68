//! A client of `agent acp` that stops reading stdout while the model streams 16 MB of
//! text: agent neither deadlocks nor buffers the stream. Its writer blocks on the full
//! pipe, its queue fills, the prompt's run blocks on its own stdout and the model's
//! stream waits in the socket; agent's resident memory (`/proc/PID/status` of the
//! `agent acp` process and of its prompt's `agent run`) stays far below the stream's
//! size. When the client reads again every chunk arrives, in order, and agent ends
//! cleanly when stdin closes. (A client that closes stdout instead: `acp.rs`.)

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::sse::{block_delta, turn_text};
use crate::support::{Reply, SseOpts, TestEnv};

/// Text pieces the model streams, and the bytes of each.
const PIECES: usize = 16_000;
const PIECE_BYTES: usize = 1024;
/// Growth of agent's resident memory allowed while the client does not read: half the
/// streamed text (a design that buffered the stream would hold all of it, twice over
/// as lines and parsed messages).
const ALLOWED_GROWTH_KB: u64 = (PIECES * PIECE_BYTES / 2 / 1024) as u64;

/// Looks at the run, one after another, that must all find it asleep and unchanged: a
/// run still consuming the stream runs or wakes between two of them.
const QUIET_LOOKS: usize = 2_000;

fn piece(i: usize) -> String {
    let head = format!("{i:06}:");
    format!("{head}{}", "x".repeat(PIECE_BYTES - head.len()))
}

/// A field of `/proc/PID/status` in kB (`VmRSS`, `VmHWM`); `None` once the process is gone.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))?
        .trim()
        .trim_end_matches(" kB")
        .parse()
        .ok()
}

/// Whether every thread of `pid` sleeps (state `S`, none running or runnable), and the
/// context switches of them all (how often they ran); `None` once it is gone.
fn activity(pid: u32) -> Option<(bool, u64)> {
    let (mut asleep, mut total) = (true, 0);
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let s = std::fs::read_to_string(t.ok()?.path().join("status")).ok()?;
        for l in s.lines() {
            if let Some(state) = l.strip_prefix("State:") {
                asleep &= state.trim().starts_with('S');
            }
            if let Some(v) = l
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().ok()?;
            }
        }
    }
    Some((asleep, total))
}

/// The children of `pid` (from each process's `stat`: world-readable, unlike the
/// non-dumpable agent's other files).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(n) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{n}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so read after its ')'.
        let after = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            out.push(n);
        }
    }
    out
}

/// Bytes waiting unread in a pipe, and its capacity.
fn pipe_fill(fd: &impl AsRawFd) -> (usize, usize) {
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int; F_GETPIPE_SZ takes no argument.
    let (rc, cap) = unsafe {
        (
            libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut waiting),
            libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ),
        )
    };
    assert!(rc == 0 && cap > 0, "FIONREAD/F_GETPIPE_SZ on the pipe");
    (waiting as usize, cap as usize)
}

#[test]
fn a_client_that_stops_reading_holds_agent_bounded_and_loses_nothing() {
    let mut frames = turn_text("!");
    // After `message_start` and the text block's start: the pieces, then the block's "!".
    let deltas: Vec<String> = (0..PIECES)
        .map(|i| block_delta(0, json!({"type": "text_delta", "text": piece(i)})))
        .collect();
    frames.splice(2..2, deltas);
    let opts = SseOpts {
        max_chunk: 64 * 1024,
        pings: false,
        ..SseOpts::default()
    };
    let env = TestEnv::keep_alive(vec![Reply::SseWith(frames, opts)]);
    let sessions = env.out("acp-sessions");
    let mut cmd = env.command(&[
        "acp",
        "--sessions-dir",
        sessions.to_str().unwrap(),
        "--acp-permissions",
        "allow-all",
    ]);
    cmd.stdin(Stdio::piped()).stderr(Stdio::inherit());
    let mut agent = cmd.spawn().unwrap();
    let pid = agent.id();
    let mut stdin = agent.stdin.take().unwrap();
    let stdout = agent.stdout.take().unwrap();
    let mut send = |msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1}}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": env.ws(), "mcpServers": []}}));
    // The session id is needed for the prompt: read up to session/new's answer only.
    let mut lines = BufReader::new(stdout);
    let sid = loop {
        let mut l = String::new();
        assert!(lines.read_line(&mut l).unwrap() > 0, "agent closed stdout");
        let v: Value = serde_json::from_str(&l).unwrap();
        if v["id"] == 2 {
            break v["result"]["sessionId"].as_str().unwrap().to_string();
        }
    };
    let baseline = status_kb(pid, "VmHWM").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "stream"}]}}),
    );

    // Not reading. Wait until the stall has reached the prompt's run: our pipe is full
    // (agent's writer blocks on it) and the run, alive, has stopped (every thread of it
    // asleep, none woken, while we look QUIET_LOOKS times). A run that
    // finished the stream meanwhile means agent took it all while nobody read.
    let started = std::time::Instant::now();
    let (mut run, mut quiet, mut last) = (None::<u32>, 0, None);
    loop {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "no stall and no end within 2 minutes"
        );
        if run.is_none() {
            run = children(pid).into_iter().next();
        }
        let (waiting, capacity) = pipe_fill(lines.get_ref());
        let Some(r) = run else { continue };
        let Some((asleep, now)) = activity(r) else {
            panic!(
                "the prompt's run ended while the client read nothing: agent buffered the \
                 stream (VmHWM {} kB, {} kB before)",
                status_kb(pid, "VmHWM").unwrap_or(0),
                baseline
            );
        };
        // A pipe takes whole pages: one that will take no more message is full enough.
        if waiting * 2 < capacity || !asleep || last != Some(now) {
            (quiet, last) = (0, Some(now));
            std::thread::yield_now();
            continue;
        }
        quiet += 1;
        if quiet == QUIET_LOOKS {
            break;
        }
    }
    let run = run.unwrap();
    let parent_peak = status_kb(pid, "VmHWM").unwrap();
    let run_peak = status_kb(run, "VmHWM").unwrap();
    eprintln!(
        "stalled: agent acp VmHWM {parent_peak} kB ({baseline} kB before the prompt), its run \
         VmHWM {run_peak} kB; {} MB streamed",
        PIECES * PIECE_BYTES / 1024 / 1024
    );
    assert!(
        parent_peak < baseline + ALLOWED_GROWTH_KB,
        "agent acp grew from {baseline} kB to {parent_peak} kB while the client read nothing"
    );

    // Reading again: every piece, in order, then the prompt's answer.
    let mut text = String::new();
    let answer = loop {
        let mut l = String::new();
        assert!(lines.read_line(&mut l).unwrap() > 0, "agent closed stdout");
        let v: Value = serde_json::from_str(&l).unwrap();
        if v["id"] == 3 {
            break v;
        }
        if v["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            text.push_str(v["params"]["update"]["content"]["text"].as_str().unwrap());
        }
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let expected: String = (0..PIECES).map(piece).collect::<String>() + "!";
    assert!(text == expected, "the text arrived whole and in order");
    // Not asserted: the run's last messages (`assistant.message`, `run.finished`) each
    // carry the whole 16 MB answer and are parsed whole, so the peak after reading is a
    // multiple of the largest message, not of what was left unread (decision 0106).
    eprintln!(
        "after reading: agent acp VmHWM {} kB",
        status_kb(pid, "VmHWM").unwrap_or(0)
    );
    drop(stdin);
    use wait_timeout::ChildExt;
    let status = agent
        .wait_timeout(std::time::Duration::from_secs(60))
        .unwrap()
        .expect("agent acp exits when stdin closes");
    assert_eq!(status.code(), Some(0));
}
