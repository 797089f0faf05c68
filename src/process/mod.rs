//! Child processes: the one runner used by the Bash tool, hooks and `--verify`, so that
//! every command the agent starts gets the same guarantees. This file starts and waits;
//! `capture` reads the output, `groups` tracks and kills process groups and orphans,
//! `supervisor` kills a command's whole tree if the agent dies (even by SIGKILL).
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

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use wait_timeout::ChildExt;

mod capture;
pub(crate) mod egress;
mod groups;
#[cfg(target_os = "linux")]
mod netns;
pub(crate) mod sandbox;
#[cfg(target_os = "linux")]
mod seccomp;
mod spill;
mod supervisor;
#[cfg(target_os = "linux")]
pub(crate) mod userns;

use capture::read_streams;
use groups::{ProcessRegistry, REGISTRY, SPAWNING, reap_strays};

use crate::util::sync::Locked;
pub(crate) use groups::{adopt_orphans, kill_all_running, kill_command_tree, kill_orphans};
pub(crate) use spill::create_spill_file;

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

/// Called once a command has started and its group is registered, with its pid (its
/// process group): a background command's caller learns it before the command ends.
pub(crate) type OnStart = Arc<dyn Fn(libc::pid_t) + Send + Sync>;

/// Called with each piece of the (merged) output as it is read, secrets already removed:
/// a background command's live output. The head + tail and the spill work as without it.
pub(crate) type Tee = Arc<dyn Fn(&str) + Send + Sync>;

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
    /// Told the command's pid once it runs (background commands).
    pub on_start: Option<OnStart>,
    /// Gets the output as it is read (background commands).
    pub tee: Option<Tee>,
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
            on_start: None,
            tee: None,
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

/// Runs `spec` to completion (or timeout) and returns what happened. `Err` only when the
/// command could not be started (or waited for); every way a started command ends is an
/// `Ok` with the output so far.
pub(crate) fn run(spec: &CommandSpec) -> Result<CommandOutput, String> {
    // Before too: the previous command's supervisor exits just after it reported the
    // status, often after the reaping that followed it, and must not be a zombie now.
    reap_strays(&REGISTRY);
    let result = run_in(spec, &REGISTRY);
    reap_strays(&REGISTRY);
    result
}

/// Runs `spec` while the run is ending, after `kill_all_running` closed the registry (the
/// finisher's `git diff --stat`). Its group is still killed on timeout and on return.
pub(crate) fn run_at_exit(spec: &CommandSpec) -> Result<CommandOutput, String> {
    let result = run_in(spec, &ProcessRegistry::new());
    reap_strays(&REGISTRY);
    result
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
        // The span the command runs in (a tool call, a hook, `--verify`), for a test
        // suite that exports traces of its own.
        .envs(crate::otel::context::child_env())
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::from(err_w));
    let hook = spec.pre_exec.clone();
    let started_cmd = start(&mut cmd, hook, registry);
    // Close our copies of the write ends, or the reader would never see end of file.
    drop(cmd);
    let (mut child, mut running) = started_cmd.map_err(|e| {
        format!(
            "failed to start `{} -c`: {e} (working directory {})",
            shell.display(),
            spec.cwd.display()
        )
    })?;

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
    let tee = spec.tee.clone();
    let reader = std::thread::Builder::new()
        .name("cmd-output".into())
        .spawn(move || read_streams(out_r, err_r, wake_r, &spill_dir, tee));
    let reader = match reader {
        Ok(r) => r,
        Err(e) => {
            running.kill();
            let _ = running.wait(&mut child, None);
            return Err(format!("cannot start the output reader thread: {e}"));
        }
    };
    if let Some(on_start) = &spec.on_start {
        on_start(running.group.pgid());
    }

    let (status, timed_out) = match running.wait(&mut child, Some(spec.timeout)) {
        Ok(Some(status)) => (Some(status), false),
        Ok(None) => {
            running.kill();
            (running.wait(&mut child, None).ok().flatten(), true)
        }
        Err(e) => {
            running.kill();
            let _ = running.wait(&mut child, None);
            return Err(format!("cannot wait for the command: {e}"));
        }
    };
    // Whatever the command left running in its group dies with it.
    running.kill();
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

/// A long-lived child's process group (an MCP server), registered for the whole life of
/// the child: every way out of the run (`kill_all_running`) kills it, and dropping it
/// kills what is left of the group.
pub(crate) struct ServiceGroup {
    started: Started<'static>,
}

impl ServiceGroup {
    /// The server's process group (its own pid; on Linux the `Child` is its supervisor).
    pub(crate) fn pgid(&self) -> libc::pid_t {
        self.started.group.pgid()
    }

