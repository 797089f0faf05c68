//! The command supervisor on macOS, which has neither `PR_SET_PDEATHSIG` nor a subreaper:
//! the supervisor watches the agent's pid with kqueue (`EVFILT_PROC`/`NOTE_EXIT`) and, when
//! the agent dies or sends `SWEEP_NOW`, stops and kills the command's tree, found from the
//! kernel's process table (`proc_listpids` by parent; there is no /proc).
//!
//! Same protocol as on Linux (see `supervisor.rs`): the command's pid on the report pipe,
//! then its raw wait status and `LEAVING`. Without a subreaper a process the command left
//! behind is re-parented to launchd once its parent exits, so the supervisor has only the
//! command below it and leaves with it; what escaped the command's group (setsid, then
//! its parent exited) is out of reach here, as it is of any process on macOS. If the
//! supervisor itself is SIGKILLed, the command is not told (no parent-death signal).
//!
//! Runs in a child forked from a multithreaded process: syscalls and stack buffers only.

use std::io;
use std::os::fd::RawFd;

use super::{Hook, LEAVING, STATUS_BYTES, SWEEP_NOW, run_hook, write_bytes, write_int};

/// `proc_listpids` selector: the processes whose parent is the given pid (sys/proc_info.h).
const PROC_PPID_ONLY: u32 = 6;
/// After the status of a swept command: as on Linux, the runner does not reap this one.
const STAYING: u8 = 0;
/// Processes of one tree stopped and killed in one sweep: a stack buffer's worth.
const MAX_TREE: usize = 2048;

/// Like Linux's `supervised`: setsid, fork; the grandchild returns to exec the command,
/// the child supervises it and never returns.
pub(super) fn supervised(parent: libc::pid_t, report: RawFd, hook: Hook) -> io::Result<()> {
    // SAFETY (whole function): plain syscalls on integers and stack buffers.
    unsafe {
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // Blocked before the fork: kqueue's EVFILT_SIGNAL sees a blocked signal's arrival,
        // and no default action (SIGTERM's) takes the supervisor down.
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
                if libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) == -1
                    || libc::setsid() == -1
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

fn event(ident: usize, filter: i16, fflags: u32) -> libc::kevent {
    libc::kevent {
        ident,
        filter,
        flags: libc::EV_ADD | libc::EV_CLEAR,
        fflags,
        data: 0,
        udata: std::ptr::null_mut(),
    }
}

fn supervise(parent: libc::pid_t, command: libc::pid_t, report: RawFd) -> ! {
    // SAFETY (whole function): plain syscalls on integers and stack buffers.
    unsafe {
        for fd in 0..3 {
            libc::close(fd);
        }
        close_all_but(report);
        let kq = libc::kqueue();
        let changes = [
            event(parent as usize, libc::EVFILT_PROC, libc::NOTE_EXIT),
            event(libc::SIGCHLD as usize, libc::EVFILT_SIGNAL, 0),
            event(SWEEP_NOW as usize, libc::EVFILT_SIGNAL, 0),
        ];
        // ESRCH on the agent's pid: it is gone already.
        let watching = kq >= 0
            && libc::kevent(
                kq,
                changes.as_ptr(),
                changes.len() as libc::c_int,
                std::ptr::null_mut(),
                0,
                std::ptr::null(),
            ) == 0;
        loop {
            let mut status = 0;
            let pid = libc::waitpid(command, &mut status, libc::WNOHANG);
            if pid == command {
                report_status(report, status, LEAVING);
                libc::_exit(0);
            }
            if pid < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                libc::_exit(0);
            }
            if !watching || libc::getppid() != parent {
                sweep(command, report);
            }
            let mut got: libc::kevent = std::mem::zeroed();
            let n = libc::kevent(kq, std::ptr::null(), 0, &mut got, 1, std::ptr::null());
            if n == 1
                && ((got.filter == libc::EVFILT_PROC)
                    || (got.filter == libc::EVFILT_SIGNAL && got.ident == SWEEP_NOW as usize))
            {
                sweep(command, report);
            }
        }
    }
}

/// Closes every descriptor but `keep` (and 0-2, closed already), from the kernel's list
/// of this process's descriptors; a range when the list does not fit.
fn close_all_but(keep: RawFd) {
    let mut fds = [libc::proc_fdinfo {
        proc_fd: 0,
        proc_fdtype: 0,
    }; 1024];
    // SAFETY: the kernel fills a live stack buffer within its size.
    unsafe {
        let size = std::mem::size_of_val(&fds) as libc::c_int;
        let n = libc::proc_pidinfo(
            libc::getpid(),
            libc::PROC_PIDLISTFDS,
            0,
            fds.as_mut_ptr().cast(),
            size,
        );
        if n > 0 && n < size {
            let count = n as usize / std::mem::size_of::<libc::proc_fdinfo>();
            for info in fds.iter().take(count) {
                if info.proc_fd > 2 && info.proc_fd != keep {
                    libc::close(info.proc_fd);
                }
            }
            return;
        }
        let mut lim: libc::rlimit = std::mem::zeroed();
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 16) as libc::c_int
        } else {
            1024
        };
        for fd in 3..top {
            if fd != keep {
                libc::close(fd);
            }
        }
    }
}

/// Hands the command's wait status to the runner and closes the pipe. `LEAVING` when the
/// command ended by itself: with no subreaper, nothing is left below the supervisor then.
fn report_status(report: RawFd, status: libc::c_int, leaving: u8) {
    let mut bytes = [0u8; STATUS_BYTES];
    let (code, flag) = bytes.split_at_mut(STATUS_BYTES - 1);
    code.copy_from_slice(&status.to_ne_bytes());
    flag[0] = leaving;
    write_bytes(report, &bytes);
    // SAFETY: our own descriptor, closed once.
    unsafe { libc::close(report) };
}

/// Stops the command's tree top-down (a stopped process cannot fork, and its children
/// keep their parent, so the walk finds them), then kills it all and the command's group,
/// reaps the command and reports it.
fn sweep(command: libc::pid_t, report: RawFd) -> ! {
    let mut tree = [0 as libc::pid_t; MAX_TREE];
    tree[0] = command;
    let mut len = 1;
    let mut at = 0;
    // SAFETY (whole function): plain syscalls on integers and stack buffers.
    unsafe {
        libc::kill(-command, libc::SIGSTOP);
        while at < len {
            let pid = tree[at];
            at += 1;
            libc::kill(pid, libc::SIGSTOP);
            let mut children = [0 as libc::pid_t; 256];
            let bytes = libc::proc_listpids(
                PROC_PPID_ONLY,
                pid as u32,
                children.as_mut_ptr().cast(),
                std::mem::size_of_val(&children) as libc::c_int,
            );
            let count =
                (bytes.max(0) as usize / std::mem::size_of::<libc::pid_t>()).min(children.len());
            for &child in children.iter().take(count) {
                if child > 0 && len < MAX_TREE && !tree[..len].contains(&child) {
                    tree[len] = child;
                    len += 1;
                }
            }
        }
        for &pid in tree.iter().take(len) {
            libc::kill(pid, libc::SIGKILL);
        }
        libc::kill(-command, libc::SIGKILL);
        let mut status = 0;
        while libc::waitpid(command, &mut status, 0) == -1
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
        // The agent is gone or ending the run: whoever reaps this, not the runner.
        report_status(report, status, STAYING);
        libc::_exit(0);
    }
}
