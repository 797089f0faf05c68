//! `has_children`: the one-syscall check that lets `kill_orphans` skip its /proc scan.

use super::has_children;

#[test]
fn a_living_child_and_an_unreaped_one_both_count_and_stay_waitable() {
    let mut child = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(has_children(), "a running child");
    drop(child.stdin.take()); // EOF: the child exits, and stays a zombie until waited for
    // Poll without reaping until the child has exited (waitid with WNOWAIT).
    loop {
        // SAFETY: zeroed siginfo is a valid out-parameter; WNOWAIT reaps nothing.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                child.id(),
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        assert_eq!(rc, 0);
        if unsafe { info.si_pid() } == child.id() as libc::pid_t {
            break;
        }
    }
    assert!(has_children(), "an exited child not yet reaped");
    // The check reaped nothing: the child's status is still there to collect.
    assert!(child.wait().unwrap().success());
}