    /// Waits for the server to exit; `child` is the one `spawn_service` returned.
    pub(crate) fn wait(&mut self, child: &mut std::process::Child) -> io::Result<ExitStatus> {
        self.started
            .wait(child, None)?
            .ok_or_else(|| io::Error::other("no exit status"))
    }
}

/// Spawns `cmd` (its stdio already set) in its own session and process group, under a
/// supervisor that takes its whole tree down with the agent, and registers the group
/// like a command's. Call it from a thread that then waits for the child for its whole
/// life (`ServiceGroup::wait`): the kernel's parent-death signal follows the spawning
/// thread, not the process.
pub(crate) fn spawn_service(
    cmd: &mut Command,
) -> Result<(std::process::Child, ServiceGroup), String> {
    if REGISTRY.is_closed() {
        return Err("not started: the run is shutting down".to_string());
    }
    let (child, started) = start(cmd, None, &REGISTRY).map_err(|e| e.to_string())?;
    Ok((child, ServiceGroup { started }))
}

/// A started command: its registered group, and the pipe on which its supervisor
/// reports the command's exit.
struct Started<'r> {
    group: groups::GroupGuard<'r>,
    #[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
    report: io::PipeReader,
    /// The process `std` started: the supervisor on Linux.
    #[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
    waited: libc::pid_t,
}

impl Started<'_> {
    fn kill(&mut self) {
        self.group.kill();
    }

    /// The command's exit status, or `None` once `timeout` has passed. On Linux it
    /// comes from the supervisor (`child`), which may stay on while the command's
    /// escapees live, and is reaped by `reap_strays`; elsewhere `child` is the command.
    fn wait(
        &mut self,
        child: &mut std::process::Child,
        timeout: Option<Duration>,
    ) -> io::Result<Option<ExitStatus>> {
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        {
            let _ = child;
            let report = wait_for_report(&mut self.report, timeout)?;
            Ok(report.map(|(status, leaving)| {
                if leaving {
                    groups::reap_supervisor(self.waited);
                }
                status
            }))
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        match timeout {
            Some(t) => child.wait_timeout(t),
            None => child.wait().map(Some),
        }
    }
}

/// Reads the command's raw wait status from its supervisor's pipe, waiting at most
/// `timeout`, and whether the supervisor is leaving. End of file without one means the
/// supervisor was killed (the command dies with it, by its parent-death signal): that
/// is reported as SIGKILL.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn wait_for_report(
    report: &mut io::PipeReader,
    timeout: Option<Duration>,
) -> io::Result<Option<(ExitStatus, bool)>> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                i32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
            }
        };
        let mut pfd = libc::pollfd {
            fd: report.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc > 0 {
            break;
        }
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
    let mut raw = [0u8; supervisor::STATUS_BYTES];
    match report.read_exact(&mut raw) {
        Ok(()) => {
            let (code, flag) = raw.split_at(supervisor::STATUS_BYTES - 1);
            #[expect(clippy::expect_used, reason = "split_at gave exactly a c_int's bytes")]
            let code = libc::c_int::from_ne_bytes(code.try_into().expect("a c_int's bytes"));
            Ok(Some((
                ExitStatus::from_raw(code),
                flag[0] == supervisor::LEAVING,
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Ok(Some((ExitStatus::from_raw(libc::SIGKILL), false)))
        }
        Err(e) => Err(e),
    }
}

/// Spawns `cmd` under its supervisor (see `supervisor`) and registers the command's
/// group. The spawning thread must stay until the command has ended (the parent-death
/// signal follows it).
fn start<'r>(
    cmd: &mut Command,
    hook: Option<PreExec>,
    registry: &'r ProcessRegistry,
) -> io::Result<(std::process::Child, Started<'r>)> {
    let parent = std::process::id() as libc::pid_t;
    // The supervisor writes the command's pid here (its process group and session),
    // then its exit status.
    let (mut report_r, report_w) = io::pipe()?;
    let report = report_w.as_raw_fd();
    // SAFETY: the closure only makes syscalls and calls the documented async-signal-safe
    // sandbox hook; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || supervisor::child_setup(parent, report, hook.as_deref()));
    }
    let _spawning = SPAWNING.locked();
    let spawned = cmd.spawn();
    drop(report_w);
    let mut child = spawned?;
    let mut pid = [0u8; supervisor::PID_BYTES];
    // Written before the command's exec, which `spawn` waited for: this never blocks
    // for long. End of file means the supervisor died before it could say.
    if let Err(e) = report_r.read_exact(&mut pid) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other(format!(
            "the command's supervisor did not report: {e}"
        )));
    }
    let pgid = libc::pid_t::from_ne_bytes(pid);
    let waited = child.id() as libc::pid_t;
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    groups::add_supervisor(waited);
    let group = registry.register(pgid, waited);
    Ok((
        child,
        Started {
            group,
            report: report_r,
            waited,
        },
    ))
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

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
