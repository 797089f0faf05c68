//! Workspace confinement for the file tools (SPEC §6), and the only code that opens or
//! writes their files.
//!
//! Two layers. First, `resolve_for_read`/`resolve_for_write` resolve a model-given path
//! like `realpath` does (`..`, every symlink, a missing tail kept as-is) and refuse
//! anything that lands outside the canonical workspace (reads may also reach the run's
//! spill directory). Second, the checked path is never handed to a path-following
//! syscall again: `open_for_read` and `write_atomic` walk it from the trusted root one
//! directory at a time with `openat(O_DIRECTORY|O_NOFOLLOW)`, open the final component
//! with `O_NOFOLLOW`, and replace files by `renameat` of a temp file, so a symlink
//! swapped in after the check cannot redirect a read or a write. FIFOs, sockets and
//! devices are refused before any blocking open.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod at;
mod escape;
mod resolve;

pub(crate) use escape::shown;

use at::*;
pub(crate) use resolve::physical_path;
use resolve::*;

use super::{ToolContext, ToolError};

/// Symlinks followed while resolving one path; the same bound as Linux's ELOOP.
const MAX_SYMLINK_HOPS: usize = 40;
/// Mode of files WriteFile creates (SPEC §4): owner writes, everyone reads.
const NEW_FILE_MODE: u32 = 0o644;
/// Mode of the parent directories WriteFile creates (SPEC §4).
const NEW_DIR_MODE: u32 = 0o755;
/// Temp-file names tried before giving up; a clash needs a stale file of the same pid.
const MAX_TEMP_ATTEMPTS: u32 = 16;

/// Makes temp-file names unique between concurrent writes of this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How a tool changed a file, from the tool to the record's `files_changed` (codex-rs
/// `exec_events.rs`'s `PatchChangeKind`, under the transcript's names).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

/// A file a tool changed, and how (the transcript's `files_changed` entry).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct FileChange {
    pub(crate) path: String,
    pub(crate) change: ChangeKind,
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ChangeKind {
    /// The transcript's `change` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
        }
    }
}

/// The root `resolved` lies under: the workspace or an `--add-dir` directory.
fn root_of<'a>(ctx: &'a ToolContext, resolved: &Path) -> Option<&'a PathBuf> {
    std::iter::once(&ctx.workspace)
        .chain(&ctx.extra_dirs)
        .find(|root| resolved.starts_with(root))
}

/// The root `resolved` may be read under: a writable one, or a skill's directory.
fn read_root_of<'a>(ctx: &'a ToolContext, resolved: &Path) -> Option<&'a PathBuf> {
    root_of(ctx, resolved).or_else(|| ctx.read_only_dirs.iter().find(|d| resolved.starts_with(d)))
}

/// Resolves `path` (absolute, or relative to the workspace) to an existing path inside the
/// workspace, an `--add-dir` directory, a skill's directory or the run's spill directory,
/// with no symlink left in it.
pub(crate) fn resolve_for_read(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let r = resolve(ctx, path)?;
    let inside = read_root_of(ctx, &r.path).is_some()
        || spill_root(ctx).is_some_and(|s| r.path.starts_with(s));
    if !inside {
        return Err(outside_error(ctx, path, &r));
    }
    if !r.exists {
        return Err(at::not_found(path));
    }
    Ok(r.path)
}

/// Resolves `path` for Glob and Grep: like `resolve_for_read`, but not the spill
/// directory (ReadFile's exception, for reading one saved result).
pub(crate) fn resolve_for_search(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let r = resolve(ctx, path)?;
    if read_root_of(ctx, &r.path).is_none() {
        return Err(outside_error(ctx, path, &r));
    }
    if !r.exists {
        return Err(ToolError::failed(format!(
            "not found: {path} does not exist in the workspace. Use Glob to find the right path."
        )));
    }
    Ok(r.path)
}

/// Resolves `path` for writing: the result is inside the workspace and has no symlink in
/// its existing part; the file and some of its parents may not exist yet (they are
/// checked through their nearest existing ancestor).
pub(crate) fn resolve_for_write(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    // `dir/` names a directory; path resolution would drop the slash and write a file.
    if path.ends_with('/') || path.ends_with("/.") {
        return Err(ToolError::failed(format!(
            "{path} ends with a slash: it names a directory, not a file. Give the file's path."
        )));
    }
    let r = resolve(ctx, path)?;
    let Some(root) = root_of(ctx, &r.path) else {
        if let Some(skill) = ctx.read_only_dirs.iter().find(|d| r.path.starts_with(d)) {
            return Err(ToolError::failed(format!(
                "{path} is in the skill directory {}, which is read-only: a skill's files                  cannot be changed. Write in the workspace instead.",
                skill.display()
            )));
        }
        return Err(outside_error(ctx, path, &r));
    };
    if r.path == *root {
        return Err(ToolError::failed(format!(
            "{path} is the workspace root directory, not a file"
        )));
    }
    Ok(r.path)
}

