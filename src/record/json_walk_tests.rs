//! Unit tests of `json_walk.rs`: the ranges it finds are the values serde_json finds.

use super::*;
use serde_json::Value;

fn contents_by_parsing(json: &str) -> Vec<Option<Value>> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["type"] == "tool_result").then(|| b["content"].clone()))
        .collect()
}

#[test]
fn finds_each_tool_results_content_as_parsing_does() {
    let cases = [
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x \" \\ \\\" y"}]}"#,
        r#"{"role":"user","content":[{"type":"text","text":"\"content\": {[no]}"},{"type":"tool_result","tool_use_id":"b\"","content":"ok","is_error":true}]}"#,
        r#"{ "role" : "user" , "content" : [ { "type" : "tool_result" , "content" : [ {"type":"text","text":"]}"} ] , "x" : null } , {"type":"image","source":{"data":"{"}} ] }"#,
        r#"{"content":[],"role":"user"}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"e\\","content":"ends in a backslash \\","is_error":true}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":"","is_error":false},{"type":"tool_result","content":12.5e3}]}"#,
    ];
    for json in cases {
        let found = result_contents(json).unwrap_or_else(|| panic!("{json}"));
        let parsed = contents_by_parsing(json);
        assert_eq!(found.len(), parsed.len(), "{json}");
        for (range, want) in found.iter().zip(&parsed) {
            let got = range.map(|(s, e)| serde_json::from_str::<Value>(&json[s..e]).unwrap());
            assert_eq!(&got, want, "{json}");
        }
    }
}

#[test]
fn anything_else_is_none_not_a_guess() {
    for json in [
        "",
        "[]",
        r#"{"role":"user"}"#,
        r#"{"role":"user","content":"text"}"#,
        r#"{"role":"user","content":[{"type":"tool_result","content":"unterminated}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result" "content":"x"}]}"#,
        r#"{"role":"user","content":[1,]}"#,
    ] {
        assert_eq!(result_contents(json), None, "{json}");
    }
}
