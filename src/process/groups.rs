//! The process groups of running commands (killed as one on timeout, signal or the end
//! of the run) and the orphans that escaped them, which the agent adopts and kills.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::util::sync::Locked;

/// The process groups of the commands running now. `kill_all` closes it: afterwards a
/// command is refused before it starts, or killed as soon as it registers, so a command
/// started concurrently with a shutdown cannot slip through.
pub(crate) struct ProcessRegistry {
    state: Mutex<RegistryState>,
}

pub(super) struct RegistryState {
    closed: bool,
    pub(super) groups: Vec<Running>,
    /// The groups `kill_all` killed: their members may outlive the kill by a moment.
    killed: Vec<Running>,
}

/// A running command: its process group, and the process its runner waits for (the
/// command's supervisor, a child of the agent; the command itself is its child).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Running {
    pub(super) pgid: libc::pid_t,
    pub(super) waited: libc::pid_t,
}

pub(super) static REGISTRY: ProcessRegistry = ProcessRegistry::new();

impl ProcessRegistry {
    pub(crate) const fn new() -> Self {
        ProcessRegistry {
            state: Mutex::new(RegistryState {
                closed: false,
                groups: Vec::new(),
                killed: Vec::new(),
            }),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A panic elsewhere must not stop us from killing children.
        self.state.locked()
    }

    pub(super) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub(super) fn register(&self, pgid: libc::pid_t, waited: libc::pid_t) -> GroupGuard<'_> {
        let mut st = self.lock();
        if st.closed {
            kill_group(pgid);
        }
        let running = Running { pgid, waited };
        st.groups.push(running);
        GroupGuard {
            registry: self,
            running,
            killed: false,
        }
    }

    /// Kills every registered group with SIGKILL and refuses new commands from now on.
    /// Returns how many groups were signalled.
    pub(crate) fn kill_all(&self) -> usize {
        let mut st = self.lock();
        st.closed = true;
        for r in &st.groups {
            kill_group(r.pgid);
        }
        let groups = st.groups.clone();
        st.killed.extend(groups);
        st.groups.len()
    }

    /// The commands: running now, or killed by `kill_all`.
    fn known(&self) -> Vec<Running> {
        let st = self.lock();
        st.groups.iter().chain(&st.killed).copied().collect()
    }
}

/// Kills every command still running (SIGINT/SIGTERM and `--timeout` handlers) and makes
/// later commands fail to start. Takes a lock: call it from a thread (signal-hook's
/// iterator), not from inside a signal handler. Returns how many groups were signalled.
pub(crate) fn kill_all_running() -> usize {
    REGISTRY.kill_all()
}

/// Kills a running command's whole tree (KillBash): its process group, and through its
/// supervisor everything below it that left the group. False when no running command has
/// that group (it has ended). Under `SPAWNING`, so the supervisor cannot be reaped (and
/// its pid reused) between the look-up and the signal.
pub(crate) fn kill_command_tree(pgid: libc::pid_t) -> bool {
    let _spawning = SPAWNING.locked();
    let waited = REGISTRY
        .lock()
        .groups
        .iter()
        .find(|r| r.pgid == pgid)
        .map(|r| r.waited);
    let Some(waited) = waited else {
        return false;
    };
    kill_group(pgid);
    if supervisors().contains(&waited) {
        // SAFETY: kill(2) on our own unreaped child (the list holds no reaped pid).
        unsafe { libc::kill(waited, super::supervisor::SWEEP_NOW) };
    }
    true
}

/// Makes this process the reaper of its orphaned descendants: a process whose command's
/// supervisor was killed under it (or, without supervisors, one that left its command's
/// group) is re-parented here instead of to init, so `kill_orphans` can find it when the
/// run ends.
#[cfg(target_os = "linux")]
pub(crate) fn adopt_orphans() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    ADOPTING.store(rc == 0, Ordering::Relaxed);
}

/// No subreaper outside Linux: an orphan goes to init (launchd), out of the run's reach.
#[cfg(not(target_os = "linux"))]
pub(crate) fn adopt_orphans() {}

/// Rounds of `kill_orphans`: killing an orphan re-parents its own children here.
const ORPHAN_KILL_ROUNDS: usize = 8;

