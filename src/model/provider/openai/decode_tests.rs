//! Unit tests of the chat-completions stream decoder: fixtures, fragment assembly by
//! index, finish reasons, failures.

use super::*;
use crate::model::protocol::{Message, Role};
use crate::model::provider::sse::tests::{Heard, PiecesReader, fixture, listen};
use serde_json::json;
use std::io;

fn read_with_notices(reader: impl BufRead) -> (Result<Turn, StreamFailure>, Heard) {
    listen(|on_notice| read_chat_turn(reader, on_notice))
}

fn read(bytes: &[u8]) -> Result<Turn, StreamFailure> {
    read_with_notices(bytes).0
}

/// A stream of `data:` chunks from JSON texts, `[DONE]` appended when `done`.
fn stream(chunks: &[Value], done: bool) -> Vec<u8> {
    let mut out = String::new();
    for c in chunks {
        out.push_str(&format!("data: {c}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out.into_bytes()
}

fn delta(d: Value) -> Value {
    json!({"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": d,
           "finish_reason": null}], "usage": null})
}

fn finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {},
           "finish_reason": reason}], "usage": null})
}

fn call_start(index: usize, id: &str, name: &str, args: &str) -> Value {
    delta(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                 "function": {"name": name, "arguments": args}}]}),
    )
}

fn args(index: usize, fragment: &str) -> Value {
    delta(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
}

fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"id": "chatcmpl-1", "model": "m", "choices": [], "usage": {
        "prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached}}})
}

fn text_of(turn: &Turn) -> String {
    turn.message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn text_only_fixture() {
    let (turn, heard) = read_with_notices(&fixture("openai_text_stop.sse")[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.id, "chatcmpl-text-0001");
    assert_eq!(turn.model, "gpt-test-text");
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert_eq!(
        turn.message,
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "All four checks pass — naïve fix applied.".into()
            }]
        }
    );
    assert!(turn.calls.is_empty());
    assert_eq!(heard.text, "All four checks pass — naïve fix applied.");
    assert_eq!(heard.order, "TTTTT");
    // prompt 120 of which 64 cached: Anthropic semantics keep them apart.
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 56,
            output_tokens: 11,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 64,
            reasoning_output_tokens: 0,
            unknown: false
        }
    );
}

/// Ollama sends each call whole, every one with `index: 0` and its own id.
#[test]
fn calls_sharing_index_zero_with_new_ids_are_separate_calls() {
    let bytes = stream(
        &[
            call_start(0, "call_1", "ReadFile", r#"{"path":"a.txt"}"#),
            call_start(0, "call_2", "Glob", r#"{"pattern":"*.txt"}"#),
            finish("tool_calls"),
        ],
        true,
    );
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    let calls: Vec<_> = turn
        .calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_1", "ReadFile", Ok(json!({"path": "a.txt"}))),
            ("call_2", "Glob", Ok(json!({"pattern": "*.txt"}))),
        ]
    );
    assert_eq!(heard.ready.len(), 2);
    // A repeated id on every fragment (llama.cpp) is still one call.
    let bytes = stream(
        &[
            call_start(0, "call_9", "ReadFile", r#"{"path":"#),
            call_start(0, "call_9", "", r#""b.txt"}"#),
            finish("tool_calls"),
        ],
        true,
    );
    let turn = read(&bytes).unwrap();
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].input, Ok(json!({"path": "b.txt"})));
}

