//! `--allow-domain`: commands in their own network namespace behind the agent's proxy.
//! Names are mapped to loopback servers by the test-only resolver (`AGENT_TEST_RESOLVE`),
//! so nothing here reaches the internet. Each test that needs user namespaces says so
//! and is skipped (with the reason on stderr) where the machine refuses them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::support::*;

/// Whether this machine lets an unprivileged process make user + network namespaces:
/// the tests that need them are skipped (saying so) where it does not.
fn userns_available() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["-Urn", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: `unshare -Urn true` fails here: no user namespaces for --allow-domain");
    }
    ok
}

fn have(tool: &str) -> bool {
    let ok = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: `{tool}` is not installed");
    }
    ok
}

/// A loopback HTTP server answering every request with 200 and `body` (or, with a
/// root, the file the path names, 404 if none); counts requests.
struct HttpServer {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl HttpServer {
    fn start(body: &'static str) -> HttpServer {
        HttpServer::on(TcpListener::bind("127.0.0.1:0").unwrap(), body, None)
    }

    fn files(root: &Path) -> HttpServer {
        HttpServer::on(
            TcpListener::bind("127.0.0.1:0").unwrap(),
            "",
            Some(root.to_path_buf()),
        )
    }

    fn on(l: TcpListener, body: &'static str, root: Option<std::path::PathBuf>) -> HttpServer {
        let port = l.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                h.fetch_add(1, Ordering::SeqCst);
                let root = root.clone();
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).into_owned();
                    let mut kind = "text/plain";
                    let (status, bytes) = match &root {
                        None => ("200 OK", body.as_bytes().to_vec()),
                        Some(root) => {
                            let path = head.split(' ').nth(1).unwrap_or("/");
                            let path = path.split('?').next().unwrap_or("/");
                            let mut file = root.join(path.trim_start_matches('/'));
                            if file.is_dir() {
                                file = file.join("index.html");
                            }
                            if file.extension().is_some_and(|e| e == "html") {
                                kind = "text/html";
                            }
                            match std::fs::read(&file) {
                                Ok(b) => ("200 OK", b),
                                Err(_) => ("404 Not Found", b"not found".to_vec()),
                            }
                        }
                    };
                    let _ = write!(
                        s,
                        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n",
                        bytes.len()
                    );
                    let _ = s.write_all(&bytes);
                });
            }
        });
        HttpServer { port, hits }
    }
}

/// One Bash call running `cmd`, then a final answer.
fn bash(cmd: &str) -> Vec<Reply> {
    vec![
        Reply::Sse(turn_tools(&[(
            "toolu_net",
            "Bash",
            json!({"command": cmd}),
        )])),
        Reply::Sse(turn_text("done")),
    ]
}

/// The text of the Bash call's result, as the model saw it.
fn bash_result(t: &Value) -> String {
    let msgs = t["messages"].as_array().expect("messages");
    for m in msgs {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" && b["tool_use_id"] == "toolu_net" {
                return match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
            }
        }
    }
    panic!("no result for the Bash call in {t}");
}

const RESOLVE: &str = "allowed.test=127.0.0.1;denied.test=127.0.0.1";

fn run_net(env: &TestEnv, extra: &[&str], vars: &[(&str, &str)]) -> RunOutput {
    let mut args = vec!["run", "--allow-bash", "--json"];
    args.extend_from_slice(extra);
    args.push("go");
    let mut all = vec![("AGENT_TEST_RESOLVE", RESOLVE)];
    all.extend_from_slice(vars);
    env.run_with_env(&args, &all)
}

