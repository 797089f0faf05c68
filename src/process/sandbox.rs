//! The Bash sandbox (SPEC §6): Landlock confinement of the commands the Bash tool runs.
//! `--sandbox workspace-write` lets a command write only in the workspace, the temp
//! directory and each `--writable DIR`; `--sandbox read-only` allows no writes; both
//! leave reads alone. `--no-network` denies TCP connect and bind.
//!
//! The ruleset is built once, in the agent, with the `landlock` crate (path fds are opened
//! here, where allocating is fine). In the child, between fork and exec, only two raw
//! syscalls run (`prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self`), which are
//! async-signal-safe; the crate's own `restrict_self` consumes the ruleset and is not
//! documented as allocation-free, so it is not used there. The agent itself stays
//! unconfined. A kernel without the needed Landlock ABI makes an explicit flag a usage
//! error: the sandbox is never silently weaker than asked.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr,
};

use crate::config::cli::SandboxMode;
use crate::process::PreExec;

/// Test-only: pretend the kernel offers this Landlock ABI (0 = no Landlock), so that the
/// refusal on old kernels can be tested on a new one. Never needed in normal use.
pub const TEST_ABI_ENV: &str = "AGENT_TEST_LANDLOCK_ABI";
/// Filesystem confinement needs ABI 3 (Linux 6.2): before it, `truncate(2)` of a file
/// outside the allowed directories could not be denied.
const FS_ABI: ABI = ABI::V3;
const MIN_FS_ABI: i32 = 3;
/// TCP connect/bind rules arrived with ABI 4 (Linux 6.7).
const NET_ABI: ABI = ABI::V4;
const MIN_NET_ABI: i32 = 4;
/// Always writable, even read-only: `> /dev/null` must keep working.
const ALWAYS_WRITABLE_FILES: &[&str] = &["/dev/null"];

/// The sandbox the command line asked for (validated by `config`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSpec {
    pub mode: SandboxMode,
    /// Canonical extra writable directories (`--writable`).
    pub writable: Vec<PathBuf>,
    pub no_network: bool,
}

impl SandboxSpec {
    pub fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off && !self.no_network
    }

    /// Refuses a sandbox the kernel cannot enforce. `abi` is from [`kernel_abi`].
    pub fn check_kernel(&self, abi: i32) -> Result<(), String> {
        let have = if abi <= 0 {
            "this kernel has no Landlock support (not built in, or not enabled at boot: \
             add `landlock` to the `lsm=` kernel parameter)"
                .to_string()
        } else {
            format!("this kernel offers Landlock ABI {abi}")
        };
        if self.mode != SandboxMode::Off && abi < MIN_FS_ABI {
            return Err(format!(
                "--sandbox {} needs Landlock ABI {MIN_FS_ABI} or later (Linux 6.2+), but {have}; \
                 run without --sandbox (or with --sandbox off) to accept unconfined commands",
                mode_name(self.mode)
            ));
        }
        if self.no_network && abi < MIN_NET_ABI {
            return Err(format!(
                "--no-network needs Landlock ABI {MIN_NET_ABI} or later (Linux 6.7+), but {have}; \
                 run without --no-network to allow network access"
            ));
        }
        Ok(())
    }
}

fn mode_name(m: SandboxMode) -> &'static str {
    match m {
        SandboxMode::Off => "off",
        SandboxMode::WorkspaceWrite => "workspace-write",
        SandboxMode::ReadOnly => "read-only",
    }
}

/// The Landlock ABI of the running kernel (0: none), or the test override's value.
pub fn kernel_abi(test_override: Option<&str>) -> i32 {
    if let Some(v) = test_override
        && let Ok(n) = v.trim().parse::<i32>()
    {
        return n;
    }
    probe_abi()
}

#[cfg(target_os = "linux")]
fn probe_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this only asks for the ABI version.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(r).unwrap_or(0).max(0)
}

#[cfg(not(target_os = "linux"))]
fn probe_abi() -> i32 {
    0
}

/// A built ruleset, applied to each Bash child before exec.
pub struct Confinement {
    ruleset: OwnedFd,
    summary: String,
}

impl fmt::Debug for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}

impl Confinement {
    /// Builds the ruleset for `spec`; `None` when the sandbox is off. Err: a message for
    /// a usage error (a path that cannot be opened, the kernel refusing the ruleset).
    pub fn build(spec: &SandboxSpec, workspace: &Path) -> Result<Option<Arc<Confinement>>, String> {
        if spec.is_off() {
            return Ok(None);
        }
        let ll = |e: landlock::RulesetError| format!("cannot set up the Landlock sandbox: {e}");
        let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
        if spec.mode != SandboxMode::Off {
            ruleset = ruleset
                .handle_access(AccessFs::from_write(FS_ABI))
                .map_err(ll)?;
        }
        if spec.no_network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(NET_ABI))
                .map_err(ll)?;
        }
        let mut created = ruleset.create().map_err(ll)?;
        let mut writable: Vec<PathBuf> = Vec::new();
        if spec.mode == SandboxMode::WorkspaceWrite {
            writable.push(workspace.to_path_buf());
            let tmp = std::env::temp_dir();
            let tmp = tmp
                .canonicalize()
                .map_err(|e| format!("the temp directory {}: {e}", tmp.display()))?;
            writable.push(tmp);
            writable.extend(spec.writable.iter().cloned());
            for dir in &writable {
                let fd = PathFd::new(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                created = created
                    .add_rule(PathBeneath::new(fd, AccessFs::from_write(FS_ABI)))
                    .map_err(ll)?;
            }
        }
        if spec.mode != SandboxMode::Off {
            for file in ALWAYS_WRITABLE_FILES {
                // Skipped where it does not exist (a minimal container): nothing to allow.
                if let Ok(fd) = PathFd::new(file) {
                    let access = AccessFs::from_write(FS_ABI) & AccessFs::from_file(FS_ABI);
                    created = created.add_rule(PathBeneath::new(fd, access)).map_err(ll)?;
                }
            }
        }
        let fd: Option<OwnedFd> = created.into();
        let ruleset = fd.ok_or("cannot set up the Landlock sandbox: the kernel gave no ruleset")?;
        let summary = format!(
            "Landlock sandbox: {}{}{}",
            mode_name(spec.mode),
            if writable.is_empty() {
                String::new()
            } else {
                format!(
                    " (writable: {})",
                    writable
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            if spec.no_network { ", no network" } else { "" }
        );
        Ok(Some(Arc::new(Confinement { ruleset, summary })))
    }

    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// The hook that confines a child: run between fork and exec.
    pub(crate) fn pre_exec(self: &Arc<Self>) -> PreExec {
        let me = self.clone();
        Arc::new(move || me.restrict_current_process())
    }

    /// Async-signal-safe: two syscalls, no allocation. The ruleset fd is close-on-exec,
    /// so the command never sees it.
    fn restrict_current_process(&self) -> io::Result<()> {
        // SAFETY: plain syscalls on integers and an fd we own.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
        s.pre_exec = Some(c.pre_exec());
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
}
