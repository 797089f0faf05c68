//! The stdio transport: the server is a child process (own session and process group,
//! registered with `process` so every way out of the run kills it) speaking
//! newline-delimited JSON-RPC on stdin/stdout. Four threads per server: a supervisor
//! that spawns the child and waits for it (the parent-death signal follows the spawning
//! thread, so it must live as long as the child), a writer that owns stdin and writes
//! the queued messages (so a server that stops reading blocks only it, and a caller
//! waits for its write no longer than its timeout), a reader that routes stdout lines to
//! the waiting callers, and a stderr reader that logs with -v (redacted by `output`),
//! a line at most `STDERR_LINE_BYTES` long. A server that exits, or does not read a
//! request within the call's timeout (it is then stopped: a half-written message breaks
//! the framing), is dead for the rest of the run: pending and later calls fail at once
//! with the reason. `close` is the spec's shutdown: calls in flight are cancelled, stdin
//! is closed, then the group gets SIGTERM, then SIGKILL; the -v log says which of ours
//! ended it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::{self, CallError, Incoming, Transport};
use crate::util::sync::{Locked, Unpoisoned};

mod stderr;
use stderr::log_stderr;

/// Longest message line accepted from a server, in bytes: a tool result is spilled by
/// the agent beyond 30k characters, so anything near this is a broken server.
const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;
/// How long a caller whose server closed its stdout waits for the exit status, so that
/// the error can say how the server ended.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(500);
/// How long `close` lets a server exit on its own after its stdin closes (the spec's
/// shutdown) before sending its group SIGTERM.
const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// How long `close` lets a server exit after SIGTERM before SIGKILL: servers clean up
/// in milliseconds; the run is ending and `CLOSE_GRACE` was already spent.
const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long `close` waits for a SIGKILLed server's exit to be noted (the kernel delivers
/// it at once), so that the -v log has how it ended.
const KILL_WAIT: Duration = Duration::from_millis(250);
/// Replies to the server's own requests (ping, refusals) queued while it does not read
/// its input: more are dropped, so a server that asks without reading cannot grow us.
const MAX_QUEUED_REPLIES: usize = 64;
/// Longest wait, after a server exits, for its stderr to reach end of file (a child it
/// left behind may hold the pipe), so that the death notice has the last lines.
const STDERR_SETTLE: Duration = Duration::from_millis(500);

/// What the child is started with.
pub(crate) struct Launch {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// The whole environment (scrubbed child env plus the server's own `env`).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// `--mcp-elicitation`.
    pub elicitation: Option<client::Elicitation>,
}

type Reply = Result<Value, CallError>;

/// A request waiting for its answer.
struct Pending {
    reply: SyncSender<Reply>,
    /// Not `initialize`, which the spec forbids cancelling.
    cancellable: bool,
}

#[derive(Default)]
struct State {
    pending: HashMap<u64, Pending>,
    /// Set once: why the server can no longer answer.
    dead: Option<String>,
}

/// A message for the writer thread; `written` hears how its write went.
struct Outgoing {
    line: Vec<u8>,
    written: Option<SyncSender<Result<(), String>>>,
    /// A reply to the server's own request (counted in `queued_replies`).
    reply: bool,
}

/// How far the child's end has come.
#[derive(Default)]
struct Exit {
    /// The process has been waited for (its group may still hold others).
    ended: bool,
    /// How it ended, for messages: set once its death notice is complete.
    how: Option<String>,
}

struct Shared {
    name: String,
    /// The server's process group (its pid), once spawned.
    pid: Mutex<Option<u32>>,
    /// The last lines the server wrote to stderr, and whether it is at end of file.
    stderr_tail: Mutex<(std::collections::VecDeque<String>, bool)>,
    stderr_closed: Condvar,
    state: Mutex<State>,
    /// The writer thread's queue; `None` once stdin is to be closed (dropping the last
    /// sender ends the writer, which closes stdin after the messages already queued).
    outbox: Mutex<Option<Sender<Outgoing>>>,
    queued_replies: AtomicUsize,
    exit: Mutex<Exit>,
    exited: Condvar,
    /// The last signal the agent sent the group and why, so that the log does not
    /// blame the server for our kill.
    sent: Mutex<Option<(libc::c_int, &'static str)>>,
    /// `close` has run.
    closed: AtomicBool,
    elicitation: Option<client::Elicitation>,
    inbox: client::Inbox,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }

    /// Marks the server dead (first reason wins) and fails every pending call. The reason
    /// ends with the server's last stderr lines.
    fn die(&self, why: String) {
        let tail: Vec<String> = self.stderr_tail.locked().0.iter().cloned().collect();
        let why = if tail.is_empty() {
            why
        } else {
            format!("{why}; its last stderr lines: {}", tail.join(" | "))
        };
        let mut st = self.lock();
        let why = st.dead.get_or_insert(why).clone();
        for (_, p) in st.pending.drain() {
            let _ = p.reply.try_send(Err(CallError::Dead(why.clone())));
        }
        drop(st);
        // Nothing can be written any more; closing stdin lets a live server see EOF.
        self.close_stdin();
    }