#[test]
fn curl_reaches_an_allowed_name_and_a_denied_one_is_refused_and_recorded() {
    if !userns_available() || !have("curl") {
        return;
    }
    let server = HttpServer::start("hello from allowed");
    let p = server.port;
    let cmd = format!(
        "curl -sS http://allowed.test:{p}/; echo; \
         curl -s -o /dev/null -w 'denied:%{{http_code}}\\n' http://denied.test:{p}/; \
         curl -sS https://denied.test:{p}/ 2>&1 | head -1; echo \"proxy=$HTTPS_PROXY\""
    );
    let env = TestEnv::new(bash(&cmd));
    let allow = format!("allowed.test:{p}");
    let out = run_net(&env, &["--allow-domain", &allow], &[]);
    out.assert_code(0);
    let t = out.json();
    let text = bash_result(&t);
    assert!(text.contains("hello from allowed"), "{text}");
    assert!(text.contains("denied:403"), "{text}");
    assert!(
        text.contains(&format!(
            "agent: network: refused a connection to denied.test:{p}: denied.test is not in --allow-domain"
        )),
        "{text}"
    );
    assert!(text.contains("proxy=http://127.0.0.1:"), "{text}");
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        1,
        "only the allowed request got through"
    );
    assert_eq!(t["network"]["tier"], "namespace", "{}", t["network"]);
    assert_eq!(t["network"]["allow"], json!([allow]));
    let denials = t["network_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 2, "{denials:?}");
    for d in denials {
        assert_eq!(d["host"], "denied.test");
        assert_eq!(d["port"], p);
        assert!(
            d["command"]
                .as_str()
                .unwrap()
                .contains("curl -sS http://allowed.test"),
            "{d}"
        );
        assert_eq!(d["reason"], "denied.test is not in --allow-domain");
    }
}

#[test]
fn jsonl_streams_each_refusal_as_network_denied() {
    if !userns_available() || !have("curl") {
        return;
    }
    let env = TestEnv::new(bash("curl -s -o /dev/null http://denied.test/x; echo ok"));
    let out = env.run_with_env(
        &[
            "run",
            "--allow-bash",
            "--jsonl",
            "--allow-domain",
            "allowed.test",
            "go",
        ],
        &[("AGENT_TEST_RESOLVE", RESOLVE)],
    );
    out.assert_code(0);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let denied: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "network.denied")
        .collect();
    assert_eq!(denied.len(), 1, "{events:?}");
    assert_eq!(denied[0]["host"], "denied.test");
    assert_eq!(denied[0]["port"], 80);
    assert_eq!(denied[0]["reason"], "denied.test is not in --allow-domain");
}

