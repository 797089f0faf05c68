//! Unit tests of `sandbox.rs`.

use super::*;

#[test]
fn kernel_check_refuses_what_it_cannot_enforce() {
    let ww = SandboxSpec {
        mode: SandboxMode::WorkspaceWrite,
        ..Default::default()
    };
    let e = ww.check_kernel(0).unwrap_err();
    assert!(
        e.contains("--sandbox workspace-write") && e.contains("no Landlock"),
        "{e}"
    );
    let e = ww.check_kernel(2).unwrap_err();
    assert!(e.contains("ABI 2"), "{e}");
    assert!(ww.check_kernel(3).is_ok());
    let net = SandboxSpec {
        no_network: true,
        ..Default::default()
    };
    let e = net.check_kernel(3).unwrap_err();
    assert!(e.contains("--no-network needs Landlock ABI 4"), "{e}");
    assert!(net.check_kernel(4).is_ok());
    assert!(SandboxSpec::default().check_kernel(0).is_ok());
}

#[test]
fn override_wins_over_the_probe() {
    assert_eq!(kernel_abi(Some("0")), 0);
    assert_eq!(kernel_abi(Some(" 2 ")), 2);
    assert!(kernel_abi(Some("junk")) >= 0);
}

/// Runs `cmd` under `spec` with the workspace `ws`; returns its output.
fn run_confined(spec: &SandboxSpec, ws: &Path, cmd: &str) -> String {
    let c = Confinement::build(spec, ws).unwrap().unwrap();
    let env = Arc::new(vec![("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    let mut s = crate::process::CommandSpec::new(
        cmd,
        ws,
        env,
        std::time::Duration::from_secs(20),
        ws.join(".spill"),
    );
    c.confine(&mut s);
    crate::process::run(&s).unwrap().output.text
}

/// Directories outside the temp dir (which workspace-write allows): under target/,
/// unless the checkout itself lies in the temp dir (CI may clone there), then
/// /var/tmp or $HOME.
fn outside_tmp() -> tempfile::TempDir {
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let candidates = [
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target")),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    for c in candidates.into_iter().flatten() {
        let base = c.join("confine-tests");
        if std::fs::create_dir_all(&base).is_ok()
            && let Ok(canon) = base.canonicalize()
            && !canon.starts_with(&temp)
        {
            return tempfile::tempdir_in(canon).unwrap();
        }
    }
    panic!("no writable directory outside {}", temp.display());
}

#[test]
fn workspace_write_confines_writes_but_not_reads() {
    if kernel_abi(None) < MIN_FS_ABI {
        eprintln!("skipped: this kernel lacks Landlock ABI {MIN_FS_ABI}");
        return;
    }
    let ws = outside_tmp();
    let other = outside_tmp();
    let ws_path = ws.path().canonicalize().unwrap();
    std::fs::write(other.path().join("readable"), "hello").unwrap();
    let spec = SandboxSpec {
        mode: SandboxMode::WorkspaceWrite,
        ..Default::default()
    };
    let tmp_file = std::env::temp_dir().join(format!("confine-test-{}", std::process::id()));
    let out = run_confined(
        &spec,
        &ws_path,
        &format!(
            "touch {o}/x; echo out=$?; touch inside; echo in=$?; touch {t}; echo tmp=$?; \
                 cat {o}/readable; echo; echo hi > /dev/null; echo null=$?",
            o = other.path().display(),
            t = tmp_file.display()
        ),
    );
    assert!(out.contains("out=1"), "{out}");
    assert!(out.contains("in=0") && out.contains("tmp=0"), "{out}");
    assert!(out.contains("hello") && out.contains("null=0"), "{out}");
    assert!(!other.path().join("x").exists());
    assert!(ws_path.join("inside").exists());
    let _ = std::fs::remove_file(tmp_file);
    // The agent itself stays unconfined.
    std::fs::write(other.path().join("agent-can"), "yes").unwrap();
}

#[test]
fn read_only_and_writable_dirs() {
    if kernel_abi(None) < MIN_FS_ABI {
        eprintln!("skipped: this kernel lacks Landlock ABI {MIN_FS_ABI}");
        return;
    }
    let ws = outside_tmp();
    let extra = outside_tmp();
    let ws_path = ws.path().canonicalize().unwrap();
    let ro = SandboxSpec {
        mode: SandboxMode::ReadOnly,
        ..Default::default()
    };
    let out = run_confined(
        &ro,
        &ws_path,
        "touch inside; echo in=$?; echo x > /dev/null; echo null=$?",
    );
    assert!(out.contains("in=1") && out.contains("null=0"), "{out}");
    let ww = SandboxSpec {
        mode: SandboxMode::WorkspaceWrite,
        writable: vec![extra.path().canonicalize().unwrap()],
        no_network: false,
        egress: None,
    };
    let out = run_confined(
        &ww,
        &ws_path,
        &format!("touch {}/y; echo extra=$?", extra.path().display()),
    );
    assert!(out.contains("extra=0"), "{out}");
}

#[test]
fn no_network_denies_tcp_connect_and_bind() {
    if kernel_abi(None) < MIN_NET_ABI {
        eprintln!("skipped: this kernel lacks Landlock ABI {MIN_NET_ABI}");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ws = outside_tmp();
    let ws_path = ws.path().canonicalize().unwrap();
    let cmd = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused"
    );
    let net = SandboxSpec {
        no_network: true,
        ..Default::default()
    };
    let out = run_confined(&net, &ws_path, &cmd);
    assert!(out.contains("refused"), "{out}");
    // Control: the same command without the sandbox connects, so the check can fail.
    let env = Arc::new(vec![("PATH".to_string(), "/usr/bin:/bin".to_string())]);
    let s = crate::process::CommandSpec::new(
        cmd,
        &ws_path,
        env,
        std::time::Duration::from_secs(20),
        ws_path.join(".spill"),
    );
    let out = crate::process::run(&s).unwrap().output.text;
    assert!(out.contains("connected"), "{out}");
    // Writes are not confined by --no-network alone.
    let out = run_confined(&net, &ws_path, "touch f; echo w=$?");
    assert!(out.contains("w=0"), "{out}");
}

#[test]
fn off_builds_nothing() {
    assert!(
        Confinement::build(&SandboxSpec::default(), Path::new("/"))
            .unwrap()
            .is_none()
    );
}
