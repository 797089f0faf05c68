//! Child processes: the one runner used by the Bash tool and, later, by hooks and
//! `--verify`, so that every command the agent starts gets the same guarantees.
//!
//! A command runs as `bash -c CMD` (`/bin/sh` where bash is missing) in its own session and
//! process group, with exactly the environment it is given and stdin closed (or fed from a
//! buffer). stdout and stderr share one pipe, so their order is kept. A reader thread keeps
//! memory bounded whatever the command prints: the first `OUTPUT_HEAD_CHARS` and the last
//! `OUTPUT_TAIL_CHARS` stay in memory, and once the output outgrows them the full text is
//! streamed to a file in the spill directory. A timeout kills the whole group; when the
//! command exits, whatever it left in its group is killed too, and a process that escaped
//! the group while holding the pipe is not waited for beyond `DRAIN_AFTER_EXIT`.
//! Every live group is listed in a registry, so `kill_all_running` (SIGINT, SIGTERM,
//! `--timeout`) can stop them all.

use std::fs::File;
use std::io::{self, PipeReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// Characters of the start of the output kept: the command's first errors come first
/// (compilers, `set -x` traces), and they are often the cause of everything after.
pub(crate) const OUTPUT_HEAD_CHARS: usize = 2_000;
/// Characters of the end of the output kept: summaries, final errors and test results.
pub(crate) const OUTPUT_TAIL_CHARS: usize = 8_000;
/// Output longer than this (in characters) is truncated and saved in full to a file.
pub(crate) const OUTPUT_LIMIT_CHARS: usize = OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS;
/// Bytes read from the pipe at a time: one default Linux pipe buffer.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// How long output is still read after the command exited (or was killed). Data already
/// in the pipe is read in microseconds; only a process that escaped the group (`setsid`,
/// `nohup … &` in a new session) keeps the pipe open longer, and it is not waited for.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// Longest UTF-8 encoding of one character: the in-memory bound per kept character.
const MAX_UTF8_BYTES: usize = 4;

/// Runs in the child between fork and exec (after the new session is made). The seam for
/// the Landlock sandbox: it must be async-signal-safe (no allocation, no locks), so build
/// everything in the parent and only apply it here.
pub(crate) type PreExec = Arc<dyn Fn() -> io::Result<()> + Send + Sync>;

/// Where the command's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Stderr {
    /// Into the same pipe as stdout, so the two stay in order (Bash, `--verify`).
    #[default]
    Merged,
    /// Captured on its own (hooks: their stderr is the message for the model).
    Separate,
}

/// One command to run.
#[derive(Clone)]
pub(crate) struct CommandSpec {
    /// Shell source, run with `bash -c`.
    pub command: String,
    pub cwd: PathBuf,
    /// The child's complete environment (already scrubbed of secrets by the caller).
    pub env: Arc<Vec<(String, String)>>,
    pub timeout: Duration,
    /// Where the full output is saved when it is truncated; created when first needed.
    pub spill_dir: PathBuf,
    /// `None`: stdin is /dev/null. `Some`: these bytes, then end of file (hooks' JSON).
    pub stdin: Option<Vec<u8>>,
    pub stderr: Stderr,
    /// Extra confinement applied in the child before exec (the sandbox seam).
    pub pre_exec: Option<PreExec>,
}

impl CommandSpec {
    /// A spec with stdin closed, stderr merged and no pre-exec hook.
    pub(crate) fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        env: Arc<Vec<(String, String)>>,
        timeout: Duration,
        spill_dir: impl Into<PathBuf>,
    ) -> Self {
        CommandSpec {
            command: command.into(),
            cwd: cwd.into(),
            env,
            timeout,
            spill_dir: spill_dir.into(),
            stdin: None,
            stderr: Stderr::Merged,
            pre_exec: None,
        }
    }
}

/// The text one stream produced, truncated to head + tail when it was long.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Captured {
    /// At most head + tail characters, with a marker between them when cut.
    pub text: String,
    pub total_bytes: u64,
    pub total_chars: u64,
    pub truncated: bool,
    /// The full output (lossily decoded), when it was truncated and could be saved.
    pub full_output_path: Option<PathBuf>,
    /// Why the full output could not be saved, when it could not.
    pub spill_error: Option<String>,
    /// Largest in-memory buffer capacity (bytes) held while reading: stays bounded.
    pub peak_buffer_bytes: usize,
}

/// How a command ended and what it printed.
#[derive(Debug, Clone)]
pub(crate) struct CommandOutput {
    /// The exit code when the shell exited normally.
    pub exit_code: Option<i32>,
    /// The signal that killed the shell, when one did.
    pub signal: Option<i32>,
    /// The timeout expired and the group was killed.
    pub timed_out: bool,
    /// `kill_all_running` stopped it (the run is shutting down).
    pub interrupted: bool,
    /// stdout and stderr in order (or stdout alone with `Stderr::Separate`).
    pub output: Captured,
    /// stderr, with `Stderr::Separate` only.
    pub stderr: Option<Captured>,
    /// A process outside the group still held the output pipe when we stopped reading.
    pub pipe_left_open: bool,
    pub duration: Duration,
}

