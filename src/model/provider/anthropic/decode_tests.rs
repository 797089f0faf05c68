//! Unit tests of the Anthropic stream decoder: fixtures, fragment assembly, failures.

use super::*;
use crate::model::protocol::Role;
use crate::model::provider::sse::tests::{Heard, PiecesReader, fixture, listen};
use serde_json::json;
use std::io;

fn read_with_notices(reader: impl BufRead) -> (Result<Turn, StreamFailure>, Heard) {
    listen(|on_notice| read_turn(reader, on_notice))
}

fn read(bytes: &[u8]) -> Result<Turn, StreamFailure> {
    read_with_notices(bytes).0
}

/// A stream from `(type, json)` pairs, framed the Anthropic way.
fn stream(events: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for data in events {
        let v: Value = serde_json::from_str(data).unwrap();
        out.push_str(&format!(
            "event: {}\ndata: {data}\n\n",
            v["type"].as_str().unwrap()
        ));
    }
    out.into_bytes()
}

const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":10,"output_tokens":1}}}"#;
const STOP_TOOL_USE: &str =
    r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#;
const END: &str = r#"{"type":"message_stop"}"#;

fn tool_start(index: usize, id: &str) -> String {
    format!(
        r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"{id}","name":"Bash","input":{{}}}}}}"#
    )
}

fn json_delta(index: usize, fragment: &str) -> String {
    let delta = json!({"type":"content_block_delta","index":index,
        "delta":{"type":"input_json_delta","partial_json":fragment}});
    delta.to_string()
}

fn block_stop(index: usize) -> String {
    format!(r#"{{"type":"content_block_stop","index":{index}}}"#)
}

#[test]
fn text_turn() {
    let (turn, heard) = read_with_notices(&fixture("text_turn.sse")[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.id, "msg_text_1");
    assert_eq!(turn.model, "claude-test-1");
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert_eq!(turn.message.role, Role::Assistant);
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::Text {
            text: "All tests pass now — done.".into()
        }]
    );
    assert!(turn.calls.is_empty());
    assert_eq!(heard.text, "All tests pass now — done.");
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 9,
            cache_creation_input_tokens: 7,
            cache_read_input_tokens: 11,
            reasoning_output_tokens: 0,
            unknown: false
        }
    );
}

#[test]
fn tool_turn_with_thinking_unknown_blocks_and_fragments() {
    let bytes = fixture("tool_turn_fragmented.sse");
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    let read_input = json!({"path": "src/lib.rs", "limit": 20, "note": "ü\n"});
    assert_eq!(
        turn.message.content,
        vec![
            ContentBlock::Thinking {
                thinking: "The test fails; read both files.".into(),
                signature: "c2lnLTE=".into()
            },
            ContentBlock::Text {
                text: "Reading the files.".into()
            },
            ContentBlock::ToolUse {
                id: "toolu_read_a".into(),
                name: "ReadFile".into(),
                input: read_input.clone()
            },
            ContentBlock::ToolUse {
                id: "toolu_glob_b".into(),
                name: "Glob".into(),
                input: json!({})
            },
        ]
    );
    let calls = vec![
        PendingCall {
            id: "toolu_read_a".into(),
            name: "ReadFile".into(),
            input: Ok(read_input),
        },
        PendingCall {
            id: "toolu_glob_b".into(),
            name: "Glob".into(),
            input: Ok(json!({})),
        },
    ];
    assert_eq!(turn.calls, calls);
    assert_eq!(
        heard.ready, calls,
        "each call is announced when its block closes"
    );
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(
        turn.usage.input_tokens, 905,
        "message_delta input overwrites"
    );
    assert_eq!(turn.usage.output_tokens, 87);
    assert_eq!(
        turn.usage.cache_read_input_tokens, 11,
        "absent counts are kept"
    );

    // Read boundaries never change the outcome.
    for cut in (0..=bytes.len()).step_by(7) {
        let (split, split_heard) = read_with_notices(PiecesReader::split_at(&bytes, &[cut]));
        assert_eq!(split.unwrap(), turn, "split at {cut}");
        assert_eq!(split_heard, heard);
    }
}

