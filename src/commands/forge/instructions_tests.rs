//! Unit tests of `instructions.rs`: the head's file is shown only when it differs.

use super::*;

#[test]
fn the_cap_cuts_long_files() {
    let long = "x".repeat(MAX_PROJECT_INSTRUCTIONS_BYTES + 10);
    assert_eq!(cap(&long).len(), MAX_PROJECT_INSTRUCTIONS_BYTES);
    assert_eq!(cap("short"), "short");
}

#[test]
fn the_head_file_is_shown_only_when_it_differs() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(head_if_different(dir.path(), None), None);
    std::fs::write(dir.path().join("AGENTS.md"), "Same.\n").unwrap();
    let same = ("AGENTS.md".to_string(), "Same.".to_string());
    assert_eq!(head_if_different(dir.path(), Some(&same)), None);
    let other = ("AGENTS.md".to_string(), "Other.".to_string());
    assert_eq!(
        head_if_different(dir.path(), Some(&other)),
        Some(("AGENTS.md".to_string(), "Same.\n".to_string()))
    );
    assert!(head_if_different(dir.path(), None).is_some());
}