impl CommandOutput {
    /// The shell's convention: the exit code, or 128 + the signal number.
    pub(crate) fn shell_status(&self) -> Option<i32> {
        self.exit_code.or(self.signal.map(|s| 128 + s))
    }
}

// ---------------------------------------------------------------------------------------
// Registry of live process groups

/// The process groups of the commands running now. `kill_all` closes it: afterwards a
/// command is refused before it starts, or killed as soon as it registers, so a command
/// started concurrently with a shutdown cannot slip through.
pub(crate) struct ProcessRegistry {
    state: Mutex<RegistryState>,
}

struct RegistryState {
    closed: bool,
    groups: Vec<libc::pid_t>,
}

static REGISTRY: ProcessRegistry = ProcessRegistry::new();

impl ProcessRegistry {
    pub(crate) const fn new() -> Self {
        ProcessRegistry {
            state: Mutex::new(RegistryState {
                closed: false,
                groups: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A panic elsewhere must not stop us from killing children.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn register(&self, pgid: libc::pid_t) -> GroupGuard<'_> {
        let mut st = self.lock();
        if st.closed {
            kill_group(pgid);
        }
        st.groups.push(pgid);
        GroupGuard {
            registry: self,
            pgid,
            killed: false,
        }
    }

    /// Kills every registered group with SIGKILL and refuses new commands from now on.
    /// Returns how many groups were signalled.
    pub(crate) fn kill_all(&self) -> usize {
        let mut st = self.lock();
        st.closed = true;
        for &pgid in &st.groups {
            kill_group(pgid);
        }
        st.groups.len()
    }
}

/// Kills every command still running (SIGINT/SIGTERM and `--timeout` handlers) and makes
/// later commands fail to start. Takes a lock: call it from a thread (signal-hook's
/// iterator), not from inside a signal handler. Returns how many groups were signalled.
pub(crate) fn kill_all_running() -> usize {
    REGISTRY.kill_all()
}

/// Makes this process the reaper of its orphaned descendants: a process that left its
/// command's group (`setsid`, a double fork) is re-parented here instead of to init, so
/// `kill_orphans` can find it when the run ends.
pub(crate) fn adopt_orphans() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    ADOPTING.store(rc == 0, Ordering::Relaxed);
}

/// Rounds of `kill_orphans`: killing an orphan re-parents its own children here.
const ORPHAN_KILL_ROUNDS: usize = 8;

/// Kills every child process still alive (with its process group). Called when the run
/// ends, after `kill_all_running`: by then nothing the run started should be running, so
/// any child left is a process that escaped its command's group. Returns how many.
pub(crate) fn kill_orphans() -> usize {
    let me = std::process::id() as libc::pid_t;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..ORPHAN_KILL_ROUNDS {
        let fresh: Vec<_> = children_of(me)
            .into_iter()
            .filter(|p| seen.insert(*p))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for pid in fresh {
            // SAFETY: plain kill(2) calls on pids just read from /proc; a pid that has
            // gone meanwhile is ESRCH, which is harmless.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
            // Reap it if it is already gone; never block here (the process exits next).
            // SAFETY: waitpid on our own child with a valid status pointer.
            let mut status = 0;
            unsafe {
                libc::waitpid(pid, &mut status, libc::WNOHANG);
            }
        }
    }
    seen.len()
}

/// The pids whose parent is `parent`, from /proc (Linux).
fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<libc::pid_t>().ok())
        })
        .filter(|pid| {
            // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces and parens.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let after = &s[s.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<libc::pid_t>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// Keeps a group registered while it runs; kills it and deregisters on the way out, also
/// when the runner returns early or panics.
struct GroupGuard<'a> {
    registry: &'a ProcessRegistry,
    pgid: libc::pid_t,
    killed: bool,
}

impl GroupGuard<'_> {
    fn kill(&mut self) {
        kill_group(self.pgid);
        self.killed = true;
    }
}

impl Drop for GroupGuard<'_> {
    fn drop(&mut self) {
        if !self.killed {
            kill_group(self.pgid);
        }
        let mut st = self.registry.lock();
        if let Some(i) = st.groups.iter().position(|&g| g == self.pgid) {
            st.groups.swap_remove(i);
        }
    }
}