    /// Drops the writer's queue: it writes what is queued, then closes stdin.
    fn close_stdin(&self) {
        self.outbox.locked().take();
    }

    /// Queues one message for the writer; with `ack`, the receiver hears when it has
    /// been written (or failed).
    fn enqueue(
        &self,
        msg: &Value,
        ack: bool,
        reply: bool,
    ) -> Result<Option<Receiver<Result<(), String>>>, String> {
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        let (written, rx) = match ack {
            true => {
                let (tx, rx) = mpsc::sync_channel(1);
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let outbox = self.outbox.locked();
        let queue = outbox.as_ref().ok_or("its stdin is closed")?;
        queue
            .send(Outgoing {
                line,
                written,
                reply,
            })
            .map_err(|_| "its stdin is closed".to_string())?;
        Ok(rx)
    }

    /// Queues the answer to one of the server's requests, unless too many wait already.
    fn reply(&self, msg: &Value) {
        if self.queued_replies.fetch_add(1, Ordering::SeqCst) >= MAX_QUEUED_REPLIES {
            self.queued_replies.fetch_sub(1, Ordering::SeqCst);
            crate::util::output::debug(&format!(
                "mcp {}: an answer to its request dropped: it does not read its input",
                self.name
            ));
        } else if self.enqueue(msg, false, true).is_err() {
            self.queued_replies.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// How the child ended, waiting up to `wait` for its death notice.
    fn exit_status(&self, wait: Duration) -> Option<String> {
        let guard = self.exit.locked();
        let (guard, _) = self
            .exited
            .wait_timeout_while(guard, wait, |e| e.how.is_none())
            .unpoisoned();
        guard.how.clone()
    }

    /// Whether the child has been waited for, waiting up to `wait`.
    fn ended(&self, wait: Duration) -> bool {
        let guard = self.exit.locked();
        let (guard, _) = self
            .exited
            .wait_timeout_while(guard, wait, |e| !e.ended)
            .unpoisoned();
        guard.ended
    }

    /// Sends `sig` to the server's group, noting it (and `why`) for the log; false when
    /// the server has already ended (its pid may no longer be its own).
    fn signal(&self, sig: libc::c_int, why: &'static str) -> bool {
        let exit = self.exit.locked();
        if exit.ended {
            return false;
        }
        let pid = *self.pid.locked();
        let Some(pid) = pid
            .and_then(|p| libc::pid_t::try_from(p).ok())
            .filter(|p| *p > 1)
        else {
            return false;
        };
        *self.sent.locked() = Some((sig, why));
        // SAFETY: killpg on the group the server leads; it has not been waited for
        // (checked with `exit` held, which the supervisor takes to note the end), so
        // the id is still its own.
        unsafe {
            libc::killpg(pid, sig);
        }
        true
    }

    /// A request could not be written within its timeout: the server does not read its
    /// input, and a half-written line would break every later message. It is dead, and
    /// killed (its stdin cannot be closed while the writer is blocked on it).
    fn stalled(&self, timeout: Duration) {
        self.die(format!(
            "it stopped reading its input (a request could not be written within {})",
            humantime::format_duration(timeout)
        ));
        self.signal(
            libc::SIGKILL,
            "because it stopped reading its input during a call",
        );
    }
}

pub(crate) struct StdioTransport {
    shared: Arc<Shared>,
    next_id: AtomicU64,
}

impl StdioTransport {
    /// Starts the server process and its threads.
    pub(crate) fn spawn(launch: Launch) -> Result<StdioTransport, String> {
        let shared = Arc::new(Shared {
            name: launch.name.clone(),
            pid: Mutex::new(None),
            stderr_tail: Mutex::new((std::collections::VecDeque::new(), false)),
            stderr_closed: Condvar::new(),
            state: Mutex::new(State::default()),
            outbox: Mutex::new(None),
            queued_replies: AtomicUsize::new(0),
            exit: Mutex::new(Exit::default()),
            exited: Condvar::new(),
            sent: Mutex::new(None),
            closed: AtomicBool::new(false),
            elicitation: launch.elicitation,
            inbox: client::Inbox::default(),
        });
        let (started_tx, started_rx) = mpsc::channel();
        let sup = shared.clone();
        std::thread::Builder::new()
            .name(format!("mcp-{}", launch.name))
            .spawn(move || supervise(launch, sup, started_tx))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let (stdin, stdout, stderr) = started_rx
            .recv()
            .map_err(|_| "the supervisor thread ended".to_string())??;
        let (queue_tx, queue_rx) = mpsc::channel();
        *shared.outbox.locked() = Some(queue_tx);
        let writer = shared.clone();
        std::thread::Builder::new()
            .name("mcp-stdin".into())
            .spawn(move || write_messages(stdin, queue_rx, &writer))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let reader = shared.clone();
        std::thread::Builder::new()
            .name("mcp-stdout".into())
            .spawn(move || read_messages(stdout, reader))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let tail = shared.clone();
        std::thread::Builder::new()
            .name("mcp-stderr".into())
            .spawn(move || log_stderr(stderr, &tail))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        Ok(StdioTransport {
            shared,
            next_id: AtomicU64::new(0),
        })
    }
}

type Pipes = (
    ChildStdin,
    std::process::ChildStdout,
    std::process::ChildStderr,
);

/// Spawns the child, hands its pipes over, then waits for it for its whole life.
fn supervise(launch: Launch, shared: Arc<Shared>, started: mpsc::Sender<Result<Pipes, String>>) {
    let mut cmd = Command::new(resolve(&launch.command, &launch.cwd));
    cmd.args(&launch.args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, mut group) = match crate::process::spawn_service(&mut cmd) {
        Ok(c) => c,
        Err(e) => {
            let _ = started.send(Err(format!(
                "cannot start `{}`: {e} (working directory {})",
                launch.command,
                launch.cwd.display()
            )));
            return;
        }
    };
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        let _ = started.send(Err("the child has no pipes".into()));
        return;
    };
    *shared.pid.locked() = Some(group.pgid() as u32);
    let _ = started.send(Ok((stdin, stdout, stderr)));
    let status = group.wait(&mut child);
    shared.exit.locked().ended = true;
    shared.exited.notify_all();
    // Let the stderr reader note the last lines before the reason is written.
    let tail = shared.stderr_tail.locked();
    let _ = shared
        .stderr_closed
        .wait_timeout_while(tail, STDERR_SETTLE, |t| !t.1);
    let sent = *shared.sent.locked();
    let how = match status {
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(c), _) => format!("it exited with status {c}"),
            // Ours: the log must not blame the server for it.
            (None, Some(sig)) => match sent.filter(|(ours, _)| *ours == sig) {
                Some((_, why)) => format!(
                    "it was killed by signal {sig}, the {} the agent sent {why}",
                    if sig == libc::SIGKILL {
                        "SIGKILL"
                    } else {
                        "SIGTERM"
                    }
                ),
                None => format!("it was killed by signal {sig}"),
            },
            _ => "it exited".to_string(),
        },
        Err(e) => format!("it could not be waited for: {e}"),
    };
    drop(group); // whatever the server left in its group goes with it
    crate::util::output::debug(&format!("mcp {}: {how}", shared.name));
    // Dead first: whoever waits for the exit status then finds the full reason.
    shared.die(how.clone());
    shared.exit.locked().how = Some(how);
    shared.exited.notify_all();
}

/// Owns the server's stdin: writes each queued message whole, telling its sender how it
/// went; ends (closing stdin) when the queue is dropped or a write fails.
fn write_messages(mut stdin: ChildStdin, queue: Receiver<Outgoing>, shared: &Shared) {
    for out in queue {
        if out.reply {
            shared.queued_replies.fetch_sub(1, Ordering::SeqCst);
        }
        let written = stdin
            .write_all(&out.line)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to it: {e}"));
        let failed = written.is_err();
        if let Some(tx) = out.written {
            let _ = tx.try_send(written);
        }
        if failed {
            break;
        }
    }
}

/// A command with a `/` is relative to the server's working directory; a bare name is
/// looked up in the child's PATH by `Command`.
fn resolve(command: &str, cwd: &std::path::Path) -> PathBuf {
    let p = PathBuf::from(command);
    if command.contains('/') && p.is_relative() {
        cwd.join(p)
    } else {
        p
    }
}

fn read_messages(stdout: impl Read, shared: Arc<Shared>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => break None,
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 >= MAX_LINE_BYTES => {
                break Some(format!("it sent a message over {MAX_LINE_BYTES} bytes"));
            }
            Ok(_) => {}
            Err(e) => break Some(format!("its output could not be read: {e}")),
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(batch)) => batch.into_iter().for_each(|m| route(m, &shared)),
            Ok(msg) => route(msg, &shared),
            Err(e) => crate::util::output::debug(&format!(
                "mcp {}: ignored a line that is not JSON ({e}): {}",
                shared.name,
                crate::util::text::ellipsis(text, 200)
            )),
        }
    };
    let why = match why {
        Some(w) => w,
        None => match shared.exit_status(EXIT_STATUS_WAIT) {
            Some(how) => how,
            None => "it closed its output".to_string(),
        },
    };
    shared.die(why);
}

