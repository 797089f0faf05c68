//! Unit tests of `mod.rs`: the payload's sources and origin's credentials.

use super::*;

#[test]
fn origin_loses_its_credentials_only() {
    assert_eq!(
        without_credentials("https://gitlab-ci-token:glcbt-SECRET@gitlab.example/g/p.git")
            .as_deref(),
        Some("https://gitlab.example/g/p.git")
    );
    assert_eq!(without_credentials("https://gitlab.example/g/p.git"), None);
    assert_eq!(without_credentials("/tmp/origin.git"), None);
    assert_eq!(
        without_credentials("https://gitlab.example/a@b/p.git"),
        None
    );
}

#[test]
fn the_payload_is_a_file_or_the_json_itself() {
    assert_eq!(payload(None, None).unwrap(), None);
    let v = payload(None, Some("{\"object_kind\": \"note\"}"))
        .unwrap()
        .unwrap();
    assert_eq!(v["object_kind"], "note");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.json");
    std::fs::write(&f, "{\"object_kind\": \"issue\"}").unwrap();
    let v = payload(None, Some(f.to_str().unwrap())).unwrap().unwrap();
    assert_eq!(v["object_kind"], "issue");
    let err = payload(Some(Path::new("/nonexistent/p.json")), None).unwrap_err();
    assert!(err.starts_with("--payload /nonexistent/p.json"), "{err}");
    std::fs::write(&f, "not json").unwrap();
    assert!(payload(Some(&f), None).unwrap_err().contains("is not JSON"));
}