/// SIGKILL to a whole process group. ESRCH (nothing left) is the normal case and ignored.
fn kill_group(pgid: libc::pid_t) {
    if pgid > 1 {
        // SAFETY: plain syscall; a positive pgid > 1 never means "every process".
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running

/// Runs `spec` to completion (or timeout) and returns what happened. `Err` only when the
/// command could not be started (or waited for); every way a started command ends is an
/// `Ok` with the output so far.
pub(crate) fn run(spec: &CommandSpec) -> Result<CommandOutput, String> {
    let result = run_in(spec, &REGISTRY);
    reap_strays(&REGISTRY);
    result
}

/// Held across spawn and registration, and while reaping strays: a child that exists
/// but is not yet registered must never be mistaken for a stray.
static SPAWNING: Mutex<()> = Mutex::new(());

/// Set by `adopt_orphans`: only then can children appear that no runner waits for.
static ADOPTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reaps adopted orphans that have exited (zombies), so a long run does not collect
/// them. Live ones are left for `kill_orphans` at the end; registered commands are left
/// to their own runner's wait.
fn reap_strays(registry: &ProcessRegistry) {
    if !ADOPTING.load(Ordering::Relaxed) {
        return;
    }
    let _spawning = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
    let ours = registry.lock().groups.clone();
    for pid in children_of(std::process::id() as libc::pid_t) {
        if ours.contains(&pid) {
            continue;
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child, non-blocking, with a valid status pointer.
        unsafe {
            libc::waitpid(pid, &mut status, libc::WNOHANG);
        }
    }
}

fn run_in(spec: &CommandSpec, registry: &ProcessRegistry) -> Result<CommandOutput, String> {
    let started = Instant::now();
    if registry.is_closed() {
        return Err("not started: the run is shutting down".to_string());
    }
    let shell = shell_for(&spec.env);
    let pipe_err = |e: io::Error| format!("cannot create a pipe for the command: {e}");
    // std's pipes are O_CLOEXEC: a command spawned concurrently never inherits our ends.
    let (out_r, out_w) = io::pipe().map_err(pipe_err)?;
    let (err_r, err_w) = match spec.stderr {
        Stderr::Merged => (None, out_w.try_clone().map_err(pipe_err)?),
        Stderr::Separate => {
            let (r, w) = io::pipe().map_err(pipe_err)?;
            (Some(r), w)
        }
    };
    // Dropping `wake_w` tells the reader the command is over: drain briefly, then stop.
    let (wake_r, wake_w) = io::pipe().map_err(pipe_err)?;

    let mut cmd = Command::new(&shell);
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::from(err_w));
    let parent = std::process::id() as libc::pid_t;
    let hook = spec.pre_exec.clone();
    // SAFETY: the closure only makes syscalls and calls the documented async-signal-safe
    // sandbox hook; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || child_setup(parent, hook.as_deref()));
    }
    let spawning = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
    let spawned = cmd.spawn();
    // Close our copies of the write ends, or the reader would never see end of file.
    drop(cmd);
    let mut child = spawned.map_err(|e| {
        format!(
            "failed to start `{} -c`: {e} (working directory {})",
            shell.display(),
            spec.cwd.display()
        )
    })?;
    let pgid = child.id() as libc::pid_t;
    let mut group = registry.register(pgid);
    drop(spawning);

    if let (Some(bytes), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // Not joined: a command that never reads stdin must not block us. The thread ends
        // with EPIPE once every reader of the pipe is gone.
        let _ = std::thread::Builder::new()
            .name("cmd-stdin".into())
            .spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
    }

    let spill_dir = spec.spill_dir.clone();
    let reader = std::thread::Builder::new()
        .name("cmd-output".into())
        .spawn(move || read_streams(out_r, err_r, wake_r, &spill_dir));
    let reader = match reader {
        Ok(r) => r,
        Err(e) => {
            group.kill();
            let _ = child.wait();
            return Err(format!("cannot start the output reader thread: {e}"));
        }
    };

    let (status, timed_out) = match child.wait_timeout(spec.timeout) {
        Ok(Some(status)) => (Some(status), false),
        Ok(None) => {
            group.kill();
            (child.wait().ok(), true)
        }
        Err(e) => {
            group.kill();
            let _ = child.wait();
            return Err(format!("cannot wait for the command: {e}"));
        }
    };
    // Whatever the command left running in its group dies with it.
    group.kill();
    let interrupted = registry.is_closed();
    drop(wake_w);
    let streams = reader
        .join()
        .map_err(|_| "the output reader thread panicked".to_string())?;

    Ok(CommandOutput {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        interrupted,
        output: streams.output,
        stderr: streams.stderr,
        pipe_left_open: streams.pipe_left_open,
        duration: started.elapsed(),
    })
}

/// In the child, between fork and exec. Async-signal-safe: syscalls only, no allocation.
fn child_setup(
    parent: libc::pid_t,
    hook: Option<&(dyn Fn() -> io::Result<()> + Send + Sync)>,
) -> io::Result<()> {
    // A new session: its own process group (killed as one), and no controlling terminal,
    // so a program that opens /dev/tty to prompt fails at once instead of waiting forever.
    // SAFETY: plain syscalls.
    if unsafe { libc::setsid() } == -1 {
        return Err(io::Error::last_os_error());
    }
    #[cfg(target_os = "linux")]
    {
        // If the agent dies (even by SIGKILL) the shell dies with it. The spawning thread
        // is blocked in `run` for the child's whole life, so its exit cannot trigger this.
        // SAFETY: plain syscalls.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } == -1 {
            return Err(io::Error::last_os_error());
        }
        // The parent may have died before prctl took effect.
        if unsafe { libc::getppid() } != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    match hook {
        Some(h) => h(),
        None => Ok(()),
    }
}

/// `bash` from the child's PATH (absolute entries only: a workspace must not be able to
/// plant `./bash`), then the usual places; `/bin/sh` where there is no bash.
fn shell_for(env: &[(String, String)]) -> PathBuf {
    let path_var = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let dirs = std::env::split_paths(&path_var)
        .filter(|d| d.is_absolute())
        .chain([PathBuf::from("/bin"), PathBuf::from("/usr/bin")]);
    for dir in dirs {
        let candidate = dir.join("bash");
        if is_executable(&candidate) {
            return candidate;
        }
    }
    PathBuf::from("/bin/sh")
}

fn is_executable(p: &Path) -> bool {
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

// ---------------------------------------------------------------------------------------
// Reading

struct Streams {
    output: Captured,
    stderr: Option<Captured>,
    pipe_left_open: bool,
}

/// One pipe being read: its decoder and collector; `open` until end of file.
struct Source {
    pipe: PipeReader,
    decoder: Utf8Decoder,
    collector: OutputCollector,
    open: bool,
}

/// The reader thread: reads every pipe until end of file, or until `DRAIN_AFTER_EXIT`
/// after `wake` closes (the command is over).
fn read_streams(
    out: PipeReader,
    err: Option<PipeReader>,
    wake: PipeReader,
    spill_dir: &Path,
) -> Streams {
    let new_source = |pipe: PipeReader, name: &'static str| Source {
        pipe,
        decoder: Utf8Decoder::new(),
        collector: OutputCollector::new(spill_dir.to_path_buf(), name),
        open: true,
    };
    let mut sources = vec![new_source(out, "output")];
    if let Some(err) = err {
        sources.push(new_source(err, "stderr"));
    }
    let mut deadline: Option<Instant> = None;
    let mut pipe_left_open = false;
    while sources.iter().any(|s| s.open) {
        let timeout_ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    pipe_left_open = true;
                    break;
                }
                // Round up so that we never spin on a zero timeout before the deadline.
                i32::try_from(left.as_millis() + 1).unwrap_or(i32::MAX)
            }
        };
        let mut fds: Vec<libc::pollfd> = sources
            .iter()
            .map(|s| libc::pollfd {
                // poll ignores negative descriptors.
                fd: if s.open { s.pipe.as_raw_fd() } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        fds.push(libc::pollfd {
            fd: if deadline.is_none() {
                wake.as_raw_fd()
            } else {
                -1
            },
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            for s in &mut sources {
                s.collector
                    .note_error(&format!("reading the command's output failed: {e}"));
            }
            break;
        }
        if fds.last().is_some_and(|w| w.revents != 0) {
            deadline = Some(Instant::now() + DRAIN_AFTER_EXIT);
        }
        for (s, fd) in sources.iter_mut().zip(&fds) {
            if !s.open || fd.revents == 0 {
                continue;
            }
            match s.decoder.read_from(&mut s.pipe, &mut s.collector) {
                Ok(0) => s.open = false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    s.collector
                        .note_error(&format!("reading the command's output failed: {e}"));
                    s.open = false;
                }
            }
        }
    }
    let mut captured = sources.into_iter().map(|mut s| {
        s.decoder.finish(&mut s.collector);
        s.collector.finish()
    });
    let output = captured.next().unwrap_or_default();
    Streams {
        output,
        stderr: captured.next(),
        pipe_left_open,
    }
}