#[test]
fn tool_ready_is_heard_before_the_rest_of_the_stream() {
    // A reader that fails after the first tool block: ToolReady must already be out.
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, "{}"),
        &block_stop(0),
    ]);
    let (result, heard) = read_with_notices(&bytes[..]);
    assert!(matches!(result, Err(StreamFailure::Incomplete { .. })));
    assert_eq!(heard.ready.len(), 1);
    assert_eq!(heard.ready[0].input, Ok(json!({})));
}

#[test]
fn malformed_tool_input_is_an_error_call_with_empty_history_input() {
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, r#"{"command": "ls"#),
        &json_delta(0, r#"" "#),
        &json_delta(0, "x}"),
        &block_stop(0),
        STOP_TOOL_USE,
        END,
    ]);
    let turn = read(&bytes).unwrap();
    let err = turn.calls[0].input.clone().unwrap_err();
    assert!(err.contains("not valid JSON"), "{err}");
    assert!(
        err.contains("line 1 column"),
        "quotes serde's message: {err}"
    );
    assert!(
        err.contains(r#"{"command": "ls" x}"#),
        "quotes the input: {err}"
    );
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "Bash".into(),
            input: json!({})
        }]
    );
}

#[test]
fn non_object_tool_input_is_an_error() {
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, "[1, 2]"),
        &block_stop(0),
        STOP_TOOL_USE,
        END,
    ]);
    let turn = read(&bytes).unwrap();
    assert!(
        turn.calls[0]
            .input
            .clone()
            .unwrap_err()
            .contains("must be a JSON object")
    );
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "Bash".into(),
            input: json!({})
        }]
    );
}

#[test]
fn a_long_bad_input_is_quoted_only_in_part() {
    let long = format!("{{\"content\": \"{}", "y".repeat(5_000));
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, &long),
        &block_stop(0),
        STOP_TOOL_USE,
        END,
    ]);
    let err = read(&bytes).unwrap().calls[0].input.clone().unwrap_err();
    assert!(err.len() < 600, "{} chars", err.len());
    assert!(err.ends_with('…'));
}

#[test]
fn empty_fragments_mean_an_empty_object_and_caller_start_input_is_used() {
    let code_exec = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}}"#;
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, ""),
        &json_delta(0, ""),
        &block_stop(0),
        code_exec,
        &block_stop(1),
        STOP_TOOL_USE,
        END,
    ]);
    let turn = read(&bytes).unwrap();
    assert_eq!(turn.calls[0].input, Ok(json!({})));
    assert_eq!(turn.calls[1].input, Ok(json!({"command": "ls"})));
}

