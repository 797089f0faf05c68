//! Unit tests of `supervisor.rs`.

use super::*;

#[test]
fn stat_fields_are_counted_from_the_last_paren() {
    assert_eq!(
        parse_stat(b"42 (sleep) S 7 42 42 0 -1 4194304"),
        Some((7, 42))
    );
    assert_eq!(parse_stat(b"42 (a) b) (c) R 1 9 9"), Some((1, 9)));
    assert_eq!(parse_stat(b"42 (x y) Z 0 0"), Some((0, 0)));
    assert_eq!(parse_stat(b"42 (cut"), None);
    assert_eq!(parse_stat(b"42 (x) S 7"), None);
    assert_eq!(parse_stat(b"42 (x) S -1 3"), None);
}

#[test]
fn only_decimal_names_are_pids() {
    assert_eq!(parse_pid(b"1234"), Some(1234));
    assert_eq!(parse_pid(b"self"), None);
    assert_eq!(parse_pid(b""), None);
    assert_eq!(parse_pid(b"12a"), None);
    assert_eq!(parse_pid(b"99999999999"), None);
    assert_eq!(parse_pid(b"4294967295"), None);
}

#[cfg(target_os = "linux")]
#[test]
fn children_are_listed_from_proc() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let me = std::process::id() as libc::pid_t;
    let mut found = Vec::new();
    assert!(for_each_child(me, |pid, pgid| found.push((pid, pgid))));
    let _ = child.kill();
    let _ = child.wait();
    let pid = child.id() as libc::pid_t;
    let own_group = unsafe { libc::getpgrp() };
    assert!(found.contains(&(pid, own_group)), "{found:?}");
}
