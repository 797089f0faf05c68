//! Unit tests of `output.rs`.

use super::*;

#[test]
fn atomic_write_replaces() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("t.json");
    write_file_atomic(&p, b"one").unwrap();
    write_file_atomic(&p, b"two").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
    write_file_atomic_unsynced(&p, b"three").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "three");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "no temp file left"
    );
}

#[test]
fn atomic_write_fails_cleanly() {
    let p = Path::new("/definitely/not/a/dir/t.json");
    assert!(write_file_atomic(p, b"x").is_err());
}
