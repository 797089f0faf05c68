//! The user namespace every `--allow-domain` command enters, made by a process that never
//! held a credential. Writing a new user namespace's `uid_map`/`gid_map` takes a
//! dumpable process for a user other than root (a non-dumpable process's `/proc` files
//! belong to root), and a dumpable process's memory is open to every process of its
//! user (`/proc/PID/mem`, `process_vm_readv`). The agent's memory holds the key, so the
//! maps are not written by a copy of it: at start-up `create` re-executes the binary
//! (`/proc/self/exe`) with an empty environment and one hidden argument (`HELPER_ARG`);
//! that fresh image reads no settings, no environment and no key, unshares a user
//! namespace, writes its maps and reports on its stdin (a socket). The agent opens the
//! helper's `/proc/PID/ns/user` and tells it to exit; each command's relay then joins
//! that namespace (`setns`, which needs no map write and no dumpable window) and makes
//! its own network, mount and PID namespaces inside it.
//!
//! In the library's unit tests the test binary cannot be re-executed as the helper, so
//! there `create` forks instead (the test process holds no key); the integration tests
//! run the real binary and so the re-exec.
//!
//! Test seam: in debug builds only, `AGENT_TEST_USERNS_PAUSE=DIR` makes the helper,
//! once its namespace exists and before the map writes, write its pid into the FIFO
//! `DIR/ready` and wait until `DIR/go` is opened and closed, so a test can read the
//! helper's memory during the window.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::netns::{SetupError, Step, id_map};

/// The hidden first argument that makes the binary the helper (`lib.rs` checks it
/// before anything else is read).
pub(crate) const HELPER_ARG: &str = "__agent-userns-helper";
/// Debug builds only: the directory of the test's `ready` and `go` FIFOs.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
pub(crate) const TEST_PAUSE_ENV: &str = "AGENT_TEST_USERNS_PAUSE";

/// The helper's report: the failed step (0: none), its errno, and the helper's pid.
const REPORT_BYTES: usize = 9;

/// A user namespace of the agent's own user (mapped to itself), for commands to join.
pub(crate) fn create() -> Result<OwnedFd, SetupError> {
    let (agent_end, helper_end) = socket_pair()?;
    let child = start(helper_end, agent_end.as_raw_fd())?;
    let mut report = [0u8; REPORT_BYTES];
    let got = read_full(agent_end.as_raw_fd(), &mut report);
    let outcome = if got != REPORT_BYTES {
        Err(SetupError {
            step: Step::Unshare,
            errno: libc::ECHILD,
        })
    } else if report[0] != 0 {
        Err(SetupError {
            step: Step::from_u8(report[0]).unwrap_or(Step::Unshare),
            errno: i32::from_ne_bytes([report[1], report[2], report[3], report[4]]),
        })
    } else {
        let pid = i32::from_ne_bytes([report[5], report[6], report[7], report[8]]);
        open_user_ns(pid)
    };
    drop(agent_end); // the helper reads EOF and exits
    child.reap();
    outcome
}

/// The helper's `/proc/PID/ns/user`, opened while it waits for EOF.
fn open_user_ns(pid: i32) -> Result<OwnedFd, SetupError> {
    let path = format!("/proc/{pid}/ns/user\0");
    // SAFETY: a NUL-terminated path; the fd returned is owned here.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(SetupError::last(Step::IdMap));
    }
    // SAFETY: just opened, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn socket_pair() -> Result<(OwnedFd, OwnedFd), SetupError> {
    let mut sv = [0; 2];
    // SAFETY: socketpair writes two fds into a live array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    } != 0
    {
        return Err(SetupError::last(Step::Unshare));
    }
    // SAFETY: both just created, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) })
}

/// The started helper, to be reaped.
enum Child {
    #[cfg(not(test))]
    Exec(std::process::Child),
    #[cfg(test)]
    Fork(libc::pid_t),
}

impl Child {
    fn reap(self) {
        match self {
            #[cfg(not(test))]
            Child::Exec(mut c) => {
                let _ = c.wait();
            }
            #[cfg(test)]
            Child::Fork(pid) => {
                let mut st = 0;
                // SAFETY: waitpid on our own child.
                while unsafe { libc::waitpid(pid, &mut st, 0) } < 0
                    && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
                {
                }
            }
        }
    }
}

/// The binary itself, re-executed with nothing of the agent's: no environment, no
/// arguments but the marker, the socket as its stdin.
#[cfg(not(test))]
fn start(helper_end: OwnedFd, _agent_end: RawFd) -> Result<Child, SetupError> {
    use std::process::{Command, Stdio};
    let mut c = Command::new("/proc/self/exe");
    c.arg(HELPER_ARG)
        .env_clear()
        .stdin(Stdio::from(helper_end))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(debug_assertions)]
    if let Some(dir) = std::env::var_os(TEST_PAUSE_ENV) {
        c.env(TEST_PAUSE_ENV, dir);
    }
    c.spawn().map(Child::Exec).map_err(|e| SetupError {
        step: Step::Unshare,
        errno: e.raw_os_error().unwrap_or(libc::ENOEXEC),
    })
}

