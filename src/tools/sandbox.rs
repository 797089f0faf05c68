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

/// Whether a write created the file or replaced an existing one (for `files_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Created,
    Modified,
}

impl Change {
    /// The transcript's `change` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Modified => "modified",
        }
    }
}

/// Resolves `path` (absolute, or relative to the workspace) to an existing path inside the
/// workspace or the run's spill directory, with no symlink left in it.
pub(crate) fn resolve_for_read(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let r = resolve(ctx, path)?;
    let inside = r.path.starts_with(&ctx.workspace)
        || spill_root(ctx).is_some_and(|s| r.path.starts_with(s));
    if !inside {
        return Err(outside_error(ctx, path, &r));
    }
    if !r.exists {
        return Err(ToolError::failed(format!(
            "file not found: {path} does not exist in the workspace. Use Glob to find the right path."
        )));
    }
    Ok(r.path)
}

/// Resolves `path` for Glob and Grep: like `resolve_for_read`, but the workspace only
/// (the spill directory is ReadFile's exception, for reading one saved result).
pub(crate) fn resolve_for_search(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let r = resolve(ctx, path)?;
    if !r.path.starts_with(&ctx.workspace) {
        return Err(outside_error(ctx, path, &r));
    }
    if !r.exists {
        return Err(ToolError::failed(format!(
            "not found: {path} does not exist in the workspace. Use Glob to find the right path."
        )));
    }
    Ok(r.path)
}

