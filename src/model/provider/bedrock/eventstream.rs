//! AWS event-stream framing (`application/vnd.amazon.eventstream`), Bedrock's answer to
//! `invoke-with-response-stream`, read as the Anthropic SSE text the Anthropic decoder
//! takes. A message is a prelude (total length, headers length, CRC32 of the two), the
//! headers, the payload and a CRC32 of all before it. A `chunk` event's payload is
//! `{"bytes": base64}` of one Anthropic stream event, written out as `event: T\ndata: J`;
//! an exception (`throttlingException` …) becomes an SSE `error` event whose type is the
//! Anthropic error type of the same retry class. A CRC mismatch or a message cut short
//! is a read error that is not `InvalidData`: a dropped stream, retried like one.

use std::io::{self, Read};

use serde::Deserialize;

/// The prelude: total length, headers length, their CRC32.
const PRELUDE_BYTES: usize = 12;
/// Prelude plus the message CRC: the size of a message with no headers and no payload.
const MIN_MESSAGE_BYTES: usize = PRELUDE_BYTES + 4;
/// Largest message taken: AWS caps event-stream messages at 16 MiB; a bigger length is
/// a corrupt prelude (whose CRC then failed to catch it), never a real message.
const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Reads event-stream messages from `inner` and yields their SSE text.
pub(crate) struct EventStreamReader<R> {
    inner: R,
    out: Vec<u8>,
    pos: usize,
}

impl<R: Read> EventStreamReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        EventStreamReader {
            inner,
            out: Vec::new(),
            pos: 0,
        }
    }

    /// The next message's SSE text into `out`; `false` at a clean end (between messages).
    fn next_message(&mut self) -> io::Result<bool> {
        let mut prelude = [0u8; PRELUDE_BYTES];
        if !read_full(&mut self.inner, &mut prelude)? {
            return Ok(false);
        }
        let total = be32(&prelude[0..4]) as usize;
        let headers_len = be32(&prelude[4..8]) as usize;
        if crc32fast::hash(&prelude[..8]) != be32(&prelude[8..12]) {
            return Err(dropped("the prelude CRC does not match"));
        }
        if !(MIN_MESSAGE_BYTES..=MAX_MESSAGE_BYTES).contains(&total)
            || headers_len > total - MIN_MESSAGE_BYTES
        {
            return Err(dropped(&format!(
                "a message of {total} bytes with {headers_len} bytes of headers"
            )));
        }
        let mut rest = vec![0u8; total - PRELUDE_BYTES];
        if !read_full(&mut self.inner, &mut rest)? {
            return Err(dropped("the stream ended inside a message"));
        }
        let (body, crc) = rest.split_at(rest.len() - 4);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&prelude);
        hasher.update(body);
        if hasher.finalize() != be32(crc) {
            return Err(dropped("the message CRC does not match"));
        }
        let (headers, payload) = body.split_at(headers_len);
        let headers = parse_headers(headers).map_err(|e| dropped(&e))?;
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        match get(":message-type").unwrap_or("event") {
            "event" if get(":event-type") == Some("chunk") => self.chunk(payload),
            // Other events (an initial response, new kinds) carry no Anthropic event.
            "event" => Ok(true),
            "exception" => {
                let kind = get(":exception-type").unwrap_or("exception");
                let message = serde_json::from_slice::<Exception>(payload)
                    .map(|e| e.message)
                    .unwrap_or_else(|_| String::from_utf8_lossy(payload).into_owned());
                self.error_event(kind, &message);
                Ok(true)
            }
            _ => {
                let kind = get(":error-code").unwrap_or("error").to_string();
                let message = get(":error-message").unwrap_or("").to_string();
                self.error_event(&kind, &message);
                Ok(true)
            }
        }
    }

    /// A `chunk`: one Anthropic event, base64 in a JSON payload.
    fn chunk(&mut self, payload: &[u8]) -> io::Result<bool> {
        let chunk: Chunk = serde_json::from_slice(payload).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("bedrock chunk: {e}"))
        })?;
        let mut event = crate::util::jwt::base64_std_decode(&chunk.bytes).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("bedrock chunk: {e}"))
        })?;
        let kind = serde_json::from_slice::<Typed>(&event)
            .map(|t| t.kind)
            .map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("bedrock chunk: {e}"))
            })?;
        // A JSON text has line breaks only between tokens: on one line it is the same.
        for b in &mut event {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
        self.out.extend_from_slice(b"event: ");
        self.out.extend_from_slice(kind.as_bytes());
        self.out.extend_from_slice(b"\ndata: ");
        self.out.extend_from_slice(&event);
        self.out.extend_from_slice(b"\n\n");
        Ok(true)
    }

    fn error_event(&mut self, bedrock_kind: &str, message: &str) {
        let body = serde_json::json!({
            "type": "error",
            "error": {"type": error_type(bedrock_kind), "message": format!("{bedrock_kind}: {message}")},
        });
        self.out
            .extend_from_slice(format!("event: error\ndata: {body}\n\n").as_bytes());
    }
}

