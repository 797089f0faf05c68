//! Unit tests of `render.rs`.

use super::*;
use crate::model::protocol::{ContentBlock, Message, Role};
use crate::record::{CallMetadata, ToolCallRecord};
use serde_json::{Value, json};
use std::path::PathBuf;

#[test]
fn version_first_and_fields_present() {
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec!["ReadFile".into()]);
    r.messages.push(Entry::new(Message::user_text("hi")));
    r.messages.push(Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Text {
            text: "done".into(),
        }],
    }));
    let s = r.to_json(Status::Success, None);
    assert!(s.trim_start().starts_with("{\n  \"version\": 1,"), "{s}");
    let v: Value = serde_json::from_str(&s).unwrap();
    for k in [
        "status",
        "is_error",
        "result",
        "error",
        "model",
        "stop_reason",
        "num_turns",
        "duration_ms",
        "api_duration_ms",
        "usage",
        "messages",
        "tool_calls",
        "workspace",
        "tools",
        "permission_denials",
        "files_changed",
        "retries",
        "cost_usd",
        "verifications",
        "git_diff_stat",
        "spill_dir",
        "context_tokens",
        "context_window",
        "context_clearings",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["result"], "done");
    assert_eq!(v["is_error"], false);
    assert_eq!(v["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(v["messages"][1]["content"][0]["text"], "done");
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn messages_are_spliced_in_both_layouts_and_only_the_rest_is_redacted() {
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
    let empty: Value = serde_json::from_str(&r.to_json(Status::Running, None)).unwrap();
    assert_eq!(empty["messages"], json!([]));
    // A tool input with a "messages" key comes after the top-level one.
    r.tool_calls.push(ToolCallRecord {
        id: "t".into(),
        name: "X".into(),
        input: json!({"messages": []}),
        is_error: false,
        batch: 1,
        duration_ms: 0,
        started_ms: 0,
        turn: 1,
        model: "m".into(),
        metadata: CallMetadata::default(),
        changes: Vec::new(),
    });
    for text in ["one \"messages\": [] two", "secret-ish"] {
        r.messages.push(Entry::new(Message::user_text(text)));
    }
    let upper = |s: &str| s.replace("\"X\"", "\"Y\"").replace("secret-ish", "nope");
    for doc in [
        r.to_json_redacted(Status::Running, None, &upper),
        r.to_json_line(Status::Running, None),
    ] {
        let v: Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{doc}");
        assert_eq!(
            v["messages"][0]["content"][0]["text"],
            "one \"messages\": [] two"
        );
        assert_eq!(v["messages"][1]["content"][0]["text"], "secret-ish");
        assert_eq!(v["tool_calls"][0]["input"], json!({"messages": []}));
    }
    let v: Value =
        serde_json::from_str(&r.to_json_redacted(Status::Running, None, &upper)).unwrap();
    assert_eq!(
        v["tool_calls"][0]["name"], "Y",
        "the rest went through redact"
    );
}

#[test]
fn claude_compatible_fields_and_structured_output() {
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
    r.messages.push(Entry::new(Message::user_text("hi")));
    r.messages.push(Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Text {
            text: "prose".into(),
        }],
    }));
    r.cost_usd = Some(0.25);
    let v: Value = serde_json::from_str(&r.to_json(Status::MaxTurns, None)).unwrap();
    assert_eq!(v["total_cost_usd"], 0.25);
    assert_eq!(v["cost_usd"], 0.25);
    assert_eq!(v["subtype"], "error_max_turns");
    assert_eq!(v["session_id"], r.session_id.as_str());
    assert_eq!(v["structured_output"], Value::Null);
    assert_eq!(v["resumed_from"], Value::Null);
    assert_eq!(v["result"], "prose");
    // The accepted answer is the result, as one line of JSON.
    r.structured_output = Some(json!({"ok": true, "n": [1, 2]}));
    r.resumed_from = Some(crate::record::transcript::ResumedFrom {
        path: "/t.json".into(),
        num_turns: 3,
        ..Default::default()
    });
    let v: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
    assert_eq!(v["structured_output"], json!({"ok": true, "n": [1, 2]}));
    assert_eq!(v["result"], r#"{"n":[1,2],"ok":true}"#);
    assert_eq!(v["subtype"], "success");
    assert_eq!(v["resumed_from"]["num_turns"], 3);
    let v: Value = serde_json::from_str(&r.to_json(Status::SchemaFailed, None)).unwrap();
    assert_eq!(v["status"], "schema_failed");
    assert_eq!(v["subtype"], "error_max_structured_output_retries");
    // An answer holding `"messages":[]` does not confuse the splice.
    r.structured_output = Some(json!({"messages": []}));
    for text in [
        r.to_json(Status::Success, None),
        r.to_json_line(Status::Success, None),
    ] {
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{text}");
        assert_eq!(v["structured_output"], json!({"messages": []}));
    }
    // Each run gets its own id.
    assert_ne!(
        RunRecord::new("m", PathBuf::from("/w"), vec![]).session_id,
        r.session_id
    );
}

#[test]
fn the_spliced_transcript_is_allocated_once_at_its_size() {
    // One byte short and the last push doubles the capacity: for a long run, the
    // largest string it makes held twice (the long session's peak memory).
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
    for n in 0..50 {
        r.messages
            .push(Entry::new(Message::user_text("x".repeat(1000 + n))));
    }
    for doc in [
        r.to_json(Status::Success, None),
        r.to_json_line(Status::Success, None),
    ] {
        assert_eq!(doc.capacity(), doc.len(), "{}", &doc[..80]);
    }
}
