//! Unit tests of the Responses stream decoder: recorded-shape fixtures split at every
//! byte offset, parallel calls announced early and in order, reasoning kept byte for
//! byte, `response.incomplete`, `response.failed` and `error` classes, unknown events.

use super::*;
use crate::model::protocol::{Message, Role};
use crate::model::provider::sse::tests::{Heard, PiecesReader, fixture, listen};
use serde_json::json;
use std::io::BufRead;

fn read_with_notices(reader: impl BufRead) -> (Result<Turn, StreamFailure>, Heard) {
    listen(|on_notice| read_responses_turn(reader, on_notice))
}

fn read(bytes: &[u8]) -> Result<Turn, StreamFailure> {
    read_with_notices(bytes).0
}

/// A stream of events from JSON payloads, each with its `event:` line.
fn stream(events: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for e in events {
        out.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap_or("")
        ));
    }
    out.into_bytes()
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
           "model": "gpt-5", "usage": usage}})
}

fn call_added(index: usize, id: &str, call_id: &str, name: &str) -> Value {
    json!({"type": "response.output_item.added", "output_index": index,
           "item": {"id": id, "type": "function_call", "arguments": "", "call_id": call_id,
                    "name": name}})
}

fn args_delta(index: usize, id: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "output_index": index,
           "item_id": id, "delta": delta})
}

fn args_done(index: usize, id: &str, args: &str) -> Value {
    json!({"type": "response.function_call_arguments.done", "output_index": index,
           "item_id": id, "arguments": args})
}

const REASONING_ITEM: &str = r#"{"type":"reasoning", "id":"rs_0001","summary":[{"type":"summary_text","text":"**Planning** the fix"}],"encrypted_content":"gAAAAABo_enc+/==\u00e9"}"#;

fn expected_fixture_turn() -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Reasoning {
                summary: "**Planning** the fix".into(),
                item: REASONING_ITEM.into(),
            },
            ContentBlock::Text {
                text: "Reading both files — naïve check.".into(),
            },
            ContentBlock::ToolUse {
                id: "call_A1".into(),
                name: "ReadFile".into(),
                input: json!({"path": "src/a.rs"}),
            },
            ContentBlock::ToolUse {
                id: "call_B2".into(),
                name: "ReadFile".into(),
                input: json!({"path": "src/b.rs"}),
            },
        ],
    }
}

#[test]
fn reasoning_text_and_parallel_calls_fixture() {
    let (turn, heard) = read_with_notices(&fixture("responses_reasoning_calls.sse")[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.id, "resp_0001");
    assert_eq!(turn.model, "gpt-5-codex");
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(turn.message, expected_fixture_turn());
    assert_eq!(heard.text, "Reading both files — naïve check.");
    // Each call is announced when its arguments are done, before the response ends.
    assert_eq!(heard.order, "TTTRR");
    assert_eq!(
        heard
            .ready
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        ["call_A1", "call_B2"]
    );
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 176,
            output_tokens: 300,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1024,
            reasoning_output_tokens: 256,
            unknown: false,
        }
    );
}

#[test]
fn fixtures_split_at_every_byte_offset() {
    for name in ["responses_reasoning_calls.sse", "responses_incomplete.sse"] {
        let bytes = fixture(name);
        let whole = read(&bytes).unwrap();
        for cut in 1..bytes.len() {
            let (turn, heard) = read_with_notices(PiecesReader::split_at(&bytes, &[cut]));
            assert_eq!(turn.unwrap(), whole, "{name} cut at {cut}");
            assert_eq!(heard.ready, whole.calls, "{name} cut at {cut}");
        }
        let (turn, _) = read_with_notices(PiecesReader::chunks(&bytes, 1));
        assert_eq!(turn.unwrap(), whole, "{name} byte by byte");
    }
}

#[test]
fn incomplete_by_max_output_tokens_is_a_max_tokens_stop_with_the_cut_call_failed() {
    let turn = read(&fixture("responses_incomplete.sse")).unwrap();
    assert_eq!(turn.stop_reason, StopReason::MaxTokens);
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].id, "call_W");
    assert_eq!(turn.calls[0].input, Err(CUT_OFF_BY_MAX_TOKENS.to_string()));
    assert_eq!(
        turn.message.content[0],
        ContentBlock::Text {
            text: "Writing it.".into()
        }
    );
    // The history carries `{}` for the call that did not parse.
    assert_eq!(
        turn.message.content[1],
        ContentBlock::ToolUse {
            id: "call_W".into(),
            name: "WriteFile".into(),
            input: json!({})
        }
    );
}