/// Incremental, lossy UTF-8 decoding over a fixed buffer: a character split across two
/// reads is completed by the next one, invalid bytes become U+FFFD (as
/// `String::from_utf8_lossy` would do on the whole stream).
struct Utf8Decoder {
    buf: Box<[u8]>,
    /// Bytes of an incomplete character kept at the start of `buf` (at most 3).
    pending: usize,
}

impl Utf8Decoder {
    fn new() -> Self {
        Utf8Decoder {
            buf: vec![0; READ_CHUNK_BYTES + MAX_UTF8_BYTES].into_boxed_slice(),
            pending: 0,
        }
    }

    /// One read; returns the bytes read (0 at end of file).
    fn read_from(&mut self, r: &mut impl Read, sink: &mut OutputCollector) -> io::Result<usize> {
        let n = r.read(&mut self.buf[self.pending..])?;
        if n == 0 {
            return Ok(0);
        }
        sink.total_bytes += n as u64;
        let end = self.pending + n;
        let incomplete = decode_lossy(&self.buf[..end], |s| sink.push_str(s));
        self.buf.copy_within(end - incomplete..end, 0);
        self.pending = incomplete;
        Ok(n)
    }

    /// End of input: an incomplete character left over is invalid.
    fn finish(&mut self, sink: &mut OutputCollector) {
        if self.pending > 0 {
            sink.push_str("\u{FFFD}");
            self.pending = 0;
        }
    }
}

