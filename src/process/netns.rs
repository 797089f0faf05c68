//! The namespace tier of `--allow-domain`, child side: between fork and exec the command
//! enters new user, network, mount and PID namespaces, brings `lo` up, listens on the
//! proxy port inside and hands that listening socket (with its output pipe and a pipe
//! that closes when it ends) to the agent's broker over a `SOCK_SEQPACKET` socket, so
//! the agent serves the proxy on a socket that lives in the command's namespace: the
//! only way out of a namespace that holds nothing but `lo`.
//!
//! Processes: the one the supervisor started (the relay) unshares and stays outside the
//! new PID namespace, waiting; its child is that namespace's init (pid 1, it mounts a
//! fresh `/proc` where the kernel lets it), whose child execs the command. The init
//! reports the command's wait status to the relay, which ends the same way, so the
//! runner sees the command's own status. When the command ends, init exits and the
//! kernel kills whatever else is left in the namespace.
//!
//! The user namespace is not made here: `userns` makes it once, in a process that never
//! held a credential, and each relay joins it (`setns`), so no copy of the agent is ever
//! made dumpable for the `uid_map` writes.
//!
//! Everything here runs in a child forked from a multithreaded process: syscalls on
//! stack buffers only, no allocation (see `supervisor`). `probe` runs the same steps in
//! a throwaway child at start-up, so a refusal is found before the run, with its cause.

use std::io;
use std::os::fd::RawFd;

/// The steps of entering, for a refusal's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Step {
    Unshare = 1,
    IdMap = 2,
    Loopback = 3,
    Listen = 4,
    Handoff = 5,
    PidNamespace = 6,
    Join = 7,
}

impl Step {
    pub(super) fn from_u8(n: u8) -> Option<Step> {
        Some(match n {
            1 => Step::Unshare,
            2 => Step::IdMap,
            3 => Step::Loopback,
            4 => Step::Listen,
            5 => Step::Handoff,
            6 => Step::PidNamespace,
            7 => Step::Join,
            _ => return None,
        })
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            Step::Unshare => "unshare(CLONE_NEWUSER), or (CLONE_NEWNET | CLONE_NEWNS) inside it",
            Step::IdMap => "writing the new user namespace's uid_map/gid_map",
            Step::Join => "setns into the commands' user namespace",
            Step::Loopback => "bringing up `lo` in the new network namespace",
            Step::Listen => "listening on the proxy port inside",
            Step::Handoff => "handing the inside socket to the agent",
            Step::PidNamespace => "unshare(CLONE_NEWPID)",
        }
    }
}

/// A step that failed, and its errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SetupError {
    pub step: Step,
    pub errno: i32,
}

impl SetupError {
    pub(super) fn last(step: Step) -> SetupError {
        SetupError {
            step,
            errno: io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        }
    }
}

/// Bytes of the command line sent with the hand-off (the record's `command`).
pub(crate) const MAX_COMMAND_BYTES: usize = 4096;
/// Descriptors in a hand-off: the inside listener, the life pipe's read end, the output.
pub(crate) const HANDOFF_FDS: usize = 3;

/// Made by each command inside the shared user namespace (`userns`).
const NS_FLAGS: libc::c_int = libc::CLONE_NEWNET | libc::CLONE_NEWNS;

/// Enters the namespaces (see the file comment) and returns `Ok` in the process that is
/// to exec the command, after `confine` (Landlock, capabilities, seccomp) ran in it.
pub(crate) fn enter(
    userns: RawFd,
    broker: RawFd,
    port: u16,
    command: &[u8],
    confine: &dyn Fn() -> io::Result<()>,
) -> io::Result<()> {
    let as_io = |e: SetupError| io::Error::from_raw_os_error(e.errno);
    isolate(userns).map_err(as_io)?;
    let listener = listen_inside(port).map_err(as_io)?;
    // SAFETY (whole function): syscalls on integers and stack buffers.
    unsafe {
        let mut life = [0; 2];
        if libc::pipe2(life.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let cut = &command[..command.len().min(MAX_COMMAND_BYTES)];
        let sent = send_fds(broker, cut, &[listener, life[0], libc::STDERR_FILENO]);
        libc::close(listener);
        libc::close(life[0]);
        libc::close(broker);
        sent.map_err(as_io)?;
        let mut status = [0; 2];
        if libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            return Err(io::Error::last_os_error());
        }
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                libc::close(status[0]);
                // The relay is outside this PID namespace, so getppid() says 0 here
                // whoever the parent is: no check after the prctl.
                die_with_parent(None)?;
                init(status[1], confine)
            }
            init_pid => {
                libc::close(status[1]);
                relay_status(init_pid, status[0])
            }
        }
    }
}

