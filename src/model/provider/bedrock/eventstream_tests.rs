//! Unit tests of the event-stream reader, on frames built by the test encoder of
//! `tests/support/eventstream.rs` (its own CRC32 and base64): chunks to SSE, a whole
//! turn split at every byte offset, CRC mismatches, cut frames and each exception.

use std::io::{self, BufReader, Read};

use super::*;
use crate::model::provider::StreamFailure;
use crate::model::provider::http::Wire;
use crate::model::provider::sse::tests::{PiecesReader, fixture};

#[path = "../../../../tests/support/eventstream.rs"]
mod encoder;

fn sse_of(bytes: &[u8]) -> io::Result<String> {
    let mut out = String::new();
    EventStreamReader::new(bytes).read_to_string(&mut out)?;
    Ok(out)
}

fn decode(reader: impl Read + Send + 'static) -> Result<crate::model::turn::Turn, StreamFailure> {
    let wire = crate::model::provider::bedrock::BedrockWire::decoder();
    let mut body = BufReader::new(wire.unframe(Box::new(reader)));
    wire.decode(&mut body, &mut |_| {})
}

#[test]
fn the_test_encoder_agrees_with_crc32fast_and_known_values() {
    // The check value of CRC-32/ISO-HDLC, and an independent implementation.
    assert_eq!(encoder::crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(
        encoder::crc32(b"hello world"),
        crc32fast::hash(b"hello world")
    );
    assert_eq!(
        encoder::base64(b"any carnal pleas"),
        "YW55IGNhcm5hbCBwbGVhcw=="
    );
}

#[test]
fn a_chunk_is_one_sse_event() {
    let event = r#"{"type":"message_start","message":{"id":"m1"}}"#;
    let mut bytes = encoder::chunk(event);
    bytes.extend(encoder::chunk(r#"{"type":"message_stop"}"#));
    assert_eq!(
        sse_of(&bytes).unwrap(),
        format!(
            "event: message_start\ndata: {event}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    );
}

#[test]
fn line_breaks_in_an_events_json_stay_on_one_data_line() {
    let bytes = encoder::chunk("{\"type\":\"ping\",\n \"x\": 1}");
    assert_eq!(
        sse_of(&bytes).unwrap(),
        "event: ping\ndata: {\"type\":\"ping\",  \"x\": 1}\n\n"
    );
}

#[test]
fn events_other_than_chunks_are_skipped() {
    let mut bytes = encoder::message(
        &[
            (":message-type", "event"),
            (":event-type", "initial-response"),
        ],
        b"{}",
    );
    bytes.extend(encoder::chunk(r#"{"type":"message_stop"}"#));
    assert_eq!(
        sse_of(&bytes).unwrap(),
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    );
}

/// A recorded Anthropic turn, framed as Bedrock frames it, decodes to the same turn
/// whatever the read sizes.
#[test]
fn a_turn_decodes_the_same_split_at_every_offset() {
    let sse = fixture("tool_turn_fragmented.sse");
    let direct =
        crate::model::provider::anthropic::decode::read_turn(&sse[..], &mut |_| {}).unwrap();
    let framed = encoder::from_sse(&String::from_utf8(sse).unwrap());
    // Every offset of the first messages, then a sample (a debug build decodes slowly).
    let step = framed.len() / 400 + 1;
    for cut in (0..framed.len()).filter(|c| *c < 600 || c % step == 0) {
        let turn = decode(PiecesReader::split_at(&framed, &[cut])).unwrap();
        assert_eq!(turn.message, direct.message, "cut at {cut}");
        assert_eq!(turn.usage, direct.usage);
    }
    let turn = decode(PiecesReader::chunks(&framed, 1)).unwrap();
    assert_eq!(turn.message, direct.message);
}

fn failure(bytes: Vec<u8>) -> StreamFailure {
    decode(io::Cursor::new(bytes)).unwrap_err()
}

fn two_chunks() -> Vec<u8> {
    let mut bytes = encoder::chunk(
        r#"{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}"#,
    );
    bytes.extend(encoder::chunk(
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    ));
    bytes
}

#[test]
fn a_bad_prelude_crc_is_a_dropped_stream() {
    let mut bytes = two_chunks();
    bytes[9] ^= 0x01; // inside the first message's prelude CRC
    let f = failure(bytes);
    assert!(f.is_retryable(), "{f}");
    assert!(f.to_string().contains("prelude CRC"), "{f}");
    // The prelude of the second message.
    let mut bytes = two_chunks();
    let first = u32::from_be_bytes(bytes[0..4].try_into().unwrap()) as usize;
    bytes[first + 2] ^= 0x40;
    let f = failure(bytes);
    assert!(
        f.is_retryable() && f.to_string().contains("prelude CRC"),
        "{f}"
    );
}

#[test]
fn a_bad_message_crc_is_a_dropped_stream() {
    let mut bytes = two_chunks();
    bytes[40] ^= 0x20; // inside the first message's headers
    let f = failure(bytes);
    assert!(
        f.is_retryable() && f.to_string().contains("message CRC"),
        "{f}"
    );
    let mut bytes = two_chunks();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xFF; // the second message's CRC itself
    let f = failure(bytes);
    assert!(
        f.is_retryable() && f.to_string().contains("message CRC"),
        "{f}"
    );
}

#[test]
fn a_frame_cut_mid_payload_is_a_dropped_stream() {
    let bytes = two_chunks();
    let first = u32::from_be_bytes(bytes[0..4].try_into().unwrap()) as usize;
    for cut in [first + 5, first + 30, bytes.len() - 1] {
        let f = failure(bytes[..cut].to_vec());
        assert!(matches!(f, StreamFailure::Io(_)), "cut at {cut}: {f:?}");
        assert!(f.is_retryable(), "cut at {cut}: {f}");
        assert!(f.to_string().contains("ended inside a message"), "{f}");
    }
    // Cut between messages: the stream ended before message_stop (retried too).
    let f = failure(bytes);
    assert!(matches!(f, StreamFailure::Incomplete { .. }), "{f:?}");
    assert!(f.is_retryable());
}

#[test]
fn each_exception_is_an_error_of_its_retry_class() {
    let cases = [
        ("throttlingException", "rate_limit_error", true),
        ("serviceUnavailableException", "overloaded_error", true),
        ("modelStreamErrorException", "api_error", true),
        ("internalServerException", "api_error", true),
        ("modelTimeoutException", "timeout_error", true),
        ("validationException", "invalid_request_error", false),
        ("accessDeniedException", "permission_error", false),
        ("resourceNotFoundException", "not_found_error", false),
        ("someNewException", "api_error", true),
    ];
    for (kind, anthropic_type, retried) in cases {
        let mut bytes = two_chunks();
        bytes.extend(encoder::exception(kind, "it went wrong"));
        match failure(bytes) {
            StreamFailure::Api {
                error_type,
                message,
            } => {
                assert_eq!(error_type, anthropic_type, "{kind}");
                assert_eq!(message, format!("{kind}: it went wrong"));
                let f = StreamFailure::Api {
                    error_type,
                    message,
                };
                assert_eq!(f.is_retryable(), retried, "{kind}");
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
}

#[test]
fn an_error_message_type_is_an_error_event() {
    let mut bytes = two_chunks();
    bytes.extend(encoder::message(
        &[
            (":message-type", "error"),
            (":error-code", "InternalFailure"),
            (":error-message", "boom"),
        ],
        b"",
    ));
    match failure(bytes) {
        StreamFailure::Api {
            error_type,
            message,
        } => {
            assert_eq!(error_type, "api_error");
            assert_eq!(message, "InternalFailure: boom");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_absurd_length_is_refused_before_allocating() {
    let mut m = Vec::new();
    m.extend_from_slice(&(u32::MAX).to_be_bytes());
    m.extend_from_slice(&0u32.to_be_bytes());
    let crc = encoder::crc32(&m);
    m.extend_from_slice(&crc.to_be_bytes());
    let e = sse_of(&m).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted);
}

#[test]
fn a_chunk_that_is_not_base64_json_is_malformed() {
    let bytes = encoder::message(
        &[(":message-type", "event"), (":event-type", "chunk")],
        br#"{"bytes":"!!"}"#,
    );
    let e = sse_of(&bytes).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
}
