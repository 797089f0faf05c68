//! Unit tests of `netns.rs`: the id map text, the probe, the command's own exit status
//! through the relay, its PID namespace, and (for contrast) why Landlock's port rule is
//! not enough.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::process::egress::EgressSpec;
use crate::process::sandbox::{Confinement, SandboxSpec};

fn userns() -> bool {
    let ok = crate::process::userns::create()
        .is_ok_and(|ns| probe(std::os::fd::AsRawFd::as_raw_fd(&ns), egress_port()).is_ok());
    if !ok {
        eprintln!("SKIPPED: this machine refuses user namespaces");
    }
    ok
}

fn egress_port() -> u16 {
    crate::process::egress::pick_port()
}

#[test]
fn id_maps_are_written_as_the_kernel_reads_them() {
    let mut buf = [0u8; 40];
    let n = id_map(&mut buf, 0);
    assert_eq!(&buf[..n], b"0 0 1\n");
    let n = id_map(&mut buf, 4_294_967_294);
    assert_eq!(&buf[..n], b"4294967294 4294967294 1\n");
}

/// Runs `cmd` confined by the namespace tier; its output.
fn run_in_namespace(ws: &std::path::Path, cmd: &str) -> crate::process::CommandOutput {
    let mut policy = crate::net::policy::EgressPolicy::default();
    policy
        .add(true, "t", &["allowed.test".to_string()])
        .unwrap();
    let spec = SandboxSpec {
        egress: Some(EgressSpec {
            policy,
            resolver: Default::default(),
            port: egress_port(),
        }),
        ..Default::default()
    };
    let c = Confinement::build(&spec, ws).unwrap().unwrap();
    let env = Arc::new(vec![("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    let mut s =
        crate::process::CommandSpec::new(cmd, ws, env, Duration::from_secs(30), ws.join(".spill"));
    c.confine(&mut s);
    crate::process::run(&s).unwrap()
}

#[test]
fn the_command_ends_as_it_ended_inside() {
    if !userns() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let out = run_in_namespace(ws.path(), "echo hi; exit 7");
    assert_eq!((out.exit_code, out.signal), (Some(7), None));
    assert_eq!(out.output.text, "hi\n");
    assert!(!out.pipe_left_open, "the proxy let go of the output pipe");
    let out = run_in_namespace(ws.path(), "kill -TERM $$");
    assert_eq!((out.exit_code, out.signal), (None, Some(libc::SIGTERM)));
}

#[test]
fn the_command_has_its_own_pid_namespace_and_only_lo() {
    if !userns() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let out = run_in_namespace(
        ws.path(),
        "echo pid=$$; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; id -u; sleep 100 & echo started",
    );
    let text = out.output.text;
    // bash is pid 2: the namespace's init (pid 1) started it.
    assert!(text.contains("pid=2\n"), "{text}");
    assert!(text.contains("\nlo\n"), "{text}");
    assert!(!text.contains("eth0"), "{text}");
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    assert!(
        text.contains(&format!("\n{uid}\n")),
        "the same uid inside: {text}"
    );
    assert_eq!(out.exit_code, Some(0));
}

/// What `--allow-domain` does not use, and why: a Landlock rule "connect only to port Q"
/// (all Landlock can say) lets a command reach *any* host's port Q, here a listener on
/// the host itself. The namespace tier's own test of the same listener is
/// `tests/integration/egress.rs` (`the_port_bypass_is_closed…`).
#[test]
fn landlocks_port_rule_leaves_the_bridge_port_open_to_any_host() {
    use landlock::{ABI, Access, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr};
    if crate::process::sandbox::kernel_abi(None) < 4 {
        eprintln!("SKIPPED: no Landlock ABI 4 (network rules) on this kernel");
        return;
    }
    let host = TcpListener::bind("127.0.0.1:0").unwrap();
    let q = host.local_addr().unwrap().port();
    let ruleset = Ruleset::default()
        .handle_access(AccessNet::from_all(ABI::V4))
        .unwrap()
        .create()
        .unwrap()
        .add_rule(NetPort::new(q, AccessNet::ConnectTcp))
        .unwrap();
    let fd: Option<std::os::fd::OwnedFd> = ruleset.into();
    let fd = Arc::new(fd.unwrap());
    let ws = tempfile::tempdir().unwrap();
    let env = Arc::new(vec![("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    let mut s = crate::process::CommandSpec::new(
        format!(
            "(exec 3<>/dev/tcp/127.0.0.1/{q}) && echo reached; (exec 3<>/dev/tcp/127.0.0.1/1) 2>&1 || echo other-port-refused"
        ),
        ws.path(),
        env,
        Duration::from_secs(30),
        ws.path().join(".spill"),
    );
    let f = fd.clone();
    s.pre_exec = Some(Arc::new(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: two syscalls on an fd we hold.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(libc::SYS_landlock_restrict_self, f.as_raw_fd(), 0u32) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }));
    let out = crate::process::run(&s).unwrap();
    assert!(out.output.text.contains("reached"), "{}", out.output.text);
    assert!(
        out.output.text.contains("other-port-refused"),
        "{}",
        out.output.text
    );
    host.set_nonblocking(true).unwrap();
    assert!(
        host.accept().is_ok(),
        "the host listener on port {q} was reached"
    );
}
