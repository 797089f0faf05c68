//! `--allow-domain` for the runner: the namespace tier, chosen at start-up. `Egress::start`
//! probes that this machine lets the agent build the namespaces (if not: the cause and the
//! fix, never a weaker fallback), builds the seccomp filter and starts the broker; each
//! model command then enters its namespaces (`netns::enter`) and gets the proxy
//! environment (`proxy_env`). DNS: none inside. The namespace has only `lo`, so the
//! system's resolver is unreachable (UDP and TCP to it fail, and AF_UNIX sockets to a
//! local one are refused by seccomp); tools that honour the proxy variables send the
//! name to the proxy, which resolves it outside after the policy allowed it. A stub that
//! answered allowed names would only serve tools that ignore the proxy, and those could
//! not connect anyway.
// Outside Linux `Egress` is never built (`Confinement::build` refuses the flag).
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
#[cfg(target_os = "linux")]
use std::sync::Arc;

#[cfg(target_os = "linux")]
use crate::net::broker::Broker;
use crate::net::policy::EgressPolicy;
use crate::net::proxy::Resolver;
#[cfg(target_os = "linux")]
use crate::process::netns::{self, SetupError, Step};
#[cfg(target_os = "linux")]
use crate::process::seccomp::Filter;

/// Test-only: the proxy's resolver maps these names (`name=ip;…`), standing for public hosts.
pub(crate) const TEST_RESOLVE_ENV: &str = "AGENT_TEST_RESOLVE";
/// Test-only: the inside proxy port (a test puts a host listener on the same number).
pub(crate) const TEST_PORT_ENV: &str = "AGENT_TEST_PROXY_PORT";

/// What `--allow-domain` and friends asked for (validated by `config`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EgressSpec {
    pub policy: EgressPolicy,
    pub resolver: Resolver,
    /// The proxy's port inside each command's namespace (any port is free there).
    pub port: u16,
}

/// A random port for the inside listener: no host port is involved, so any will do.
pub(crate) fn pick_port() -> u16 {
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    20_000 + u16::from_ne_bytes(b) % 40_000
}

/// The running namespace tier.
#[derive(Debug)]
pub(crate) struct Egress {
    spec: EgressSpec,
    #[cfg(target_os = "linux")]
    broker: Broker,
    #[cfg(target_os = "linux")]
    filter: Filter,
    /// The user namespace every command joins, made by a process with no credential.
    #[cfg(target_os = "linux")]
    userns: std::os::fd::OwnedFd,
}

impl Egress {
    /// Other systems have no namespace tier: the flag is refused (exit 2).
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn start(spec: &EgressSpec) -> Result<Egress, String> {
        let _ = spec;
        Err("--allow-domain needs Linux (user and network namespaces)".into())
    }

    /// Probes, builds the filter and starts the broker. Err: the message for exit 2.
    #[cfg(target_os = "linux")]
    pub(crate) fn start(spec: &EgressSpec) -> Result<Egress, String> {
        let userns = crate::process::userns::create().map_err(refusal)?;
        netns::probe(userns.as_raw_fd(), spec.port).map_err(refusal)?;
        let filter = Filter::build()?;
        let broker = Broker::start(
            Arc::new(spec.policy.clone()),
            Arc::new(spec.resolver.clone()),
        )
        .map_err(|e| format!("--allow-domain: cannot start the proxy broker: {e}"))?;
        Ok(Egress {
            spec: spec.clone(),
            broker,
            filter,
            userns,
        })
    }

    /// In the child, between fork and exec: the namespaces, then `confine` (Landlock),
    /// no capabilities, the seccomp filter. Async-signal-safe.
    #[cfg(target_os = "linux")]
    pub(crate) fn enter(
        &self,
        command: &[u8],
        confine: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let last = || {
            confine()?;
            netns::drop_capabilities()?;
            self.filter.install()
        };
        netns::enter(
            self.userns.as_raw_fd(),
            self.broker.child_fd(),
            self.spec.port,
            command,
            &last,
        )
    }