/// The commands' supervisors not yet reaped (Linux): children of the agent that no
/// runner waits for (the runner reads the command's status from a pipe), which stay
/// while something the command started lives. Reaped only by `reap_strays`, so a pid
/// here is never a reused one.
static SUPERVISORS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

fn supervisors() -> MutexGuard<'static, Vec<libc::pid_t>> {
    SUPERVISORS.locked()
}

/// Waits for a supervisor that said it is leaving (nothing was left below it, so it
/// exits at once) and takes it off the list, both under `SPAWNING`, so that no other
/// reaping races it and the list never holds a pid that was reaped.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn reap_supervisor(pid: libc::pid_t) {
    let _spawning = SPAWNING.locked();
    let mut sups = supervisors();
    if let Some(i) = sups.iter().position(|&p| p == pid) {
        sups.swap_remove(i);
        let mut status = 0;
        // SAFETY: waitpid on our own child, which is exiting, with a valid status pointer.
        while unsafe { libc::waitpid(pid, &mut status, 0) } == -1
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
    }
}

/// Records a command's supervisor; call with `SPAWNING` held.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(super) fn add_supervisor(pid: libc::pid_t) {
    supervisors().push(pid);
}

/// Kills every child process still alive (with its process group), and tells every
/// command supervisor still present to kill all below it. Called when the run ends,
/// after `kill_all_running`: by then nothing the run started should be running, so any
/// live process outside the commands' own groups (which `kill_all_running` killed), a
/// child here or below a supervisor, is one that escaped its group. Returns how many of
/// those there were.
pub(crate) fn kill_orphans() -> usize {
    let _spawning = SPAWNING.locked();
    // Most runs start no process: one syscall says so, instead of reading every
    // process's /proc/PID/stat (~900 syscalls on a machine with 180 processes).
    if !has_children() {
        return 0;
    }
    let commands = REGISTRY.known();
    let waited = |pid| commands.iter().any(|r| r.waited == pid);
    let in_a_group = |pgid| commands.iter().any(|r| r.pgid == pgid);
    let sups = supervisors().clone();
    let me = std::process::id() as libc::pid_t;
    let mut seen = std::collections::HashSet::new();
    let mut escaped = 0;
    for _ in 0..ORPHAN_KILL_ROUNDS {
        let all = processes();
        let fresh: Vec<_> = all
            .iter()
            .filter(|c| c.ppid == me && seen.insert(c.pid))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for child in fresh {
            if sups.contains(&child.pid) {
                if !child.zombie {
                    // What escaped a command's group lives on below its supervisor,
                    // which kills all of it when told to (and reaps it).
                    escaped += all
                        .iter()
                        .filter(|p| p.ppid == child.pid && !p.zombie && !in_a_group(p.pgid))
                        .count();
                    // SAFETY: kill(2) on our own unreaped child.
                    unsafe { libc::kill(child.pid, super::supervisor::SWEEP_NOW) };
                }
                continue;
            }
            // A command the runner waits for itself (no supervisor on this platform):
            // reaping it here would make that runner's wait fail.
            if waited(child.pid) {
                continue;
            }
            // A zombie has already exited; a member of a command's group was killed
            // with that group. Neither escaped.
            if !child.zombie && !in_a_group(child.pgid) {
                escaped += 1;
            }
            // SAFETY: plain kill(2) calls on pids just read from /proc; a pid that has
            // gone meanwhile is ESRCH, which is harmless.
            unsafe {
                libc::kill(-child.pid, libc::SIGKILL);
                libc::kill(child.pid, libc::SIGKILL);
            }
            // Reap it if it is already gone; never block here (the process exits next).
            // SAFETY: waitpid on our own child with a valid status pointer.
            let mut status = 0;
            unsafe {
                libc::waitpid(child.pid, &mut status, libc::WNOHANG);
            }
        }
    }
    escaped
}

