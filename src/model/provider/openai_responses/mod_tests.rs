//! Unit tests of `mod.rs`: the request body and the history as input items.

use super::*;
use crate::record::history::Entry;
use std::sync::Arc;

const ITEM: &str =
    r#"{"type":"reasoning", "id":"rs_1","summary":[],"encrypted_content":"e\u00e9=="}"#;

fn history() -> Vec<Arc<Entry>> {
    [
        Message::user_text("fix it"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Reasoning {
                    summary: String::new(),
                    item: ITEM.into(),
                },
                ContentBlock::Thinking {
                    thinking: "another provider's".into(),
                    signature: "sig".into(),
                },
                ContentBlock::Text {
                    text: "Looking.".into(),
                },
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "ReadFile".into(),
                    input: json!({"path": "a"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
                ContentBlock::Text {
                    text: "and then?".into(),
                },
            ],
        },
    ]
    .into_iter()
    .map(Entry::new)
    .collect()
}

fn body(model: &str, options: &Options<'_>, tools: &[Value]) -> (Vec<u8>, Value) {
    let messages = history();
    let request = TurnRequest {
        model,
        max_tokens: 1234,
        system: "be brief",
        messages: &messages,
        tools,
    };
    let mut out = Vec::new();
    write_body(&request, options, &mut out);
    let parsed = serde_json::from_slice(&out).unwrap();
    (out, parsed)
}

fn options(effort: Option<Effort>) -> Options<'static> {
    Options {
        tool_choice: Some(ToolChoice::Required),
        effort,
        cache_key: "session-1",
    }
}

#[test]
fn the_body_carries_every_field_of_a_stateless_request() {
    let tools = [json!({"name": "ReadFile", "description": "reads",
                        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})];
    let (_, b) = body("gpt-5-codex", &options(Some(Effort::High)), &tools);
    assert_eq!(b["model"], "gpt-5-codex");
    assert_eq!(b["stream"], true);
    assert_eq!(b["store"], false);
    assert_eq!(b["instructions"], "be brief");
    assert_eq!(b["max_output_tokens"], 1234);
    assert_eq!(b["parallel_tool_calls"], true);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["reasoning"], json!({"effort": "high"}));
    assert_eq!(b["prompt_cache_key"], "session-1");
    assert_eq!(b["tool_choice"], "required");
    assert_eq!(
        b["tools"],
        json!([{"type": "function", "name": "ReadFile", "description": "reads",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": false}])
    );
    assert_eq!(
        b["input"],
        json!([
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "fix it"}]},
            serde_json::from_str::<Value>(ITEM).unwrap(),
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Looking."}]},
            {"type": "function_call", "call_id": "call_1", "name": "ReadFile",
             "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call_output", "call_id": "call_1",
             "output": "Error: no such file"},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "and then?"}]},
        ])
    );
}

#[test]
fn a_reasoning_item_goes_back_byte_for_byte() {
    let (raw, _) = body("o4-mini", &options(None), &[]);
    let raw = String::from_utf8(raw).unwrap();
    assert!(raw.contains(ITEM), "{raw}");
}

#[test]
fn no_tools_means_no_tool_choice_and_no_effort_means_no_reasoning_field() {
    let (_, b) = body("gpt-5", &options(None), &[]);
    assert!(b.get("tools").is_none() && b.get("tool_choice").is_none());
    assert!(b.get("reasoning").is_none());
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn models_that_do_not_reason_are_not_asked_for_encrypted_reasoning() {
    let (_, b) = body("gpt-4.1-mini", &options(None), &[]);
    assert!(b.get("include").is_none(), "{b}");
    let (_, b) = body("openai/gpt-4o", &options(Some(Effort::Low)), &[]);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    let (_, b) = body(
        "m",
        &Options {
            cache_key: "",
            ..options(None)
        },
        &[],
    );
    assert!(b.get("prompt_cache_key").is_none());
}

#[test]
fn the_anthropic_form_of_a_message_leaves_the_reasoning_item_out() {
    let entry = &history()[1];
    assert!(!entry.json().contains("rs_1"), "{}", entry.json());
    // The transcript (and so --resume) keeps it.
    assert!(entry.transcript_json().contains("encrypted_content"));
    let back = entry.message();
    assert!(matches!(&back.content[0], ContentBlock::Reasoning { item, .. } if item == ITEM));
}

#[test]
fn an_invalid_stored_item_is_not_spliced_into_the_body() {
    let m = Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Reasoning {
            summary: String::new(),
            item: "{broken".into(),
        }],
    };
    assert!(input_items(&m).is_empty());
}