/// How `resolved` is shown in metadata and messages: workspace-relative where possible.
pub(crate) fn display_path(ctx: &ToolContext, resolved: &Path) -> String {
    match resolved.strip_prefix(&ctx.workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => shown(rel).into_owned(),
        Err(_) => shown(resolved).into_owned(),
    }
}

/// Opens a resolved regular file for reading without following a symlink anywhere below
/// the trusted root. Refuses directories, FIFOs, sockets and devices (before opening
/// them, so nothing blocks). `shown` is the path as the model wrote it, for messages.
pub(crate) fn open_for_read(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
) -> Result<(File, Metadata), ToolError> {
    let (root, dirs, name) = split_under_root(ctx, resolved, shown, true)?;
    #[cfg(target_os = "linux")]
    if let Some(opened) = at::open_beneath(ctx, &root, &dirs, &name, shown) {
        return opened;
    }
    let dir = open_dir_chain(ctx, &root, &dirs, false, shown)?;
    match stat_at(&dir, &name).map_err(|e| io_error(&e, shown, "read"))? {
        None => return Err(not_found(shown)),
        Some(md) => check_regular(&md, shown)?,
    }
    // O_NONBLOCK: a FIFO swapped in after the check opens at once instead of blocking.
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let file = openat(&dir, &name, flags, 0).map_err(|e| io_error(&e, shown, "read"))?;
    let md = file.metadata().map_err(|e| io_error(&e, shown, "read"))?;
    check_regular(&md, shown)?;
    Ok((file, md))
}

/// Writes `content` to the resolved path atomically: a temp file created with `O_EXCL`
/// in the same directory is written, synced, given its mode (0644 when new, the old
/// mode otherwise) and renamed over the target. Missing parents are created (0755) one
/// at a time beneath the workspace. `rename` replaces a symlink swapped in at the
/// target instead of following it, so the write cannot land outside.
pub(crate) fn write_atomic(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
    content: &[u8],
) -> Result<ChangeKind, ToolError> {
    let (root, dirs, name) = split_under_root(ctx, resolved, shown, false)?;
    let dir = open_dir_chain(ctx, &root, &dirs, true, shown)?;
    let existing = stat_at(&dir, &name).map_err(|e| io_error(&e, shown, "write"))?;
    let (mode, change) = match existing {
        None => (NEW_FILE_MODE, ChangeKind::Created),
        Some(md) => {
            check_regular(&md, shown)?;
            (md.permissions().mode() & 0o7777, ChangeKind::Modified)
        }
    };
    let (tmp_name, mut tmp) = create_temp(&dir, shown)?;
    let written = (|| -> io::Result<()> {
        tmp.write_all(content)?;
        tmp.set_permissions(Permissions::from_mode(mode))?;
        tmp.sync_all()?;
        renameat(&dir, &tmp_name, &name)
    })();
    if let Err(e) = written {
        let _ = unlinkat(&dir, &tmp_name); // best effort: the error below is what matters
        return Err(io_error(&e, shown, "write"));
    }
    // Makes the rename durable; some filesystems refuse fsync on directories, harmlessly.
    let _ = dir.sync_all();
    Ok(change)
}

/// Whether a regular file is at the resolved path (false: nothing there, or a parent
/// directory missing), walked as `write_atomic` walks it; a directory, FIFO, socket or
/// device there, or a symlink on the way, is the error a write would give.
pub(crate) fn existing(ctx: &ToolContext, resolved: &Path, shown: &str) -> Result<bool, ToolError> {
    let (root, dirs, name) = split_under_root(ctx, resolved, shown, false)?;
    let dir = match open_dir_chain(ctx, &root, &dirs, false, shown) {
        Ok(d) => d,
        Err(ToolError::NotFound(_)) => return Ok(false),
        Err(e) => return Err(e),
    };
    match stat_at(&dir, &name).map_err(|e| io_error(&e, shown, "write"))? {
        None => Ok(false),
        Some(md) => check_regular(&md, shown).map(|()| true),
    }
}

/// Removes the resolved regular file without following a symlink anywhere below the
/// trusted root (`unlinkat` on the last component removes a symlink swapped in, never
/// its target). Refuses directories, FIFOs, sockets and devices.
pub(crate) fn remove_file(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
) -> Result<(), ToolError> {
    let (root, dirs, name) = split_under_root(ctx, resolved, shown, false)?;
    let dir = open_dir_chain(ctx, &root, &dirs, false, shown)?;
    match stat_at(&dir, &name).map_err(|e| io_error(&e, shown, "delete"))? {
        None => return Err(not_found(shown)),
        Some(md) => check_regular(&md, shown)?,
    }
    unlinkat(&dir, &name).map_err(|e| io_error(&e, shown, "delete"))?;
    let _ = dir.sync_all(); // durability of the removal; harmless where refused
    Ok(())
}

#[cfg(test)]
pub(crate) mod test_util;
#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