#[test]
fn incomplete_by_content_filter_is_a_refusal() {
    let turn = read(&stream(&[
        json!({"type": "response.incomplete", "response": {
        "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}}),
    ]))
    .unwrap();
    assert_eq!(turn.stop_reason, StopReason::Refusal);
    assert!(turn.usage.unknown);
}

#[test]
fn a_later_call_done_first_waits_for_the_earlier_one() {
    let (turn, heard) = read_with_notices(
        &stream(&[
            call_added(0, "fc_a", "call_a", "Glob"),
            call_added(1, "fc_b", "call_b", "Grep"),
            args_delta(0, "fc_a", "{\"pattern\""),
            args_done(1, "fc_b", "{\"pattern\":\"x\"}"),
            args_delta(0, "fc_a", ":\"*\"}"),
            args_done(0, "fc_a", "{\"pattern\":\"*\"}"),
            completed(json!({"input_tokens": 5, "output_tokens": 3})),
        ])[..],
    );
    let turn = turn.unwrap();
    assert_eq!(heard.order, "RR");
    assert_eq!(heard.ready[0].id, "call_a");
    assert_eq!(heard.ready[1].id, "call_b");
    assert_eq!(turn.calls, heard.ready);
    assert_eq!(turn.calls[1].input, Ok(json!({"pattern": "x"})));
}

#[test]
fn calls_without_done_events_are_completed_at_the_end() {
    let turn = read(&stream(&[
        call_added(0, "fc_a", "call_a", "Glob"),
        args_delta(0, "fc_a", "{\"pattern\":"),
        args_delta(0, "fc_a", "\"*\"}"),
        completed(json!({"input_tokens": 5, "output_tokens": 3})),
    ]))
    .unwrap();
    assert_eq!(turn.calls[0].input, Ok(json!({"pattern": "*"})));
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
}

#[test]
fn broken_arguments_are_an_error_result_not_a_failed_turn() {
    let turn = read(&stream(&[
        call_added(0, "fc_a", "call_a", "Glob"),
        args_done(0, "fc_a", "{\"pattern\":"),
        completed(json!({"input_tokens": 5, "output_tokens": 3})),
    ]))
    .unwrap();
    let err = turn.calls[0].input.clone().unwrap_err();
    assert!(err.contains("not valid JSON"), "{err}");
}

#[test]
fn repeated_or_missing_call_ids_get_fresh_ones() {
    let turn = read(&stream(&[
        call_added(0, "fc_a", "call_same", "Glob"),
        args_done(0, "fc_a", "{}"),
        call_added(1, "fc_b", "call_same", "Glob"),
        args_done(1, "fc_b", "{}"),
        call_added(2, "fc_c", "", "Glob"),
        args_done(2, "fc_c", "{}"),
        completed(json!({})),
    ]))
    .unwrap();
    let ids: Vec<&str> = turn.calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids[0], "call_same");
    assert!(ids[1].starts_with("call_agent_") && ids[2].starts_with("call_agent_"));
    assert_ne!(ids[1], ids[2]);
}

#[test]
fn failed_responses_and_error_events_map_to_retry_classes() {
    let failed = |code: &str| {
        read(&stream(&[
            json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": code, "message": "nope"}}}),
        ]))
        .unwrap_err()
    };
    for (code, class, retryable) in [
        ("server_error", "api_error", true),
        ("rate_limit_exceeded", "rate_limit_error", true),
        ("server_is_overloaded", "overloaded_error", true),
        ("invalid_prompt", "invalid_request_error", false),
        ("context_length_exceeded", "invalid_request_error", false),
        ("insufficient_quota", "billing_error", false),
        ("something_new", "something_new", true),
    ] {
        let f = failed(code);
        match &f {
            StreamFailure::Api {
                error_type,
                message,
            } => {
                assert_eq!(error_type, class, "{code}");
                assert!(message.starts_with("nope"), "{message}");
            }
            other => panic!("{code}: {other:?}"),
        }
        assert_eq!(f.is_retryable(), retryable, "{code}");
    }
    let error = read(&stream(&[
        json!({"type": "error", "code": "rate_limit_exceeded",
        "message": "slow down", "param": null, "sequence_number": 3}),
    ]))
    .unwrap_err();
    assert!(
        matches!(&error, StreamFailure::Api { error_type, message }
            if error_type == "rate_limit_error" && message.contains("slow down")),
        "{error:?}"
    );
}

#[test]
fn a_stream_ending_before_completed_is_incomplete_and_retried() {
    let bytes = fixture("responses_reasoning_calls.sse");
    let text = String::from_utf8(bytes).unwrap();
    let cut = text.find("event: response.completed").unwrap();
    let e = read(&text.as_bytes()[..cut]).unwrap_err();
    assert!(matches!(e, StreamFailure::Incomplete { .. }), "{e:?}");
    assert!(e.is_retryable());
}

#[test]
fn unknown_events_and_hosted_items_are_skipped() {
    let turn = read(&stream(&[
        json!({"type": "response.queued"}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}}),
        json!({"type": "response.web_search_call.completed", "output_index": 0}),
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"id": "ws_1", "type": "web_search_call", "status": "completed"}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1",
               "content_index": 0, "delta": "hi"}),
        json!({"type": "response.output_text.annotation.added", "output_index": 1}),
        completed(json!({"input_tokens": 1, "output_tokens": 1})),
    ]))
    .unwrap();
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::Text { text: "hi".into() }]
    );
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
}

