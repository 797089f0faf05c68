//! Where the file tools get and put a file's text: the disk (`paths`), or the client of
//! the process that drives the run (`--client-files`: `agent acp`'s editor, whose unsaved
//! buffers are then what the model reads and edits). The path is resolved and confined by
//! `paths` first either way, and a file the client serves must be a regular file on disk
//! where the disk rules say so: the client only replaces the bytes. Grep, Glob and Bash
//! read the disk.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::paths::{self, ChangeKind};
use super::{ToolContext, ToolError};

/// A client's file system: the text of a file, and a write of its whole text. `Err` is
/// the client's message (its JSON-RPC error, or no answer in time).
pub(crate) trait ClientFs: Send + Sync {
    fn read_text(&self, path: &Path) -> Result<String, String>;
    fn write_text(&self, path: &Path, content: &str) -> Result<(), String>;
}

/// The file tools' way to a file's text.
#[derive(Clone, Default)]
pub(crate) enum FileAccess {
    /// Every read and write on disk.
    #[default]
    Disk,
    /// Reads and/or writes through the client (what it offered); the rest on disk.
    Client {
        fs: Arc<dyn ClientFs>,
        read: bool,
        write: bool,
    },
}

impl fmt::Debug for FileAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileAccess::Disk => f.write_str("Disk"),
            FileAccess::Client { read, write, .. } => f
                .debug_struct("Client")
                .field("read", read)
                .field("write", write)
                .finish(),
        }
    }
}

impl FileAccess {
    /// The client, when it reads the text of `resolved`: a file under the workspace or an
    /// `--add-dir` directory (the run's own spilled results and the skills' files are
    /// read from disk: they are no editor's buffers).
    pub(crate) fn reader(&self, ctx: &ToolContext, resolved: &Path) -> Option<&dyn ClientFs> {
        match self {
            FileAccess::Client { fs, read: true, .. } if writable_root(ctx, resolved) => {
                Some(fs.as_ref())
            }
            _ => None,
        }
    }

    fn writer(&self) -> Option<&dyn ClientFs> {
        match self {
            FileAccess::Client {
                fs, write: true, ..
            } => Some(fs.as_ref()),
            _ => None,
        }
    }
}

fn writable_root(ctx: &ToolContext, resolved: &Path) -> bool {
    std::iter::once(&ctx.workspace)
        .chain(&ctx.extra_dirs)
        .any(|root| resolved.starts_with(root))
}

/// The client's text of `resolved` (already checked to be a regular file where the disk
/// rules allow it), or a tool error the model can act on.
pub(crate) fn client_read(
    fs: &dyn ClientFs,
    resolved: &Path,
    shown: &str,
) -> Result<String, ToolError> {
    fs.read_text(resolved).map_err(|m| {
        ToolError::failed(format!(
            "the editor (the ACP client) could not give the text of {shown}: {m}"
        ))
    })
}

/// The whole content of an existing regular file at `resolved` (from `resolve_for_write`
/// or `resolve_for_read`), at most `max` bytes (`too_big` otherwise): the client's text
/// when it reads, else the disk's bytes. Confinement and the file checks are the disk's
/// in both cases (`open_for_read`), so a path the disk rules refuse never reaches the
/// client.
pub(crate) fn read_whole(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
    max: u64,
    too_big: impl Fn() -> ToolError,
) -> Result<Vec<u8>, ToolError> {
    use std::io::Read;
    let (file, md) = paths::open_for_read(ctx, resolved, shown)?;
    if let Some(fs) = ctx.files.reader(ctx, resolved) {
        drop(file);
        let text = client_read(fs, resolved, shown)?;
        if text.len() as u64 > max {
            return Err(too_big());
        }
        return Ok(text.into_bytes());
    }
    if md.len() > max {
        return Err(too_big());
    }
    let mut content = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut content)
        .map_err(|e| ToolError::failed(format!("cannot read {shown}: {e}")))?;
    if content.len() as u64 > max {
        return Err(too_big());
    }
    Ok(content)
}

/// Writes `content` as the whole file at `resolved` (from `resolve_for_write`): to the
/// client when it writes (nothing touches the disk; what is on disk at the path must be a
/// regular file or nothing, as for a disk write), else atomically on disk.
pub(crate) fn write_whole(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
    content: &[u8],
) -> Result<ChangeKind, ToolError> {
    let Some(fs) = ctx.files.writer() else {
        return paths::write_atomic(ctx, resolved, shown, content);
    };
    let text = std::str::from_utf8(content).map_err(|_| {
        ToolError::failed(format!(
            "{shown}: the content is not UTF-8 text, and the editor (the ACP client) takes text"
        ))
    })?;
    let change = match paths::existing(ctx, resolved, shown)? {
        true => ChangeKind::Modified,
        false => ChangeKind::Created,
    };
    fs.write_text(resolved, text).map_err(|m| {
        ToolError::failed(format!(
            "the editor (the ACP client) did not write {shown}: {m} (nothing was written)"
        ))
    })?;
    Ok(change)
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
