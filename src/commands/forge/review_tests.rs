//! Unit tests of `review.rs`: diff lines per side, and the review built from an answer.

use super::*;

fn files() -> Vec<Value> {
    vec![
        json!({"filename": "a.rs", "patch": "@@ -10,3 +10,4 @@ fn f() {\n ctx\n-old\n+new1\n+new2\n ctx2\n\\ No newline at end of file"}),
        json!({"filename": "b.bin"}),
    ]
}

#[test]
fn hunks_give_the_lines_of_each_side() {
    let l = diff_lines(&files());
    let has = |side, line| l.contains(&("a.rs".to_string(), side, line));
    assert!(has("RIGHT", 10) && has("LEFT", 10), "context on both sides");
    assert!(has("LEFT", 11) && !has("RIGHT", 13 + 1));
    assert!(has("RIGHT", 11) && has("RIGHT", 12), "added");
    assert!(has("RIGHT", 13) && has("LEFT", 12), "context after");
    assert!(!has("LEFT", 13) && !has("RIGHT", 9));
    assert_eq!(l.len(), 7);
}

#[test]
fn comments_off_the_diff_go_to_the_summary() {
    let answer = json!({"summary": "Fine.", "comments": [
        {"path": "a.rs", "line": 11, "body": "inline, RIGHT by default"},
        {"path": "a.rs", "line": 11, "side": "LEFT", "body": "on the removed line"},
        {"path": "a.rs", "line": 99, "body": "far `away`"},
        {"path": "a.rs", "body": "no line: dropped"}]});
    let (req, n) = request(&answer, &diff_lines(&files()), "sha1").unwrap();
    assert_eq!(n, 2);
    assert_eq!(req["commit_id"], "sha1");
    assert_eq!(req["event"], "COMMENT");
    assert_eq!(
        req["comments"][0],
        json!({"path": "a.rs", "line": 11, "side": "RIGHT", "body": "inline, RIGHT by default"})
    );
    assert_eq!(req["comments"][1]["side"], "LEFT");
    let body = req["body"].as_str().unwrap();
    assert_eq!(
        body,
        "Fine.\n\n**Comments on lines outside the diff:**\n\n- `a.rs:99`: far `away`"
    );
    assert!(request(&json!({"comments": []}), &DiffLines::new(), "s").is_none());
}

#[test]
fn the_schema_compiles_and_takes_a_review() {
    let schema = schema();
    let v = jsonschema::validator_for(&schema).unwrap();
    assert!(v.is_valid(&json!({"summary": "s", "comments": [{"path": "p", "line": 1, "side": "LEFT", "body": "b"}]})));
    assert!(
        !v.is_valid(&json!({"summary": "s", "comments": [{"path": "p", "line": 0, "body": "b"}]}))
    );
    assert!(!v.is_valid(&json!({"summary": "s"})));
}
