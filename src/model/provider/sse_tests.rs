//! Unit tests of the SSE decoder, and the stream-reading helpers the decoders' tests share.

use super::*;
use std::path::PathBuf;

/// A file of the repository's own `fixtures/sse/`.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sse")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a decoder told the loop while a turn streamed, in order.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Heard {
    pub text: String,
    pub ready: Vec<crate::model::turn::PendingCall>,
    /// `T` per text delta and `R` per ready call, to check the interleaving.
    pub order: String,
}

/// Runs `decode` with a notice sink that records text and ready calls (any other
/// notice is a test failure: decoders do not retry).
pub(crate) fn listen<T>(
    decode: impl FnOnce(&mut dyn FnMut(crate::model::provider::StreamNotice<'_>)) -> T,
) -> (T, Heard) {
    use crate::model::provider::StreamNotice;
    let mut heard = Heard::default();
    let result = decode(&mut |n| match n {
        StreamNotice::TextDelta(t) => {
            heard.text.push_str(t);
            heard.order.push('T');
        }
        StreamNotice::ToolReady(c) => {
            heard.ready.push(c.clone());
            heard.order.push('R');
        }
        other => panic!("unexpected notice {other:?}"),
    });
    (result, heard)
}

/// A `BufRead` that hands out its input in the given pieces, one piece per
/// `fill_buf`, so that tests control exactly where reads split.
pub(crate) struct PiecesReader {
    pieces: Vec<Vec<u8>>,
    index: usize,
    pos: usize,
}

impl PiecesReader {
    pub(crate) fn new(pieces: Vec<Vec<u8>>) -> Self {
        PiecesReader {
            pieces,
            index: 0,
            pos: 0,
        }
    }

    /// `bytes` cut at each offset in `cuts` (ascending).
    pub(crate) fn split_at(bytes: &[u8], cuts: &[usize]) -> Self {
        let mut pieces = Vec::new();
        let mut start = 0;
        for &c in cuts {
            pieces.push(bytes[start..c].to_vec());
            start = c;
        }
        pieces.push(bytes[start..].to_vec());
        Self::new(pieces)
    }

    /// `bytes` in chunks of `size` bytes.
    pub(crate) fn chunks(bytes: &[u8], size: usize) -> Self {
        Self::new(bytes.chunks(size).map(<[u8]>::to_vec).collect())
    }
}

impl io::Read for PiecesReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for PiecesReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.index < self.pieces.len() && self.pos >= self.pieces[self.index].len() {
            self.index += 1;
            self.pos = 0;
        }
        match self.pieces.get(self.index) {
            Some(p) => Ok(&p[self.pos..]),
            None => Ok(&[]),
        }
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }
}

fn decode(reader: impl BufRead) -> Vec<SseEvent> {
    let mut r = SseReader::new(reader);
    let mut out = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        out.push(e);
    }
    out
}

fn decode_bytes(bytes: &[u8]) -> Vec<SseEvent> {
    decode(bytes)
}

fn datas(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.data.as_str()).collect()
}

fn ev(event: &str, data: &str) -> SseEvent {
    SseEvent {
        event: event.into(),
        data: data.into(),
        id: None,
    }
}

/// Our own fixtures: every one must decode the same whatever the read boundaries.
const OWN_FIXTURES: &[&str] = &[
    "framing_mixed.sse",
    "text_turn.sse",
    "tool_turn_fragmented.sse",
    "unicode_split.sse",
];

#[test]
fn own_fixtures_decode_identically_at_every_split() {
    for name in OWN_FIXTURES {
        let bytes = fixture(name);
        let whole = decode_bytes(&bytes);
        assert!(!whole.is_empty(), "{name} decodes to no events");
        for cut in 0..=bytes.len() {
            let split = decode(PiecesReader::split_at(&bytes, &[cut]));
            assert_eq!(split, whole, "{name} split at byte {cut}");
        }
        for size in 1..=7 {
            let chunked = decode(PiecesReader::chunks(&bytes, size));
            assert_eq!(chunked, whole, "{name} in chunks of {size}");
        }
    }
}

#[test]
fn framing_mixed_fixture_contents() {
    let events = decode_bytes(&fixture("framing_mixed.sse"));
    assert_eq!(
        events,
        vec![
            ev("ping", "{\"type\": \"ping\"}"),
            ev("message", "line one\nline two\n\nline four"),
            ev("message_stop", "{\"type\":\"message_stop\"}"),
        ]
    );
}

#[test]
fn unicode_split_fixture_keeps_multibyte_characters() {
    let events = decode_bytes(&fixture("unicode_split.sse"));
    assert_eq!(datas(&events), vec!["известни ✓ 🦀", "a\u{2028}b"]);
}

#[test]
fn lf_crlf_and_cr_framing_give_the_same_events() {
    let lf = b"event: a\ndata: 1\ndata: 2\n\nevent: b\ndata: 3\n\n";
    let expected = decode_bytes(lf);
    assert_eq!(expected, vec![ev("a", "1\n2"), ev("b", "3")]);
    for eol in ["\r\n", "\r"] {
        let text = String::from_utf8(lf.to_vec()).unwrap().replace('\n', eol);
        let bytes = text.as_bytes();
        assert_eq!(decode_bytes(bytes), expected, "eol {eol:?}");
        for cut in 0..=bytes.len() {
            assert_eq!(decode(PiecesReader::split_at(bytes, &[cut])), expected);
        }
    }
}