#[test]
fn parallel_tool_calls_fixture() {
    let (turn, heard) = read_with_notices(&fixture("openai_parallel_tool_calls.sse")[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    let expected = vec![
        PendingCall {
            id: "call_read_a".into(),
            name: "ReadFile".into(),
            input: Ok(json!({"path": "src/a.rs"})),
        },
        PendingCall {
            id: "call_glob_b".into(),
            name: "Glob".into(),
            input: Ok(json!({"pattern": "**/*.toml"})),
        },
        PendingCall {
            id: "call_grep_c".into(),
            name: "Grep".into(),
            input: Ok(json!({})),
        },
    ];
    assert_eq!(turn.calls, expected);
    assert_eq!(heard.ready, expected);
    // Each call is announced as the next one starts, the last at the finish.
    assert_eq!(heard.order, "TRRR");
    assert_eq!(
        turn.message.content,
        vec![
            ContentBlock::Text {
                text: "Reading both files.".into()
            },
            ContentBlock::ToolUse {
                id: "call_read_a".into(),
                name: "ReadFile".into(),
                input: json!({"path": "src/a.rs"})
            },
            ContentBlock::ToolUse {
                id: "call_glob_b".into(),
                name: "Glob".into(),
                input: json!({"pattern": "**/*.toml"})
            },
            ContentBlock::ToolUse {
                id: "call_grep_c".into(),
                name: "Grep".into(),
                input: json!({})
            },
        ]
    );
    assert_eq!(
        (turn.usage.input_tokens, turn.usage.output_tokens),
        (900, 57)
    );
}

#[test]
fn fragmented_arguments_fixture() {
    let turn = read(&fixture("openai_tool_call_fragmented_args.sse")).unwrap();
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].id, "call_bash_1");
    assert_eq!(turn.calls[0].name, "Bash");
    assert_eq!(
        turn.calls[0].input,
        Ok(json!({"command": "echo \"café\" && printf 'a\\nb'", "timeout": 5}))
    );
    assert!(text_of(&turn).is_empty());
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 322,
            output_tokens: 30,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 128,
            reasoning_output_tokens: 0,
            unknown: false
        }
    );
}

/// Every fixture decodes the same whatever byte offset the reads split at.
#[test]
fn fixtures_split_at_every_byte_offset() {
    for name in [
        "openai_text_stop.sse",
        "openai_parallel_tool_calls.sse",
        "openai_tool_call_fragmented_args.sse",
    ] {
        let bytes = fixture(name);
        let (whole, whole_heard) = read_with_notices(&bytes[..]);
        let whole = whole.unwrap();
        for cut in 1..bytes.len() {
            let (turn, heard) = read_with_notices(PiecesReader::split_at(&bytes, &[cut]));
            assert_eq!(turn.unwrap(), whole, "{name} split at {cut}");
            assert_eq!(heard, whole_heard, "{name} split at {cut}");
        }
        let (turn, _) = read_with_notices(PiecesReader::chunks(&bytes, 1));
        assert_eq!(turn.unwrap(), whole, "{name} byte by byte");
    }
}

#[test]
fn interleaved_fragments_are_assembled_by_index() {
    let bytes = stream(
        &[
            call_start(0, "c0", "ReadFile", ""),
            call_start(1, "c1", "ReadFile", "{\"path\""),
            args(0, "{\"path\": \"a\""),
            args(1, ": \"b\"}"),
            args(0, "}"),
            finish("tool_calls"),
        ],
        true,
    );
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    let inputs: Vec<_> = turn.calls.iter().map(|c| c.input.clone()).collect();
    assert_eq!(
        inputs,
        vec![Ok(json!({"path": "a"})), Ok(json!({"path": "b"}))]
    );
    // Neither was whole when the other started: both announced at the finish.
    assert_eq!(heard.ready, turn.calls);
}

#[test]
fn calls_are_announced_in_order_even_when_a_later_one_is_whole_first() {
    let bytes = stream(
        &[
            call_start(0, "c0", "ReadFile", "{\"path\":"),
            call_start(1, "c1", "Glob", "{}"),
            call_start(2, "c2", "Glob", "{}"),
            args(0, "\"a\"}"),
            finish("tool_calls"),
        ],
        true,
    );
    let (turn, heard) = read_with_notices(&bytes[..]);
    let ids: Vec<_> = heard.ready.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2"]);
    assert_eq!(heard.ready, turn.unwrap().calls);
}

#[test]
fn a_call_is_announced_when_the_next_starts_and_before_the_finish() {
    let bytes = stream(
        &[
            call_start(0, "c0", "Glob", "{\"pattern\": \"*\"}"),
            call_start(1, "c1", "Glob", "{}"),
        ],
        false,
    );
    let mut order = Vec::new();
    let err = read_chat_turn(&bytes[..], &mut |n| {
        if let StreamNotice::ToolReady(c) = n {
            order.push(c.id.clone())
        }
    })
    .unwrap_err();
    assert_eq!(order, vec!["c0"], "c0 was complete when c1 started");
    assert!(matches!(err, StreamFailure::Incomplete { .. }), "{err:?}");
}