impl<R: Read> Read for EventStreamReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.out.len() {
            self.out.clear();
            self.pos = 0;
            if !self.next_message()? {
                return Ok(0);
            }
        }
        let n = (self.out.len() - self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// The Anthropic error type of a Bedrock exception, chosen for its retry class: the
/// ones a fresh attempt may get past are retried (`overloaded_error` also lets
/// `--fallback-model` take over), the request's own faults are not.
pub(crate) fn error_type(bedrock_kind: &str) -> &'static str {
    match bedrock_kind
        .trim_end_matches("Exception")
        .to_ascii_lowercase()
        .as_str()
    {
        "throttling" => "rate_limit_error",
        "serviceunavailable" => "overloaded_error",
        "modeltimeout" => "timeout_error",
        "validation" => "invalid_request_error",
        "accessdenied" => "permission_error",
        "resourcenotfound" => "not_found_error",
        "servicequotaexceeded" => "rate_limit_error",
        // modelStreamError, internalServer, modelNotReady and new ones: retried.
        _ => "api_error",
    }
}

#[derive(Deserialize)]
struct Chunk {
    bytes: String,
}

#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Exception {
    #[serde(alias = "Message")]
    message: String,
}

/// A stream that cannot be read on: retried as a dropped connection.
fn dropped(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        format!("the Bedrock event stream broke off: {what}"),
    )
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Fills `buf`: `false` if the stream ended before its first byte, an error if it ended
/// after it.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(dropped("the stream ended inside a message")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The headers as `(name, value)`; string values as they are, the other types as text.
fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let short = || "a header runs past its message".to_string();
    while !b.is_empty() {
        let name_len = b[0] as usize;
        let name = b.get(1..1 + name_len).ok_or_else(short)?;
        let name = String::from_utf8_lossy(name).into_owned();
        b = &b[1 + name_len..];
        let (&kind, rest) = b.split_first().ok_or_else(short)?;
        b = rest;
        let fixed = |n: usize, b: &mut &[u8]| -> Result<Vec<u8>, String> {
            let v = b.get(..n).ok_or_else(short)?.to_vec();
            *b = &b[n..];
            Ok(v)
        };
        let value = match kind {
            0 => "true".to_string(),
            1 => "false".to_string(),
            2 => fixed(1, &mut b)?[0].to_string(),
            3 => i16::from_be_bytes(fixed(2, &mut b)?.try_into().unwrap_or_default()).to_string(),
            4 => i32::from_be_bytes(fixed(4, &mut b)?.try_into().unwrap_or_default()).to_string(),
            5 | 8 => {
                i64::from_be_bytes(fixed(8, &mut b)?.try_into().unwrap_or_default()).to_string()
            }
            6 | 7 => {
                let len = fixed(2, &mut b)?;
                let len = u16::from_be_bytes([len[0], len[1]]) as usize;
                String::from_utf8_lossy(&fixed(len, &mut b)?).into_owned()
            }
            9 => fixed(16, &mut b)?
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect(),
            other => return Err(format!("header {name:?} has unknown type {other}")),
        };
        out.push((name, value));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "eventstream_tests.rs"]
mod tests;
