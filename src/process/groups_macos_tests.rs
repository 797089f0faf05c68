//! Unit tests of `groups_macos.rs` (run on macOS only).

use super::*;

#[test]
fn a_child_is_listed_with_its_parent_and_group() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let me = std::process::id() as libc::pid_t;
    // SAFETY: getpgrp takes no arguments.
    let my_group = unsafe { libc::getpgrp() };
    let listed = processes()
        .into_iter()
        .find(|p| p.pid == pid)
        .map(|p| (p.ppid, p.pgid));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(listed, Some((me, my_group)));
}
