//! The agent's end of the namespace tier: one `SOCK_SEQPACKET` socket pair for the run.
//! Each confined command's setup (`process::netns`) sends its inside listener, a pipe
//! that closes when the command ends and its output pipe, with its command line; the
//! broker thread starts a server for it that accepts on that listener (the connections
//! come from inside the command's network namespace) and serves each through the proxy.
//! When the command ends the server stops and drops the output pipe and the listener
//! (the namespace goes with its last reference).

use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use crate::net::policy::EgressPolicy;
use crate::net::proxy::{self, Resolver, Session};

/// Bytes of the command line a hand-off carries at most (`netns::MAX_COMMAND_BYTES`).
const MAX_PAYLOAD: usize = 4096;
const HANDOFF_FDS: usize = 3;

/// The socket pair; the child end is handed to each command's setup.
#[derive(Debug)]
pub(crate) struct Broker {
    child_end: OwnedFd,
}

impl Broker {
    /// Starts the broker thread.
    pub(crate) fn start(policy: Arc<EgressPolicy>, resolver: Arc<Resolver>) -> io::Result<Broker> {
        let mut fds = [0; 2];
        // SAFETY: socketpair into a stack array.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds were just created and are owned by nobody else.
        let (agent_end, child_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        std::thread::Builder::new()
            .name("net-broker".into())
            .spawn(move || broker_loop(&agent_end, &policy, &resolver))?;
        Ok(Broker { child_end })
    }

    /// The descriptor a command's setup sends on (close-on-exec: the command never has it).
    pub(crate) fn child_fd(&self) -> RawFd {
        self.child_end.as_raw_fd()
    }
}

fn broker_loop(sock: &OwnedFd, policy: &Arc<EgressPolicy>, resolver: &Arc<Resolver>) {
    loop {
        match receive(sock.as_raw_fd()) {
            Ok(Some((command, [listener, life, output]))) => {
                let session = Arc::new(Session {
                    policy: policy.clone(),
                    resolver: resolver.clone(),
                    command,
                    output: Mutex::new(Some(File::from(output))),
                });
                let listener = TcpListener::from(listener);
                let spawned = std::thread::Builder::new()
                    .name("net-proxy".into())
                    .spawn(move || serve_command(&session, &listener, &life));
                // Without its server the command's connections are never accepted: they
                // fail, which is what a refusal does too.
                drop(spawned);
            }
            Ok(None) => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A broken hand-off (or a broken socket): that command's proxy never starts,
            // so its connections fail; the next command's hand-off is a new message.
            Err(_) => {}
        }
    }
}

/// One hand-off: the command line and the three descriptors; `None` at end of file.
fn receive(sock: RawFd) -> io::Result<Option<(String, [OwnedFd; HANDOFF_FDS])>> {
    let mut payload = vec![0u8; MAX_PAYLOAD];
    let mut control = [0u64; 8];
    // SAFETY: msghdr, iovec and the buffers live in this frame; CMSG_* walk the control
    // buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: payload.as_mut_ptr().cast(),
            iov_len: payload.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        // `as _`: socklen_t on musl, size_t on glibc.
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 && msg.msg_controllen == 0 {
            return Ok(None);
        }
        let mut fds: Vec<OwnedFd> = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let command = String::from_utf8_lossy(&payload[..n as usize]).into_owned();
        let fds: [OwnedFd; HANDOFF_FDS] = fds.try_into().map_err(|_| {
            io::Error::other("a command's hand-off did not carry three descriptors")
        })?;
        Ok(Some((command, fds)))
    }
}

/// Accepts the command's connections until it ends (its life pipe closes).
fn serve_command(session: &Arc<Session>, listener: &TcpListener, life: &OwnedFd) {
    loop {
        let mut pfd = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: life.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds.
        let rc = unsafe { libc::poll(pfd.as_mut_ptr(), 2, -1) };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if pfd[1].revents != 0 {
            break;
        }
        if pfd[0].revents & libc::POLLIN != 0
            && let Ok((client, _)) = listener.accept()
        {
            let s = session.clone();
            let _ = std::thread::Builder::new()
                .name("net-conn".into())
                .spawn(move || proxy::serve(&s, client));
        }
    }
    // The command's output must reach end of file now that the command is over.
    if let Ok(mut out) = session.output.lock() {
        out.take();
    }
}
