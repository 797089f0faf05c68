//! Resolving a model-given path like `realpath` does (`..`, every symlink, a missing tail
//! kept as-is), and the error for one that lands outside the workspace.

use super::*;

/// A path after resolution: absolute, every existing component a real directory or file.
pub(super) struct Resolution {
    pub(super) path: PathBuf,
    pub(super) exists: bool,
    pub(super) via_symlink: bool,
}

/// One step of a path still to resolve.
pub(super) enum Piece {
    Root,
    Parent,
    Name(OsString),
}

pub(super) fn pieces(p: &Path) -> Vec<Piece> {
    p.components()
        .filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Piece::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Piece::Parent),
            Component::Normal(n) => Some(Piece::Name(n.to_os_string())),
        })
        .collect()
}

/// `realpath` that tolerates a missing tail: follows every symlink (a relative target
/// against the link's directory), applies `..` to the already resolved prefix (which has
/// no symlinks, so a lexical pop is the physical parent) and keeps missing names as-is.
pub(super) fn resolve(ctx: &ToolContext, path: &str) -> Result<Resolution, ToolError> {
    resolve_in(&ctx.workspace, path)
}

/// The path a file tool would open for `path`, symlinks followed (None when it cannot be
/// resolved). Permission rules match this, so that `link/../x` is judged as the file the
/// tool really reaches.
pub(crate) fn physical_path(workspace: &Path, path: &str) -> Option<PathBuf> {
    resolve_in(workspace, path).ok().map(|r| r.path)
}

pub(super) fn resolve_in(workspace: &Path, path: &str) -> Result<Resolution, ToolError> {
    if path.is_empty() {
        return Err(ToolError::failed(
            "path is empty: give a path relative to the workspace root, or an absolute path inside it",
        ));
    }
    if path.contains('\0') {
        return Err(ToolError::failed("path contains a NUL byte"));
    }
    let input = escape::decode(path, |literal| {
        let abs = if literal.is_absolute() {
            literal.to_path_buf()
        } else {
            workspace.join(literal)
        };
        std::fs::symlink_metadata(abs).is_ok()
    });
    let input: &Path = &input;
    let mut cur = if input.is_absolute() {
        PathBuf::from("/")
    } else {
        workspace.to_path_buf()
    };
    let mut pending: std::collections::VecDeque<Piece> = pieces(input).into();
    let (mut hops, mut via_symlink) = (0, false);
    // Whether `cur` is known to exist from the last lstat (None: not looked at).
    let mut known: Option<bool> = None;
    while let Some(piece) = pending.pop_front() {
        known = None;
        match piece {
            Piece::Root => cur = PathBuf::from("/"),
            Piece::Parent => {
                cur.pop();
            }
            Piece::Name(name) => {
                let candidate = cur.join(&name);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(md) if md.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(ToolError::failed(format!(
                                "{path}: too many levels of symbolic links"
                            )));
                        }
                        let target = std::fs::read_link(&candidate)
                            .map_err(|e| io_error(&e, path, "resolve"))?;
                        via_symlink = true;
                        for p in pieces(&target).into_iter().rev() {
                            pending.push_front(p);
                        }
                    }
                    Ok(_) => {
                        cur = candidate;
                        known = Some(true);
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        cur = candidate;
                        known = Some(false);
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                        return Err(ToolError::failed(format!(
                            "{path}: a parent component is a file, not a directory"
                        )));
                    }
                    Err(e) => return Err(io_error(&e, path, "resolve")),
                }
            }
        }
    }
    // The last name's lstat already said (one syscall less per file tool call).
    let exists = known.unwrap_or_else(|| std::fs::symlink_metadata(&cur).is_ok());
    // Asked only when the path is missing (one syscall less per call): a workspace that
    // was removed makes every path under it missing, and ends the run.
    if !exists && std::fs::symlink_metadata(workspace).is_err() {
        return Err(ToolError::Fatal(format!(
            "the workspace {} no longer exists",
            workspace.display()
        )));
    }
    Ok(Resolution {
        path: cur,
        exists,
        via_symlink,
    })
}

pub(super) fn outside_error(ctx: &ToolContext, path: &str, r: &Resolution) -> ToolError {
    let via = if r.via_symlink {
        format!(
            " (it goes through a symbolic link that resolves to {})",
            r.path.display()
        )
    } else {
        String::new()
    };
    let also = if ctx.extra_dirs.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = ctx
            .extra_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        format!(" and the --add-dir directories ({})", list.join(", "))
    };
    ToolError::failed(format!(
        "{path} is outside the workspace {}{via}. File tools can only access paths inside the workspace{also}.",
        ctx.workspace.display()
    ))
}

/// The spill directory, as the run created it (its path is canonical from the start).
/// Never re-canonicalised: a command that swapped it for a symlink must not move it.
pub(super) fn spill_root(ctx: &ToolContext) -> Option<PathBuf> {
    Some(ctx.spill_dir.clone())
}
