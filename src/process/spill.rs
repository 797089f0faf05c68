//! The spill directory's files: created so that nothing a command does to the directory
//! can redirect a save.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
    let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string, both alive
    // for the call; the mode is passed as the variadic argument open(2) expects.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat, is valid and owned by nobody else.
    Ok(unsafe { File::from_raw_fd(fd) })
}
