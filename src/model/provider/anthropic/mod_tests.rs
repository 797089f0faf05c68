//! Unit tests of `mod.rs`.

use super::*;
use crate::model::protocol::{ContentBlock, Message, Role};
use crate::record::history::Entry;
use serde_json::json;

fn request_body(
    request: &TurnRequest<'_>,
    tool_choice: Option<ToolChoice>,
    thinking_budget: Option<u32>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    write_body(request, tool_choice, thinking_budget, &mut out)?;
    Ok(out)
}

#[test]
fn breakpoints_only_on_last_tool_and_newest_message() {
    let messages: Vec<_> = [
        Message::user_text("task"),
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "ReadFile".into(),
                input: json!({"path": "a"}),
            }],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: "x".into(),
                is_error: false,
            }],
        },
    ]
    .into_iter()
    .map(Entry::new)
    .collect();
    let tools = vec![json!({"name": "A"}), json!({"name": "B"})];
    let req = TurnRequest {
        model: "m",
        max_tokens: 1,
        system: "",
        messages: &messages,
        tools: &tools,
    };
    let body: Value = serde_json::from_slice(&request_body(&req, None, None).unwrap()).unwrap();
    assert!(body.get("system").is_none());
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 1);
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
    assert!(
        body["messages"][0]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert!(
        body["messages"][1]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        body["messages"][2]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    // The history itself is untouched.
    assert_eq!(
        serde_json::from_str::<Value>(messages[2].json()).unwrap()["content"][0]
            .get("cache_control"),
        None
    );
}

#[test]
fn a_thinking_budget_is_sent_with_max_tokens_raised_by_it() {
    let messages = vec![Entry::new(Message::user_text("task"))];
    let req = TurnRequest {
        model: "claude-sonnet-4-5",
        max_tokens: 8192,
        system: "",
        messages: &messages,
        tools: &[],
    };
    let body = |budget| -> Value {
        serde_json::from_slice(&request_body(&req, None, budget).unwrap()).unwrap()
    };
    let on = body(Some(4096));
    assert_eq!(
        on["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert_eq!(on["max_tokens"], 8192 + 4096);
    let off = body(None);
    assert!(off.get("thinking").is_none());
    assert_eq!(off["max_tokens"], 8192);
    assert_eq!(body(Some(u32::MAX))["max_tokens"], u32::MAX);
}

#[test]
fn effort_levels_map_to_rising_budgets_and_the_flag_wins() {
    let args = |thinking_budget, effort| RequestArgs {
        thinking_budget,
        effort,
        ..RequestArgs::default()
    };
    assert_eq!(thinking_budget(&args(None, None)), None);
    let budgets: Vec<_> = [Effort::Low, Effort::Medium, Effort::High]
        .map(|e| thinking_budget(&args(None, Some(e))).unwrap())
        .to_vec();
    assert_eq!(budgets, [4096, 8192, 16384]);
    assert!(budgets.iter().all(|b| *b >= MIN_THINKING_BUDGET));
    assert_eq!(thinking_budget(&args(Some(2000), None)), Some(2000));
}

#[test]
fn betas_are_sent_once_each_in_order() {
    let mut config = HttpConfig::new("http://x", "k");
    config.request.betas = vec![
        "context-1m-2025-08-07".into(),
        INTERLEAVED_THINKING_BETA.into(),
        " context-1m-2025-08-07".into(),
        INTERLEAVED_THINKING_BETA.into(),
        "".into(),
    ];
    let headers = AnthropicWire::default().headers(&config);
    let betas: Vec<_> = headers
        .iter()
        .filter(|(n, _)| *n == "anthropic-beta")
        .collect();
    assert_eq!(
        betas,
        [&(
            "anthropic-beta",
            format!("context-1m-2025-08-07,{INTERLEAVED_THINKING_BETA}")
        )]
    );
    config.request.betas.clear();
    assert!(
        AnthropicWire::default()
            .headers(&config)
            .iter()
            .all(|(n, _)| *n != "anthropic-beta")
    );
}

/// The head is serialised once a run: every turn's body is the same bytes as one
/// built afresh, and only a changed model (a fallback) makes a new head.
#[test]
fn the_request_head_is_made_once_and_remade_only_when_it_changes() {
    use std::io::Read;
    let wire = AnthropicWire::default();
    let config = HttpConfig::new("http://x", "k");
    let tools = vec![json!({"name": "A", "input_schema": {"type": "object"}})];
    let mut messages = vec![Entry::new(Message::user_text("task"))];
    let sent = |model: &str, messages: &[std::sync::Arc<Entry>]| -> Vec<u8> {
        let req = TurnRequest {
            model,
            max_tokens: 100,
            system: "be brief",
            messages,
            tools: &tools,
        };
        let mut body = Body::default();
        wire.body(&req, &config, &mut body).unwrap();
        let mut bytes = Vec::new();
        body.reader().read_to_end(&mut bytes).unwrap();
        assert_eq!(
            bytes,
            request_body(&req, None, None).unwrap(),
            "as made afresh"
        );
        bytes
    };
    let made = || HEADS_MADE.with(|n| n.get());
    let before = made();
    for turn in 0..5 {
        messages.push(Entry::new(Message::user_text(format!("turn {turn}"))));
        sent("claude-sonnet-4-5", &messages);
    }
    // 5 turns: one head by the wire, and one for each comparison body.
    assert_eq!(made() - before, 1 + 5);
    let on_fallback = sent("claude-haiku-4-5", &messages);
    assert_eq!(made() - before, 2 + 6, "a new model, a new head");
    let v: Value = serde_json::from_slice(&on_fallback).unwrap();
    assert_eq!(v["model"], "claude-haiku-4-5");
    assert_eq!(v["messages"].as_array().unwrap().len(), 6);
}

#[test]
fn claude_3_models_do_not_interleave_thinking() {
    assert!(interleaves_thinking("claude-sonnet-4-5"));
    assert!(interleaves_thinking("claude-opus-4-1-20250805"));
    assert!(interleaves_thinking("anthropic/claude-haiku-4-5"));
    assert!(!interleaves_thinking("claude-3-7-sonnet-20250219"));
    assert!(!interleaves_thinking("bedrock/Claude-3-7-Sonnet"));
}
