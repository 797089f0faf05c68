//! Unit tests of `content.rs`.

use super::*;
use serde_json::json;

#[test]
fn text_is_joined_and_is_error_kept() {
    let r = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                       "isError": true});
    assert_eq!(to_text(&r), ("a\nb".to_string(), true));
    assert!(!to_text(&json!({"content": [], "isError": false})).1);
}

#[test]
fn structured_content_only_without_text() {
    let r = json!({"content": [], "structuredContent": {"n": 1}});
    assert_eq!(to_text(&r).0, r#"{"n":1}"#);
    let r = json!({"content": [{"type": "text", "text": "t"}], "structuredContent": {"n": 1}});
    assert_eq!(to_text(&r).0, "t");
    assert_eq!(to_text(&json!({})).0, "(the tool returned no content)");
}

#[test]
fn binary_content_becomes_notes_and_resource_text_is_kept() {
    let r = json!({"content": [
        {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
        {"type": "audio", "data": "", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AA==",
                                          "mimeType": "application/zip"}},
        {"type": "resource_link", "uri": "file:///c", "name": "c"},
        {"type": "video"}
    ]});
    let (text, err) = to_text(&r);
    assert!(!err);
    assert_eq!(
        text,
        "hello\n[image omitted: image/png, 8 bytes of base64]\n\
             [audio omitted: audio/wav, 0 bytes of base64]\n\
             [resource omitted: file:///b.bin (application/zip), binary]\n\
             [resource link: file:///c (c)]\n[content of type \"video\" omitted]"
    );
}
