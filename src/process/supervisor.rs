//! The supervisor between the agent and every command it starts, so that a command's
//! whole process tree dies with the agent, even when the agent is killed by SIGKILL.
//!
//! `std` forks a child for the command; in it, before exec, `child_setup` forks once
//! more. The grandchild goes on to exec the command in a session of its own (its pid is
//! its group and session, as if the agent had started it directly). The child stays
//! behind as the supervisor: a subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the
//! command starts stays below it, even one that called `setsid` or double-forked, and
//! told of the agent's death by the kernel (`PR_SET_PDEATHSIG`). On the runner's report
//! pipe it writes the command's pid, then, when the command ends, its raw wait status
//! and whether it is leaving. It stays while anything is left below it (a daemon the
//! command started), reaping, and exits once nothing is; when nothing was left, the
//! runner reaps it at once, so no zombie waits for the next reaping. When the agent dies, or sends `SWEEP_NOW` at the end of the
//! run, it kills the command's group and then, round by round, every process still
//! below it, until nothing is left.
//!
//! Everything here runs in a child forked from a multithreaded process, so it makes
//! syscalls only: no allocation, no locks, no panics. macOS has its own supervisor
//! (`supervisor_macos.rs`: kqueue instead of the parent-death signal); other platforms run
//! the command directly, with no supervisor (and nothing dies with the agent there).

use std::io;
use std::os::fd::RawFd;

/// A pre-exec hook (the sandbox) applied to the command only, not to the supervisor.
pub(super) type Hook<'a> = Option<&'a (dyn Fn() -> io::Result<()> + Send + Sync)>;

/// Bytes of the command's pid, then of its raw wait status and one byte, `LEAVING` or
/// `STAYING`, on the report pipe.
pub(super) const PID_BYTES: usize = std::mem::size_of::<libc::pid_t>();
pub(super) const STATUS_BYTES: usize = std::mem::size_of::<libc::c_int>() + 1;

/// After the status: the supervisor is exiting now (nothing was left below it), so the
/// runner may wait for it; it is not left a zombie until some later reaping.
pub(super) const LEAVING: u8 = 1;
/// After the status: something the command started lives on; the supervisor stays.
#[cfg(target_os = "linux")]
const STAYING: u8 = 0;

/// Sent by the agent when its run ends: kill everything below, now.
pub(super) const SWEEP_NOW: libc::c_int = libc::SIGTERM;

/// The supervisor's parent-death signal. Any signal would do: the supervisor blocks them
/// all (a `kill 0` or `kill -TERM $PPID` from the command must not take it down) and
/// only acts on seeing that its parent has really changed.
#[cfg(target_os = "linux")]
const AGENT_GONE: libc::c_int = libc::SIGUSR1;

/// In the child `std` forked, between fork and exec. Returns `Ok` in the process that
/// is to exec the command, after writing that process's pid (its process group) to
/// `report`; on Linux the process `std` forked never returns (see the file comment).
pub(super) fn child_setup(parent: libc::pid_t, report: RawFd, hook: Hook) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        supervised(parent, report, hook)
    }
    #[cfg(target_os = "macos")]
    {
        macos::supervised(parent, report, hook)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = parent;
        // SAFETY: plain syscalls.
        if unsafe { libc::setsid() } == -1 {
            return Err(io::Error::last_os_error());
        }
        write_int(report, unsafe { libc::getpid() });
        run_hook(hook)
    }
}

fn run_hook(hook: Hook) -> io::Result<()> {
    match hook {
        Some(h) => h(),
        None => Ok(()),
    }
}

/// Writes `n` to the report pipe; a failure only means the runner is gone.
fn write_int(fd: RawFd, n: libc::c_int) {
    write_bytes(fd, &n.to_ne_bytes());
}

