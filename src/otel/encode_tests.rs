use super::*;

fn span() -> SpanData {
    SpanData {
        trace_id: [1; 16],
        span_id: [2; 8],
        parent_span_id: Some([3; 8]),
        trace_state: String::new(),
        flags: 1,
        name: "chat m".into(),
        kind: SpanKind::Client,
        start_ns: 10,
        end_ns: 20,
        attrs: vec![
            ("s".into(), AttrValue::from("v")),
            ("n".into(), AttrValue::Int(-1)),
        ],
        events: Vec::new(),
        status: StatusCode::Error,
        status_message: "bad".into(),
    }
}

/// Protobuf's bytes for a span, checked field by field against the .proto numbering.
#[test]
fn protobuf_span_bytes() {
    let mut w = Protobuf::new();
    span_fields(&mut w);
    let b = w.0;
    // trace_id: field 1, length-delimited, 16 bytes.
    assert_eq!(&b[..2], &[0x0a, 16]);
    assert_eq!(&b[2..18], &[1; 16]);
    // span_id: field 2; parent_span_id: field 4.
    assert_eq!(&b[18..20], &[0x12, 8]);
    assert_eq!(&b[28..30], &[0x22, 8]);
    // name: field 5; kind: field 6 varint 3; start: field 7 fixed64.
    assert_eq!(&b[38..46], &[0x2a, 6, b'c', b'h', b'a', b't', b' ', b'm']);
    assert_eq!(&b[46..48], &[0x30, 3]);
    assert_eq!(b[48], 0x39);
    assert_eq!(&b[49..57], &10u64.to_le_bytes());
    // A negative int64 is a ten-byte varint.
    let mut n = Protobuf::new();
    n.int64(3, "intValue", -1);
    assert_eq!(n.0.len(), 11);
    // status: field 15 (tag 0x7a), message 2, code 3.
    let status = [0x7a, 7, 0x12, 3, b'b', b'a', b'd', 0x18, 2];
    assert!(b.windows(status.len()).any(|w| w == status), "{b:?}");
    // flags: field 16 fixed32 (tag 0x85 0x01).
    assert_eq!(&b[b.len() - 6..], &[0x85, 0x01, 1, 0, 0, 0]);
}

fn span_fields(w: &mut Protobuf) {
    super::span(w, &span());
}

#[test]
fn json_uses_hex_ids_and_string_integers() {
    let body = encode_traces(true, &[("service.name".into(), "agent".into())], &[span()]);
    let v: Value = serde_json::from_slice(&body).unwrap();
    let rs = &v["resourceSpans"][0];
    assert_eq!(
        rs["resource"]["attributes"][0]["value"]["stringValue"],
        "agent"
    );
    let s = &rs["scopeSpans"][0]["spans"][0];
    assert_eq!(s["traceId"], "01".repeat(16));
    assert_eq!(s["parentSpanId"], "03".repeat(8));
    assert_eq!(s["startTimeUnixNano"], "10");
    assert_eq!(s["kind"], 3);
    assert_eq!(s["attributes"][1]["value"]["intValue"], "-1");
    assert_eq!(s["status"]["code"], 2);
    assert_eq!(rs["scopeSpans"][0]["scope"]["name"], "agent");
}