#[test]
fn more_arguments_after_an_announced_call_are_malformed() {
    let bytes = stream(
        &[
            call_start(0, "c0", "Glob", "{}"),
            call_start(1, "c1", "Glob", "{}"),
            args(0, "{\"x\":1}"),
            finish("tool_calls"),
        ],
        true,
    );
    let err = read(&bytes).unwrap_err();
    assert!(matches!(err, StreamFailure::Malformed { .. }), "{err:?}");
    assert!(!err.is_retryable());
}

#[test]
fn unparseable_arguments_are_an_error_input_and_empty_in_history() {
    let bytes = stream(
        &[
            call_start(0, "c0", "Bash", "{\"command\": oops}"),
            finish("tool_calls"),
            usage_chunk(10, 2, 0),
        ],
        true,
    );
    let turn = read(&bytes).unwrap();
    let err = turn.calls[0].input.clone().unwrap_err();
    assert!(err.contains("not valid JSON"), "{err}");
    assert_eq!(
        turn.message.content,
        vec![ContentBlock::ToolUse {
            id: "c0".into(),
            name: "Bash".into(),
            input: json!({})
        }]
    );
}

#[test]
fn length_cuts_a_call_with_the_max_tokens_message() {
    let bytes = stream(
        &[
            delta(json!({"role": "assistant", "content": "Writing."})),
            call_start(
                0,
                "c0",
                "WriteFile",
                "{\"path\": \"big\", \"content\": \"aaa",
            ),
            finish("length"),
        ],
        true,
    );
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason, StopReason::MaxTokens);
    assert_eq!(turn.calls[0].input, Err(CUT_OFF_BY_MAX_TOKENS.to_string()));
    assert_eq!(heard.ready, turn.calls);
    assert_eq!(text_of(&turn), "Writing.");
}

#[test]
fn finish_reasons_map_to_stop_reasons() {
    for (reason, calls, expected) in [
        ("stop", false, StopReason::EndTurn),
        ("length", false, StopReason::MaxTokens),
        ("content_filter", false, StopReason::Refusal),
        ("tool_calls", true, StopReason::ToolUse),
        ("stop", true, StopReason::ToolUse),
        ("weird", false, StopReason::Other("weird".into())),
    ] {
        let mut chunks = vec![delta(json!({"content": "x"}))];
        if calls {
            chunks.push(call_start(0, "c0", "Glob", "{}"));
        }
        chunks.push(finish(reason));
        let turn = read(&stream(&chunks, true)).unwrap();
        assert_eq!(turn.stop_reason, expected, "{reason}");
    }
    // A refusal delta is shown as text and ends the run as a refusal.
    let turn = read(&stream(
        &[
            delta(json!({"refusal": "I can't help with that."})),
            finish("stop"),
        ],
        true,
    ))
    .unwrap();
    assert_eq!(turn.stop_reason, StopReason::Refusal);
    assert_eq!(text_of(&turn), "I can't help with that.");
}

#[test]
fn done_without_a_finish_reason_is_inferred_and_eof_without_either_is_dropped() {
    let turn = read(&stream(&[delta(json!({"content": "hi"}))], true)).unwrap();
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    let turn = read(&stream(&[call_start(0, "c0", "Glob", "{}")], true)).unwrap();
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(turn.calls.len(), 1);

    // A finish_reason and no [DONE] (the connection closed after it): accepted.
    let turn = read(&stream(
        &[delta(json!({"content": "hi"})), finish("stop")],
        false,
    ));
    assert_eq!(turn.unwrap().stop_reason, StopReason::EndTurn);

    // Neither: a dropped stream, retried.
    for bytes in [
        stream(&[delta(json!({"content": "hi"}))], false),
        Vec::new(),
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut".to_vec(),
    ] {
        let err = read(&bytes).unwrap_err();
        assert!(matches!(err, StreamFailure::Incomplete { .. }), "{err:?}");
        assert!(err.is_retryable());
    }
}

#[test]
fn reading_stops_at_done() {
    let mut bytes = stream(&[delta(json!({"content": "hi"})), finish("stop")], true);
    bytes.extend_from_slice(b"data: {not json}\n\n");
    assert_eq!(text_of(&read(&bytes).unwrap()), "hi");
}