/// One write of at most a few bytes (under PIPE_BUF, so the reader sees them whole).
fn write_bytes(fd: RawFd, bytes: &[u8]) {
    let mut done = 0;
    while done < bytes.len() {
        // SAFETY: writing from a live stack buffer within its bounds.
        let n = unsafe {
            libc::write(
                fd,
                bytes[done..].as_ptr().cast::<libc::c_void>(),
                bytes.len() - done,
            )
        };
        if n > 0 {
            done += n as usize;
        } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

#[cfg(target_os = "linux")]
fn supervised(parent: libc::pid_t, report: RawFd, hook: Hook) -> io::Result<()> {
    // SAFETY (whole function): plain syscalls on integers and stack buffers.
    unsafe {
        // Its own session: a signal to the agent's group (a terminal's Ctrl-C, a CI
        // runner killing the job's group) does not reach it, so it can still clean up.
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, AGENT_GONE) == -1 {
            return Err(io::Error::last_os_error());
        }
        // A copy of the agent's memory, key included: closed to the command (a process of
        // the same user) as the agent's is. Inherited from the agent already; said again
        // so that it holds whoever forked us. The command regains it at exec.
        libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0);
        // The agent may have died before prctl took effect.
        if libc::getppid() != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // Best effort: without it (Linux before 3.4) an orphan goes to the agent, which
        // is a subreaper too and kills it when the run ends, but not if it is SIGKILLed.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        // Blocked before the fork, so no signal is lost between fork and sigwaitinfo.
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        if libc::sigprocmask(libc::SIG_SETMASK, &all, &mut before) == -1 {
            return Err(io::Error::last_os_error());
        }
        let me = libc::getpid();
        match libc::fork() {
            -1 => {
                let e = io::Error::last_os_error();
                libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
                Err(e)
            }
            0 => {
                // The command: the signal mask std gave it, a session of its own, and
                // death with its supervisor (if that is killed, the command goes too).
                if libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) == -1
                    || libc::setsid() == -1
                    || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::getppid() != me {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                run_hook(hook)
            }
            command => {
                write_int(report, command);
                supervise(parent, command, report)
            }
        }
    }
}

/// The supervisor's life: reap, report the command's exit, wait for what it left, or
/// clean up after the agent.
#[cfg(target_os = "linux")]
fn supervise(parent: libc::pid_t, command: libc::pid_t, report: RawFd) -> ! {
    // SAFETY (whole function): plain syscalls on integers and stack buffers.
    unsafe {
        // Hold nothing open but the report pipe: not the command's pipes (their readers
        // wait for every writer), nor the agent's descriptors, nor another command's
        // pipes that a concurrent spawn had open when std forked (this process never
        // execs, so close-on-exec never closes them).
        for fd in 0..3 {
            libc::close(fd);
        }
        close_from(3, report);
        close_from(report + 1, libc::c_int::MAX);
        let mut wake: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut wake);
        libc::sigaddset(&mut wake, libc::SIGCHLD);
        libc::sigaddset(&mut wake, AGENT_GONE);
        libc::sigaddset(&mut wake, SWEEP_NOW);
        let mut reported = false;
        loop {
            // Reap every child that ended: the command, and orphans adopted from it. The
            // command's status waits for the end of the round, which tells whether this
            // process is about to leave.
            let mut ended = None;
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid == command {
                    ended = Some(status);
                } else if pid == 0 {
                    if let Some(status) = ended {
                        report_status(report, status, STAYING, &mut reported);
                    }
                    break;
                } else if pid < 0 {
                    if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    // Nothing left below: the command and all it started have ended.
                    if let Some(status) = ended {
                        report_status(report, status, LEAVING, &mut reported);
                    }
                    libc::_exit(0);
                }
            }
            if libc::getppid() != parent {
                sweep(command, report, reported);
            }
            // All three are blocked, so one that came since the checks above is pending
            // and returns at once.
            if libc::sigwaitinfo(&wake, std::ptr::null_mut()) == SWEEP_NOW {
                sweep(command, report, reported);
            }
        }
    }
}

/// Closes descriptors `from..to` (to exclusive).
#[cfg(target_os = "linux")]
fn close_from(from: libc::c_int, to: libc::c_int) {
    if from >= to {
        return;
    }
    // SAFETY: closing descriptors this process does not use.
    unsafe {
        if libc::syscall(libc::SYS_close_range, from as u32, (to - 1) as u32, 0u32) == 0 {
            return;
        }
        // Linux before 5.9.
        let mut lim: libc::rlimit = std::mem::zeroed();
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            1024
        };
        for fd in from..to.min(top) {
            libc::close(fd);
        }
    }
}