#[test]
fn deny_domain_wins_ports_are_80_and_443_and_loopback_names_are_refused() {
    if !userns_available() || !have("curl") {
        return;
    }
    let server = HttpServer::start("literal ok");
    let p = server.port;
    // `localhost` is allowed by name but resolves (by the system's resolver) to
    // loopback: refused. 127.0.0.1:P is allowed literally: reached.
    let cmd = format!(
        "curl -s -o /dev/null -w 'a:%{{http_code}}\\n' http://a.allowed.test/; \
         curl -s -o /dev/null -w 'b:%{{http_code}}\\n' http://b.allowed.test/; \
         curl -s -o /dev/null -w 'port:%{{http_code}}\\n' http://a.allowed.test:{p}/; \
         curl -s -o /dev/null -w 'localhost:%{{http_code}}\\n' http://localhost:{p}/; \
         curl -sS http://127.0.0.1:{p}/; echo"
    );
    let env = TestEnv::new(bash(&cmd));
    let out = run_net(
        &env,
        &[
            "--allow-domain",
            &format!("*.allowed.test,localhost:{p}"),
            "--allow-domain",
            &format!("127.0.0.1:{p}"),
            "--deny-domain",
            "b.allowed.test",
        ],
        &[(
            "AGENT_TEST_RESOLVE",
            "a.allowed.test=127.0.0.1;b.allowed.test=127.0.0.1",
        )],
    );
    out.assert_code(0);
    let t = out.json();
    let text = bash_result(&t);
    // a.allowed.test:80 is allowed and dialed: nothing listens there, so 502.
    assert!(text.contains("a:502"), "{text}");
    assert!(text.contains("b:403"), "{text}");
    assert!(text.contains("port:403"), "{text}");
    assert!(text.contains("localhost:403"), "{text}");
    assert!(text.contains("literal ok"), "{text}");
    let reasons: Vec<&str> = t["network_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert_eq!(reasons[0], "denied by --deny-domain b.allowed.test");
    assert!(
        reasons[1].starts_with(&format!("port {p} is not allowed for a.allowed.test")),
        "{reasons:?}"
    );
    assert!(
        reasons[2].contains("resolves to 127.0.0.1 (a loopback address)"),
        "{reasons:?}"
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
}

/// Some non-loopback address of this machine, if it has one.
fn host_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn the_port_bypass_is_closed_a_host_listener_on_the_bridge_port_is_unreachable() {
    if !userns_available() {
        return;
    }
    // The host listens on every address, on the very port the inside bridge uses.
    let host = TcpListener::bind("0.0.0.0:0").unwrap();
    let q = host.local_addr().unwrap().port();
    let other = host_address()
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "127.0.0.2".into());
    let cmd = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{q} && printf 'HELLO\\r\\n\\r\\n' >&3 && head -c 12 <&3; echo; \
         (exec 4<>/dev/tcp/{other}/{q}) 2>&1 || echo other-failed"
    );
    let env = TestEnv::new(bash(&cmd));
    let out = run_net(
        &env,
        &["--allow-domain", "allowed.test"],
        &[("AGENT_TEST_PROXY_PORT", &q.to_string())],
    );
    out.assert_code(0);
    let text = bash_result(&out.json());
    // 127.0.0.1:Q inside is the agent's proxy (it answers a non-request with 400)...
    assert!(text.contains("HTTP/1.1 400"), "{text}");
    assert!(text.contains("other-failed"), "{text}");
    // ...and the host's listener on Q got nothing. A loopback connect that completed
    // would be in its queue already: the command has ended.
    host.set_nonblocking(true).unwrap();
    match host.accept() {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
        Ok((_, from)) => panic!("the host listener on the bridge's port was reached from {from}"),
    }
}

#[test]
fn no_way_out_but_the_proxy_raw_tcp_udp_and_other_socket_families_fail() {
    if !userns_available() || !have("python3") {
        return;
    }
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let u = udp.local_addr().unwrap().port();
    let script = format!(
        r#"(exec 3<>/dev/tcp/192.0.2.1/80) 2>&1 || echo tcp-failed
echo query > /dev/udp/127.0.0.1/{u}
(echo query > /dev/udp/8.8.8.8/53) 2>&1 || echo udp-resolver-failed
getent hosts example.com || echo dns-failed
unshare -Ur true 2>&1 || echo unshare-failed
python3 - <<'PY'
import socket, errno
for name, fam, typ in [("unix", socket.AF_UNIX, socket.SOCK_STREAM),
                       ("netlink", socket.AF_NETLINK, socket.SOCK_RAW),
                       ("packet", socket.AF_PACKET, socket.SOCK_RAW),
                       ("vsock", 40, socket.SOCK_STREAM)]:
    try:
        socket.socket(fam, typ)
        print(name, "opened")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno))
a, b = socket.socketpair()
a.send(b"x")
print("socketpair", b.recv(1))
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# x86_64 numbers: ptrace(PTRACE_TRACEME), process_vm_readv, io_uring_setup.
for name, nr, args in [("ptrace", 101, (0, 0, 0, 0)), ("process_vm_readv", 310, (os.getpid(), 0, 0, 0, 0, 0)),
                       ("io_uring_setup", 425, (1, 0))]:
    r = libc.syscall(nr, *args)
    print(name, "allowed" if r >= 0 else errno.errorcode.get(ctypes.get_errno()))