/// Unit tests: a forked child serves (the test binary cannot become the helper).
#[cfg(test)]
fn start(helper_end: OwnedFd, agent_end: RawFd) -> Result<Child, SetupError> {
    // SAFETY: the child makes syscalls only (`serve`), then _exit.
    match unsafe { libc::fork() } {
        -1 => Err(SetupError::last(Step::Unshare)),
        0 => {
            // Its copy of the agent's end would keep the EOF it waits for from coming.
            // SAFETY: closing the child's copy of a descriptor.
            unsafe { libc::close(agent_end) };
            serve(helper_end.as_raw_fd(), None);
            // SAFETY: leaving the forked child without running the parent's destructors.
            unsafe { libc::_exit(0) }
        }
        pid => Ok(Child::Fork(pid)),
    }
}

/// The helper's whole life, when the binary was started with `HELPER_ARG`.
pub(crate) fn helper_main() -> ! {
    #[cfg(debug_assertions)]
    let pause = std::env::var_os(TEST_PAUSE_ENV).map(|d| {
        use std::os::unix::ffi::OsStrExt;
        let dir = d.as_bytes();
        let with = |name: &[u8]| {
            let mut p = dir.to_vec();
            p.push(b'/');
            p.extend_from_slice(name);
            std::ffi::CString::new(p).unwrap_or_default()
        };
        (with(b"ready"), with(b"go"))
    });
    #[cfg(not(debug_assertions))]
    let pause: Option<(std::ffi::CString, std::ffi::CString)> = None;
    serve(
        libc::STDIN_FILENO,
        pause.as_ref().map(|(r, g)| (r.as_c_str(), g.as_c_str())),
    );
    std::process::exit(0)
}

/// Unshares a user namespace, maps this user to itself in it, reports on `sock`, and
/// waits for EOF there (the agent has opened the namespace by then). Syscalls only.
fn serve(sock: RawFd, pause: Option<(&std::ffi::CStr, &std::ffi::CStr)>) {
    let mut report = [0u8; REPORT_BYTES];
    if let Err(e) = map_self(pause) {
        report[0] = e.step as u8;
        report[1..5].copy_from_slice(&e.errno.to_ne_bytes());
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    report[5..].copy_from_slice(&pid.to_ne_bytes());
    super::netns::write_all(sock, &report);
    let mut b = [0u8; 1];
    while read_full(sock, &mut b) == 1 {}
}

fn map_self(pause: Option<(&std::ffi::CStr, &std::ffi::CStr)>) -> Result<(), SetupError> {
    // SAFETY (whole function): syscalls on integers and stack buffers.
    unsafe {
        let (uid, gid) = (libc::getuid(), libc::getgid());
        // Holds nothing: dumpable, so its own /proc files are its user's to write.
        libc::prctl(libc::PR_SET_DUMPABLE, 1 as libc::c_ulong, 0, 0, 0);
        if libc::unshare(libc::CLONE_NEWUSER) != 0 {
            return Err(SetupError::last(Step::Unshare));
        }
        if let Some((ready, go)) = pause {
            test_pause(ready, go);
        }
        let mut buf = [0u8; 40];
        let map_err = |_| SetupError::last(Step::IdMap);
        super::netns::write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| {
                let n = id_map(&mut buf, uid);
                super::netns::write_file(c"/proc/self/uid_map", &buf[..n])
            })
            .and_then(|()| {
                let n = id_map(&mut buf, gid);
                super::netns::write_file(c"/proc/self/gid_map", &buf[..n])
            })
            .map_err(map_err)
    }
}

/// The test's window: the pid into `ready`, then wait for `go` to be written and closed.
fn test_pause(ready: &std::ffi::CStr, go: &std::ffi::CStr) {
    let mut digits = [0u8; 40];
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    let n = id_map(&mut digits, pid);
    // SAFETY: NUL-terminated paths, writes and reads on fds opened here.
    unsafe {
        let fd = libc::open(ready.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            // "PID PID 1\n": the test reads the first number.
            super::netns::write_all(fd, &digits[..n]);
            libc::close(fd);
        }
        let fd = libc::open(go.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            let mut b = [0u8; 64];
            while libc::read(fd, b.as_mut_ptr().cast(), b.len()) > 0 {}
            libc::close(fd);
        }
    }
}

/// Reads until `buf` is full or EOF/error; the bytes read.
fn read_full(fd: RawFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: a read into a live buffer within its bounds.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        } else {
            break;
        }
    }
    got
}
