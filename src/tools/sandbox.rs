//! Workspace confinement for file tools (SPEC §6): every path is resolved and must stay
//! inside the canonical workspace root. (Minimal version: being hardened.)

use std::path::{Path, PathBuf};

use super::{ToolContext, ToolError};

/// Resolves `path` (absolute, or relative to the workspace) for reading. Paths inside the
/// run's spill directory are also allowed, so the model can read spilled results.
pub(crate) fn resolve_for_read(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let p = absolute(ctx, path);
    let canon = p
        .canonicalize()
        .map_err(|e| ToolError::failed(format!("cannot access {path}: {e}")))?;
    if canon.starts_with(&ctx.workspace) || canon.starts_with(&ctx.spill_dir) {
        Ok(canon)
    } else {
        Err(ToolError::failed(format!(
            "{path} is outside the workspace {}",
            ctx.workspace.display()
        )))
    }
}

/// Resolves `path` for writing (the file may not exist yet).
pub(crate) fn resolve_for_write(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let p = absolute(ctx, path);
    if p.starts_with(&ctx.workspace) {
        Ok(p)
    } else {
        Err(ToolError::failed(format!(
            "{path} is outside the workspace {}",
            ctx.workspace.display()
        )))
    }
}

fn absolute(ctx: &ToolContext, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        ctx.workspace.join(p)
    }
}