/// The PID namespace's init: starts the command (returning in it), then waits.
fn init(status: RawFd, confine: &dyn Fn() -> io::Result<()>) -> io::Result<()> {
    // SAFETY (whole function): syscalls on integers and stack buffers.
    unsafe {
        // A fresh /proc shows this namespace's processes only. Best effort: a container
        // that masks parts of /proc refuses the mount, and the old one stays.
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
        {
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            );
        }
        let me = libc::getpid();
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                libc::close(status);
                die_with_parent(Some(me))?;
                confine()
            }
            command => loop {
                let mut st = 0;
                let pid = libc::waitpid(-1, &mut st, 0);
                if pid == command {
                    write_all(status, &st.to_ne_bytes());
                    libc::_exit(0);
                }
                if pid < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    libc::_exit(0);
                }
            },
        }
    }
}

/// The relay: waits for init, then ends as the command did.
fn relay_status(init: libc::pid_t, status: RawFd) -> ! {
    // SAFETY (whole function): syscalls on integers and stack buffers.
    unsafe {
        loop {
            let mut st = 0;
            let pid = libc::waitpid(init, &mut st, 0);
            if pid == init
                || (pid < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted)
            {
                break;
            }
        }
        let mut raw = [0u8; 4];
        let mut got = 0;
        while got < raw.len() {
            let n = libc::read(status, raw[got..].as_mut_ptr().cast(), raw.len() - got);
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        let st = libc::c_int::from_ne_bytes(raw);
        if got == raw.len() && libc::WIFEXITED(st) {
            libc::_exit(libc::WEXITSTATUS(st));
        }
        let sig = if got == raw.len() && libc::WIFSIGNALED(st) {
            libc::WTERMSIG(st)
        } else {
            libc::SIGKILL
        };
        // Die by the same signal, without a second core file.
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

fn die_with_parent(parent: Option<libc::pid_t>) -> io::Result<()> {
    // SAFETY: plain syscalls.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        if parent.is_some_and(|p| libc::getppid() != p) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// The agent's user namespace (made by `userns`, its ids mapped to themselves) joined,
/// new network and mount namespaces in it, `lo` up. No map is written here, so this
/// process (a copy of the agent, the key in its memory) never becomes dumpable.
fn isolate(userns: RawFd) -> Result<(), SetupError> {
    // SAFETY (whole function): syscalls on integers.
    unsafe {
        if libc::setns(userns, libc::CLONE_NEWUSER) != 0 {
            return Err(SetupError::last(Step::Join));
        }
        if libc::unshare(NS_FLAGS) != 0 {
            return Err(SetupError::last(Step::Unshare));
        }
    }
    loopback_up().map_err(|_| SetupError::last(Step::Loopback))
}

/// `"ID ID 1\n"` into `buf`; its length.
pub(super) fn id_map(buf: &mut [u8; 40], id: u32) -> usize {
    let mut digits = [0u8; 10];
    let mut n = 0;
    let mut v = id;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut at = 0;
    for _ in 0..2 {
        for i in (0..n).rev() {
            buf[at] = digits[i];
            at += 1;
        }
        buf[at] = b' ';
        at += 1;
    }
    buf[at] = b'1';
    buf[at + 1] = b'\n';
    at + 2
}

pub(super) fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), ()> {
    // SAFETY: a NUL-terminated path and a write from a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let errno = io::Error::last_os_error();
        libc::close(fd);
        if n != bytes.len() as isize {
            // close may have clobbered errno: restore the write's.
            *libc::__errno_location() = errno.raw_os_error().unwrap_or(libc::EIO);
            return Err(());
        }
    }
    Ok(())
}

fn loopback_up() -> Result<(), ()> {
    // SAFETY: an ifreq on the stack, ioctls on a socket we own.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let ok = // `as _`: the request is c_int on musl, c_ulong on glibc.
        libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut req) == 0 && {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(s, libc::SIOCSIFFLAGS as _, &mut req) == 0
        };
        libc::close(s);
        if ok { Ok(()) } else { Err(()) }
    }
}

