//! The sandbox outside Linux: none. Landlock is Linux's; a Seatbelt profile through
//! `/usr/bin/sandbox-exec` is not implemented, so any sandbox flag (`--sandbox
//! workspace-write|read-only`, `--no-network`) is a usage error that names the platform,
//! never a silent run without confinement.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::{SandboxSpec, mode_name};
use crate::config::cli::SandboxMode;
use crate::process::egress::Egress;
use crate::process::{CommandSpec, PreExec};

/// The usage error for `spec` on this platform.
pub(super) fn unsupported(spec: &SandboxSpec) -> String {
    let flag = if spec.egress.is_some() {
        "--allow-domain".to_string()
    } else if spec.mode == SandboxMode::Off {
        "--no-network".to_string()
    } else {
        format!("--sandbox {}", mode_name(spec.mode))
    };
    format!(
        "{flag} is not available on {}: the command sandbox is Linux's Landlock, and this \
         build has no other; run without the sandbox flags to accept unconfined commands, \
         or run on Linux",
        std::env::consts::OS
    )
}

/// Never built here (`build` refuses every sandbox); the type keeps the callers the same.
pub(crate) struct Confinement {
    never: std::convert::Infallible,
}

impl fmt::Debug for Confinement {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.never {}
    }
}

impl Confinement {
    /// `None` when the sandbox is off; the platform's usage error otherwise.
    pub(crate) fn build(
        spec: &SandboxSpec,
        _workspace: &Path,
    ) -> Result<Option<Arc<Confinement>>, String> {
        if spec.is_off() {
            Ok(None)
        } else {
            Err(unsupported(spec))
        }
    }

    pub(crate) fn summary(&self) -> &str {
        match self.never {}
    }

    pub(crate) fn confine(self: &Arc<Self>, _spec: &mut CommandSpec) {
        match self.never {}
    }

    pub(crate) fn pre_exec_own(self: &Arc<Self>) -> PreExec {
        match self.never {}
    }

    pub(crate) fn egress(&self) -> Option<&Egress> {
        match self.never {}
    }
}

#[cfg(test)]
#[path = "sandbox_macos_tests.rs"]
mod tests;
