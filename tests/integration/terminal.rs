//! The spinner on a real terminal: the binary runs under a pseudo-terminal (its
//! controlling terminal, as in an interactive shell), and what it wrote is replayed into
//! a terminal emulator (`vt100`) to see the screen a user is left with. Ctrl-C is the
//! byte 0x03 typed into the terminal, so the line discipline both echoes `^C` and sends
//! SIGINT, exactly as a keypress does.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use crate::support::*;

const ROWS: u16 = 24;
/// The usual width; `NARROW` makes the spinner's line wrap.
const COLS: u16 = 80;
const NARROW: u16 = 24;
/// A run or a screen that takes longer than this is hung: the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// Everything the program wrote to its terminal so far, and whether it closed.
struct Screen {
    cols: u16,
    bytes: Mutex<(Vec<u8>, bool)>,
    changed: Condvar,
}

impl Screen {
    /// Waits until the output contains `text` (the spinner has been drawn).
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + LIMIT;
        let mut st = self.bytes.lock().unwrap();
        while !String::from_utf8_lossy(&st.0).contains(text) {
            let now = Instant::now();
            assert!(
                now < deadline && !st.1,
                "{text:?} never appeared: {:?}",
                String::from_utf8_lossy(&st.0)
            );
            st = self.changed.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Waits for the terminal to close (every holder of its other side exited), then
    /// returns the rows a user would see, trailing blanks trimmed.
    fn final_rows(&self) -> Vec<String> {
        let deadline = Instant::now() + LIMIT;
        let mut st = self.bytes.lock().unwrap();
        while !st.1 {
            let now = Instant::now();
            assert!(now < deadline, "the terminal never closed");
            st = self.changed.wait_timeout(st, deadline - now).unwrap().0;
        }
        let mut parser = vt100::Parser::new(
            NonZeroU16::new(ROWS).unwrap(),
            NonZeroU16::new(self.cols).unwrap(),
            0,
        );
        parser.process(&st.0);
        let mut rows: Vec<String> = parser
            .screen()
            .rows(0, self.cols)
            .map(|r| r.trim_end().to_string())
            .collect();
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }
}

/// The agent started on a new pseudo-terminal of `ROWS`×`cols`, which is its controlling
/// terminal and stdin, stdout and stderr; a thread collects what it writes.
struct OnTerminal {
    child: Child,
    master: std::fs::File,
    screen: Arc<Screen>,
}

impl OnTerminal {
    fn start(env: &TestEnv, cols: u16, args: &[&str]) -> OnTerminal {
        let (mut master_fd, mut slave_fd) = (-1, -1);
        let mut size = libc::winsize {
            ws_row: ROWS,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two fds into the ints; default termios (echo, ISIG, ECHOCTL).
        let rc = unsafe {
            libc::openpty(
                &mut master_fd,
                &mut slave_fd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &raw mut size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both fds were just opened and are owned by nobody else.
        let (master, slave) = unsafe {
            (
                OwnedFd::from_raw_fd(master_fd),
                OwnedFd::from_raw_fd(slave_fd),
            )
        };
        let mut c = env.command(args);
        c.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            c.pre_exec(|| {
                // A new session whose controlling terminal is the pty (stdin): its
                // process group is the terminal's foreground group, which Ctrl-C signals.
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().unwrap();
        drop(c); // the parent's copies of the slave: the reader sees EOF once the child exits
        let master = std::fs::File::from(master);
        let screen = Arc::new(Screen {
            cols,
            bytes: Mutex::default(),
            changed: Condvar::new(),
        });
        let (mut reader, s) = (master.try_clone().unwrap(), screen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // EIO once no process holds the slave side any more.
                let n = reader.read(&mut buf).unwrap_or(0);
                let mut st = s.bytes.lock().unwrap();
                if n == 0 {
                    st.1 = true;
                } else {
                    st.0.extend_from_slice(&buf[..n]);
                }
                s.changed.notify_all();
                if n == 0 {
                    break;
                }
            }
        });
        OnTerminal {
            child,
            master,
            screen,
        }
    }

    /// Types `bytes` on the terminal's keyboard.
    fn type_keys(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }

    /// The exit code and the rows left on the screen.
    fn finish(mut self) -> (Option<i32>, Vec<String>) {
        let status = match self.child.wait_timeout(LIMIT).unwrap() {
            Some(s) => s,
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("agent did not exit within {LIMIT:?}");
            }
        };
        (status.code(), self.screen.final_rows())
    }
}

/// No row shows the spinner: neither a piece of its message nor one of its braille frames.
fn assert_no_spinner(rows: &[String]) {
    for row in rows {
        assert!(
            !row.contains("turn 1")
                && !row.contains("model")
                && !row.chars().any(|c| ('\u{2800}'..='\u{28ff}').contains(&c)),
            "the spinner stayed on screen in row {row:?}; screen:\n{}",
            rows.join("\n")
        );
    }
}

#[test]
fn ctrl_c_on_a_terminal_leaves_no_spinner_line() {
    let env = TestEnv::new(vec![Reply::ping_then_silence()]);
    let mut run = OnTerminal::start(&env, COLS, &["run", "wait"]);
    env.server.wait_for_requests(1);
    run.screen.wait_for("turn 1");
    run.type_keys(b"\x03");
    let (code, rows) = run.finish();
    assert_eq!(code, Some(130), "{}", rows.join("\n"));
    assert_no_spinner(&rows);
    let last = rows.last().map(String::as_str).unwrap_or_default();
    assert!(
        last.starts_with("agent: interrupted · "),
        "{}",
        rows.join("\n")
    );
    assert!(
        rows.iter()
            .any(|r| r == "agent: error: interrupted by SIGINT"),
        "{}",
        rows.join("\n")
    );
}

#[test]
fn the_timeout_on_a_terminal_leaves_no_spinner_line() {
    let env = TestEnv::new(vec![Reply::ping_then_silence()]);
    let run = OnTerminal::start(&env, COLS, &["run", "--timeout", "1s", "wait"]);
    run.screen.wait_for("turn 1");
    let (code, rows) = run.finish();
    assert_eq!(code, Some(124), "{}", rows.join("\n"));
    assert_no_spinner(&rows);
    assert!(
        rows.iter()
            .any(|r| r == "agent: error: the run exceeded --timeout 1s"),
        "{}",
        rows.join("\n")
    );
}

/// On a terminal narrower than the spinner's line, the line wraps, and both of its rows
/// are cleared.
#[test]
fn ctrl_c_on_a_narrow_terminal_clears_the_wrapped_spinner() {
    let env = TestEnv::new(vec![Reply::ping_then_silence()]);
    let mut run = OnTerminal::start(&env, NARROW, &["run", "wait"]);
    env.server.wait_for_requests(1);
    run.screen.wait_for("the model");
    run.type_keys(b"\x03");
    let (code, rows) = run.finish();
    assert_eq!(code, Some(130), "{}", rows.join("\n"));
    assert_no_spinner(&rows);
    assert!(
        rows.concat()
            .contains("agent: error: interrupted by SIGINT"),
        "{}",
        rows.join("\n")
    );
}
