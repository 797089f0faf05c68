//! The loopback mock Anthropic Messages API (std only: a `TcpListener` on 127.0.0.1:0 and
//! a thread per connection). It serves a script of replies in order, one per request,
//! speaking real HTTP/1.1: chunked SSE bodies written in small pieces that split events
//! and JSON at arbitrary places, with pings interleaved, plain error statuses, streams
//! cut mid-turn and streams that go silent. It records every request and checks the
//! invariants of `invariants.rs` on each one.

use super::invariants;
use super::sse;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Longest header section accepted; a client sending more is broken.
const MAX_HEADER_LINES: usize = 100;
/// Largest request body accepted (a long conversation is well under this).
const MAX_BODY_BYTES: usize = 64 << 20;
/// How long `wait_for_requests` waits before failing the test (a hung binary must not
/// hang the suite).
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// How an SSE body is cut into HTTP chunks.
#[derive(Clone, Copy, Debug)]
pub struct SseOpts {
    /// Chunk sizes are drawn from 1..=max_chunk bytes.
    pub max_chunk: usize,
    /// Interleave `event: ping` frames (after the first content_block_start and every
    /// few frames), as the real API does.
    pub pings: bool,
    /// Seed of the chunk-size generator (deterministic runs).
    pub seed: u64,
}

impl Default for SseOpts {
    fn default() -> Self {
        SseOpts {
            max_chunk: 23,
            pings: true,
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete 200 SSE stream of these frames (default `SseOpts`).
    Sse(Vec<String>),
    /// The same with explicit chunking options.
    SseWith(Vec<String>, SseOpts),
    /// A plain response: status, extra headers, JSON body.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200, the first `n` frames, then the socket is closed without the chunked
    /// terminator (a dropped stream).
    DropAfter(Vec<String>, usize),
    /// 200, these frames, then silence until the server is dropped.
    Hang(Vec<String>),
}

impl Reply {
    /// An error response in the API's JSON shape.
    pub fn api_error(code: u16, kind: &str, message: &str) -> Reply {
        Reply::Status {
            code,
            headers: Vec::new(),
            body: serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
                .to_string(),
        }
    }

    /// HTTP 529 overloaded.
    pub fn overloaded() -> Reply {
        Reply::api_error(529, "overloaded_error", "Overloaded")
    }

    /// HTTP 429 with `retry-after: secs`.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        match Reply::api_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ) {
            Reply::Status { code, body, .. } => Reply::Status {
                code,
                headers: vec![("retry-after".into(), retry_after_secs.to_string())],
                body,
            },
            other => other,
        }
    }

    /// HTTP 400 invalid_request_error with this message.
    pub fn bad_request(message: &str) -> Reply {
        Reply::api_error(400, "invalid_request_error", message)
    }
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// (lower-case name, value), in the order received.
    pub headers: Vec<(String, String)>,
    pub raw_body: Vec<u8>,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// When the whole request had been read (for retry-after lower bounds).
    pub received: Instant,
}

/// One tool_result block of a request, content flattened to text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResultSeen {
    pub tool_use_id: String,
    pub content: String,
    pub is_error: bool,
}