/// Creates `name` in the spill directory (made 0700 if missing) for writing. The spill
/// directory lies in the temp dir, which a sandboxed command may write: it could swap the
/// directory, or a file in it, for a symlink. So the directory is opened without
/// following a link and the file is created relative to it with `O_EXCL|O_NOFOLLOW`: a
/// swap can make a save fail, never redirect it.
pub(crate) fn create_spill_file(spill_dir: &Path, name: &str) -> io::Result<File> {
    match std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(spill_dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(spill_dir)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    openat(&dir, OsStr::new(name), flags, 0o600)
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
    if !r.path.starts_with(&ctx.workspace) {
        return Err(outside_error(ctx, path, &r));
    }
    if r.path == ctx.workspace {
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
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => resolved.to_string_lossy().into_owned(),
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
) -> Result<Change, ToolError> {
    let (root, dirs, name) = split_under_root(ctx, resolved, shown, false)?;
    let dir = open_dir_chain(ctx, &root, &dirs, true, shown)?;
    let existing = stat_at(&dir, &name).map_err(|e| io_error(&e, shown, "write"))?;
    let (mode, change) = match existing {
        None => (NEW_FILE_MODE, Change::Created),
        Some(md) => {
            check_regular(&md, shown)?;
            (md.permissions().mode() & 0o7777, Change::Modified)
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

/// A path after resolution: absolute, every existing component a real directory or file.
struct Resolution {
    path: PathBuf,
    exists: bool,
    via_symlink: bool,
}

/// One step of a path still to resolve.
enum Piece {
    Root,
    Parent,
    Name(OsString),
}

fn pieces(p: &Path) -> Vec<Piece> {
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
fn resolve(ctx: &ToolContext, path: &str) -> Result<Resolution, ToolError> {
    resolve_in(&ctx.workspace, path)
}

/// The path a file tool would open for `path`, symlinks followed (None when it cannot be
/// resolved). Permission rules match this, so that `link/../x` is judged as the file the
/// tool really reaches.
pub(crate) fn physical_path(workspace: &Path, path: &str) -> Option<PathBuf> {
    resolve_in(workspace, path).ok().map(|r| r.path)
}

fn resolve_in(workspace: &Path, path: &str) -> Result<Resolution, ToolError> {
    if path.is_empty() {
        return Err(ToolError::failed(
            "path is empty: give a path relative to the workspace root, or an absolute path inside it",
        ));
    }
    if path.contains('\0') {
        return Err(ToolError::failed("path contains a NUL byte"));
    }
    if std::fs::symlink_metadata(workspace).is_err() {
        return Err(ToolError::Fatal(format!(
            "the workspace {} no longer exists",
            workspace.display()
        )));
    }
    let input = Path::new(path);
    let mut cur = if input.is_absolute() {
        PathBuf::from("/")
    } else {
        workspace.to_path_buf()
    };
    let mut pending: std::collections::VecDeque<Piece> = pieces(input).into();
    let (mut hops, mut via_symlink) = (0, false);
    while let Some(piece) = pending.pop_front() {
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
                    Ok(_) => cur = candidate,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => cur = candidate,
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
    let exists = std::fs::symlink_metadata(&cur).is_ok();
    Ok(Resolution {
        path: cur,
        exists,
        via_symlink,
    })
}

fn outside_error(ctx: &ToolContext, path: &str, r: &Resolution) -> ToolError {
    let via = if r.via_symlink {
        format!(
            " (it goes through a symbolic link that resolves to {})",
            r.path.display()
        )
    } else {
        String::new()
    };
    ToolError::failed(format!(
        "{path} is outside the workspace {}{via}. File tools can only access paths inside the workspace.",
        ctx.workspace.display()
    ))
}

/// The spill directory, as the run created it (its path is canonical from the start).
/// Never re-canonicalised: a command that swapped it for a symlink must not move it.
fn spill_root(ctx: &ToolContext) -> Option<PathBuf> {
    Some(ctx.spill_dir.clone())
}

/// Splits a resolved path into its trusted root (the workspace, or the spill directory
/// for reads), the directories beneath it and the final name.
fn split_under_root(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
    allow_spill: bool,
) -> Result<(PathBuf, Vec<OsString>, OsString), ToolError> {
    let root = if resolved.starts_with(&ctx.workspace) {
        ctx.workspace.clone()
    } else {
        match spill_root(ctx) {
            Some(s) if allow_spill && resolved.starts_with(&s) => s,
            _ => {
                return Err(ToolError::failed(format!(
                    "{shown} is outside the workspace {}",
                    ctx.workspace.display()
                )));
            }
        }
    };
    let mut names: Vec<OsString> = Vec::new();
    for c in resolved
        .strip_prefix(&root)
        .unwrap_or(Path::new(""))
        .components()
    {
        match c {
            Component::Normal(n) => names.push(n.to_os_string()),
            // `resolve` leaves no `.`/`..`; refuse rather than trust a caller's raw path.
            _ => {
                return Err(ToolError::failed(format!(
                    "{shown}: path is not normalised"
                )));
            }
        }
    }
    match names.pop() {
        Some(name) => Ok((root, names, name)),
        None => Err(ToolError::failed(format!(
            "{shown} is a directory, not a file"
        ))),
    }
}

/// Opens `root/dirs...` one directory at a time, never following a symlink, creating
/// missing directories (0755) when `create` is set.
fn open_dir_chain(
    ctx: &ToolContext,
    root: &Path,
    dirs: &[OsString],
    create: bool,
    shown: &str,
) -> Result<File, ToolError> {
    // The workspace root is trusted as given; the spill directory, which lies in the
    // shared temp dir, must not be a symlink.
    let no_follow = if root == ctx.workspace {
        0
    } else {
        libc::O_NOFOLLOW
    };
    let mut dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC | no_follow)
        .open(root)
        .map_err(|e| {
            if root == ctx.workspace && e.kind() == io::ErrorKind::NotFound {
                ToolError::Fatal(format!("the workspace {} no longer exists", root.display()))
            } else {
                io_error(&e, shown, "open")
            }
        })?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    for name in dirs {
        dir = match openat(&dir, name, flags, 0) {
            Ok(d) => d,
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                match mkdirat(&dir, name, NEW_DIR_MODE) {
                    Ok(()) => {
                        let d = openat(&dir, name, flags, 0)
                            .map_err(|e| io_error(&e, shown, "create a directory for"))?;
                        // mkdir's mode is filtered by the umask; SPEC §4 says 0755.
                        d.set_permissions(Permissions::from_mode(NEW_DIR_MODE))
                            .map_err(|e| io_error(&e, shown, "create a directory for"))?;
                        d
                    }
                    // Created concurrently: open what is there (still without following).
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        openat(&dir, name, flags, 0)
                            .map_err(|e| io_error(&e, shown, "create a directory for"))?
                    }
                    Err(e) => return Err(io_error(&e, shown, "create a directory for")),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found(shown)),
            Err(e) if is_symlink_error(&e) || e.kind() == io::ErrorKind::NotADirectory => {
                return Err(ToolError::failed(format!(
                    "{shown}: the parent directory {} is not a real directory (a symbolic link or a file); refusing to follow it",
                    name.to_string_lossy()
                )));
            }
            Err(e) => return Err(io_error(&e, shown, "open")),
        };
    }
    Ok(dir)
}

/// `lstat` of `dir/name` through the directory handle: `None` when it does not exist.
/// Opening with `O_PATH` (Linux) has no side effect even on a FIFO or a device.
fn stat_at(dir: &File, name: &OsStr) -> io::Result<Option<Metadata>> {
    #[cfg(target_os = "linux")]
    let flags = libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    match openat(dir, name, flags, 0) {
        Ok(f) => f.metadata().map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Refuses everything but a regular file, naming what it is.
fn check_regular(md: &Metadata, shown: &str) -> Result<(), ToolError> {
    let ft = md.file_type();
    let what = if ft.is_file() {
        return Ok(());
    } else if ft.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory, not a file. Use Glob to list the files in it."
        )));
    } else if ft.is_symlink() {
        "a symbolic link (it was replaced after the path was checked)"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device file"
    } else {
        "not a regular file"
    };
    Err(ToolError::failed(format!(
        "{shown} is {what}; file tools only work on regular files"
    )))
}

fn create_temp(dir: &File, shown: &str) -> Result<(OsString, File), ToolError> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut last_err = None;
    for _ in 0..MAX_TEMP_ATTEMPTS {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(".agent-write.{}.{n}.tmp", std::process::id()));
        match openat(dir, &name, flags, 0o600) {
            Ok(f) => return Ok((name, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(io_error(&e, shown, "write")),
        }
    }
    let e = last_err.unwrap_or_else(|| io::Error::other("no temp name available"));
    Err(io_error(&e, shown, "write"))
}

fn not_found(shown: &str) -> ToolError {
    ToolError::failed(format!(
        "file not found: {shown} does not exist in the workspace. Use Glob to find the right path."
    ))
}

fn is_symlink_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Maps an I/O error to a message that tells the model what happened to which path.
fn io_error(e: &io::Error, shown: &str, action: &str) -> ToolError {
    let msg = match e.kind() {
        io::ErrorKind::NotFound => return not_found(shown),
        io::ErrorKind::PermissionDenied => format!("permission denied: cannot {action} {shown}"),
        io::ErrorKind::IsADirectory => format!("{shown} is a directory, not a file"),
        io::ErrorKind::NotADirectory => {
            format!("{shown}: a parent component is a file, not a directory")
        }
        _ if is_symlink_error(e) => {
            format!("{shown} is a symbolic link; refusing to follow it")
        }
        _ => format!("cannot {action} {shown}: {e}"),
    };
    ToolError::failed(msg)
}

// --- thin wrappers over the *at syscalls (std has none) ---

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn openat(dir: &File, name: &OsStr, flags: libc::c_int, mode: libc::c_uint) -> io::Result<File> {
    let name = c_name(name)?;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string, both alive
    // for the call; the mode is passed as the variadic argument open(2) expects.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat, is valid and owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn mkdirat(dir: &File, name: &OsStr, mode: libc::mode_t) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: valid descriptor and NUL-terminated name, alive for the call.
    let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn renameat(dir: &File, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (c_name(from)?, c_name(to)?);
    let fd = dir.as_raw_fd();
    // SAFETY: valid descriptor and NUL-terminated names, alive for the call.
    let rc = unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn unlinkat(dir: &File, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: valid descriptor and NUL-terminated name, alive for the call.
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Test helpers shared by the file tools' tests.
    use std::path::Path;

    use serde::de::DeserializeOwned;
    use serde_json::Value;

    use crate::tools::ToolContext;

    /// A workspace `ws`, a sibling `outside/secret.txt`, and a spill dir outside the
    /// workspace, all under one temp dir (kept alive by the returned guard).
    pub(crate) fn setup() -> (tempfile::TempDir, ToolContext) {
        let outer = tempfile::tempdir().unwrap();
        let base = outer.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("ws")).unwrap();
        std::fs::create_dir(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), "secret\n").unwrap();
        std::fs::create_dir(base.join("spill")).unwrap();
        let mut ctx = ToolContext::for_workspace(base.join("ws"));
        ctx.spill_dir = base.join("spill");
        (outer, ctx)
    }

    /// The outside directory of `setup`.
    pub(crate) fn outside(ctx: &ToolContext) -> std::path::PathBuf {
        ctx.workspace.parent().unwrap().join("outside")
    }

    /// Every entry under `dir`, sorted, to prove that nothing was created or changed.
    pub(crate) fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let data = if p.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            out.push((p.display().to_string(), data));
        }
        out.sort();
        out
    }

    pub(crate) fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    }

    /// Runs `f` on a thread and fails the test if it does not return (a hang guard, not a
    /// timing assertion: any finite time passes).
    pub(crate) fn without_hanging<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("the call hung")
    }

    /// The schema and the typed input struct agree: the full example passes both; the
    /// example names every schema property; dropping a field fails serde exactly when the
    /// schema requires it; an unknown field fails both.
    pub(crate) fn assert_schema_agrees<T: DeserializeOwned>(schema: &Value, full: &Value) {
        let props = schema["properties"].as_object().expect("properties");
        let full_obj = full.as_object().expect("object example");
        let mut prop_names: Vec<&String> = props.keys().collect();
        let mut example_names: Vec<&String> = full_obj.keys().collect();
        prop_names.sort();
        example_names.sort();
        assert_eq!(
            prop_names, example_names,
            "the example must use every schema property"
        );
        assert_eq!(schema["additionalProperties"], Value::Bool(false));
        for (name, p) in props {
            assert!(
                p["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{name}: description"
            );
        }
        crate::tools::schema::validate(schema, full).unwrap();
        serde_json::from_value::<T>(full.clone()).unwrap();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for name in full_obj.keys() {
            let mut partial = full_obj.clone();
            partial.remove(name);
            let serde_ok = serde_json::from_value::<T>(Value::Object(partial.clone())).is_ok();
            let schema_ok = crate::tools::schema::validate(schema, &Value::Object(partial)).is_ok();
            let is_required = required.contains(&name.as_str());
            assert_eq!(serde_ok, !is_required, "serde vs `required` for {name}");
            assert_eq!(schema_ok, !is_required, "schema vs `required` for {name}");
        }
        let mut extra = full_obj.clone();
        extra.insert("bogus_field".into(), Value::Bool(true));
        assert!(serde_json::from_value::<T>(Value::Object(extra.clone())).is_err());
        assert!(crate::tools::schema::validate(schema, &Value::Object(extra)).is_err());
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::test_util::*;
    use super::*;

    fn failed(r: Result<impl std::fmt::Debug, ToolError>) -> String {
        match r {
            Err(ToolError::Failed(m)) => m,
            other => panic!("expected a Failed error, got {other:?}"),
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn resolves_relative_and_absolute_paths_inside() {
        let (_g, ctx) = setup();
        std::fs::create_dir(ctx.workspace.join("src")).unwrap();
        std::fs::write(ctx.workspace.join("src/a.rs"), "x").unwrap();
        let want = ctx.workspace.join("src/a.rs");
        assert_eq!(resolve_for_read(&ctx, "src/a.rs").unwrap(), want);
        assert_eq!(resolve_for_read(&ctx, "./src/../src/a.rs").unwrap(), want);
        assert_eq!(
            resolve_for_read(&ctx, want.to_str().unwrap()).unwrap(),
            want
        );
        assert_eq!(
            resolve_for_write(&ctx, "src/new/b.rs").unwrap(),
            ctx.workspace.join("src/new/b.rs")
        );
        assert_eq!(display_path(&ctx, &want), "src/a.rs");
    }

    #[test]
    fn dotdot_traversal_is_refused_for_read_and_write() {
        let (_g, ctx) = setup();
        let before = snapshot(&outside(&ctx));
        for p in [
            "../outside/secret.txt",
            "../outside/new.txt",
            "a/../../outside/x",
            "../../../../etc/passwd",
        ] {
            assert!(
                failed(resolve_for_read(&ctx, p)).contains("outside the workspace"),
                "{p}"
            );
            assert!(
                failed(resolve_for_write(&ctx, p)).contains("outside the workspace"),
                "{p}"
            );
        }
        assert_eq!(snapshot(&outside(&ctx)), before);
    }

    #[test]
    fn absolute_paths_outside_are_refused() {
        let (_g, ctx) = setup();
        let secret = outside(&ctx).join("secret.txt");
        let e = failed(resolve_for_read(&ctx, secret.to_str().unwrap()));
        assert!(e.contains("outside the workspace"), "{e}");
        failed(resolve_for_write(&ctx, "/tmp/agent-should-not-exist.txt"));
        // A sibling whose name starts like the workspace is not inside it.
        let sibling = format!("{}2/x", ctx.workspace.display());
        assert!(failed(resolve_for_write(&ctx, &sibling)).contains("outside"));
    }

    #[test]
    fn symlinked_dir_pointing_out_is_refused() {
        let (_g, ctx) = setup();
        symlink(outside(&ctx), ctx.workspace.join("linkdir")).unwrap();
        let before = snapshot(&outside(&ctx));
        let e = failed(resolve_for_read(&ctx, "linkdir/secret.txt"));
        assert!(
            e.contains("outside the workspace") && e.contains("symbolic link"),
            "{e}"
        );
        failed(resolve_for_write(&ctx, "linkdir/new.txt"));
        failed(resolve_for_write(&ctx, "linkdir/sub/new.txt"));
        assert_eq!(snapshot(&outside(&ctx)), before);
    }

    #[test]
    fn symlinked_file_pointing_out_is_refused() {
        let (_g, ctx) = setup();
        symlink(
            outside(&ctx).join("secret.txt"),
            ctx.workspace.join("link.txt"),
        )
        .unwrap();
        // A relative link target counts the same.
        symlink("../outside/secret.txt", ctx.workspace.join("rel.txt")).unwrap();
        for p in ["link.txt", "rel.txt"] {
            assert!(failed(resolve_for_read(&ctx, p)).contains("outside the workspace"));
            assert!(failed(resolve_for_write(&ctx, p)).contains("outside the workspace"));
        }
        // A dangling link to a missing file outside is refused too (a write would create it).
        symlink(
            outside(&ctx).join("missing.txt"),
            ctx.workspace.join("dangling"),
        )
        .unwrap();
        failed(resolve_for_write(&ctx, "dangling"));
        assert!(!outside(&ctx).join("missing.txt").exists());
    }

    #[test]
    fn symlinks_within_the_workspace_are_followed() {
        let (_g, ctx) = setup();
        std::fs::create_dir(ctx.workspace.join("real")).unwrap();
        std::fs::write(ctx.workspace.join("real/f.txt"), "x").unwrap();
        symlink("real", ctx.workspace.join("alias")).unwrap();
        symlink(
            ctx.workspace.join("real/f.txt"),
            ctx.workspace.join("f-link"),
        )
        .unwrap();
        assert_eq!(
            resolve_for_read(&ctx, "alias/f.txt").unwrap(),
            ctx.workspace.join("real/f.txt")
        );
        assert_eq!(
            resolve_for_read(&ctx, "f-link").unwrap(),
            ctx.workspace.join("real/f.txt")
        );
        assert_eq!(
            resolve_for_write(&ctx, "alias/g.txt").unwrap(),
            ctx.workspace.join("real/g.txt")
        );
    }

    #[test]
    fn symlink_loop_and_file_as_directory_are_clear_errors() {
        let (_g, ctx) = setup();
        symlink("b", ctx.workspace.join("a")).unwrap();
        symlink("a", ctx.workspace.join("b")).unwrap();
        assert!(failed(resolve_for_read(&ctx, "a")).contains("too many levels"));
        std::fs::write(ctx.workspace.join("file"), "x").unwrap();
        assert!(failed(resolve_for_write(&ctx, "file/x")).contains("not a directory"));
    }

    #[test]
    fn distinct_errors_for_missing_empty_and_root() {
        let (_g, ctx) = setup();
        assert!(failed(resolve_for_read(&ctx, "nope.txt")).starts_with("file not found"));
        assert!(failed(resolve_for_read(&ctx, "")).contains("empty"));
        assert!(failed(resolve_for_write(&ctx, ".")).contains("workspace root"));
        assert!(failed(resolve_for_read(&ctx, "a\0b")).contains("NUL"));
    }

    #[test]
    fn spill_dir_is_readable_but_not_writable() {
        let (_g, ctx) = setup();
        let spilled = ctx.spill_dir.join("result-1.txt");
        std::fs::write(&spilled, "big\n").unwrap();
        let r = resolve_for_read(&ctx, spilled.to_str().unwrap()).unwrap();
        let (mut f, _) = open_for_read(&ctx, &r, "spilled").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut f, &mut s).unwrap();
        assert_eq!(s, "big\n");
        failed(resolve_for_write(&ctx, spilled.to_str().unwrap()));
        assert!(failed(write_atomic(&ctx, &r, "spilled", b"x")).contains("outside"));
        assert_eq!(std::fs::read_to_string(&spilled).unwrap(), "big\n");
    }

    #[test]
    fn a_trailing_slash_is_not_a_file_name() {
        let (_g, ctx) = setup();
        std::fs::write(ctx.workspace.join("f.txt"), "x").unwrap();
        for p in ["trail/", "f.txt/", "new/dir/", "sub/."] {
            assert!(failed(resolve_for_write(&ctx, p)).contains("slash"), "{p}");
        }
        assert!(!ctx.workspace.join("trail").exists());
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.join("f.txt")).unwrap(),
            "x"
        );
    }

    /// A command (sandboxed or not) that swaps the spill directory for a symlink must not
    /// turn a save into a write elsewhere, nor ReadFile's spill exception into a way out.
    #[test]
    fn a_spill_dir_swapped_for_a_symlink_redirects_nothing() {
        let (_g, ctx) = setup();
        let out = outside(&ctx);
        let before = snapshot(&out);
        std::fs::remove_dir(&ctx.spill_dir).unwrap();
        std::os::unix::fs::symlink(&out, &ctx.spill_dir).unwrap();
        // O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR (or ELOOP on other kernels).
        assert!(create_spill_file(&ctx.spill_dir, "result-x.txt").is_err());
        assert_eq!(
            snapshot(&out),
            before,
            "nothing was written through the link"
        );
        let through = ctx.spill_dir.join("secret.txt");
        assert!(failed(resolve_for_read(&ctx, through.to_str().unwrap())).contains("outside"));
        // The same lexical path opened directly is refused too (a swap after resolving).
        assert!(open_for_read(&ctx, &through, "swapped").is_err());
    }

    #[test]
    fn a_file_swapped_into_the_spill_dir_is_never_followed() {
        let (_g, ctx) = setup();
        let target = outside(&ctx).join("planted.txt");
        std::os::unix::fs::symlink(&target, ctx.spill_dir.join("result-y.txt")).unwrap();
        assert!(create_spill_file(&ctx.spill_dir, "result-y.txt").is_err());
        assert!(!target.exists());
        let f = create_spill_file(&ctx.spill_dir, "result-z.txt").unwrap();
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn search_tools_do_not_get_the_spill_exception() {
        let (_g, ctx) = setup();
        std::fs::write(ctx.spill_dir.join("result-1.txt"), "big\n").unwrap();
        let spill = ctx.spill_dir.to_str().unwrap();
        assert!(resolve_for_read(&ctx, spill).is_ok());
        assert!(failed(resolve_for_search(&ctx, spill)).contains("outside"));
        assert!(resolve_for_search(&ctx, ".").is_ok());
    }

    #[test]
    fn write_creates_parents_0755_and_file_0644() {
        let (_g, ctx) = setup();
        let r = resolve_for_write(&ctx, "a/b/c.txt").unwrap();
        assert_eq!(
            write_atomic(&ctx, &r, "a/b/c.txt", b"hello").unwrap(),
            Change::Created
        );
        assert_eq!(std::fs::read(&r).unwrap(), b"hello");
        assert_eq!(mode(&r), 0o644);
        assert_eq!(mode(&ctx.workspace.join("a")), 0o755);
        assert_eq!(mode(&ctx.workspace.join("a/b")), 0o755);
    }

    #[test]
    fn write_keeps_an_existing_mode_and_leaves_no_temp_file() {
        let (_g, ctx) = setup();
        let p = ctx.workspace.join("run.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, Permissions::from_mode(0o750)).unwrap();
        let r = resolve_for_write(&ctx, "run.sh").unwrap();
        assert_eq!(
            write_atomic(&ctx, &r, "run.sh", b"new").unwrap(),
            Change::Modified
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(mode(&p), 0o750);
        let names: Vec<_> = std::fs::read_dir(&ctx.workspace)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("run.sh")]);
    }

    #[test]
    fn a_symlink_swapped_in_after_the_check_cannot_redirect_a_write() {
        let (_g, ctx) = setup();
        let target = ctx.workspace.join("f.txt");
        std::fs::write(&target, "inside").unwrap();
        let r = resolve_for_write(&ctx, "f.txt").unwrap();
        // The swap: between check and write, f.txt becomes a link to a file outside.
        std::fs::remove_file(&target).unwrap();
        symlink(outside(&ctx).join("secret.txt"), &target).unwrap();
        failed(write_atomic(&ctx, &r, "f.txt", b"pwned"));
        assert_eq!(
            std::fs::read_to_string(outside(&ctx).join("secret.txt")).unwrap(),
            "secret\n"
        );
        // Reads refuse the swapped link as well.
        failed(open_for_read(&ctx, &r, "f.txt"));
    }

    #[test]
    fn a_parent_dir_swapped_for_a_symlink_cannot_redirect_a_write() {
        let (_g, ctx) = setup();
        std::fs::create_dir(ctx.workspace.join("d")).unwrap();
        let r = resolve_for_write(&ctx, "d/new.txt").unwrap();
        std::fs::remove_dir(ctx.workspace.join("d")).unwrap();
        symlink(outside(&ctx), ctx.workspace.join("d")).unwrap();
        let before = snapshot(&outside(&ctx));
        let e = failed(write_atomic(&ctx, &r, "d/new.txt", b"pwned"));
        assert!(e.contains("not a real directory"), "{e}");
        assert_eq!(snapshot(&outside(&ctx)), before);
        failed(open_for_read(
            &ctx,
            &ctx.workspace.join("d/secret.txt"),
            "d/secret.txt",
        ));
    }

    #[test]
    fn fifos_are_refused_without_hanging() {
        let (_g, ctx) = setup();
        mkfifo(&ctx.workspace.join("pipe"));
        let c = ctx.clone();
        let (read_err, write_err) = without_hanging(move || {
            let r = resolve_for_read(&c, "pipe").unwrap();
            let read = open_for_read(&c, &r, "pipe").map(|_| ());
            let write = write_atomic(&c, &r, "pipe", b"x").map(|_| ());
            (read, write)
        });
        assert!(failed(read_err).contains("FIFO"));
        assert!(failed(write_err).contains("FIFO"));
    }

    #[test]
    fn directories_are_refused_as_files() {
        let (_g, ctx) = setup();
        std::fs::create_dir(ctx.workspace.join("d")).unwrap();
        let r = resolve_for_read(&ctx, "d").unwrap();
        assert!(failed(open_for_read(&ctx, &r, "d")).contains("is a directory"));
        assert!(failed(write_atomic(&ctx, &r, "d", b"x")).contains("is a directory"));
    }

    #[test]
    fn unreadable_file_is_permission_denied() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            return; // root reads anything: the case cannot be set up
        }
        let (_g, ctx) = setup();
        let p = ctx.workspace.join("locked");
        std::fs::write(&p, "x").unwrap();
        std::fs::set_permissions(&p, Permissions::from_mode(0o000)).unwrap();
        let r = resolve_for_read(&ctx, "locked").unwrap();
        assert!(failed(open_for_read(&ctx, &r, "locked")).contains("permission denied"));
    }

    #[test]
    fn permission_errors_are_named() {
        // The mapping itself, since the file-based test above cannot run as root.
        let e = io_error(
            &io::Error::from(io::ErrorKind::PermissionDenied),
            "x.txt",
            "read",
        );
        assert_eq!(e, ToolError::failed("permission denied: cannot read x.txt"));
        let e = io_error(&io::Error::from_raw_os_error(libc::ELOOP), "x.txt", "read");
        assert!(e.message().contains("symbolic link"));
    }

    #[test]
    fn a_vanished_workspace_is_fatal() {
        let (_g, ctx) = setup();
        let r = resolve_for_write(&ctx, "x.txt").unwrap();
        std::fs::remove_dir(&ctx.workspace).unwrap();
        assert!(matches!(
            write_atomic(&ctx, &r, "x.txt", b"x"),
            Err(ToolError::Fatal(_))
        ));
        assert!(matches!(
            resolve_for_read(&ctx, "x.txt"),
            Err(ToolError::Fatal(_))
        ));
        assert!(matches!(
            resolve_for_write(&ctx, "x.txt"),
            Err(ToolError::Fatal(_))
        ));
    }
}