/// A TCP listener on 127.0.0.1:`port` in the current network namespace.
fn listen_inside(port: u16) -> Result<RawFd, SetupError> {
    // SAFETY: a sockaddr on the stack, syscalls on a socket we own.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(SetupError::last(Step::Listen));
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
        let ok = libc::bind(
            s,
            (&raw const addr).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) == 0
            && libc::listen(s, 128) == 0;
        if !ok {
            let e = SetupError::last(Step::Listen);
            libc::close(s);
            return Err(e);
        }
        Ok(s)
    }
}

/// One SEQPACKET message: `payload` and `fds` (SCM_RIGHTS).
fn send_fds(sock: RawFd, payload: &[u8], fds: &[RawFd; HANDOFF_FDS]) -> Result<(), SetupError> {
    // SAFETY: msghdr, iovec and the control buffer all live on this stack frame; the
    // CMSG_* helpers compute offsets within it.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: payload.len(),
        };
        // u64s: control data must be aligned for cmsghdr.
        let mut control = [0u64; 8];
        let space = libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || space > std::mem::size_of_val(&control) {
            return Err(SetupError {
                step: Step::Handoff,
                errno: libc::EINVAL,
            });
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(cmsg),
            std::mem::size_of_val(fds),
        );
        loop {
            if libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) >= 0 {
                return Ok(());
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(SetupError::last(Step::Handoff));
            }
        }
    }
}

pub(super) fn write_all(fd: RawFd, bytes: &[u8]) {
    // SAFETY: a write from a live buffer within its bounds.
    unsafe {
        let mut done = 0;
        while done < bytes.len() {
            let n = libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done);
            if n <= 0 {
                return;
            }
            done += n as usize;
        }
    }
}

/// Runs the steps up to the PID namespace in a throwaway child: whether this machine
/// lets the agent build the namespace tier, and if not, which step refused and why.
/// Called at start-up, in the agent (the child only makes syscalls).
pub(crate) fn probe(userns: RawFd, port: u16) -> Result<(), SetupError> {
    // SAFETY (whole function): fork, then syscalls only in the child.
    unsafe {
        let mut p = [0; 2];
        if libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(SetupError::last(Step::Unshare));
        }
        match libc::fork() {
            -1 => {
                let e = SetupError::last(Step::Unshare);
                libc::close(p[0]);
                libc::close(p[1]);
                Err(e)
            }
            0 => {
                libc::close(p[0]);
                let outcome = isolate(userns).and_then(|()| {
                    let l = listen_inside(port)?;
                    libc::close(l);
                    if libc::unshare(libc::CLONE_NEWPID) != 0 {
                        return Err(SetupError::last(Step::PidNamespace));
                    }
                    match libc::fork() {
                        -1 => Err(SetupError::last(Step::PidNamespace)),
                        0 => libc::_exit(0),
                        child => {
                            let mut st = 0;
                            libc::waitpid(child, &mut st, 0);
                            Ok(())
                        }
                    }
                });
                let mut report = [0u8; 5];
                if let Err(e) = outcome {
                    report[0] = e.step as u8;
                    report[1..].copy_from_slice(&e.errno.to_ne_bytes());
                }
                write_all(p[1], &report);
                libc::_exit(0);
            }
            child => {
                libc::close(p[1]);
                let mut report = [0u8; 5];
                let n = libc::read(p[0], report.as_mut_ptr().cast(), report.len());
                libc::close(p[0]);
                let mut st = 0;
                while libc::waitpid(child, &mut st, 0) < 0
                    && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
                {
                }
                if n != report.len() as isize {
                    return Err(SetupError {
                        step: Step::Unshare,
                        errno: libc::ECHILD,
                    });
                }
                match Step::from_u8(report[0]) {
                    None => Ok(()),
                    Some(step) => {
                        let mut e = [0u8; 4];
                        e.copy_from_slice(&report[1..]);
                        Err(SetupError {
                            step,
                            errno: i32::from_ne_bytes(e),
                        })
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "netns_tests.rs"]
mod tests;

/// Empties the capability sets and the bounding set, so that the command, even when it
/// is uid 0 inside, holds no capability in its namespaces after exec. Async-signal-safe.
pub(crate) fn drop_capabilities() -> io::Result<()> {
    // SAFETY: prctl/capset on integers and stack structs.
    unsafe {
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return Err(io::Error::last_os_error());
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        // struct __user_cap_header_struct { u32 version (v3); int pid }, two data words.
        let header: [u32; 2] = [0x2008_0522, 0];
        let data = [0u32; 6];
        if libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
