//! Unit tests of `transcript.rs`: the checked-in schema, and reading back what is written.

use super::*;
use crate::tools::paths::ChangeKind;
use std::path::PathBuf;

#[test]
fn transcript_schema_is_checked_in() {
    check_schema("transcript", &transcript_schema());
}

/// A schema with one more field than the checked-in file (what a field added to the type
/// without regenerating gives) fails the check.
#[test]
fn a_field_added_without_regenerating_fails_the_check() {
    let mut schema: Value = serde_json::from_str(&transcript_schema()).unwrap();
    schema["properties"]["added_later"] = serde_json::json!({"type": "integer"});
    let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    if std::env::var_os("AGENT_REGENERATE_SCHEMAS").is_some() {
        return; // regenerating: the file is being rewritten, not compared
    }
    let failed = std::panic::catch_unwind(|| check_schema("transcript", &text)).is_err();
    assert!(failed, "a schema with an added field passed the check");
}

/// Every key a transcript is written with is a property of the schema: the schema is the
/// type's, so a field added to the type shows in it (and, through the test above, in the
/// checked-in file).
#[test]
fn every_written_key_is_in_the_schema() {
    let schema: Value = serde_json::from_str(&transcript_schema()).unwrap();
    let t = Transcript {
        journal: Some("x.journal".into()),
        provider: Some("anthropic".into()),
        written_by: Some("agent batch (the agent did not run)".into()),
        skills: vec![Default::default()],
        system_prompt: Some("sys".into()),
        ..Transcript::default()
    };
    let Value::Object(doc) = serde_json::to_value(&t).unwrap() else {
        panic!("a transcript is an object");
    };
    for key in doc.keys() {
        assert!(
            schema["properties"].get(key).is_some(),
            "{key} is not in the schema"
        );
    }
    assert_eq!(
        schema["properties"].as_object().unwrap().len(),
        doc.len(),
        "the schema has a property the transcript does not write"
    );
}

/// A transcript read back and written again is the same document, byte for byte.
#[test]
fn a_written_transcript_reads_back_to_the_same_bytes() {
    use crate::model::protocol::{ContentBlock, Message, Role};
    use crate::record::RunRecord;
    use crate::record::history::Entry;
    use crate::record::outcome::Status;
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec!["ReadFile".into()]);
    r.record_message(Entry::new(Message::user_text("hi")));
    r.record_message(Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Text {
            text: "done".into(),
        }],
    }));
    let mut meta = Map::new();
    meta.insert("path".into(), "a.txt".into());
    meta.insert("change".into(), "created".into());
    r.record_call(
        ToolCallRecord {
            id: "t1".into(),
            name: "WriteFile".into(),
            input: serde_json::json!({"path": "a.txt", "x": 0.1}),
            metadata: CallMetadata::of_result(meta),
            changes: vec![FileChange {
                path: "a.txt".into(),
                change: ChangeKind::Created,
            }],
            ..ToolCallRecord::default()
        },
        None,
    );
    r.record_network(Network::Namespace {
        allow: vec!["example.com".into()],
        deny: vec![],
        dns: "none".into(),
    });
    for text in [
        r.to_json(Status::Success, None),
        r.to_json_line(Status::MaxTurns, None),
    ] {
        let t: Transcript = serde_json::from_str(&text).unwrap();
        assert_eq!(t.files_changed[0].change, ChangeKind::Created);
        assert_eq!(t.messages.len(), 2);
        let again = if text.contains('\n') {
            serde_json::to_string_pretty(&t).unwrap()
        } else {
            serde_json::to_string(&t).unwrap()
        };
        assert_eq!(again, text);
    }
}

/// A transcript without most fields (an older or hand-made one) reads, with defaults.
#[test]
fn missing_fields_read_as_defaults() {
    let t = Transcript::from_value(&serde_json::json!({"version": 1, "status": "odd"})).unwrap();
    assert_eq!(t.status, "odd");
    assert!(t.tool_calls.is_empty() && t.error.is_none() && t.network.is_none());
    let bad = Transcript::from_value(&serde_json::json!({"status": 3}));
    assert!(bad.unwrap_err().contains("not an agent transcript"));
}

/// `network` and `resumed_from` keep the key order of the `json!` objects they replace.
#[test]
fn network_and_resumed_from_keep_their_key_order() {
    let tiers = [
        (
            Network::Namespace {
                allow: vec!["a.com".into()],
                deny: vec![],
                dns: "none".into(),
            },
            serde_json::json!({"tier": "namespace", "allow": ["a.com"], "deny": [], "dns": "none"}),
        ),
        (
            Network::Landlock {
                tcp: "denied".into(),
            },
            serde_json::json!({"tier": "landlock", "tcp": "denied"}),
        ),
        (Network::Host, serde_json::json!({"tier": "host"})),
    ];
    for (tier, before) in tiers {
        let text = serde_json::to_string(&tier).unwrap();
        assert_eq!(text, before.to_string());
        assert_eq!(serde_json::from_str::<Network>(&text).unwrap(), tier);
    }
    let from = ResumedFrom {
        path: "/t.json".into(),
        num_turns: 2,
        ..ResumedFrom::default()
    };
    let before = serde_json::json!({"path": "/t.json", "session_id": null, "num_turns": 2,
        "status": "", "usage": null, "cost_usd": null});
    assert_eq!(serde_json::to_string(&from).unwrap(), before.to_string());
}

/// `unfinished` is typed in and out of a call's metadata, and the object keeps the text
/// the map alone wrote: keys sorted, an MCP call's `server` and `mcp_tool` beside it.
#[test]
fn call_metadata_types_unfinished_and_keeps_its_text() {
    let text = r#"{"mcp_tool":"t","server":"s","unfinished":true}"#;
    let m: CallMetadata = serde_json::from_str(text).unwrap();
    assert!(m.unfinished);
    assert_eq!(m.rest.len(), 2);
    assert_eq!(serde_json::to_string(&m).unwrap(), text);
    // A value other than `true` is not taken for one, and stays as written.
    let odd = r#"{"exit_code":0,"unfinished":"yes"}"#;
    let m: CallMetadata = serde_json::from_str(odd).unwrap();
    assert!(!m.unfinished);
    assert_eq!(serde_json::to_string(&m).unwrap(), odd);
}