#[test]
fn mid_stream_errors_fail_the_turn() {
    let bytes = stream(
        &[
            delta(json!({"content": "par"})),
            json!({"error": {"message": "The server had an error", "type": "server_error",
                             "param": null, "code": null}}),
        ],
        false,
    );
    let err = read(&bytes).unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(
        err.to_string(),
        "stream error server_error: The server had an error"
    );
    let bad = stream(
        &[json!({"error": {"message": "bad", "type": "invalid_request_error"}})],
        false,
    );
    assert!(!read(&bad).unwrap_err().is_retryable());
    let named = read(b"event: error\ndata: upstream exploded\n\n").unwrap_err();
    assert!(
        matches!(&named, StreamFailure::Api { message, .. } if message == "upstream exploded"),
        "{named:?}"
    );
}

#[test]
fn undecodable_chunks_fail_clearly_and_foreign_events_are_skipped() {
    let err = read(b"data: {oops\n\n").unwrap_err();
    assert!(matches!(err, StreamFailure::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("{oops"), "{err}");
    let mut bytes = b": keep-alive\n\nevent: ping\ndata: not json\n\n".to_vec();
    bytes.extend(stream(
        &[delta(json!({"content": "ok"})), finish("stop")],
        true,
    ));
    assert_eq!(text_of(&read(&bytes).unwrap()), "ok");
    // A call without a name cannot be run, but it fails only itself:
    // it is kept nameless for the dispatcher's unknown-tool error result.
    let nameless = stream(
        &[
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]}),
            ),
            finish("tool_calls"),
        ],
        true,
    );
    let calls = read(&nameless).unwrap().calls;
    assert_eq!((calls.len(), calls[0].name.as_str()), (1, ""));
}

#[test]
fn lenient_shapes_of_other_servers() {
    // No index (position stands in), no id (one is made up), arguments as an object,
    // finish_reason together with content, usage on every chunk (cumulative).
    let bytes = stream(
        &[
            json!({"choices": [{"delta": {"role": "assistant", "content": "Sure."}}],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "Glob",
                   "arguments": {"pattern": "*.rs"}}}]}, "finish_reason": "tool_calls"}],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 9}}),
            json!({"choices": [{"index": 1, "delta": {"content": "other choice"}}]}),
        ],
        true,
    );
    let turn = read(&bytes).unwrap();
    assert_eq!(text_of(&turn), "Sure.");
    assert_eq!(turn.calls[0].input, Ok(json!({"pattern": "*.rs"})));
    assert!(
        turn.calls[0].id.starts_with("call_agent_"),
        "{}",
        turn.calls[0].id
    );
    assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens), (5, 9));
}

#[test]
fn read_errors_are_io_failures() {
    struct Reset;
    impl io::Read for Reset {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
        }
    }
    let err = read_chat_turn(io::BufReader::new(Reset), &mut |_| {}).unwrap_err();
    assert!(matches!(&err, StreamFailure::Io(_)));
    assert!(err.is_retryable());
}