PY"#
    );
    let confined = {
        let env = TestEnv::new(bash(&script));
        let out = run_net(&env, &["--allow-domain", "allowed.test"], &[]);
        out.assert_code(0);
        bash_result(&out.json())
    };
    udp.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    assert!(
        udp.recv(&mut buf).is_err(),
        "a UDP datagram got out:\n{confined}"
    );
    for expected in [
        "tcp-failed",
        "udp-resolver-failed",
        "dns-failed",
        "unshare-failed",
        "unix EPERM",
        "netlink EPERM",
        "packet EPERM",
        "vsock EPERM",
        "socketpair b'x'",
    ] {
        assert!(
            confined.contains(expected),
            "no `{expected}` in:\n{confined}"
        );
    }
    #[cfg(target_arch = "x86_64")]
    for expected in [
        "ptrace EPERM",
        "process_vm_readv EPERM",
        "io_uring_setup EPERM",
    ] {
        assert!(
            confined.contains(expected),
            "no `{expected}` in:\n{confined}"
        );
    }
    // The same script unconfined: the checks can fail.
    let env = TestEnv::new(bash(&script));
    let out = env.run(&["run", "--allow-bash", "--json", "go"]);
    let free = bash_result(&out.json());
    assert!(free.contains("unix opened"), "{free}");
    #[cfg(target_arch = "x86_64")]
    assert!(free.contains("ptrace allowed"), "{free}");
    assert!(
        udp.recv(&mut buf).is_ok(),
        "the unconfined datagram did not arrive:\n{free}"
    );
}

/// A "remote host": a second network namespace joined to this one by a veth pair, with
/// an HTTP server on its side. Needs root and iproute2; removed on drop.
struct RemoteHost {
    ns: String,
    ip: String,
    port: u16,
}

impl RemoteHost {
    fn start() -> Option<RemoteHost> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !have("ip") {
            eprintln!("SKIPPED: a veth \"remote host\" needs root and iproute2 (`ip`)");
            return None;
        }
        let id = std::process::id() % 10_000;
        let ns = format!("agt{id}");
        let (a, b) = (format!("agta{id}"), format!("agtb{id}"));
        let net = format!("10.{}.{}", 100 + (id / 250) % 100, id % 250);
        let ip = format!("{net}.2");
        let sh = |c: &str| {
            let st = std::process::Command::new("sh")
                .args(["-c", c])
                .status()
                .unwrap();
            assert!(st.success(), "{c}");
        };
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &ns])
            .status();
        sh(&format!(
            "ip netns add {ns} && ip link add {a} type veth peer name {b} && \
             ip link set {b} netns {ns} && ip addr add {net}.1/24 dev {a} && ip link set {a} up && \
             ip -n {ns} addr add {ip}/24 dev {b} && ip -n {ns} link set {b} up && \
             ip -n {ns} link set lo up"
        ));
        // The server's socket is made in the remote namespace (by a thread that joined
        // it); the accepting can then happen anywhere.
        let nsfile = format!("/run/netns/{ns}");
        let bind_ip = ip.clone();
        let listener = std::thread::spawn(move || {
            let f = std::fs::File::open(&nsfile).unwrap();
            use std::os::fd::AsRawFd;
            // SAFETY: setns on a namespace fd we hold; this thread ends right after.
            assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
            TcpListener::bind(format!("{bind_ip}:0")).unwrap()
        })
        .join()
        .unwrap();
        let server = HttpServer::on(listener, "remote says hi", None);
        Some(RemoteHost {
            ns,
            ip,
            port: server.port,
        })
    }
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.ns])
            .status();
    }
}