impl Recorded {
    /// The tool_result blocks of the last message, in order.
    pub fn tool_results(&self) -> Vec<ToolResultSeen> {
        self.last_blocks()
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| ToolResultSeen {
                tool_use_id: b["tool_use_id"].as_str().unwrap_or("").to_string(),
                content: match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                },
                is_error: b["is_error"] == Value::Bool(true),
            })
            .collect()
    }

    /// The `system` prompt as text (a string, or its text blocks joined).
    pub fn system_text(&self) -> String {
        match &self.body["system"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Names in the `tools` array sent with this request.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The text of the first user message (string content or its text blocks joined).
    pub fn first_user_text(&self) -> String {
        self.messages()
            .first()
            .map(message_text)
            .unwrap_or_default()
    }

    /// The last message's content blocks.
    pub fn last_blocks(&self) -> &[Value] {
        self.messages()
            .last()
            .and_then(|m| m["content"].as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// The text of a message: its string content or its text blocks joined.
pub fn message_text(m: &Value) -> String {
    if let Some(s) = m["content"].as_str() {
        return s.to_string();
    }
    m["content"]
        .as_array()
        .map(|bs| {
            bs.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    scripted: usize,
    requests: Vec<Recorded>,
    violations: Vec<String>,
    shutdown: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking connection thread must not hide the recorded requests.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The server. Dropping it stops accepting and releases every hanging reply.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server that closes the connection after each response.
    pub fn start(script: Vec<Reply>) -> MockServer {
        MockServer::start_with(script, false)
    }

    /// Starts a server that keeps connections alive between complete responses, like
    /// the real API (exercises the client's connection pool).
    pub fn start_keep_alive(script: Vec<Reply>) -> MockServer {
        MockServer::start_with(script, true)
    }

    fn start_with(script: Vec<Reply>, keep_alive: bool) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        {
            let mut st = shared.lock();
            st.scripted = script.len();
            st.script = script.into();
        }
        let s = Arc::clone(&shared);
        let accept = thread::spawn(move || {
            for conn in listener.incoming() {
                if s.lock().shutdown {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    // Errors here are the client going away; nothing to report.
                    let _ = serve_connection(conn, &s, keep_alive);
                });
            }
        });
        MockServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`, for ANTHROPIC_BASE_URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// Blocks until at least `n` requests were received; panics after `WAIT_LIMIT`.
    pub fn wait_for_requests(&self, n: usize) {
        let deadline = Instant::now() + WAIT_LIMIT;
        let mut st = self.shared.lock();
        while st.requests.len() < n {
            let now = Instant::now();
            assert!(
                now < deadline,
                "mock: waited {WAIT_LIMIT:?} for {n} requests, got {}",
                st.requests.len()
            );
            st = self
                .shared
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.len()
    }

    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// Panics listing every violation seen on any request (SPEC §3.1 headers and body,
    /// §3.2 pairing, requests past the end of the script).
    pub fn assert_invariants(&self) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "mock: {} invariant violation(s):\n  {}",
            v.len(),
            v.join("\n  ")
        );
    }

    /// Asserts that every scripted reply was served.
    pub fn assert_script_consumed(&self) {
        let st = self.shared.lock();
        assert!(
            st.script.is_empty(),
            "mock: {} of {} scripted replies never requested",
            st.script.len(),
            st.scripted
        );
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.changed.notify_all();
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Serves requests on one connection until it closes (or after one response unless
/// `keep_alive`).
fn serve_connection(conn: TcpStream, shared: &Shared, keep_alive: bool) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    loop {
        let Some(req) = read_request(&mut reader)? else {
            return Ok(());
        };
        let (reply, number) = {
            let mut st = shared.lock();
            let mut violations = invariants::check_head(&req.method, &req.path, &req.headers);
            if req.body.is_null() {
                violations.push(format!(
                    "body is not JSON: {:?}",
                    String::from_utf8_lossy(&req.raw_body)
                ));
            } else {
                violations.extend(invariants::check_body(&req.body));
            }
            let number = st.requests.len() + 1;
            let reply = st.script.pop_front();
            if reply.is_none() {
                violations.push(format!(
                    "script exhausted: {} replies scripted, this is request {number}",
                    st.scripted
                ));
            }
            st.violations.extend(
                violations
                    .into_iter()
                    .map(|m| format!("request {number}: {m}")),
            );
            st.requests.push(req);
            shared.changed.notify_all();
            (reply, number)
        };
        let reply = reply.unwrap_or_else(|| {
            // Not retryable, so the binary fails fast and says so.
            Reply::bad_request(&format!(
                "mock script exhausted: no reply scripted for request {number}"
            ))
        });
        let complete = write_reply(&mut writer, &reply, number, keep_alive, shared)?;
        if !complete || !keep_alive {
            let _ = writer.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
}

struct RawRequest {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    raw_body: Vec<u8>,
    body: Value,
}

impl From<RawRequest> for Recorded {
    fn from(r: RawRequest) -> Recorded {
        Recorded {
            method: r.method,
            path: r.path,
            headers: r.headers,
            raw_body: r.raw_body,
            body: r.body,
            received: Instant::now(),
        }
    }
}

/// Reads one request; `None` at a clean end of the connection.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Recorded>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    for _ in 0..MAX_HEADER_LINES {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let raw_body = if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        read_chunked(reader)?
    } else {
        let len: usize = header("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        if len > MAX_BODY_BYTES {
            return Err(io::Error::other("request body too large"));
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
        body
    };
    let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    Ok(Some(
        RawRequest {
            method,
            path,
            headers,
            raw_body,
            body,
        }
        .into(),
    ))
}

/// Decodes a chunked body (chunk extensions and trailers ignored).
pub fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        if reader.read_line(&mut size_line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16)
            .map_err(|_| io::Error::other(format!("bad chunk size {size_line:?}")))?;
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                let mut t = String::new();
                if reader.read_line(&mut t)? == 0 || t.trim_end().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(io::Error::other("request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Writes a reply; returns whether the response was complete (so that the connection
/// may be reused).
fn write_reply(
    w: &mut TcpStream,
    reply: &Reply,
    number: usize,
    keep_alive: bool,
    shared: &Shared,
) -> io::Result<bool> {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    match reply {
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 request-id: req_mock_{number}\r\nconnection: {connection}\r\n",
                reason(*code),
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            w.write_all(head.as_bytes())?;
            w.write_all(body.as_bytes())?;
            w.flush()?;
            Ok(true)
        }
        Reply::Sse(frames) => {
            write_sse_head(w, number, connection)?;
            write_frames(w, frames, SseOpts::default())?;
            w.write_all(b"0\r\n\r\n")?;
            w.flush()?;
            Ok(true)
        }
        Reply::SseWith(frames, opts) => {
            write_sse_head(w, number, connection)?;
            write_frames(w, frames, *opts)?;
            w.write_all(b"0\r\n\r\n")?;
            w.flush()?;
            Ok(true)
        }
        Reply::DropAfter(frames, n) => {
            write_sse_head(w, number, connection)?;
            let n = (*n).min(frames.len());
            write_frames(w, &frames[..n], SseOpts::default())?;
            w.flush()?;
            Ok(false)
        }
        Reply::Hang(frames) => {
            write_sse_head(w, number, connection)?;
            write_frames(w, frames, SseOpts::default())?;
            w.flush()?;
            let mut st = shared.lock();
            while !st.shutdown {
                st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            Ok(false)
        }
    }
}

fn write_sse_head(w: &mut TcpStream, number: usize, connection: &str) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
         cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
         request-id: req_mock_{number}\r\nconnection: {connection}\r\n\r\n"
    );
    w.write_all(head.as_bytes())?;
    w.flush()
}

/// The SSE text of `frames` with pings interleaved per `opts` (what the client reads).
pub fn sse_text(frames: &[String], opts: SseOpts) -> String {
    let mut text = String::new();
    for (i, f) in frames.iter().enumerate() {
        text.push_str(f);
        // After the first content_block_start (like the API), then every fourth frame.
        if opts.pings && (i == 1 || (i > 1 && i % 4 == 0)) {
            text.push_str(&sse::ping());
        }
    }
    text
}

/// Deterministic xorshift64: chunk sizes that differ from run to run of a test but not
/// between runs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// The chunk sizes the body of `len` bytes is cut into.
pub fn chunk_sizes(len: usize, opts: SseOpts) -> Vec<usize> {
    let mut rng = Rng(opts.seed | 1);
    let mut sizes = Vec::new();
    let mut left = len;
    while left > 0 {
        let size = (1 + (rng.next() as usize) % opts.max_chunk.max(1)).min(left);
        sizes.push(size);
        left -= size;
    }
    sizes
}

/// Writes the frames (plus pings) as HTTP chunks of pseudo-random small sizes, flushing
/// each so that the client sees events and JSON split at arbitrary places.
fn write_frames(w: &mut TcpStream, frames: &[String], opts: SseOpts) -> io::Result<()> {
    let text = sse_text(frames, opts);
    let bytes = text.as_bytes();
    let mut at = 0;
    for size in chunk_sizes(bytes.len(), opts) {
        let chunk = &bytes[at..at + size];
        at += size;
        w.write_all(format!("{size:x}\r\n").as_bytes())?;
        w.write_all(chunk)?;
        w.write_all(b"\r\n")?;
        w.flush()?;
    }
    Ok(())
}