/// Hands the command's wait status to the runner, once, and closes the pipe.
#[cfg(target_os = "linux")]
fn report_status(report: RawFd, status: libc::c_int, leaving: u8, reported: &mut bool) {
    if !*reported {
        let mut bytes = [0u8; STATUS_BYTES];
        let (code, flag) = bytes.split_at_mut(STATUS_BYTES - 1);
        code.copy_from_slice(&status.to_ne_bytes());
        flag[0] = leaving;
        write_bytes(report, &bytes);
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(report) };
        *reported = true;
    }
}

/// Kills the command's group, then every process left below this one (orphans are
/// re-parented here, so each round finds the children of the last round's victims),
/// until there are no children at all; the command's status is still reported.
#[cfg(target_os = "linux")]
fn sweep(command: libc::pid_t, report: RawFd, mut reported: bool) -> ! {
    // SAFETY (whole function): plain syscalls on integers and stack buffers.
    unsafe {
        libc::kill(-command, libc::SIGKILL);
        libc::kill(command, libc::SIGKILL);
        let me = libc::getpid();
        loop {
            let listed = for_each_child(me, |pid, pgid| {
                // A child leading its own group (the command, an escapee that called
                // setsid) takes its group with it; this process's group is only itself.
                if pgid == pid && pgid != me {
                    libc::kill(-pgid, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            });
            // Without /proc only the command's group could be killed: do not wait for
            // what cannot be found.
            let flags = if listed { 0 } else { libc::WNOHANG };
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, flags);
            if pid == command {
                // The agent is gone or ending the run: whoever reaps this, not the runner.
                report_status(report, status, STAYING, &mut reported);
            }
            if pid == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if pid <= 0 {
                libc::_exit(0);
            }
        }
    }
}

/// Calls `f(pid, pgid)` for each child of `parent`, read from /proc with raw syscalls
/// and stack buffers. False when /proc cannot be read.
#[cfg(target_os = "linux")]
fn for_each_child(parent: libc::pid_t, mut f: impl FnMut(libc::pid_t, libc::pid_t)) -> bool {
    // SAFETY (whole function): syscalls into live stack buffers, within their bounds.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return false;
        }
        // u64s: linux_dirent64 records are 8-byte aligned.
        let mut buf = [0u64; 1024];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            );
            if n <= 0 {
                break;
            }
            let bytes = std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize);
            let mut at = 0;
            // struct linux_dirent64 { u64 ino; i64 off; u16 reclen; u8 type; char name[]; }
            while let Some(record) = bytes.get(at..) {
                let Some(&[lo, hi]) = record.get(16..18) else {
                    break;
                };
                let len = u16::from_ne_bytes([lo, hi]) as usize;
                let Some(name) = record.get(19..len) else {
                    break;
                };
                let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
                if let Some(pid) = parse_pid(name)
                    && let Some((ppid, pgid)) = read_stat(dir, name)
                    && ppid == parent
                {
                    f(pid, pgid);
                }
                at += len;
            }
        }
        libc::close(dir);
        true
    }
}

/// `(ppid, pgid)` from `/proc/NAME/stat`, opened relative to the /proc descriptor.
#[cfg(target_os = "linux")]
fn read_stat(proc_dir: libc::c_int, name: &[u8]) -> Option<(libc::pid_t, libc::pid_t)> {
    let mut path = [0u8; 32];
    let suffix = b"/stat\0";
    path.get_mut(..name.len())?.copy_from_slice(name);
    path.get_mut(name.len()..name.len() + suffix.len())?
        .copy_from_slice(suffix);
    let mut stat = [0u8; 512];
    // SAFETY: a NUL-terminated path and a read into a live stack buffer.
    let n = unsafe {
        let fd = libc::openat(
            proc_dir,
            path.as_ptr().cast(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        n
    };
    parse_stat(stat.get(..usize::try_from(n).ok()?)?)
}

/// A pid: decimal digits only (other /proc entries are not processes).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    if name.is_empty() || name.len() > 10 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = name.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    libc::pid_t::try_from(n).ok()
}

/// `(ppid, pgid)` from a /proc stat line: "pid (comm) state ppid pgrp …", where comm
/// may hold spaces and parentheses, so fields are counted from the last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_stat(stat: &[u8]) -> Option<(libc::pid_t, libc::pid_t)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat
        .get(close + 1..)?
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    let ppid = parse_pid(fields.next()?)?;
    let pgid = parse_pid(fields.next()?)?;
    Some((ppid, pgid))
}

#[cfg(target_os = "macos")]
#[path = "supervisor_macos.rs"]
mod macos;

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