#[test]
fn a_remote_host_is_unreachable_by_address_directly_and_through_the_proxy() {
    if !userns_available() || !have("curl") {
        return;
    }
    let Some(remote) = RemoteHost::start() else {
        return;
    };
    let (ip, p) = (remote.ip.clone(), remote.port);
    // The host reaches it: what stops the command is the confinement.
    let mut s = TcpStream::connect((ip.as_str(), p)).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.contains("remote says hi"), "{answer}");
    let cmd = format!(
        "(exec 3<>/dev/tcp/{ip}/{p}) 2>&1 || echo direct-failed; \
         curl -s -o /dev/null -w 'by-address:%{{http_code}}\\n' http://{ip}:{p}/; \
         curl -sS http://remote.test:{p}/; echo"
    );
    let env = TestEnv::new(bash(&cmd));
    let out = run_net(
        &env,
        &["--allow-domain", &format!("remote.test:{p}")],
        &[("AGENT_TEST_RESOLVE", &format!("remote.test={ip}"))],
    );
    out.assert_code(0);
    let t = out.json();
    let text = bash_result(&t);
    assert!(text.contains("direct-failed"), "{text}");
    assert!(text.contains("by-address:403"), "{text}");
    // The same host by an allowed name: the proxy dials it.
    assert!(text.contains("remote says hi"), "{text}");
    assert_eq!(t["network_denials"][0]["host"], ip);
    assert_eq!(
        t["network_denials"][0]["reason"],
        format!("{ip} is not in --allow-domain")
    );
}

