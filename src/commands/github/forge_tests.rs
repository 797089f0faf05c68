//! Unit tests of `forge.rs`: the contents answer and the query escaping.

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