fn route(msg: Value, shared: &Arc<Shared>) {
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let incoming = client::classify_with(msg, shared.elicitation);
    shared.inbox.note(&shared.name, &incoming, &params);
    match incoming {
        Incoming::Response { id, outcome } => {
            let pending = id.and_then(|id| shared.lock().pending.remove(&id));
            match pending {
                Some(p) => {
                    let _ = p.reply.try_send(outcome);
                }
                None => crate::util::output::debug(&format!(
                    "mcp {}: an answer to no pending request (id {id:?}) ignored",
                    shared.name
                )),
            }
        }
        Incoming::Request { method, reply } => {
            crate::util::output::debug(&format!(
                "mcp {}: the server asked {method}; answered {}",
                shared.name,
                if reply.get("error").is_some() {
                    "method not found"
                } else {
                    "ok"
                }
            ));
            // Queued, never written from this thread: a server blocked writing to us
            // could not read it.
            shared.reply(&reply);
        }
        Incoming::Notification { method, params } => crate::util::output::debug(&format!(
            "mcp {}: {}",
            shared.name,
            client::describe_notification(&method, &params)
        )),
        Incoming::Invalid(why) => {
            crate::util::output::debug(&format!("mcp {}: ignored a message: {why}", shared.name))
        }
    }
}

