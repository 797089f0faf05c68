//! The fd-relative half: a checked path is walked from its trusted root one directory at
//! a time (`openat(O_DIRECTORY|O_NOFOLLOW)`), so a symlink swapped in after the check
//! cannot redirect the open; thin wrappers over the `*at` syscalls std lacks.

use super::*;

/// Splits a resolved path into its trusted root (the workspace, or the spill directory
/// for reads), the directories beneath it and the final name.
pub(super) fn split_under_root(
    ctx: &ToolContext,
    resolved: &Path,
    shown: &str,
    allow_spill: bool,
) -> Result<(PathBuf, Vec<OsString>, OsString), ToolError> {
    let root = if let Some(root) = root_of(ctx, resolved) {
        root.clone()
    } else if let Some(skill) = ctx
        .read_only_dirs
        .iter()
        .find(|d| allow_spill && resolved.starts_with(d))
    {
        skill.clone()
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
pub(super) fn open_dir_chain(
    ctx: &ToolContext,
    root: &Path,
    dirs: &[OsString],
    create: bool,
    shown: &str,
) -> Result<File, ToolError> {
    // The workspace and --add-dir roots are trusted as given (canonical at start); the
    // spill directory, which lies in the shared temp dir, must not be a symlink.
    let no_follow = if root == ctx.workspace
        || ctx.extra_dirs.iter().any(|d| d == root)
        || ctx.read_only_dirs.iter().any(|d| d == root)
    {
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
                match mkdirat(&dir, name, NEW_DIR_MODE as libc::mode_t) {
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
pub(super) fn stat_at(dir: &File, name: &OsStr) -> io::Result<Option<Metadata>> {
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
pub(super) fn check_regular(md: &Metadata, shown: &str) -> Result<(), ToolError> {
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

pub(super) fn create_temp(dir: &File, shown: &str) -> Result<(OsString, File), ToolError> {
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

/// The typed not-found of every path that does not exist (`ToolError::NotFound`).
pub(super) fn not_found(shown: &str) -> ToolError {
    ToolError::NotFound(format!(
        "file not found: {shown} does not exist in the workspace. Use Glob to find the right path."
    ))
}

pub(super) fn is_symlink_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Maps an I/O error to a message that tells the model what happened to which path.
pub(super) fn io_error(e: &io::Error, shown: &str, action: &str) -> ToolError {
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

pub(super) fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

pub(super) fn openat(
    dir: &File,
    name: &OsStr,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<File> {
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

pub(super) fn mkdirat(dir: &File, name: &OsStr, mode: libc::mode_t) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: valid descriptor and NUL-terminated name, alive for the call.
    let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(super) fn renameat(dir: &File, from: &OsStr, to: &OsStr) -> io::Result<()> {
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

pub(super) fn unlinkat(dir: &File, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: valid descriptor and NUL-terminated name, alive for the call.
    let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
