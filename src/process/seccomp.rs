//! The seccomp filter of `--allow-domain` commands: what would let a command out of its
//! network namespace, or into the agent, fails with EPERM. No new namespaces (`unshare`,
//! `setns`, `clone` with a `CLONE_NEW*` flag; `clone3`, whose flags a filter cannot
//! read, says ENOSYS so libc falls back to `clone`); sockets only of AF_INET/AF_INET6
//! (the namespace holds only `lo`, so they reach only the proxy) and `socketpair` only
//! of AF_UNIX (tools use it between their own processes): no AF_UNIX sockets to the
//! host's daemons (a local resolver, D-Bus, Docker), no NETLINK, PACKET or VSOCK; no
//! `ptrace`, `process_vm_readv/writev` or io_uring (which makes sockets without
//! `socket(2)`). A syscall of another ABI (i386 via `int 0x80`, x32) kills the process:
//! the numbers above would not mean the same there.
//!
//! The program is built in the agent; the child only installs it (one prctl).

use std::io;

/// A BPF program: `sock_filter` instructions.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    prog: Vec<libc::sock_filter>,
}

const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
const BPF_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
#[cfg(target_arch = "x86_64")] // the x32 guard
const BPF_JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// `struct seccomp_data` offsets: nr, arch, then args[0] (its low half, little-endian).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
/// x32 syscalls are the x86_64 numbers with this bit set.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const NEW_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWUSER
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u32
    | 0x80; // CLONE_NEWTIME

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn errno(e: libc::c_int) -> u32 {
    RET_ERRNO | (e as u32 & 0xffff)
}

impl Filter {
    /// The filter for this architecture; Err where it has none (the flag is refused).
    pub(crate) fn build() -> Result<Filter, String> {
        if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            return Err("--allow-domain's seccomp filter supports x86_64 and aarch64 only".into());
        }
        Ok(Filter { prog: program() })
    }

    /// Installs the filter on the calling process (inherited by its children and kept
    /// across exec). Needs `no_new_privs`; sets it. Async-signal-safe.
    pub(crate) fn install(&self) -> io::Result<()> {
        let fprog = libc::sock_fprog {
            len: self.prog.len() as libc::c_ushort,
            filter: self.prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: prctl with a program that lives as long as this borrow.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &raw const fprog,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn program() -> Vec<libc::sock_filter> {
    let mut p = vec![
        stmt(BPF_LD_W_ABS, OFF_ARCH),
        jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET_K, RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    p.extend([
        jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(BPF_RET_K, RET_KILL_PROCESS),
    ]);
    let denied: &[(libc::c_long, u32)] = &[
        (libc::SYS_unshare, errno(libc::EPERM)),
        (libc::SYS_setns, errno(libc::EPERM)),
        (libc::SYS_ptrace, errno(libc::EPERM)),
        (libc::SYS_process_vm_readv, errno(libc::EPERM)),
        (libc::SYS_process_vm_writev, errno(libc::EPERM)),
        (libc::SYS_io_uring_setup, errno(libc::EPERM)),
        (libc::SYS_io_uring_enter, errno(libc::EPERM)),
        (libc::SYS_io_uring_register, errno(libc::EPERM)),
        (libc::SYS_clone3, errno(libc::ENOSYS)),
    ];
    for &(nr, action) in denied {
        p.push(jump(BPF_JEQ_K, nr as u32, 0, 1));
        p.push(stmt(BPF_RET_K, action));
    }
    // Each block below reloads the accumulator with an argument, so it ends in a return.
    p.extend([
        jump(BPF_JEQ_K, libc::SYS_clone as u32, 0, 4),
        stmt(BPF_LD_W_ABS, OFF_ARG0),
        jump(BPF_JSET_K, NEW_NAMESPACE_FLAGS, 0, 1),
        stmt(BPF_RET_K, errno(libc::EPERM)),
        stmt(BPF_RET_K, RET_ALLOW),
    ]);
    p.extend([
        jump(BPF_JEQ_K, libc::SYS_socket as u32, 0, 5),
        stmt(BPF_LD_W_ABS, OFF_ARG0),
        jump(BPF_JEQ_K, libc::AF_INET as u32, 2, 0),
        jump(BPF_JEQ_K, libc::AF_INET6 as u32, 1, 0),
        stmt(BPF_RET_K, errno(libc::EPERM)),
        stmt(BPF_RET_K, RET_ALLOW),
    ]);
    p.extend([
        jump(BPF_JEQ_K, libc::SYS_socketpair as u32, 0, 4),
        stmt(BPF_LD_W_ABS, OFF_ARG0),
        jump(BPF_JEQ_K, libc::AF_UNIX as u32, 1, 0),
        stmt(BPF_RET_K, errno(libc::EPERM)),
        stmt(BPF_RET_K, RET_ALLOW),
    ]);
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    p
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn program() -> Vec<libc::sock_filter> {
    Vec::new()
}