/// Emits `bytes` as text, invalid sequences as U+FFFD; returns the length of an incomplete
/// character at the end, which the caller keeps for the next read.
fn decode_lossy(mut bytes: &[u8], mut emit: impl FnMut(&str)) -> usize {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                emit(s);
                return 0;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                if let Ok(s) = std::str::from_utf8(valid) {
                    emit(s);
                }
                match e.error_len() {
                    None => return rest.len(),
                    Some(bad) => {
                        emit("\u{FFFD}");
                        bytes = &rest[bad..];
                    }
                }
            }
        }
    }
}

/// Per-process sequence number for spill file names.
static SPILL_SEQ: AtomicU64 = AtomicU64::new(0);

/// Keeps the head and a ring of the tail in fixed-capacity strings and, once the output
/// exceeds `OUTPUT_LIMIT_CHARS`, streams everything to a spill file.
struct OutputCollector {
    head: String,
    head_chars: usize,
    /// The last `tail_chars` characters after the head; never more than OUTPUT_TAIL_CHARS.
    tail: String,
    tail_chars: usize,
    total_chars: u64,
    total_bytes: u64,
    spill_dir: PathBuf,
    /// Names the spill file (`output`, `stderr`).
    stream_name: &'static str,
    spill: Option<(File, PathBuf)>,
    spill_error: Option<String>,
    peak_buffer_bytes: usize,
}

impl OutputCollector {
    fn new(spill_dir: PathBuf, stream_name: &'static str) -> Self {
        let head = String::with_capacity(OUTPUT_HEAD_CHARS * MAX_UTF8_BYTES);
        let tail = String::with_capacity(OUTPUT_TAIL_CHARS * MAX_UTF8_BYTES);
        let peak_buffer_bytes = head.capacity() + tail.capacity();
        OutputCollector {
            head,
            head_chars: 0,
            tail,
            tail_chars: 0,
            total_chars: 0,
            total_bytes: 0,
            spill_dir,
            stream_name,
            spill: None,
            spill_error: None,
            peak_buffer_bytes,
        }
    }

    fn push_str(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let n = s.chars().count();
        if self.spill.is_none()
            && self.spill_error.is_none()
            && self.total_chars + n as u64 > OUTPUT_LIMIT_CHARS as u64
        {
            // Until now nothing was dropped: head + tail hold the whole output so far.
            self.start_spill();
        }
        if let Some((file, path)) = &mut self.spill
            && let Err(e) = file.write_all(s.as_bytes())
        {
            self.spill_error = Some(format!(
                "the full output could not be saved to {}: {e}",
                path.display()
            ));
            let _ = std::fs::remove_file(&*path);
            self.spill = None;
        }
        self.total_chars += n as u64;

        let mut rest = s;
        let mut rest_chars = n;
        if self.head_chars < OUTPUT_HEAD_CHARS {
            let take = (OUTPUT_HEAD_CHARS - self.head_chars).min(n);
            let idx = byte_index_of_char(rest, take);
            self.head.push_str(&rest[..idx]);
            self.head_chars += take;
            rest = &rest[idx..];
            rest_chars -= take;
        }
        self.push_tail(rest, rest_chars);
        self.peak_buffer_bytes = self
            .peak_buffer_bytes
            .max(self.head.capacity() + self.tail.capacity());
    }

    /// Appends `s` (`n` chars) to the tail ring, dropping from its front first so that the
    /// string never grows past its initial capacity.
    fn push_tail(&mut self, s: &str, n: usize) {
        if n == 0 {
            return;
        }
        if n >= OUTPUT_TAIL_CHARS {
            let start = byte_index_of_char(s, n - OUTPUT_TAIL_CHARS);
            self.tail.clear();
            self.tail.push_str(&s[start..]);
            self.tail_chars = OUTPUT_TAIL_CHARS;
            return;
        }
        let excess = (self.tail_chars + n).saturating_sub(OUTPUT_TAIL_CHARS);
        if excess > 0 {
            let idx = byte_index_of_char(&self.tail, excess);
            self.tail.drain(..idx);
            self.tail_chars -= excess;
        }
        self.tail.push_str(s);
        self.tail_chars += n;
    }

    fn start_spill(&mut self) {
        match self.open_spill_file() {
            Ok((mut file, path)) => {
                let written = file
                    .write_all(self.head.as_bytes())
                    .and_then(|()| file.write_all(self.tail.as_bytes()));
                match written {
                    Ok(()) => self.spill = Some((file, path)),
                    Err(e) => {
                        self.spill_error = Some(format!(
                            "the full output could not be saved to {}: {e}",
                            path.display()
                        ));
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            Err(e) => self.spill_error = Some(e),
        }
    }

    fn open_spill_file(&self) -> Result<(File, PathBuf), String> {
        // Private (0700/0600): command output may contain anything the command could
        // read. Created without following symlinks: see `create_spill_file`.
        loop {
            let seq = SPILL_SEQ.fetch_add(1, Ordering::Relaxed);
            let name = format!(
                "command-{}-{seq}-{}.txt",
                std::process::id(),
                self.stream_name
            );
            let path = self.spill_dir.join(&name);
            match crate::tools::sandbox::create_spill_file(&self.spill_dir, &name) {
                Ok(f) => return Ok((f, path)),
                // Left by an earlier run with the same pid: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "the full output could not be saved to {}: {e}",
                        path.display()
                    ));
                }
            }
        }
    }

