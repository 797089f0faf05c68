//! An AWS event-stream encoder written apart from the agent's decoder (its own CRC32,
//! bit by bit, and its own base64), so that a frame it builds checks the decoder rather
//! than the decoder's own arithmetic. The mock server answers Bedrock requests with it;
//! the decoder's unit tests include this file too. Self-contained: std and serde_json.

#![allow(dead_code, reason = "each user takes the part it needs")]

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), one bit at a time.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One message: string headers (type 7) and a payload, both CRCs right.
pub(crate) fn message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&(value.len() as u16).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let total = 12 + h.len() + payload.len() + 4;
    let mut m = Vec::with_capacity(total);
    m.extend_from_slice(&(total as u32).to_be_bytes());
    m.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let prelude_crc = crc32(&m);
    m.extend_from_slice(&prelude_crc.to_be_bytes());
    m.extend_from_slice(&h);
    m.extend_from_slice(payload);
    let crc = crc32(&m);
    m.extend_from_slice(&crc.to_be_bytes());
    m
}

/// A `chunk` event carrying one Anthropic event's JSON, as Bedrock sends it.
pub(crate) fn chunk(event_json: &str) -> Vec<u8> {
    let payload = serde_json::json!({"bytes": base64(event_json.as_bytes()), "p": "abcdef"});
    message(
        &[
            (":event-type", "chunk"),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An exception message (`throttlingException` …) with its `{"message"}` payload.
pub(crate) fn exception(kind: &str, text: &str) -> Vec<u8> {
    let payload = serde_json::json!({"message": text});
    message(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// The event-stream body of an SSE text: each `data:` line of an Anthropic event becomes
/// a chunk; an `error` event becomes the exception of the same retry class; pings and
/// comments are dropped (Bedrock sends none).
pub(crate) fn from_sse(sse: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let sse = sse.replace("\r\n", "\n").replace('\r', "\n");
    for block in sse.split("\n\n") {
        let mut event = "";
        let mut data = String::new();
        for line in block.lines() {
            if let Some(e) = line.strip_prefix("event:") {
                event = e.trim();
            } else if let Some(d) = line.strip_prefix("data:") {
                // Data lines join with a line break (the SSE rule).
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        if data.is_empty() || event == "ping" {
            continue;
        }
        if event == "error" {
            let v: serde_json::Value = serde_json::from_str(&data).unwrap_or_default();
            let kind = match v["error"]["type"].as_str().unwrap_or("") {
                "overloaded_error" => "serviceUnavailableException",
                "rate_limit_error" => "throttlingException",
                "invalid_request_error" => "validationException",
                "permission_error" => "accessDeniedException",
                _ => "internalServerException",
            };
            out.extend(exception(
                kind,
                v["error"]["message"].as_str().unwrap_or(""),
            ));
        } else {
            out.extend(chunk(&data));
        }
    }
    out
}