#[test]
fn oversized_tool_input_is_an_error_result_and_memory_stays_bounded() {
    // 9 MiB of input in 1 MiB fragments, then a normal call: the first is refused,
    // the second still works, and the stream is not failed.
    let chunk = "a".repeat(1024 * 1024);
    let mut events = vec![START.to_string(), tool_start(0, "t1")];
    events.push(json_delta(0, r#"{"command": ""#));
    for _ in 0..9 {
        events.push(json_delta(0, &chunk));
    }
    events.push(json_delta(0, r#""}"#));
    events.push(block_stop(0));
    events.push(tool_start(1, "t2"));
    events.push(json_delta(1, r#"{"command": "ls"}"#));
    events.push(block_stop(1));
    events.push(STOP_TOOL_USE.to_string());
    events.push(END.to_string());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let turn = read(&stream(&refs)).unwrap();
    let err = turn.calls[0].input.clone().unwrap_err();
    assert!(err.contains("more than the limit"), "{err}");
    assert_eq!(turn.calls[1].input, Ok(json!({"command": "ls"})));
    match &turn.message.content[0] {
        ContentBlock::ToolUse { input, .. } => assert_eq!(input, &json!({})),
        other => panic!("{other:?}"),
    }
}

#[test]
fn deeply_nested_tool_input_is_an_error_result() {
    let nested = format!(
        r#"{{"command": {}{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, &nested),
        &block_stop(0),
        STOP_TOOL_USE,
        END,
    ]);
    let turn = read(&bytes).unwrap();
    let err = turn.calls[0].input.clone().unwrap_err();
    assert!(err.contains("recursion limit"), "{err}");
}

#[test]
fn max_tokens_cut_tool_call_is_listed_with_an_error() {
    let bytes = stream(&[
        START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Writing."}}"#,
        &block_stop(0),
        &tool_start(1, "t1"),
        &json_delta(1, r#"{"command": "cat > big <<EOF"#),
        r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":50}}"#,
        END,
    ]);
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason, StopReason::MaxTokens);
    assert_eq!(turn.calls.len(), 1);
    let err = turn.calls[0].input.clone().unwrap_err();
    assert!(
        err.starts_with("the output was cut off by max_tokens"),
        "{err}"
    );
    assert_eq!(heard.ready, turn.calls);
    assert_eq!(
        turn.message.content,
        vec![
            ContentBlock::Text {
                text: "Writing.".into()
            },
            ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Bash".into(),
                input: json!({})
            }
        ]
    );
}

#[test]
fn error_event_fails_the_turn_and_overloaded_is_retryable() {
    let overloaded = r#"{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"} }"#;
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, "{}"),
        overloaded,
    ]);
    match read(&bytes) {
        Err(e @ StreamFailure::Api { .. }) => {
            assert!(e.is_retryable());
            assert_eq!(e.to_string(), "stream error overloaded_error: Overloaded");
        }
        other => panic!("{other:?}"),
    }
    let invalid = r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#;
    let err = read(&stream(&[START, invalid])).unwrap_err();
    assert!(!err.is_retryable());
    // An error event whose payload is not even JSON is still an error.
    let err = read(b"event: error\ndata: upstream exploded\n\n").unwrap_err();
    assert!(matches!(&err, StreamFailure::Api { message, .. } if message == "upstream exploded"));
}

#[test]
fn a_stream_that_ends_early_is_incomplete_and_retryable() {
    let bytes = stream(&[
        START,
        &tool_start(0, "t1"),
        &json_delta(0, "{}"),
        &block_stop(0),
        STOP_TOOL_USE,
    ]);
    let err = read(&bytes).unwrap_err();
    assert!(matches!(err, StreamFailure::Incomplete { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert!(err.to_string().contains("before message_stop"));
    // Empty body.
    assert!(matches!(read(b""), Err(StreamFailure::Incomplete { .. })));
    // message_stop without a stop_reason.
    let err = read(&stream(&[START, END])).unwrap_err();
    assert!(err.to_string().contains("without a stop_reason"), "{err}");
}

#[test]
fn read_errors_are_io_failures() {
    struct Reset(usize);
    impl io::Read for Reset {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "reset by peer",
                ));
            }
            self.0 = 0;
            let b = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";
            out[..b.len()].copy_from_slice(b);
            Ok(b.len())
        }
    }
    let err = read_turn(io::BufReader::new(Reset(1)), &mut |_| {}).unwrap_err();
    assert!(matches!(&err, StreamFailure::Io(e) if e.kind() == io::ErrorKind::ConnectionReset));
    assert!(err.is_retryable());
}

#[test]
fn undecodable_known_event_fails_clearly() {
    let bad = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n";
    let mut bytes = stream(&[START]);
    bytes.extend_from_slice(bad.as_bytes());
    let err = read(&bytes).unwrap_err();
    assert!(matches!(err, StreamFailure::Malformed { .. }), "{err:?}");
    assert!(!err.is_retryable());
    let msg = err.to_string();
    assert!(
        msg.contains("content_block_delta") && msg.contains("index"),
        "{msg}"
    );
    // Not JSON at all, under a known name.
    let err = read(b"event: message_start\ndata: {oops\n\n").unwrap_err();
    assert!(matches!(err, StreamFailure::Malformed { .. }), "{err:?}");
    // A tool_use block without id.
    let no_id = r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","name":"Bash","input":{}}}"#;
    assert!(matches!(
        read(&stream(&[START, no_id])),
        Err(StreamFailure::Malformed { .. })
    ));
}

