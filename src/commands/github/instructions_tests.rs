use serde_json::json;

use super::*;

#[test]
fn contents_answers_decode_and_other_kinds_do_not() {
    let file = json!({"type": "file", "encoding": "base64",
                      "content": "QmFzZSBzYXlzOiBy\ndW4gbWFrZSB0ZXN0Lg==\n"});
    assert_eq!(decode(&file).as_deref(), Some("Base says: run make test."));
    assert_eq!(decode(&json!({"type": "dir"})), None);
    assert_eq!(query_value("feature/a&b c"), "feature/a%26b%20c");
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