/// Runs `c` with a seccomp filter that makes `unshare` and namespace-creating `clone`
/// fail with EPERM (what Docker's default profile does), so the agent meets a machine
/// that refuses user namespaces.
fn refuse_namespaces(c: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    const NEW_NS: u32 = (libc::CLONE_NEWUSER | libc::CLONE_NEWNET) as u32;
    let f = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    let eperm = 0x0005_0000 | libc::EPERM as u32;
    let prog = vec![
        f(0x20, 0, 0, 0), // ld nr
        f(0x15, libc::SYS_unshare as u32, 0, 1),
        f(0x06, eperm, 0, 0),
        f(0x15, libc::SYS_clone3 as u32, 0, 1),
        f(0x06, 0x0005_0000 | libc::ENOSYS as u32, 0, 0),
        f(0x15, libc::SYS_clone as u32, 0, 3),
        f(0x20, 0, 0, 16), // ld args[0]
        f(0x45, NEW_NS, 0, 1),
        f(0x06, eperm, 0, 0),
        f(0x06, 0x7fff_0000, 0, 0),
    ];
    // SAFETY: two prctls on a program the closure owns; nothing allocates.
    unsafe {
        c.pre_exec(move || {
            let fprog = libc::sock_fprog {
                len: prog.len() as u16,
                filter: prog.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, 2, &fprog as *const _) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn without_user_namespaces_allow_domain_is_exit_2_with_the_cause_and_the_fix() {
    let env = TestEnv::new(bash("echo should-not-run"));
    let mut c = env.command(&[
        "run",
        "--allow-bash",
        "--allow-domain",
        "allowed.test",
        "go",
    ]);
    refuse_namespaces(&mut c);
    let out = env.spawn_command(c).wait();
    out.assert_code(2);
    for needle in [
        "--allow-domain needs new user and network namespaces",
        "unshare returned EPERM: a seccomp filter refuses it",
        "sudo sysctl -w kernel.unprivileged_userns_clone=1",
        "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
        "AppArmor profile that grants `userns`",
        "does not fall back",
    ] {
        assert!(
            out.stderr.contains(needle),
            "no `{needle}` in:\n{}",
            out.stderr
        );
    }
    assert!(!out.stdout.contains("should-not-run"));
    // --no-network needs no namespace: it still works under the same harness, where
    // the kernel offers Landlock's network rules.
    let env = TestEnv::new(bash("echo landlock-ran"));
    let mut c = env.command(&["run", "--allow-bash", "--json", "--no-network", "go"]);
    refuse_namespaces(&mut c);
    let out = env.spawn_command(c).wait();
    if out.stderr.contains("--no-network needs Landlock ABI 4") {
        eprintln!("SKIPPED (second half): this kernel has no Landlock ABI 4");
        return;
    }
    out.assert_code(0);
    let t = out.json();
    assert!(bash_result(&t).contains("landlock-ran"));
    assert_eq!(t["network"]["tier"], "landlock");
}

#[test]
fn with_no_user_namespace_left_the_message_names_the_limit() {
    if !userns_available() {
        return;
    }
    // Inside a user namespace whose limit is 0, as a host with user.max_user_namespaces=0.
    let env = TestEnv::new(bash("echo should-not-run"));
    let inner = env.command(&[
        "run",
        "--allow-bash",
        "--allow-domain",
        "allowed.test",
        "go",
    ]);
    let mut c = std::process::Command::new("unshare");
    c.args([
        "-Ur",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"",
    ])
    .arg(inner.get_program())
    .args(inner.get_args())
    .env_clear()
    .envs(inner.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
    .current_dir(env.ws())
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let out = env.spawn_command(c).wait();
    out.assert_code(2);
    assert!(
        out.stderr.contains("user.max_user_namespaces = 0"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("sudo sysctl -w"), "{}", out.stderr);
}

/// `git` through the proxy: a bare repository served over plain ("dumb") HTTP.
#[test]
fn git_clone_and_pip_download_work_through_the_proxy_environment() {
    if !userns_available() || !have("git") {
        return;
    }
    let site = tempfile::tempdir().unwrap();
    let sh = |dir: &Path, c: &str| {
        let out = std::process::Command::new("sh")
            .args(["-c", c])
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{c}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    sh(
        site.path(),
        "git init -q src && cd src && echo 'cloned through the proxy' > README && git add README && \
         git commit -qm one && cd .. && git clone -q --bare src repo.git && \
         cd repo.git && git update-server-info",
    );
    let pip = have("pip3")
        && {
            // A one-file wheel and a PEP 503 index page for it.
            sh(
                site.path(),
                r#"mkdir -p simple/demo-pkg files && python3 - <<'PY'
import zipfile
name = "demo_pkg-1.0"
with zipfile.ZipFile(f"files/{name}-py3-none-any.whl", "w") as z:
    z.writestr("demo_pkg/__init__.py", "")
    z.writestr(f"{name}.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
    z.writestr(f"{name}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{name}.dist-info/RECORD", "")
open("simple/demo-pkg/index.html", "w").write(f'<a href="/files/{name}-py3-none-any.whl">{name}-py3-none-any.whl</a>')
PY"#,
            );
            true
        };
    let server = HttpServer::files(site.path());
    let p = server.port;
    let mut cmd = format!(
        "git clone -q http://pkgs.test:{p}/repo.git cloned 2>&1 && cat cloned/README; \
         git clone -q http://denied.test:{p}/repo.git nope 2>&1 | tail -1"
    );
    if pip {
        cmd.push_str(&format!(
            "; pip3 download -q --no-deps --no-cache-dir --disable-pip-version-check -d dl \
             --trusted-host pkgs.test --index-url http://pkgs.test:{p}/simple/ demo-pkg 2>&1 | tail -3; ls dl"
        ));
    }
    let env = TestEnv::new(bash(&cmd));
    let out = run_net(
        &env,
        &["--allow-domain", &format!("pkgs.test:{p}")],
        &[(
            "AGENT_TEST_RESOLVE",
            "pkgs.test=127.0.0.1;denied.test=127.0.0.1",
        )],
    );
    out.assert_code(0);
    let t = out.json();
    let text = bash_result(&t);
    assert!(text.contains("cloned through the proxy"), "{text}");
    assert!(
        text.contains("refused a connection to denied.test"),
        "{text}"
    );
    if pip {
        assert!(text.contains("demo_pkg-1.0-py3-none-any.whl"), "{text}");
    }
    assert_eq!(
        t["network_denials"][0]["host"], "denied.test",
        "{}",
        t["network_denials"]
    );
}

/// The same confinement for a user without privileges (here: `nobody`, when the tests
/// run as root; otherwise the whole suite already is such a user).
#[test]
fn an_unprivileged_user_gets_the_same_confinement() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: not root, so every other test here already runs unprivileged");
        return;
    }
    if !userns_available() || !have("curl") || !have("setpriv") {
        return;
    }
    let server = HttpServer::start("hello nobody");
    let p = server.port;
    let env = TestEnv::new(bash(&format!(
        "id -u; curl -sS http://allowed.test:{p}/; echo; \
         curl -s -o /dev/null -w 'denied:%{{http_code}}' http://denied.test:{p}/"
    )));
    let st = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(env.ws().parent().unwrap())
        .status()
        .unwrap();
    assert!(st.success());
    let allow = format!("allowed.test:{p}");
    let inner = env.command(&[
        "run",
        "--allow-bash",
        "--json",
        "--allow-domain",
        &allow,
        "go",
    ]);
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(inner.get_program())
        .args(inner.get_args())
        .env_clear()
        .envs(inner.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .env("AGENT_TEST_RESOLVE", RESOLVE)
        .current_dir(env.ws())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = env.spawn_command(c).wait();
    out.assert_code(0);
    let t = out.json();
    let text = bash_result(&t);
    assert!(text.contains("65534"), "{text}");
    assert!(text.contains("hello nobody"), "{text}");
    assert!(text.contains("denied:403"), "{text}");
    assert_eq!(t["network_denials"].as_array().unwrap().len(), 1);
}

/// `--sandbox` still applies inside the namespace: Landlock's write rules and the proxy
/// together.
#[test]
fn landlock_write_rules_apply_inside_the_namespace_too() {
    if !userns_available() || !have("curl") {
        return;
    }
    let outside = dir_outside_temp(&format!("egress-landlock-{}", std::process::id()));
    let server = HttpServer::start("still reachable");
    let p = server.port;
    let env = TestEnv::new(bash(&format!(
        "touch {}/x 2>/dev/null; echo outside=$?; touch inside; echo inside=$?; \
         curl -sS http://allowed.test:{p}/",
        outside.display()
    )));
    let out = run_net(
        &env,
        &[
            "--sandbox",
            "workspace-write",
            "--allow-domain",
            &format!("allowed.test:{p}"),
        ],
        &[],
    );
    if out.stderr.contains("needs Landlock ABI") {
        eprintln!("SKIPPED: no Landlock ABI 3 here");
        return;
    }
    out.assert_code(0);
    let text = bash_result(&out.json());
    let _ = std::fs::remove_dir_all(&outside);
    assert!(text.contains("outside=1"), "{text}");
    assert!(text.contains("inside=0"), "{text}");
    assert!(text.contains("still reachable"), "{text}");
}

/// Reads the memory of PID (as the user it runs as) with `proc_secrets`'s `scan_mem` and
/// prints `read=1|0 key=0|1 marker=0|1`: whether anything was read, and whether the key
/// (given reversed, so the reader's own memory and argv do not hold it) and the marker
/// are in that process's memory.
const MEM_SCAN_HEAD: &str = r#"
my ($pid, $rev, $marker) = @ARGV;
my $key = reverse $rev;
my ($k, $m) = (0, 0);
sub has { my ($d) = @_; $k = 1 if index($d, $key) >= 0; $m = 1 if index($d, $marker) >= 0; return $k }
"#;
const MEM_SCAN_TAIL: &str = r#"
my $r = scan_mem($pid) < 0 ? 0 : 1;
print "read=$r key=$k marker=$m\n";
"#;

/// Issue 46, item 1: for a user other than root, the process that writes a user
/// namespace's `uid_map`/`gid_map` must be dumpable, so any process of that user can read
/// its memory then. That process is now a fresh image of the binary with an empty
/// environment, never a copy of the agent: the agent runs as `nobody` with a key in its
/// environment, the helper is paused in its window (the debug-only
/// `AGENT_TEST_USERNS_PAUSE` handshake through two FIFOs, no sleeps), and a reader running
/// as `nobody` reads the helper's whole memory: readable (it finds the helper's marker
/// argument), and no key.
#[test]
fn the_namespace_setup_process_holds_no_key_while_it_is_dumpable() {
    use std::os::unix::fs::OpenOptionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: the agent is run as `nobody` (setpriv), which takes root");
        return;
    }
    if !userns_available() || !have("setpriv") || !have("perl") || !have("mkfifo") {
        return;
    }
    let key = format!("sk-ant-userns-{}-window", std::process::id());
    let sh = |program: &str, args: &[&std::ffi::OsStr]| {
        let st = std::process::Command::new(program)
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "{program} {args:?}");
    };
    let env = TestEnv::new(vec![Reply::Sse(turn_text("done"))]);
    let root = env.ws().parent().unwrap().to_path_buf();
    let pause = root.join("pause");
    std::fs::create_dir(&pause).unwrap();
    for f in ["ready", "go"] {
        sh("mkfifo", &[pause.join(f).as_os_str()]);
    }
    sh(
        "chown",
        &["-R".as_ref(), "65534:65534".as_ref(), root.as_os_str()],
    );
    let scan = format!(
        "{MEM_SCAN_HEAD}{}{MEM_SCAN_TAIL}",
        crate::proc_secrets::SCAN_MEM
    );
    std::fs::write(root.join("scan.pl"), scan).unwrap();
    let as_nobody = |program: &std::ffi::OsStr| {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(program);
        c
    };
    let inner = env.command(&[
        "run",
        "--allow-bash",
        "--allow-domain",
        "allowed.test",
        "go",
    ]);
    let mut c = as_nobody(inner.get_program());
    c.args(inner.get_args())
        .env_clear()
        .envs(inner.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .env("ANTHROPIC_API_KEY", &key)
        .env("AGENT_TEST_USERNS_PAUSE", &pause)
        .current_dir(env.ws())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let running = env.spawn_command(c);
    // If the agent ends without pausing, open `ready` for writing so the read below ends
    // (empty) instead of waiting for a writer that never comes.
    let ready = pause.join("ready");
    let waiter = std::thread::spawn(move || {
        let out = running.wait();
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&ready);
        out
    });
    let said = std::fs::read_to_string(pause.join("ready")).unwrap();
    let helper: u32 = match said.split_whitespace().next().map(str::parse) {
        Some(Ok(pid)) => pid,
        _ => {
            let out = waiter.join().unwrap();
            panic!("the helper never paused: {:?}", out.stderr);
        }
    };
    // The window: the helper exists, its user namespace too, its maps are not written.
    let scan = as_nobody("perl".as_ref())
        .arg(root.join("scan.pl"))
        .arg(helper.to_string())
        .arg(key.chars().rev().collect::<String>())
        .arg("__agent-userns-helper")
        .output()
        .unwrap();
    let comm = std::fs::read_to_string(format!("/proc/{helper}/comm")).unwrap_or_default();
    // Let it go on, then judge.
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .open(pause.join("go"))
            .unwrap(),
    );
    let out = waiter.join().unwrap();
    out.assert_code(0);
    let report = String::from_utf8_lossy(&scan.stdout).to_string();
    assert!(
        scan.status.success(),
        "{report} {}",
        String::from_utf8_lossy(&scan.stderr)
    );
    assert!(comm.trim() == "agent" || comm.trim() == "exe", "{comm}");
    assert!(
        report.contains("marker=1"),
        "the read found nothing: {report}"
    );
    assert!(
        report.contains("key=0"),
        "the key is in the helper's memory: {report}"
    );
}
