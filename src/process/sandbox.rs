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
//! error: the sandbox is never silently weaker than asked. Outside Linux there is no
//! Landlock: any sandbox flag is a usage error naming the platform (`sandbox_macos.rs`).
//!
//! `--allow-domain` adds the namespace tier (`process::egress`): `confine` puts a model
//! command in its own namespaces behind the proxy; `--verify` (`pre_exec_own`) keeps
//! the host network, as hooks do: they are the user's own commands.
#![cfg_attr(not(target_os = "linux"), allow(unused_imports))]

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(target_os = "linux")]
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr,
};

use crate::config::cli::SandboxMode;
use crate::process::egress::{Egress, EgressSpec};
use crate::process::{CommandSpec, PreExec};

/// Test-only: pretend the kernel offers this Landlock ABI (0 = no Landlock), so that the
/// refusal on old kernels can be tested on a new one. Never needed in normal use.
pub(crate) const TEST_ABI_ENV: &str = "AGENT_TEST_LANDLOCK_ABI";
/// Filesystem confinement needs ABI 3 (Linux 6.2): before it, `truncate(2)` of a file
/// outside the allowed directories could not be denied.
#[cfg(target_os = "linux")]
const FS_ABI: ABI = ABI::V3;
const MIN_FS_ABI: i32 = 3;
/// TCP connect/bind rules arrived with ABI 4 (Linux 6.7).
#[cfg(target_os = "linux")]
const NET_ABI: ABI = ABI::V4;
const MIN_NET_ABI: i32 = 4;
/// Always writable, even read-only: `> /dev/null` must keep working.
#[cfg(target_os = "linux")]
const ALWAYS_WRITABLE_FILES: &[&str] = &["/dev/null"];

/// The sandbox the command line asked for (validated by `config`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SandboxSpec {
    pub mode: SandboxMode,
    /// Canonical extra writable directories (`--writable`).
    pub writable: Vec<PathBuf>,
    pub no_network: bool,
    /// `--allow-domain`: the namespace tier and its policy.
    pub egress: Option<EgressSpec>,
}

impl SandboxSpec {
    pub(crate) fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off && !self.no_network && self.egress.is_none()
    }

    /// Refuses a sandbox the kernel cannot enforce. `abi` is from [`kernel_abi`].
    pub(crate) fn check_kernel(&self, abi: i32) -> Result<(), String> {
        #[cfg(not(target_os = "linux"))]
        if !self.is_off() {
            return Err(other::unsupported(self));
        }
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
pub(crate) fn kernel_abi(test_override: Option<&str>) -> i32 {
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
#[cfg(target_os = "linux")]
pub(crate) struct Confinement {
    /// `None` with `--allow-domain` alone (no Landlock rules asked for).
    ruleset: Option<OwnedFd>,
    summary: String,
    egress: Option<Egress>,
}

#[cfg(target_os = "linux")]
impl fmt::Debug for Confinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}

#[cfg(target_os = "linux")]
impl Confinement {
    /// Builds the ruleset for `spec`; `None` when the sandbox is off. Err: a message for
    /// a usage error (a path that cannot be opened, the kernel refusing the ruleset).
    pub(crate) fn build(
        spec: &SandboxSpec,
        workspace: &Path,
    ) -> Result<Option<Arc<Confinement>>, String> {
        if spec.is_off() {
            return Ok(None);
        }
        let egress = spec.egress.as_ref().map(Egress::start).transpose()?;
        if spec.mode == SandboxMode::Off && !spec.no_network {
            let summary = egress.as_ref().map(Egress::summary).unwrap_or_default();
            return Ok(Some(Arc::new(Confinement {
                ruleset: None,
                summary,
                egress,
            })));
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
        let mut summary = format!(
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
        if let Some(e) = &egress {
            summary = format!("{summary}; {}", e.summary());
        }
        Ok(Some(Arc::new(Confinement {
            ruleset: Some(ruleset),
            summary,
            egress,
        })))
    }

    pub(crate) fn summary(&self) -> &str {
        &self.summary
    }

    /// Confines a command the model runs (Bash, background commands): the Landlock
    /// rules and, with `--allow-domain`, its namespaces and the proxy environment.
    pub(crate) fn confine(self: &Arc<Self>, spec: &mut CommandSpec) {
        let me = self.clone();
        match &self.egress {
            None => spec.pre_exec = Some(Arc::new(move || me.restrict_current_process())),
            Some(egress) => {
                spec.env = Arc::new(egress.proxy_env(&spec.env));
                let command: Arc<[u8]> = spec.command.as_bytes().into();
                spec.pre_exec = Some(Arc::new(move || {
                    let landlock = || me.restrict_current_process();
                    match &me.egress {
                        Some(e) => e.enter(&command, &landlock),
                        None => landlock(),
                    }
                }));
            }
        }
    }

    /// The hook for the user's own commands (`--verify`): the Landlock rules only, the
    /// host's network (no namespace, no proxy).
    pub(crate) fn pre_exec_own(self: &Arc<Self>) -> PreExec {
        let me = self.clone();
        Arc::new(move || me.restrict_current_process())
    }

    /// The namespace tier, when `--allow-domain` asked for it.
    pub(crate) fn egress(&self) -> Option<&Egress> {
        self.egress.as_ref()
    }

    /// Async-signal-safe: two syscalls, no allocation. The ruleset fd is close-on-exec,
    /// so the command never sees it.
    fn restrict_current_process(&self) -> io::Result<()> {
        let Some(ruleset) = &self.ruleset else {
            return Ok(());
        };
        // SAFETY: plain syscalls on integers and an fd we own.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
#[path = "sandbox_macos.rs"]
mod other;
#[cfg(not(target_os = "linux"))]
pub(crate) use other::Confinement;

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;