/// Whether this process has any child, living or exited but not reaped (`waitid` with
/// `WNOWAIT` reaps nothing; `__WALL` counts children of every kind). Any doubt is a yes.
#[cfg(target_os = "linux")]
fn has_children() -> bool {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED
        | libc::WSTOPPED
        | libc::WCONTINUED
        | libc::WNOHANG
        | libc::WNOWAIT
        | libc::__WALL;
    // SAFETY: waitid with a valid siginfo pointer; WNOWAIT leaves any child waitable.
    let rc = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, flags) };
    !(rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

#[cfg(not(target_os = "linux"))]
fn has_children() -> bool {
    true
}

/// A process as /proc shows it.
struct Proc {
    pid: libc::pid_t,
    ppid: libc::pid_t,
    pgid: libc::pid_t,
    zombie: bool,
}

/// Every process, from /proc (Linux).
#[cfg(target_os = "linux")]
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<libc::pid_t>().ok())
        })
        .filter_map(|pid| {
            // /proc/PID/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces and
            // parens.
            let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut f = s[s.rfind(')')? + 1..].split_whitespace();
            let state = f.next()?;
            let ppid = f.next()?.parse::<libc::pid_t>().ok()?;
            let pgid = f.next()?.parse::<libc::pid_t>().ok()?;
            Some(Proc {
                pid,
                ppid,
                pgid,
                zombie: state == "Z",
            })
        })
        .collect()
}

#[cfg(target_os = "macos")]
#[path = "groups_macos.rs"]
mod macos;
#[cfg(target_os = "macos")]
use macos::processes;

/// Keeps a group registered while it runs; kills it and deregisters on the way out, also
/// when the runner returns early or panics.
pub(super) struct GroupGuard<'a> {
    registry: &'a ProcessRegistry,
    running: Running,
    killed: bool,
}

impl GroupGuard<'_> {
    pub(super) fn kill(&mut self) {
        kill_group(self.running.pgid);
        self.killed = true;
    }

    pub(super) fn pgid(&self) -> libc::pid_t {
        self.running.pgid
    }
}

impl Drop for GroupGuard<'_> {
    fn drop(&mut self) {
        // A group that still had members when its leader was done (an MCP server's
        // child, say) is remembered like `kill_all`'s: they may outlive the SIGKILL by a
        // moment, and `kill_orphans` must not count them as escaped.
        let had_members = !self.killed && kill_group(self.running.pgid);
        let mut st = self.registry.lock();
        if let Some(i) = st.groups.iter().position(|r| *r == self.running) {
            st.groups.swap_remove(i);
        }
        if had_members {
            st.killed.push(self.running);
        }
    }
}

/// SIGKILL to a whole process group; true when some member was there to get it. ESRCH
/// (nothing left) is the normal case.
fn kill_group(pgid: libc::pid_t) -> bool {
    // SAFETY: plain syscall; a positive pgid > 1 never means "every process".
    pgid > 1 && unsafe { libc::killpg(pgid, libc::SIGKILL) } == 0
}

/// Held across spawn and registration, and while reaping strays: a child that exists
/// but is not yet registered must never be mistaken for a stray.
pub(super) static SPAWNING: Mutex<()> = Mutex::new(());

/// Set by `adopt_orphans`: only then can children appear that no runner waits for.
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Reaps adopted orphans that have exited (zombies), so a long run does not collect
/// them. Live ones are left for `kill_orphans` at the end; registered commands are left
/// to their own runner's wait.
pub(super) fn reap_strays(registry: &ProcessRegistry) {
    let _spawning = SPAWNING.locked();
    let mut sups = supervisors();
    sups.retain(|&pid| {
        let mut status = 0;
        // SAFETY: waitpid on our own child, non-blocking, with a valid status pointer.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
    });
    if !ADOPTING.load(Ordering::Relaxed) {
        return;
    }
    let ours: Vec<_> = registry.lock().groups.iter().map(|r| r.waited).collect();
    let me = std::process::id() as libc::pid_t;
    for pid in processes().iter().filter(|p| p.ppid == me).map(|p| p.pid) {
        // Supervisors are reaped above, only there (their list must hold no reused pid).
        if ours.contains(&pid) || sups.contains(&pid) {
            continue;
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child, non-blocking, with a valid status pointer.
        unsafe {
            libc::waitpid(pid, &mut status, libc::WNOHANG);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "groups_tests.rs"]
mod tests;
