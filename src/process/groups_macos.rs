//! The process table on macOS, which has no /proc: every pid from `proc_listallpids`,
//! each one's parent, group and state from `proc_pidinfo(PROC_PIDTBSDINFO)`.

use super::Proc;

/// Room for this many more pids than the kernel counted: processes start meanwhile.
const SLACK: usize = 64;

/// Every process the kernel lists whose BSD info this user may read (a zombie's may be
/// gone: it is listed as a zombie of unknown parent, which no caller acts on).
pub(super) fn processes() -> Vec<Proc> {
    // SAFETY: a null buffer asks for the count only.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let Ok(count) = usize::try_from(count) else {
        return Vec::new();
    };
    let mut pids: Vec<libc::pid_t> = vec![0; count + SLACK];
    let size = libc::c_int::try_from(std::mem::size_of_val(pids.as_slice())).unwrap_or(0);
    // SAFETY: the kernel fills the live buffer within `size` bytes and returns the count.
    let n = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), size) };
    pids.truncate(usize::try_from(n).unwrap_or(0).min(pids.len()));
    pids.iter()
        .filter(|&&pid| pid > 0)
        .filter_map(|&pid| {
            // SAFETY: proc_bsdinfo is plain data; the kernel fills at most its size.
            let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
            let size = libc::c_int::try_from(std::mem::size_of_val(&info)).ok()?;
            let got = unsafe {
                libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size)
            };
            (got == size).then(|| Proc {
                pid,
                ppid: libc::pid_t::try_from(info.pbi_ppid).unwrap_or(0),
                pgid: libc::pid_t::try_from(info.pbi_pgid).unwrap_or(0),
                zombie: info.pbi_status == libc::SZOMB,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "groups_macos_tests.rs"]
mod tests;
