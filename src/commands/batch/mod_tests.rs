//! Tests of `agent batch`'s plan and messages.

use super::*;

#[test]
fn exit_statuses_read_as_numbers_or_signal_names() {
    assert_eq!(describe_exit(Some(2), None), "exit 2");
    assert_eq!(describe_exit(None, Some(9)), "signal 9 (SIGKILL)");
    assert_eq!(describe_exit(None, Some(15)), "signal 15 (SIGTERM)");
    assert_eq!(describe_exit(None, Some(63)), "signal 63");
    assert_eq!(describe_exit(None, None), "no exit status");
}

#[test]
fn the_tasks_digest_is_sha256_as_sha256sum_prints_it() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