impl Transport for StdioTransport {
    fn inbox(&self) -> Option<&client::Inbox> {
        Some(&self.shared.inbox)
    }

    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CallError> {
        let start = Instant::now();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        {
            let mut st = self.shared.lock();
            if let Some(why) = &st.dead {
                return Err(CallError::Dead(why.clone()));
            }
            let cancellable = method != "initialize";
            st.pending.insert(
                id,
                Pending {
                    reply: tx,
                    cancellable,
                },
            );
        }
        let msg = client::request_message(id, method, params);
        // The write counts against the timeout: a server that stops reading fills the
        // pipe, and the write would block for ever.
        let written = match self.shared.enqueue(&msg, true, false) {
            Ok(Some(ack)) => match ack.recv_timeout(timeout) {
                Ok(r) => r,
                Err(RecvTimeoutError::Disconnected) => Err("its stdin is closed".into()),
                Err(RecvTimeoutError::Timeout) => {
                    self.shared.lock().pending.remove(&id);
                    self.shared.stalled(timeout);
                    return Err(CallError::Stalled(timeout));
                }
            },
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            self.shared.lock().pending.remove(&id);
            // A closed pipe means the server is exiting: say how it ended.
            self.shared.exit_status(EXIT_STATUS_WAIT);
            let why = self.shared.lock().dead.clone().unwrap_or(e);
            return Err(CallError::Dead(why));
        }
        match rx.recv_timeout(timeout.saturating_sub(start.elapsed())) {
            Ok(reply) => reply,
            Err(RecvTimeoutError::Timeout) => {
                self.shared.lock().pending.remove(&id);
                let _ = self.notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "timed out"}),
                );
                Err(CallError::Timeout(timeout))
            }
            Err(RecvTimeoutError::Disconnected) => Err(CallError::Dead(
                self.shared.lock().dead.clone().unwrap_or_default(),
            )),
        }
    }

    /// The spec's shutdown: the calls in flight are cancelled, stdin is closed (after
    /// the cancellations are written), then the group gets SIGTERM, then SIGKILL, each
    /// after a short grace.
    fn close(&self, why: &str) {
        if self.shared.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let running: Vec<u64> = {
            let st = self.shared.lock();
            let mut ids: Vec<u64> = st
                .pending
                .iter()
                .filter(|(_, p)| p.cancellable)
                .map(|(id, _)| *id)
                .collect();
            ids.sort_unstable();
            ids
        };
        for id in running {
            let _ = self.notify(
                "notifications/cancelled",
                json!({"requestId": id, "reason": why}),
            );
        }
        self.shared.close_stdin();
        let ended = self.shared.ended(CLOSE_GRACE)
            || !self.shared.signal(
                libc::SIGTERM,
                "at the end of the run (it outlived its stdin's end)",
            )
            || self.shared.ended(TERM_GRACE)
            || !self.shared.signal(
                libc::SIGKILL,
                "at the end of the run (it outlived its stdin's end and SIGTERM)",
            )
            || self.shared.ended(KILL_WAIT);
        if ended {
            // So that the -v log says how it ended before the run goes on to exit.
            self.shared.exit_status(KILL_WAIT);
        }
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), CallError> {
        if let Some(why) = self.shared.lock().dead.clone() {
            return Err(CallError::Dead(why));
        }
        // Queued, not waited for: ordered before any later message, and bounded by it.
        self.shared
            .enqueue(&client::notification_message(method, params), false, false)
            .map(drop)
            .map_err(CallError::Dead)
    }
}