#[test]
fn a_refusal_is_the_text_and_a_refusal_stop() {
    let turn = read(&stream(&[
        json!({"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_1",
               "content_index": 0, "delta": "I can't help with that."}),
        completed(json!({})),
    ]))
    .unwrap();
    assert_eq!(turn.stop_reason, StopReason::Refusal);
}

#[test]
fn text_only_in_the_done_item_is_kept() {
    let turn = read(&stream(&[
        json!({"type": "response.output_item.done", "output_index": 0, "item": {
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "whole"}]}}),
        completed(json!({})),
    ]))
    .unwrap();
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::Text {
            text: "whole".into()
        }]
    );
}

#[test]
fn an_unfinished_reasoning_item_is_left_out() {
    let turn = read(&stream(&[
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
               "item_id": "rs_1", "summary_index": 0, "delta": "thinking"}),
        json!({"type": "response.incomplete", "response": {
            "incomplete_details": {"reason": "max_output_tokens"}}}),
    ]))
    .unwrap();
    assert!(turn.message.content.is_empty());
    assert_eq!(turn.stop_reason, StopReason::MaxTokens);
}

#[test]
fn a_malformed_event_fails_the_turn() {
    let e = read(b"event: response.output_text.delta\ndata: {not json\n\n").unwrap_err();
    assert!(matches!(e, StreamFailure::Malformed { .. }), "{e:?}");
}

#[test]
fn encode_round_trips_a_turn_and_keeps_reasoning_bytes() {
    let turn = read(&fixture("responses_reasoning_calls.sse")).unwrap();
    let again = read(encode(&turn).as_bytes()).unwrap();
    assert_eq!(again.message, turn.message);
    assert_eq!(again.usage, turn.usage);
    assert_eq!(again.stop_reason, turn.stop_reason);
    let cut = read(&fixture("responses_incomplete.sse")).unwrap();
    assert_eq!(
        read(encode(&cut).as_bytes()).unwrap().stop_reason,
        StopReason::MaxTokens
    );
}

/// Every stop reason the decoder gives survives decode → encode → decode: an
/// `incomplete` for another reason than `max_output_tokens` (the fuzzer's
/// `responses_turn` find) and a refusal were written as `response.completed`, and came
/// back as `tool_use` or `end_turn`.
#[test]
fn encode_round_trips_every_stop_reason() {
    let text = || {
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
               "content_index": 0, "delta": "partial"})
    };
    let ends = [
        (
            "incomplete",
            vec![
                text(),
                json!({"type": "response.incomplete", "response": {}}),
            ],
        ),
        (
            "other reason, after a call",
            vec![
                call_added(0, "fc_a", "call_a", "Glob"),
                args_done(0, "fc_a", "{\"pattern\":\"*\"}"),
                json!({"type": "response.incomplete", "response": {
                    "incomplete_details": {"reason": "server_overloaded"}}}),
            ],
        ),
        (
            "refused text",
            vec![
                json!({"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_1",
                       "content_index": 0, "delta": "I can't help with that."}),
                completed(json!({})),
            ],
        ),
        (
            "content filter",
            vec![
                text(),
                json!({"type": "response.incomplete", "response": {
            "incomplete_details": {"reason": "content_filter"}}}),
            ],
        ),
        (
            "max tokens",
            vec![
                text(),
                json!({"type": "response.incomplete", "response": {
            "incomplete_details": {"reason": "max_output_tokens"}}}),
            ],
        ),
        ("end turn", vec![text(), completed(json!({}))]),
        (
            "tool use",
            vec![
                call_added(0, "fc_a", "call_a", "Glob"),
                args_done(0, "fc_a", "{\"pattern\":\"*\"}"),
                completed(json!({})),
            ],
        ),
    ];
    let mut seen = Vec::new();
    for (name, events) in ends {
        let turn = read(&stream(&events)).unwrap();
        let again = read(encode(&turn).as_bytes()).unwrap();
        assert_eq!(again.stop_reason, turn.stop_reason, "{name}");
        assert_eq!(again.message, turn.message, "{name}");
        seen.push(turn.stop_reason);
    }
    assert_eq!(
        seen,
        [
            StopReason::Other("incomplete".into()),
            StopReason::Other("server_overloaded".into()),
            StopReason::Refusal,
            StopReason::Refusal,
            StopReason::MaxTokens,
            StopReason::EndTurn,
            StopReason::ToolUse,
        ]
    );
}
