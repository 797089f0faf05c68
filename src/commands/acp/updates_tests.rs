use super::*;
use crate::run::event::{AssistantMessage, ToolFinished, ToolStarted, Verbatim};

fn ws() -> &'static Path {
    Path::new("/ws")
}

#[test]
fn an_assistant_message_gives_its_text_and_thinking_in_order_and_no_tool_blocks() {
    let message = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "one"},
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
        {"type": "text", "text": "two"},
    ]});
    let e = RunEvent::AssistantMessage(AssistantMessage {
        turn: 1,
        model: "m".into(),
        stop_reason: "tool_use".into(),
        usage: Default::default(),
        message: Verbatim(message.to_string()),
    });
    let u = updates(&e, false, ws());
    let kinds: Vec<&str> = u
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_thought_chunk",
            "agent_message_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(u[2]["content"]["text"], "two");
    // A sub-agent's messages are not the session's.
    assert!(updates(&e, true, ws()).is_empty());
}

#[test]
fn a_file_edit_is_a_diff_at_its_absolute_path() {
    let e = RunEvent::ToolStarted(ToolStarted {
        turn: 1,
        id: "e1".into(),
        name: "EditFile".into(),
        input: Some(json!({"path": "src/a.rs", "old_string": "a", "new_string": "b"})),
    });
    let u = &updates(&e, false, ws())[0];
    assert_eq!(u["sessionUpdate"], "tool_call");
    assert_eq!(u["kind"], "edit");
    assert_eq!(u["status"], "pending", "pending until it passed the gate");
    assert_eq!(u["locations"], json!([{"path": "/ws/src/a.rs"}]));
    assert_eq!(
        u["content"],
        json!([{"type": "diff", "path": "/ws/src/a.rs", "oldText": "a", "newText": "b"}])
    );
}

#[test]
fn a_call_that_passed_the_gate_is_in_progress() {
    let e = RunEvent::ToolRunning(crate::run::event::ToolRunning {
        turn: 1,
        id: "r1".into(),
        name: "Bash".into(),
    });
    assert_eq!(
        updates(&e, false, ws()),
        [json!({"sessionUpdate": "tool_call_update", "toolCallId": "r1", "status": "in_progress"})]
    );
}

#[test]
fn a_denied_or_failed_call_ends_failed() {
    let end = |is_error, denied| {
        let e = RunEvent::ToolFinished(ToolFinished {
            turn: 1,
            id: "x".into(),
            name: "Bash".into(),
            is_error,
            denied,
            duration_ms: 1,
            content: "out".into(),
            content_truncated: false,
        });
        updates(&e, false, ws())[0]["status"].clone()
    };
    assert_eq!(end(false, false), "completed");
    assert_eq!(end(true, false), "failed");
    assert_eq!(end(true, true), "failed");
}

#[test]
fn titles_and_kinds() {
    assert_eq!(
        title("Bash", &json!({"command": "cargo test"})),
        "Bash cargo test"
    );
    assert_eq!(
        title("Grep", &json!({"pattern": "fn main"})),
        "Grep fn main"
    );
    assert_eq!(title("mcp__s__t", &json!({})), "mcp__s__t");
    assert_eq!(kind("ReadFile"), "read");
    assert_eq!(kind("mcp__s__t"), "other");
}