#[test]
fn cr_then_lf_in_the_next_read_is_one_line_break() {
    let r = PiecesReader::new(vec![b"data: a\r".to_vec(), b"\ndata: b\r\n\r\n".to_vec()]);
    assert_eq!(decode(r), vec![ev("message", "a\nb")]);
    // The same bytes without the split must agree.
    assert_eq!(
        decode_bytes(b"data: a\r\ndata: b\r\n\r\n"),
        vec![ev("message", "a\nb")]
    );
    // Two CRs are two line breaks: the second one dispatches.
    let r = PiecesReader::new(vec![b"data: a\r".to_vec(), b"\rdata: b\n\n".to_vec()]);
    assert_eq!(datas(&decode(r)), vec!["a", "b"]);
}

#[test]
fn comments_are_ignored() {
    let bytes = b": keep-alive\ndata: x\n:data: not this\n\n:only a comment\n\n";
    assert_eq!(decode_bytes(bytes), vec![ev("message", "x")]);
    assert!(decode_bytes(b":comment only").is_empty());
}

#[test]
fn one_leading_space_is_stripped() {
    let bytes = b"data:x\n\ndata: x\n\ndata:  x\n\ndata:\n\n";
    assert_eq!(datas(&decode_bytes(bytes)), vec!["x", "x", " x", ""]);
}

#[test]
fn field_without_colon_has_an_empty_value() {
    let bytes = b"data\ndata\n\nevent\ndata: y\n\n";
    assert_eq!(
        decode_bytes(bytes),
        vec![ev("message", "\n"), ev("message", "y")]
    );
}

#[test]
fn multi_line_data_is_joined_with_newlines() {
    let bytes = b"data: {\ndata:   \"a\": 1\ndata: }\n\n";
    assert_eq!(datas(&decode_bytes(bytes)), vec!["{\n  \"a\": 1\n}"]);
}

#[test]
fn only_one_bom_is_stripped() {
    let mut bytes = BOM.to_vec();
    bytes.extend_from_slice(b"data: 1\n\n");
    assert_eq!(datas(&decode_bytes(&bytes)), vec!["1"]);
    for cut in 0..=bytes.len() {
        assert_eq!(
            datas(&decode(PiecesReader::split_at(&bytes, &[cut]))),
            vec!["1"]
        );
    }
    let mut double = BOM.to_vec();
    double.extend_from_slice(BOM);
    double.extend_from_slice(b"data: 1\n\ndata: 2\n\n");
    assert_eq!(datas(&decode_bytes(&double)), vec!["2"]);
    // A BOM later in the stream is data, not a marker.
    let later = "data: a\n\ndata: \u{FEFF}b\n\n";
    assert_eq!(
        datas(&decode_bytes(later.as_bytes())),
        vec!["a", "\u{FEFF}b"]
    );
}

#[test]
fn final_event_without_blank_line_is_discarded() {
    assert_eq!(datas(&decode_bytes(b"data: 1\n\ndata: 2\n")), vec!["1"]);
    assert_eq!(datas(&decode_bytes(b"data: 1\n\ndata: 2")), vec!["1"]);
    assert_eq!(datas(&decode_bytes(b"data: 1\n\ndata: 2\r")), vec!["1"]);
}

#[test]
fn empty_data_buffer_dispatches_nothing() {
    let bytes = b"event: ping\n\n\n\nid: 7\n\ndata: z\n\n";
    let events = decode_bytes(bytes);
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].event, "message",
        "the event type is reset by a blank line"
    );
    assert_eq!(events[0].id.as_deref(), Some("7"), "the id persists");
}

#[test]
fn id_with_nul_and_bad_retry_are_ignored() {
    let mut r =
        SseReader::new(&b"id: 1\nretry: 250\ndata: a\n\nid: x\0y\nretry: abc\ndata: b\n\n"[..]);
    let a = r.next_event().unwrap().unwrap();
    let b = r.next_event().unwrap().unwrap();
    assert_eq!(a.id.as_deref(), Some("1"));
    assert_eq!(b.id.as_deref(), Some("1"));
    assert_eq!(r.retry_ms(), Some(250));
    assert!(r.next_event().unwrap().is_none());
}

#[test]
fn field_names_are_case_sensitive_and_unknown_ones_ignored() {
    let bytes = b"Event: x\nDATA: no\nfoo: bar\ndata: yes\n\n";
    assert_eq!(decode_bytes(bytes), vec![ev("message", "yes")]);
}

#[test]
fn invalid_utf8_is_decoded_lossily() {
    let bytes = b"data: a\xFFb\n\n";
    assert_eq!(datas(&decode_bytes(bytes)), vec!["a\u{FFFD}b"]);
}

#[test]
fn escaped_newlines_in_json_do_not_end_an_event() {
    let bytes = br#"data: {"text":"a\n\nb"}

"#;
    assert_eq!(datas(&decode_bytes(bytes)), vec![r#"{"text":"a\n\nb"}"#]);
}

#[test]
fn an_overlong_line_is_an_error_not_unbounded_memory() {
    struct Endless;
    impl io::Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            out.fill(b'x');
            Ok(out.len())
        }
    }
    let mut r = SseReader::new(io::BufReader::with_capacity(1 << 20, Endless));
    let err = r.next_event().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("longer than"), "{err}");
}

#[test]
fn an_oversized_event_is_an_error() {
    // Many short data lines, none of them over the line limit.
    struct DataLines;
    impl io::Read for DataLines {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let line =
                b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
            let n = out.len() / line.len() * line.len();
            for chunk in out[..n].chunks_mut(line.len()) {
                chunk.copy_from_slice(line);
            }
            Ok(n)
        }
    }
    let mut r = SseReader::new(io::BufReader::with_capacity(1 << 20, DataLines));
    let err = r.next_event().unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
}

#[test]
fn read_errors_propagate() {
    struct Failing;
    impl io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
        }
    }
    let mut r = SseReader::new(io::BufReader::new(Failing));
    assert_eq!(
        r.next_event().unwrap_err().kind(),
        io::ErrorKind::ConnectionReset
    );
}
