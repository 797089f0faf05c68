//! Unit tests of `schema.rs`.

use super::*;
use serde_json::json;

fn schema() -> Value {
    json!({"type": "object",
               "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
               "required": ["path"], "additionalProperties": false})
}

#[test]
fn accepts_valid() {
    assert_eq!(
        validate(&schema(), &json!({"path": "a", "limit": 3})),
        Ok(())
    );
}

#[test]
fn names_missing_field() {
    let e = validate(&schema(), &json!({})).unwrap_err();
    assert!(e.contains("`path`"), "{e}");
}

#[test]
fn names_wrong_type() {
    let e = validate(&schema(), &json!({"path": 3})).unwrap_err();
    assert_eq!(e, "field `path` must be a string, got an integer");
    let e = validate(&schema(), &json!({"path": "a", "limit": "x"})).unwrap_err();
    assert!(e.contains("`limit`") && e.contains("integer"), "{e}");
}

#[test]
fn rejects_unknown_and_non_object() {
    let e = validate(&schema(), &json!({"path": "a", "bogus": 1})).unwrap_err();
    assert!(e.contains("`bogus`"), "{e}");
    assert!(validate(&schema(), &json!([1])).is_err());
}

#[test]
fn checks_minimum() {
    let e = validate(&schema(), &json!({"path": "a", "limit": 0})).unwrap_err();
    assert!(e.contains("at least"), "{e}");
}