#[test]
fn unknown_events_blocks_and_deltas_are_skipped() {
    let mut bytes = stream(&[
        START,
        r#"{"type":"brand_new_event","x":1}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
        &json_delta(0, r#"{"query":"x"}"#),
        &block_stop(0),
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}"#,
        r#"{"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"orphan"}}"#,
        &block_stop(1),
        &block_stop(7),
    ]);
    bytes.extend_from_slice(b"event: future\ndata: not json at all\n\n");
    bytes.extend_from_slice(&stream(&[
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        END,
    ]));
    let turn = read(&bytes).unwrap();
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::Text { text: "ok".into() }]
    );
    assert!(turn.calls.is_empty(), "server tools are not our calls");
    assert_eq!(
        turn.usage.output_tokens, 1,
        "a message_delta without usage keeps counts"
    );
}

#[test]
fn event_name_stands_in_for_a_missing_type() {
    let mut bytes = stream(&[
        START,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
    ]);
    bytes.extend_from_slice(b"event: message_stop\ndata: {}\n\n");
    assert_eq!(read(&bytes).unwrap().stop_reason, StopReason::EndTurn);
}

#[test]
fn redacted_thinking_is_kept_and_an_unclosed_thinking_block_dropped() {
    let bytes = stream(&[
        START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
        &block_stop(0),
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":3}}"#,
        END,
    ]);
    let turn = read(&bytes).unwrap();
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::RedactedThinking {
            data: "opaque".into()
        }]
    );
}

#[test]
fn read_turn_stops_at_message_stop_without_waiting_for_eof() {
    struct ThenFail(Vec<u8>, bool);
    impl io::Read for ThenFail {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.1 {
                panic!("read past message_stop");
            }
            self.1 = true;
            out[..self.0.len()].copy_from_slice(&self.0);
            Ok(self.0.len())
        }
    }
    let bytes = fixture("text_turn.sse");
    let turn = read_turn(
        io::BufReader::with_capacity(1 << 16, ThenFail(bytes, false)),
        &mut |_| {},
    );
    assert!(turn.is_ok());
}