    fn note_error(&mut self, msg: &str) {
        // Shown at the end of the output, inside the bounded tail.
        let note = format!("\n[{msg}]\n");
        let n = note.chars().count();
        self.push_tail(&note, n);
    }

    fn finish(mut self) -> Captured {
        let kept = (self.head_chars + self.tail_chars) as u64;
        let truncated = self.total_chars > kept;
        let full_output_path = match self.spill.take() {
            Some((mut file, path)) => match file.flush() {
                Ok(()) => Some(path),
                Err(e) => {
                    self.spill_error = Some(format!(
                        "the full output could not be saved to {}: {e}",
                        path.display()
                    ));
                    None
                }
            },
            None => None,
        };
        let text = if truncated {
            let cut = self.total_chars - kept;
            let saved = match (&full_output_path, &self.spill_error) {
                (Some(p), _) => format!(
                    "the full output was saved to {}; read it with ReadFile (offset/limit to page through it)",
                    p.display()
                ),
                (None, Some(e)) => e.clone(),
                (None, None) => "the full output was not saved".to_string(),
            };
            format!(
                "{}\n\n[... {cut} of {} characters cut (kept the first {} and the last {}); {saved} ...]\n\n{}",
                self.head, self.total_chars, self.head_chars, self.tail_chars, self.tail
            )
        } else {
            let mut t = self.head;
            t.push_str(&self.tail);
            t
        };
        Captured {
            text,
            total_bytes: self.total_bytes,
            total_chars: self.total_chars,
            truncated,
            full_output_path,
            spill_error: self.spill_error,
            peak_buffer_bytes: self.peak_buffer_bytes,
        }
    }
}