    /// Never called: `start` refuses every other system.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn enter(
        &self,
        command: &[u8],
        confine: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let _ = (command, confine);
        Err(io::Error::from_raw_os_error(libc::ENOSYS))
    }

    /// `base` with every proxy variable pointing at the inside listener and `NO_PROXY`
    /// removed (nothing may bypass the proxy; the namespace has no other way out).
    pub(crate) fn proxy_env(&self, base: &[(String, String)]) -> Vec<(String, String)> {
        let url = format!("http://127.0.0.1:{}", self.spec.port);
        let set: &[&str] = &[
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "npm_config_proxy",
            "npm_config_https_proxy",
            "NPM_CONFIG_PROXY",
            "NPM_CONFIG_HTTPS_PROXY",
            "YARN_HTTP_PROXY",
            "YARN_HTTPS_PROXY",
            "PIP_PROXY",
            "CARGO_HTTP_PROXY",
        ];
        let cleared = [
            "NO_PROXY",
            "no_proxy",
            "npm_config_noproxy",
            "NPM_CONFIG_NOPROXY",
        ];
        let mut env: Vec<(String, String)> = base
            .iter()
            .filter(|(k, _)| !set.contains(&k.as_str()) && !cleared.contains(&k.as_str()))
            .cloned()
            .collect();
        env.extend(set.iter().map(|k| (k.to_string(), url.clone())));
        // git reads http_proxy too; its own setting also covers `git config
        // http.proxy` files that name another proxy. Only where no GIT_CONFIG_* is set.
        if !base.iter().any(|(k, _)| k == "GIT_CONFIG_COUNT") {
            env.extend([
                ("GIT_CONFIG_COUNT".to_string(), "1".to_string()),
                ("GIT_CONFIG_KEY_0".to_string(), "http.proxy".to_string()),
                ("GIT_CONFIG_VALUE_0".to_string(), url),
            ]);
        }
        env
    }

    /// For the log and the transcript.
    pub(crate) fn summary(&self) -> String {
        let list = |r: &[crate::net::policy::Rule]| {
            r.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!(
            "network: namespace tier (allow: {}",
            list(self.spec.policy.allowed())
        );
        if !self.spec.policy.denied().is_empty() {
            s.push_str(&format!("; deny: {}", list(self.spec.policy.denied())));
        }
        s.push_str(&format!(
            "), proxy at 127.0.0.1:{} inside each command's namespace",
            self.spec.port
        ));
        s
    }

    pub(crate) fn spec(&self) -> &EgressSpec {
        &self.spec
    }
}

/// A refused namespace as an exit-2 message: what failed, the likely cause, the fix.
#[cfg(target_os = "linux")]
pub(crate) fn refusal(e: SetupError) -> String {
    let err = io::Error::from_raw_os_error(e.errno);
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let cause = if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref()
        == Some("1")
    {
        "AppArmor restricts unprivileged user namespaces \
         (kernel.apparmor_restrict_unprivileged_userns = 1, as on GitHub's ubuntu-24.04 runners)"
            .to_string()
    } else if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)".into()
    } else if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0")
        || e.errno == libc::ENOSPC
    {
        "no user namespace may be created (user.max_user_namespaces = 0, or its limit is \
         reached; `sudo sysctl -w user.max_user_namespaces=10000` raises it)"
            .into()
    } else if e.step == Step::Unshare && e.errno == libc::EPERM {
        "unshare returned EPERM: a seccomp filter refuses it (Docker's default profile, or an \
         outer sandbox)"
            .into()
    } else {
        format!("{} failed", e.step.describe())
    };
    format!(
        "--allow-domain needs new user and network namespaces for the commands, and this \
         machine refuses them: {} failed ({err}); cause: {cause}. Fix: lift the restriction \
         before the agent runs, e.g. in a GitHub Actions step:\n  \
         sudo sysctl -w kernel.unprivileged_userns_clone=1\n  \
         sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0\n\
         or give the agent binary an AppArmor profile that grants `userns`; in a container, \
         allow unshare and clone of namespaces in its seccomp profile. The agent does not \
         fall back to unconfined commands or to a port rule; without --allow-domain, \
         --no-network needs no namespace.",
        e.step.describe()
    )
}