/// A gateway (LiteLLM) that opens a tool_use block per argument fragment, all with one
/// id: the fragments are one call, announced once, answered once.
#[test]
fn consecutive_blocks_with_one_id_are_fragments_of_one_call() {
    let bytes = stream(&[
        START,
        &tool_start(0, "toolu_x"),
        &block_stop(0),
        &tool_start(1, "toolu_x"),
        &json_delta(1, r#"{"comm"#),
        &block_stop(1),
        &tool_start(2, "toolu_x"),
        &json_delta(2, r#"and": "ls"}"#),
        &block_stop(2),
        &tool_start(3, "toolu_y"),
        &json_delta(3, "{}"),
        &block_stop(3),
        STOP_TOOL_USE,
        END,
    ]);
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    let ids: Vec<&str> = turn.calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["toolu_x", "toolu_y"]);
    assert_eq!(turn.calls[0].input, Ok(json!({"command": "ls"})));
    assert_eq!(
        heard.ready, turn.calls,
        "each call announced once, in order"
    );
    assert_eq!(
        turn.message.content[0],
        ContentBlock::ToolUse {
            id: "toolu_x".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"})
        }
    );
    assert_eq!(turn.message.content.len(), 2);
    // The last fragment may also end the message.
    let bytes = stream(&[
        START,
        &tool_start(0, "toolu_x"),
        &json_delta(0, r#"{"command""#),
        &block_stop(0),
        &tool_start(1, "toolu_x"),
        &json_delta(1, r#": "ls"}"#),
        &block_stop(1),
        STOP_TOOL_USE,
        END,
    ]);
    let (turn, heard) = read_with_notices(&bytes[..]);
    assert_eq!(turn.unwrap().calls[0].input, Ok(json!({"command": "ls"})));
    assert_eq!(heard.ready.len(), 1);
}

/// An id used again for another call is a contradiction: the turn fails (retryably)
/// before the second call is announced, so no duplicate ever runs or is answered.
#[test]
fn an_id_used_for_two_calls_fails_the_turn_before_the_second_is_heard() {
    for events in [
        // The first call was whole.
        vec![
            START.to_string(),
            tool_start(0, "toolu_x"),
            json_delta(0, "{}"),
            block_stop(0),
            tool_start(1, "toolu_x"),
        ],
        // Another call came between.
        vec![
            START.to_string(),
            tool_start(0, "toolu_x"),
            json_delta(0, r#"{"a"#),
            block_stop(0),
            tool_start(1, "toolu_y"),
            block_stop(1),
            tool_start(2, "toolu_x"),
        ],
    ] {
        let mut events: Vec<&str> = events.iter().map(String::as_str).collect();
        events.extend([STOP_TOOL_USE, END]);
        let (result, heard) = read_with_notices(&stream(&events)[..]);
        let err = result.unwrap_err();
        assert!(
            matches!(&err, StreamFailure::Inconsistent { detail } if detail.contains("toolu_x")),
            "{err:?}"
        );
        assert!(err.is_retryable());
        let x = heard.ready.iter().filter(|c| c.id == "toolu_x").count();
        assert!(x <= 1, "{:?}", heard.ready);
    }
}

/// LiteLLM's `/v1/messages` reports 0 input tokens in message_start and the real counts
/// in message_delta; a zero never overwrites a count already known.
#[test]
fn the_latest_non_zero_usage_wins() {
    let start_zero = r#"{"type":"message_start","message":{"id":"m","model":"m","usage":{"input_tokens":0,"output_tokens":0}}}"#;
    let delta_real = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":1234,"output_tokens":56,"cache_read_input_tokens":0}}"#;
    let turn = read(&stream(&[start_zero, delta_real, END])).unwrap();
    assert_eq!(
        (turn.usage.input_tokens, turn.usage.output_tokens),
        (1234, 56)
    );
    let delta_zero = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":0,"output_tokens":7}}"#;
    let turn = read(&stream(&[START, delta_zero, END])).unwrap();
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (10, 7));
}

/// No usage anywhere (a gateway that drops it): unknown, not zero.
#[test]
fn a_stream_without_usage_has_unknown_usage() {
    let start = r#"{"type":"message_start","message":{"id":"m","model":"m"}}"#;
    let delta = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#;
    let turn = read(&stream(&[start, delta, END])).unwrap();
    assert!(turn.usage.unknown);
    assert!(!read(&stream(&[START, delta, END])).unwrap().usage.unknown);
}

/// LiteLLM's `/v1/messages` stream (fixtures/sse/README.md): the real counts come late.
#[test]
fn litellm_late_usage_fixture() {
    let turn = read(&fixture("anthropic_litellm_late_usage.sse")).unwrap();
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (27, 4));
    assert!(!turn.usage.unknown);
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
}

/// A turn of any wire is kept in a cassette as an Anthropic stream (`encode`): what it
/// reads back is the same message, usage and stop reason, the reasoning tokens an
/// OpenAI model reports included (they were lost: the Anthropic usage has no field for
/// them).
#[test]
fn encode_round_trips_a_turn_with_reasoning_tokens() {
    let mut turn = read(&fixture("tool_turn_fragmented.sse")).unwrap();
    turn.usage.reasoning_output_tokens = 32;
    let again = read(encode(&turn).as_bytes()).unwrap();
    assert_eq!(again.message, turn.message);
    assert_eq!(again.usage, turn.usage);
    assert_eq!(again.stop_reason, turn.stop_reason);
}