/// Byte offset of the `n`-th character of `s` (its length when `s` has fewer).
fn byte_index_of_char(s: &str, n: usize) -> usize {
    if s.is_ascii() {
        return n.min(s.len());
    }
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, command: &str, timeout: Duration) -> CommandSpec {
        let env = Arc::new(std::env::vars().collect::<Vec<_>>());
        CommandSpec::new(command, dir, env, timeout, dir.join("spill"))
    }

    const GENEROUS: Duration = Duration::from_secs(120);

    /// Alive = present in /proc and not a zombie (an orphaned zombie may linger unreaped
    /// in a container whose init does not reap).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => false,
            Ok(stat) => {
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.trim_start().chars().next());
                !matches!(state, Some('Z') | Some('X') | None)
            }
        }
    }

    /// SIGKILL is delivered asynchronously; a killed process vanishes almost at once, a
    /// surviving `sleep 300` stays for minutes, so this bound only absorbs scheduling.
    /// The pid a test command wrote to `DIR/pid`.
    fn pid_in(dir: &Path) -> i32 {
        std::fs::read_to_string(dir.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    fn dies_soon(pid: i32) -> bool {
        let give_up = Instant::now() + Duration::from_secs(10);
        while Instant::now() < give_up {
            if !alive(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn collect(chunks: &[&[u8]]) -> Captured {
        // A spill "directory" below a regular file can never be created.
        let mut c = OutputCollector::new(PathBuf::from("/dev/null/spill"), "output");
        let mut d = Utf8Decoder::new();
        for chunk in chunks {
            let mut r: &[u8] = chunk;
            while d.read_from(&mut r, &mut c).unwrap() > 0 {}
        }
        d.finish(&mut c);
        c.finish()
    }

    #[test]
    fn decoder_matches_lossy_decoding_at_every_split() {
        let bytes: Vec<u8> = [
            b"a\xc3\xa9b \xe2\x82\xac \xf0\x9f\x98\x80 bad:\xff\xfe \xe2\x82 end\xf0\x9f"
                .as_slice(),
        ]
        .concat();
        let want = String::from_utf8_lossy(&bytes).into_owned();
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let got = collect(&[&bytes[..i], &bytes[i..j], &bytes[j..]]);
                assert_eq!(got.text, want, "split at {i},{j}");
                assert_eq!(got.total_bytes, bytes.len() as u64);
            }
        }
    }

    #[test]
    fn output_at_the_limit_is_whole_and_one_more_char_is_cut() {
        let exact = "x".repeat(OUTPUT_LIMIT_CHARS);
        let c = collect(&[exact.as_bytes()]);
        assert!(!c.truncated);
        assert_eq!(c.text, exact);

        let over = format!(
            "{}{}",
            "h".repeat(OUTPUT_HEAD_CHARS),
            "t".repeat(OUTPUT_TAIL_CHARS + 1)
        );
        let c = collect(&[over.as_bytes()]);
        assert!(c.truncated);
        assert!(
            c.text.contains("[... 1 of 10001 characters cut"),
            "{}",
            &c.text[1990..2200]
        );
        assert!(c.text.starts_with(&"h".repeat(OUTPUT_HEAD_CHARS)));
        assert!(c.text.ends_with(&"t".repeat(OUTPUT_TAIL_CHARS)));
        // The spill dir cannot be created here: the marker says so instead of a path.
        assert!(c.full_output_path.is_none());
        assert!(c.text.contains("could not be saved"), "{}", c.text);
    }

    #[test]
    fn truncation_counts_characters_not_bytes_and_keeps_boundaries() {
        // 3-byte characters, fed in odd-sized pieces that split them.
        let text: String = (0..12_000)
            .map(|i| if i % 7 == 0 { '€' } else { 'a' })
            .collect();
        let bytes = text.as_bytes();
        let pieces: Vec<&[u8]> = bytes.chunks(997).collect();
        let c = collect(&pieces);
        let chars: Vec<char> = text.chars().collect();
        let head: String = chars[..OUTPUT_HEAD_CHARS].iter().collect();
        let tail: String = chars[chars.len() - OUTPUT_TAIL_CHARS..].iter().collect();
        assert!(c.text.starts_with(&head));
        assert!(c.text.ends_with(&tail));
        assert!(c.text.contains("2000 of 12000 characters cut"));
        assert_eq!(c.total_chars, 12_000);
    }

    #[test]
    fn collector_memory_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCollector::new(dir.path().join("spill"), "output");
        let chunk = "é".repeat(READ_CHUNK_BYTES / 2);
        for _ in 0..200 {
            c.push_str(&chunk);
            c.push_str("z");
        }
        let bound = (OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS) * MAX_UTF8_BYTES;
        let got = c.finish();
        assert!(
            got.peak_buffer_bytes <= bound,
            "{} > {bound}",
            got.peak_buffer_bytes
        );
        let path = got.full_output_path.unwrap();
        let expect = 200 * (chunk.len() + 1);
        assert_eq!(std::fs::metadata(path).unwrap().len(), expect as u64);
    }

    #[test]
    fn background_child_does_not_block_return() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(
            dir.path(),
            "sleep 30 & echo $! > pid; echo started",
            GENEROUS,
        ))
        .unwrap();
        assert!(!out.timed_out);
        assert_eq!(out.exit_code, Some(0));
        assert_eq!(out.output.text, "started\n");
        // Returned because the group kill closed the pipe, not because the drain gave up.
        assert!(!out.pipe_left_open);
        let pid = pid_in(dir.path());
        assert!(
            dies_soon(pid),
            "background child {pid} outlived the command"
        );
    }

    #[test]
    fn escaped_child_holding_the_pipe_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        // setsid leaves our group, so the group kill cannot reach it; it keeps the pipe.
        let out = run(&spec(
            dir.path(),
            // Wait until it has left the group, or the group kill would still reach it.
            "setsid sh -c 'echo $$ > pid; exec sleep 30' & \
             until [ -s pid ]; do sleep 0.01; done; echo started",
            GENEROUS,
        ))
        .unwrap();
        assert!(!out.timed_out);
        assert!(out.output.text.contains("started"));
        assert!(out.pipe_left_open);
        // Clean up the escapee.
        let pid = pid_in(dir.path());
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = "sleep 300 >/dev/null 2>&1 & echo $! > pids; sleep 300 & echo $! >> pids; \
                   echo ready; sleep 300";
        let out = run(&spec(dir.path(), cmd, Duration::from_secs(3))).unwrap();
        assert!(out.timed_out);
        assert_eq!(out.signal, Some(libc::SIGKILL));
        assert!(
            out.output.text.contains("ready"),
            "output so far is kept: {:?}",
            out.output.text
        );
        let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
        let pids: Vec<i32> = pids.lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(pids.len(), 2);
        for pid in pids {
            assert!(
                dies_soon(pid),
                "background child {pid} survived the timeout"
            );
        }
    }

    #[test]
    fn leftover_group_members_are_killed_when_the_command_exits() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(
            dir.path(),
            "sleep 300 >/dev/null 2>&1 & echo $! > pid",
            GENEROUS,
        ))
        .unwrap();
        assert_eq!(out.exit_code, Some(0));
        let pid = pid_in(dir.path());
        assert!(
            dies_soon(pid),
            "background child {pid} outlived the command"
        );
    }

    #[test]
    fn huge_output_is_truncated_and_saved_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(dir.path(), "yes | head -c 100000000", GENEROUS)).unwrap();
        assert_eq!(out.exit_code, Some(0));
        let c = &out.output;
        assert!(c.truncated);
        assert_eq!(c.total_bytes, 100_000_000);
        assert!(c.text.len() < OUTPUT_LIMIT_CHARS + 400, "{}", c.text.len());
        assert!(c.text.len() > OUTPUT_LIMIT_CHARS);
        let path = c.full_output_path.as_ref().unwrap();
        assert!(c.text.contains(&path.display().to_string()));
        assert_eq!(std::fs::metadata(path).unwrap().len(), 100_000_000);
        let bound = (OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS) * MAX_UTF8_BYTES;
        assert!(
            c.peak_buffer_bytes <= bound,
            "{} > {bound}",
            c.peak_buffer_bytes
        );
    }

    #[test]
    fn streams_are_merged_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(dir.path(), "echo a; echo b >&2; echo c", GENEROUS)).unwrap();
        assert_eq!(out.output.text, "a\nb\nc\n");
        assert!(out.stderr.is_none());
    }

    #[test]
    fn stderr_can_be_separate() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path(), "echo a; echo b >&2; echo c", GENEROUS);
        s.stderr = Stderr::Separate;
        let out = run(&s).unwrap();
        assert_eq!(out.output.text, "a\nc\n");
        assert_eq!(out.stderr.unwrap().text, "b\n");
    }

    #[test]
    fn exit_code_and_signal_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(dir.path(), "exit 3", GENEROUS)).unwrap();
        assert_eq!(
            (out.exit_code, out.signal, out.shell_status()),
            (Some(3), None, Some(3))
        );
        let out = run(&spec(dir.path(), "kill -TERM $$", GENEROUS)).unwrap();
        assert_eq!((out.exit_code, out.signal), (None, Some(libc::SIGTERM)));
        assert_eq!(out.shell_status(), Some(128 + libc::SIGTERM));
    }

    #[test]
    fn stdin_is_closed_or_fed() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(dir.path(), "cat; echo done", GENEROUS)).unwrap();
        assert!(!out.timed_out);
        assert_eq!(out.output.text, "done\n");
        let mut s = spec(dir.path(), "cat", GENEROUS);
        s.stdin = Some(b"{\"hook\": 1}".to_vec());
        assert_eq!(run(&s).unwrap().output.text, "{\"hook\": 1}");
    }

    #[test]
    fn environment_is_exactly_the_given_one() {
        let dir = tempfile::tempdir().unwrap();
        let env = Arc::new(vec![("ONLY_THIS".to_string(), "1".to_string())]);
        let s = CommandSpec::new("env", dir.path(), env, GENEROUS, dir.path().join("spill"));
        let out = run(&s).unwrap();
        let names: Vec<&str> = out
            .output
            .text
            .lines()
            .filter_map(|l| l.split('=').next())
            .collect();
        // bash adds PWD, SHLVL and `_` itself; nothing is inherited from us.
        assert!(names.contains(&"ONLY_THIS"), "{names:?}");
        assert!(
            !names.contains(&"HOME") && !names.contains(&"CARGO"),
            "{names:?}"
        );
    }

    #[test]
    fn runs_in_cwd_in_its_own_session() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&spec(
            dir.path(),
            "pwd -P; ps -o pid=,pgid=,sid= -p $$",
            GENEROUS,
        ))
        .unwrap();
        let mut lines = out.output.text.lines();
        assert_eq!(
            lines.next().map(PathBuf::from),
            Some(dir.path().canonicalize().unwrap())
        );
        if let Some(ids) = lines.next() {
            // ps may be missing on minimal images; when present, pid = pgid = sid.
            let ids: Vec<&str> = ids.split_whitespace().collect();
            assert_eq!(ids.len(), 3, "{ids:?}");
            assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
        }
    }

    #[test]
    fn failure_to_start_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(&spec(&dir.path().join("missing"), "true", GENEROUS)).unwrap_err();
        assert!(e.contains("failed to start"), "{e}");
    }

    #[test]
    fn pre_exec_hook_runs_in_the_child_and_can_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path(), "true", GENEROUS);
        s.pre_exec = Some(Arc::new(|| Err(io::Error::from_raw_os_error(libc::EPERM))));
        let e = run(&s).unwrap_err();
        assert!(e.contains("failed to start"), "{e}");
    }

    #[test]
    fn kill_all_stops_a_running_command_and_closes_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A private registry: the global one is shared with every test in this process.
        let registry = ProcessRegistry::new();
        let s = spec(dir.path(), "echo running > fifo; sleep 300", GENEROUS);
        std::thread::scope(|scope| {
            let runner = scope.spawn(|| run_in(&s, &registry));
            // Opening a FIFO for reading blocks until the command opens it for writing.
            let mut line = String::new();
            File::open(&fifo)
                .unwrap()
                .read_to_string(&mut line)
                .unwrap();
            assert_eq!(line, "running\n");
            registry.kill_all();
            let out = runner.join().unwrap().unwrap();
            assert!(out.interrupted);
            assert!(!out.timed_out);
            assert_eq!(out.signal, Some(libc::SIGKILL));
        });
        let e = run_in(&spec(dir.path(), "true", GENEROUS), &registry).unwrap_err();
        assert!(e.contains("shutting down"), "{e}");
    }

    #[test]
    fn registry_is_empty_after_runs() {
        let registry = ProcessRegistry::new();
        let dir = tempfile::tempdir().unwrap();
        run_in(&spec(dir.path(), "true", GENEROUS), &registry).unwrap();
        let _ = run_in(
            &spec(dir.path(), "sleep 5", Duration::from_millis(50)),
            &registry,
        )
        .unwrap();
        assert!(registry.lock().groups.is_empty());
    }
}