/// Calls are told apart by index; a server that repeats an id still gets one result per
/// call, each under its own id.
#[test]
fn a_repeated_id_on_another_index_gets_a_fresh_one() {
    let bytes = stream(
        &[
            call_start(0, "call_1", "Glob", r#"{"pattern": "a"}"#),
            call_start(1, "call_1", "Glob", r#"{"pattern": "b"}"#),
            finish("tool_calls"),
        ],
        true,
    );
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    assert_eq!(turn.calls.len(), 2);
    assert_eq!(turn.calls[0].id, "call_1");
    assert!(
        turn.calls[1].id.starts_with("call_agent_"),
        "{:?}",
        turn.calls
    );
    assert_eq!(turn.calls[1].input, Ok(json!({"pattern": "b"})));
    assert_eq!(heard.ready, turn.calls);
}

/// A call without a name is not a failed turn: it is kept (with an empty name), and the
/// dispatcher answers it with an unknown-tool error result the model can act on.
#[test]
fn a_call_without_a_name_is_kept_for_an_error_result() {
    let bytes = stream(
        &[
            delta(json!({"tool_calls": [{"index": 0, "id": "call_n",
                         "function": {"arguments": "{}"}}]})),
            call_start(1, "call_g", "Glob", r#"{"pattern": "*"}"#),
            finish("tool_calls"),
        ],
        true,
    );
    let turn = read(&bytes).unwrap();
    let names: Vec<&str> = turn.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["", "Glob"]);
    assert_eq!(turn.calls[0].id, "call_n");
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
}

/// llama-cpp-python sends no usage chunk: the usage is unknown, not zero.
#[test]
fn a_stream_without_a_usage_chunk_has_unknown_usage() {
    let turn = read(&stream(
        &[delta(json!({"content": "hi"})), finish("stop")],
        true,
    ))
    .unwrap();
    assert!(turn.usage.unknown);
    let with = stream(
        &[
            delta(json!({"content": "hi"})),
            finish("stop"),
            usage_chunk(5, 2, 0),
        ],
        true,
    );
    assert!(!read(&with).unwrap().usage.unknown);
}

/// The shapes of real local servers and gateways (fixtures/sse/README.md).
#[test]
fn real_server_shapes_decode() {
    let t = read(&fixture("openai_llama_server_timings.sse")).unwrap();
    assert_eq!(text_of(&t), "Hello! How can I help?");
    assert_eq!(t.stop_reason, StopReason::EndTurn);
    assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (31, 9));
    assert!(!t.usage.unknown);

    let (t, heard) = read_with_notices(&fixture("openai_llama_cpp_python_tools.sse")[..]);
    let t = t.unwrap();
    assert_eq!(t.calls.len(), 1, "one call, however often its id repeats");
    assert_eq!(t.calls[0].id, "call_lcp_1");
    assert_eq!(t.calls[0].name, "Glob");
    assert_eq!(t.calls[0].input, Ok(json!({"pattern": "*.py"})));
    assert_eq!(heard.ready, t.calls);
    assert!(t.usage.unknown, "no usage chunk: unknown, not zero");

    let t = read(&fixture("openai_litellm_usage_with_choices.sse")).unwrap();
    assert_eq!(text_of(&t), "Paris.");
    assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (25, 3));
    assert_eq!(t.stop_reason, StopReason::EndTurn);
}

#[test]
fn reasoning_deltas_become_one_unsigned_thinking_block_first() {
    // DeepSeek and llama.cpp stream `reasoning_content`, newer vLLM and Ollama
    // `reasoning`; a server sending both repeats the text in each (taken once). Other
    // shapes of the field are ignored, not fatal. The text is never a TextDelta.
    let bytes = stream(
        &[
            delta(json!({"role": "assistant", "content": null, "reasoning_content": "The file "})),
            delta(json!({"reasoning_content": "is small;", "reasoning": "is small;"})),
            delta(json!({"reasoning": " read it.\n\"ok\" é"})),
            delta(json!({"reasoning": {"summary": "an object"}, "reasoning_content": null})),
            delta(json!({"content": "Reading."})),
            call_start(0, "call_1", "ReadFile", r#"{"path":"a"}"#),
            finish("tool_calls"),
        ],
        true,
    );
    let (turn, heard) = read_with_notices(&bytes[..]);
    let turn = turn.unwrap();
    assert_eq!(
        turn.message.content[0],
        ContentBlock::Thinking {
            thinking: "The file is small; read it.\n\"ok\" é".into(),
            signature: String::new(),
        }
    );
    assert!(matches!(turn.message.content[1], ContentBlock::Text { .. }));
    assert!(matches!(
        turn.message.content[2],
        ContentBlock::ToolUse { .. }
    ));
    assert_eq!(text_of(&turn), "Reading.");
    assert_eq!(heard.text, "Reading.");
    // Without reasoning there is no thinking block.
    let plain = read(&stream(
        &[delta(json!({"content": "hi"})), finish("stop")],
        true,
    ))
    .unwrap();
    assert_eq!(
        plain.message.content,
        [ContentBlock::Text { text: "hi".into() }]
    );
}

#[test]
fn reasoning_tokens_of_a_reasoning_model_are_reported() {
    let turn = read(&stream(
        &[
            delta(json!({"content": "ok"})),
            finish("stop"),
            json!({"id": "chatcmpl-1", "model": "o4-mini", "choices": [], "usage": {
                "prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 32}}}),
        ],
        true,
    ))
    .unwrap();
    assert_eq!(turn.usage.output_tokens, 40);
    assert_eq!(turn.usage.reasoning_output_tokens, 32);
}
