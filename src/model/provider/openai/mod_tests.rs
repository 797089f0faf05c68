//! Unit tests of `mod.rs`.

use super::*;

fn request_body(
    request: &TurnRequest<'_>,
    base_url: &str,
    tool_choice: Option<ToolChoice>,
    effort: Option<Effort>,
) -> Vec<u8> {
    let mut out = Vec::new();
    write_body(request, base_url, tool_choice, effort, &mut out);
    out
}

#[test]
fn history_translates_to_chat_messages() {
    let history = vec![
        Message::user_text("fix it"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: "s".into(),
                },
                ContentBlock::Text {
                    text: "Looking.".into(),
                },
                ContentBlock::ToolUse {
                    id: "c1".into(),
                    name: "ReadFile".into(),
                    input: json!({"path": "a"}),
                },
                ContentBlock::ToolUse {
                    id: "c2".into(),
                    name: "Bash".into(),
                    input: json!({}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "1\tx".into(),
                    is_error: false,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "c2".into(),
                    content: "bad input".into(),
                    is_error: true,
                },
                ContentBlock::Text {
                    text: "the tests still fail".into(),
                },
            ],
        },
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "c3".into(),
                name: "Glob".into(),
                input: json!({"pattern": "*"}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "c3".into(),
                content: "a".into(),
                is_error: false,
            }],
        },
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "Done.".into(),
            }],
        },
    ];
    assert_eq!(
        Value::Array(chat_messages("be brief", &history)),
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "ReadFile", "arguments": "{\"path\":\"a\"}"}},
                {"id": "c2", "type": "function",
                 "function": {"name": "Bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "1\tx"},
            {"role": "tool", "tool_call_id": "c2", "content": "Error: bad input"},
            {"role": "user", "content": "the tests still fail"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c3", "type": "function",
                 "function": {"name": "Glob", "arguments": "{\"pattern\":\"*\"}"}}]},
            {"role": "tool", "tool_call_id": "c3", "content": "a"},
            {"role": "assistant", "content": "Done."}
        ])
    );
    assert!(chat_messages("", &[]).is_empty());
}

#[test]
fn request_body_has_functions_stream_options_and_the_right_token_field() {
    let messages = vec![crate::record::history::Entry::new(Message::user_text("hi"))];
    let request_body = |r: &TurnRequest<'_>, url: &str| -> Value {
        serde_json::from_slice(&request_body(r, url, None, None)).unwrap()
    };
    let tools = vec![json!({"name": "Glob", "description": "find files",
                                "input_schema": {"type": "object", "properties": {}}})];
    let request = TurnRequest {
        model: "qwen",
        max_tokens: 100,
        system: "",
        messages: &messages,
        tools: &tools,
    };
    assert_eq!(
        request_body(&request, "http://localhost:11434/v1"),
        json!({
            "model": "qwen",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100,
            "tools": [{"type": "function", "function": {"name": "Glob",
                "description": "find files",
                "parameters": {"type": "object", "properties": {}}}}]
        })
    );
    let body = request_body(
        &TurnRequest {
            tools: &[],
            ..request
        },
        "https://API.openai.com/v1/",
    );
    assert_eq!(body["max_completion_tokens"], 100);
    assert!(body.get("max_tokens").is_none() && body.get("tools").is_none());
    let with_system = request_body(
        &TurnRequest {
            system: "be brief",
            ..request
        },
        "http://localhost/v1",
    );
    assert_eq!(
        with_system["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    );
    assert!(!uses_max_completion_tokens(
        "https://api.openai.com.evil.test/v1"
    ));
    assert!(!uses_max_completion_tokens("http://user@127.0.0.1:8000/v1"));
    let with_effort: Value = serde_json::from_slice(&self::request_body(
        &request,
        "http://x",
        None,
        Some(Effort::High),
    ))
    .unwrap();
    assert_eq!(with_effort["reasoning_effort"], "high");
    assert!(with_system.get("reasoning_effort").is_none());
}

#[test]
fn error_bodies_of_the_usual_servers() {
    let p = |s: &str| OpenAiWire.parse_error_body(s.as_bytes());
    assert_eq!(
        p(
            r#"{"error":{"message":"Invalid model","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#
        ),
        Some((
            "invalid_request_error".into(),
            "Invalid model (code model_not_found)".into()
        ))
    );
    assert_eq!(
        p(r#"{"error":{"code":500,"message":"boom","type":"server_error"}}"#),
        Some(("server_error".into(), "boom (code 500)".into()))
    );
    assert_eq!(
        p(r#"{"error":{"message":"slow down","type":null,"code":"rate_limit_exceeded"}}"#),
        Some(("rate_limit_exceeded".into(), "slow down".into()))
    );
    assert_eq!(
        p(r#"{"error":"model 'x' not found"}"#),
        Some((String::new(), "model 'x' not found".into()))
    );
    assert_eq!(
        p(r#"{"object":"error","message":"too long","type":"BadRequestError","code":400}"#),
        Some(("BadRequestError".into(), "too long (code 400)".into()))
    );
    assert_eq!(p("<html>bad gateway</html>"), None);
    assert_eq!(p(r#"{"detail":"x"}"#), None);
}

#[test]
fn the_key_is_redacted_from_debug_output() {
    let c = HttpConfig::new("http://x", "sk-proj-secret-123");
    assert!(!format!("{c:?}").contains("sk-proj-secret-123"));
    let headers = OpenAiWire.headers(&HttpConfig::new("http://x", ""));
    assert!(
        headers.iter().all(|(name, _)| *name != "authorization"),
        "no key, no Authorization header: {headers:?}"
    );
    let headers = OpenAiWire.headers(&c);
    assert!(headers.contains(&("authorization", "Bearer sk-proj-secret-123".to_string())));
}
