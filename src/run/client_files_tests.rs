//! Unit tests of `client_files.rs`: the lines' shapes, which `agent acp` reads back.

use super::*;

#[test]
fn a_request_line_is_told_from_an_event() {
    let read = FileRequest::Read {
        id: "file_1".into(),
        path: "/w/a.rs".into(),
    };
    let write = FileRequest::Write {
        id: "file_2".into(),
        path: "/w/a.rs".into(),
        content: "x\n".into(),
    };
    for r in [&read, &write] {
        let line = serde_json::to_string(r).unwrap();
        assert!(is_request(&line), "{line}");
        assert_eq!(&serde_json::from_str::<FileRequest>(&line).unwrap(), r);
    }
    assert!(!is_request(
        r#"{"version":1,"type":"tool.started","seq":3,"elapsed_ms":1,"turn":1,"id":"a","name":"ReadFile","input":null}"#
    ));
    assert!(!is_request("not json"));
    assert_eq!(
        serde_json::to_value(&write).unwrap(),
        serde_json::json!({"type": "file.write", "id": "file_2", "path": "/w/a.rs", "content": "x\n"})
    );
}

#[test]
fn answers_parse_with_and_without_content() {
    let done: FileAnswer =
        serde_json::from_str(r#"{"type":"file.result","id":"file_1","content":"text"}"#).unwrap();
    assert_eq!(
        done,
        FileAnswer::Done {
            id: "file_1".into(),
            content: Some("text".into())
        }
    );
    let written: FileAnswer =
        serde_json::from_str(r#"{"type":"file.result","id":"file_2"}"#).unwrap();
    assert_eq!(written.id(), "file_2");
    let failed: FileAnswer =
        serde_json::from_str(r#"{"type":"file.error","id":"file_3","message":"no"}"#).unwrap();
    assert!(matches!(failed, FileAnswer::Failed { ref message, .. } if message == "no"));
    assert!(serde_json::from_str::<FileAnswer>(r#"{"type":"file.other","id":"x"}"#).is_err());
}
