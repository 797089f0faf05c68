//! The one loopback mock model server (std only: a `TcpListener` on 127.0.0.1:0 and a
//! thread per connection). It speaks both wire formats, chosen by the request's path:
//! Anthropic's Messages API (`/v1/messages`, SSE events) and the OpenAI-compatible
//! chat completions (`…/chat/completions`, chunk streams). It serves a script of
//! replies in order, one per request, speaking real HTTP/1.1: chunked SSE bodies written
//! in small pieces that split events and JSON at arbitrary places, with pings
//! interleaved, error statuses, redirects and arbitrary bodies, streams cut mid-turn and
//! streams that go silent. It records every request (headers included), counts the
//! connections it accepts, and checks the invariants of `invariants.rs` on each request.

use super::chat;
use super::invariants;
use super::responses;
use super::sse::{self, Turn};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Longest header section accepted; a client sending more is broken.
const MAX_HEADER_LINES: usize = 100;
/// Largest request body accepted (a long conversation is well under this).
const MAX_BODY_BYTES: usize = 64 << 20;
/// How long `wait_for_requests` waits before failing the test (a hung binary must not
/// hang the suite).
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// The wire format of a request, and so of its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `POST /v1/messages`: SSE events, `x-api-key`.
    Anthropic,
    /// `POST …/chat/completions`: `data:` chunks, `authorization: Bearer`.
    OpenAi,
    /// `POST /model/ID/invoke-with-response-stream`: the Anthropic events in AWS
    /// event-stream frames (`eventstream.rs`), SigV4 or Bearer.
    Bedrock,
    /// `POST …/publishers/anthropic/models/M:streamRawPredict`: Anthropic SSE, Bearer.
    Vertex,
    /// `POST …/responses`: OpenAI's Responses API, typed events.
    Responses,
}

impl Wire {
    /// The wire a request path speaks: chat completions by its suffix (any base path,
    /// as gateways add prefixes), else the Messages API.
    pub(crate) fn of_path(path: &str) -> Wire {
        if path.trim_end_matches('/').ends_with("/chat/completions") {
            Wire::OpenAi
        } else if path.starts_with("/model/") && path.ends_with("/invoke-with-response-stream") {
            Wire::Bedrock
        } else if path.ends_with(":streamRawPredict") {
            Wire::Vertex
        } else if path.trim_end_matches('/').ends_with("/responses") {
            Wire::Responses
        } else {
            Wire::Anthropic
        }
    }

    /// A keep-alive ping in this wire: an `event: ping` frame, or an SSE comment.
    pub(crate) fn ping(self) -> String {
        match self {
            Wire::Anthropic | Wire::Vertex => sse::ping(),
            Wire::OpenAi => chat::ping(),
            Wire::Bedrock => String::new(),
            Wire::Responses => responses::ping(),
        }
    }

    /// An API error body in this wire's shape.
    pub(crate) fn error_body(self, kind: &str, message: &str) -> String {
        match self {
            Wire::Anthropic | Wire::Vertex => {
                serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
                    .to_string()
            }
            Wire::OpenAi | Wire::Responses => chat::error_body(kind, message),
            Wire::Bedrock => serde_json::json!({"message": message}).to_string(),
        }
    }

    /// A mid-stream error frame in this wire.
    pub(crate) fn error_frame(self, kind: &str, message: &str) -> String {
        match self {
            // Bedrock's: encoded as the exception of the same class by `eventstream`.
            Wire::Anthropic | Wire::Bedrock | Wire::Vertex => sse::error_event(kind, message),
            Wire::OpenAi => chat::error_chunk(kind, message),
            Wire::Responses => responses::error_event(kind, message),
        }
    }

    /// `(every frame, how many of them come before the stop)` of `turn` in this wire.
    pub(crate) fn render(self, turn: &Turn) -> (Vec<String>, usize) {
        let (body, all) = match self {
            Wire::Anthropic | Wire::Bedrock | Wire::Vertex => (turn.body_frames(), turn.frames()),
            Wire::OpenAi => (chat::body_frames(turn), chat::frames(turn)),
            Wire::Responses => (responses::body_frames(turn), responses::frames(turn)),
        };
        (all, body.len())
    }

    /// The header naming the request id.
    fn request_id_header(self) -> &'static str {
        match self {
            Wire::Anthropic => "request-id",
            Wire::OpenAi | Wire::Responses => "x-request-id",
            Wire::Bedrock => "x-amzn-requestid",
            Wire::Vertex => "x-request-id",
        }
    }
}

/// How an SSE body is cut into HTTP chunks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SseOpts {
    /// Chunk sizes are drawn from 1..=max_chunk bytes.
    pub max_chunk: usize,
    /// Interleave pings (after the second frame and every fourth one), as the real APIs
    /// do: `event: ping` for Anthropic, a `: ping` comment for OpenAI-compatible servers.
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

/// What goes wrong with a scripted turn.
#[derive(Clone, Debug)]
pub(crate) enum Fault {
    /// 200, the first `n` frames, then the socket closes without the chunked terminator.
    DropAfter(usize),
    /// The same, after all of the turn's content but before its stop (`message_delta` or
    /// the `finish_reason` delta): a stream dropped at the last moment.
    DropBeforeEnd,
    /// 200, the first `n` frames, then silence until the server is dropped.
    HangAfter(usize),
    /// The turn's content, then a mid-stream error in the wire's shape (an `error` event
    /// or a `data: {"error": …}` chunk), then the end of the body.
    ErrorBeforeEnd { kind: String, message: String },
}

/// One scripted answer. The raw-frame variants (`Sse`, `SseWith`, `DropAfter`, `Hang`)
/// are sent as given; `Turn`, `Error` and `Silent` are rendered in the wire format of the
/// request they answer, so one script serves either provider.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
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
    /// A model turn in the request's wire, chunked per `opts`, with an optional fault.
    Turn {
        turn: Turn,
        opts: SseOpts,
        fault: Option<Fault>,
    },
    /// An API error in the request's wire: status, extra headers, the error body.
    Error {
        code: u16,
        kind: String,
        message: String,
        headers: Vec<(String, String)>,
    },
    /// Any status, content type, extra headers and body (an HTML login page behind a
    /// 200, a redirect, a huge 500).
    Raw {
        code: u16,
        content_type: String,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200 with event-stream headers, then (with `ping`) one ping in the request's wire,
    /// then nothing until the server is dropped: a server that accepted and stalled.
    Silent { ping: bool },
    /// 200 `application/vnd.amazon.eventstream` with these bytes as they are (bad CRCs,
    /// exceptions, cut frames); `complete: false` closes the socket after them.
    EventStream { bytes: Vec<u8>, complete: bool },
    /// This reply, held until `n` requests answered by `Barrier` replies have arrived in
    /// all (counted over the whole run): proves that many requests are in flight at
    /// once. Requests made one after another never get there, and after `WAIT_LIMIT`
    /// the held one gets a 400 naming the barrier, so the run fails.
    Barrier(usize, Box<Reply>),
}

impl Reply {
    /// A recorded stream from `tests/fixtures/servers/NAME`, replayed byte for byte as a
    /// 200 event stream (cut into chunks, but with no pings added: the recording has its
    /// own).
    pub(crate) fn recorded(name: &str) -> Reply {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/servers")
            .join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Reply::SseWith(
            vec![text],
            SseOpts {
                pings: false,
                ..SseOpts::default()
            },
        )
    }

    /// A model turn, rendered in the wire of the request it answers.
    pub(crate) fn turn(turn: Turn) -> Reply {
        Reply::Turn {
            turn,
            opts: SseOpts::default(),
            fault: None,
        }
    }

    /// This reply with other chunking options (a `Turn` or `Sse` reply).
    pub(crate) fn with_opts(self, new: SseOpts) -> Reply {
        match self {
            Reply::Turn { turn, fault, .. } => Reply::Turn {
                turn,
                opts: new,
                fault,
            },
            Reply::Sse(frames) | Reply::SseWith(frames, _) => Reply::SseWith(frames, new),
            other => panic!("with_opts on {other:?}"),
        }
    }

    /// This `Turn` reply with a fault.
    pub(crate) fn with_fault(self, new: Fault) -> Reply {
        match self {
            Reply::Turn { turn, opts, .. } => Reply::Turn {
                turn,
                opts,
                fault: Some(new),
            },
            other => panic!("with_fault on {other:?}"),
        }
    }

    /// This reply with one more response header (a `Status`, `Error` or `Raw` reply).
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Status { headers, .. }
            | Reply::Error { headers, .. }
            | Reply::Raw { headers, .. } => headers.push((name.to_string(), value.to_string())),
            other => panic!("with_header on {other:?}"),
        }
        self
    }

    /// An error response in the API's JSON shape (the request's wire decides which).
    pub(crate) fn api_error(code: u16, kind: &str, message: &str) -> Reply {
        Reply::Error {
            code,
            kind: kind.to_string(),
            message: message.to_string(),
            headers: Vec::new(),
        }
    }

    /// HTTP 529 overloaded.
    pub(crate) fn overloaded() -> Reply {
        Reply::api_error(529, "overloaded_error", "Overloaded")
    }

    /// HTTP 429 with `retry-after: secs`.
    pub(crate) fn rate_limited(retry_after_secs: u64) -> Reply {
        Reply::rate_limit_error().with_header("retry-after", &retry_after_secs.to_string())
    }

    /// HTTP 429 with `retry-after` as an HTTP date (`Tue, 01 Dec 2026 05:00:00 GMT`).
    pub(crate) fn rate_limited_until(when: SystemTime) -> Reply {
        Reply::rate_limit_error().with_header("retry-after", &http_date(when))
    }

    fn rate_limit_error() -> Reply {
        Reply::api_error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        )
    }

    /// HTTP 400 invalid_request_error with this message.
    pub(crate) fn bad_request(message: &str) -> Reply {
        Reply::api_error(400, "invalid_request_error", message)
    }

    /// Any status with this content type and body.
    pub(crate) fn raw(code: u16, content_type: &str, body: &str) -> Reply {
        Reply::Raw {
            code,
            content_type: content_type.to_string(),
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// A redirect (301, 302, 307, 308 …) to `location`, with a short text body.
    pub(crate) fn redirect(code: u16, location: &str) -> Reply {
        Reply::raw(code, "text/plain", &format!("Redirecting to {location}"))
            .with_header("location", location)
    }

    /// 200 with event-stream headers, then nothing.
    pub(crate) fn silence() -> Reply {
        Reply::Silent { ping: false }
    }

    /// 200 with event-stream headers, one ping, then nothing (llama-cpp-python's answer
    /// to `tool_choice: "auto"` with streaming).
    pub(crate) fn ping_then_silence() -> Reply {
        Reply::Silent { ping: true }
    }
}

/// `t` as an HTTP date (RFC 9110 IMF-fixdate), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (a Thursday).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub method: String,
    pub path: String,
    /// (lower-case name, value), in the order received.
    pub headers: Vec<(String, String)>,
    pub raw_body: Vec<u8>,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// When the whole request had been read (for retry-after lower bounds).
    pub received: Instant,
    /// The wire format its path speaks (and its reply was rendered in).
    pub wire: Wire,
    /// Which accepted TCP connection it came on (1-based, in accept order): requests
    /// sharing a number prove connection reuse.
    pub connection: usize,
}

/// One tool_result block of a request, content flattened to text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolResultSeen {
    pub tool_use_id: String,
    pub content: String,
    pub is_error: bool,
}

impl Recorded {
    /// The tool_result blocks of the last message, in order.
    pub(crate) fn tool_results(&self) -> Vec<ToolResultSeen> {
        self.last_blocks()
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| ToolResultSeen {
                tool_use_id: b["tool_use_id"].as_str().unwrap_or("").to_string(),
                content: flat_text(&b["content"]),
                is_error: b["is_error"] == Value::Bool(true),
            })
            .collect()
    }

    /// The `system` prompt as text (a string, or its text blocks joined).
    pub(crate) fn system_text(&self) -> String {
        flat_text(&self.body["system"])
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Names in the `tools` array sent with this request.
    pub(crate) fn tool_names(&self) -> Vec<String> {
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
    pub(crate) fn first_user_text(&self) -> String {
        self.messages()
            .first()
            .map(message_text)
            .unwrap_or_default()
    }

    /// The last message's content blocks.
    pub(crate) fn last_blocks(&self) -> &[Value] {
        self.messages()
            .last()
            .and_then(|m| m["content"].as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// The text of a message: its string content or its text blocks joined.
pub(crate) fn message_text(m: &Value) -> String {
    flat_text(&m["content"])
}

/// A string, or the `text` of an array's parts joined by newlines; else empty.
fn flat_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[derive(Default)]
struct State {
    /// Requests that reached a `Barrier` reply so far.
    at_barrier: usize,
    script: VecDeque<Reply>,
    scripted: usize,
    requests: Vec<Recorded>,
    violations: Vec<String>,
    connections: usize,
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
pub(crate) struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server that closes the connection after each response.
    pub(crate) fn start(script: Vec<Reply>) -> MockServer {
        MockServer::start_with(script, false)
    }

    /// Starts a server that keeps connections alive between complete responses, like
    /// the real API (exercises the client's connection pool).
    pub(crate) fn start_keep_alive(script: Vec<Reply>) -> MockServer {
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
                let connection = {
                    let mut st = s.lock();
                    if st.shutdown {
                        break;
                    }
                    st.connections += 1;
                    st.connections
                };
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    // Errors here are the client going away; nothing to report.
                    let _ = serve_connection(conn, connection, &s, keep_alive);
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
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, for `--base-url` / OPENAI_BASE_URL.
    pub(crate) fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    pub(crate) fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// TCP connections accepted so far (fewer than requests proves connection reuse).
    pub(crate) fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Blocks until at least `n` requests were received; panics after `WAIT_LIMIT`.
    pub(crate) fn wait_for_requests(&self, n: usize) {
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
    pub(crate) fn remaining(&self) -> usize {
        self.shared.lock().script.len()
    }

    pub(crate) fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// Panics listing every violation seen on any request (SPEC §3.1 headers and body,
    /// §3.2 pairing, either wire; requests past the end of the script).
    pub(crate) fn assert_invariants(&self) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "mock: {} invariant violation(s):\n  {}",
            v.len(),
            v.join("\n  ")
        );
    }

    /// Asserts that every scripted reply was served.
    pub(crate) fn assert_script_consumed(&self) {
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

/// The violations of one request, by the rules of its wire.
fn check_request(req: &Recorded) -> Vec<String> {
    let mut violations = match req.wire {
        Wire::Anthropic => invariants::check_head(&req.method, &req.path, &req.headers),
        Wire::OpenAi | Wire::Responses => invariants::check_chat_head(&req.method, &req.headers),
        Wire::Bedrock => {
            return invariants::check_bedrock(&req.method, &req.path, &req.headers, &req.body);
        }
        Wire::Vertex => {
            return invariants::check_vertex(&req.method, &req.headers, &req.body);
        }
    };
    if req.body.is_null() {
        violations.push(format!(
            "body is not JSON: {:?}",
            String::from_utf8_lossy(&req.raw_body)
        ));
    } else {
        violations.extend(match req.wire {
            Wire::Anthropic | Wire::Bedrock | Wire::Vertex => invariants::check_body(&req.body),
            Wire::OpenAi => invariants::check_chat_body(&req.body),
            Wire::Responses => responses::check_body(&req.body),
        });
    }
    violations
}

/// Serves requests on one connection until it closes (or after one response unless
/// `keep_alive`).
fn serve_connection(
    conn: TcpStream,
    connection: usize,
    shared: &Shared,
    keep_alive: bool,
) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    loop {
        let Some(mut req) = read_request(&mut reader)? else {
            return Ok(());
        };
        req.connection = connection;
        let wire = req.wire;
        let (reply, number) = {
            let mut st = shared.lock();
            let mut violations = check_request(&req);
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
        let reply = match reply {
            Some(Reply::Barrier(n, inner)) => Some(at_barrier(shared, n, *inner)),
            other => other,
        };
        let reply = reply.unwrap_or_else(|| {
            // Not retryable, so the binary fails fast and says so.
            Reply::bad_request(&format!(
                "mock script exhausted: no reply scripted for request {number}"
            ))
        });
        let out = Out {
            w: &mut writer,
            wire,
            number,
            connection: if keep_alive { "keep-alive" } else { "close" },
            shared,
        };
        let complete = out.reply(&reply)?;
        if !complete || !keep_alive {
            let _ = writer.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
}

/// Waits (bounded) until `n` requests have reached a barrier, then gives `inner`.
fn at_barrier(shared: &Shared, n: usize, inner: Reply) -> Reply {
    let deadline = Instant::now() + WAIT_LIMIT;
    let mut st = shared.lock();
    st.at_barrier += 1;
    shared.changed.notify_all();
    while st.at_barrier < n {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Reply::bad_request(&format!(
                "mock barrier: only {} of {n} requests arrived together",
                st.at_barrier
            ));
        }
        st = shared
            .changed
            .wait_timeout(st, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    inner
}

/// One HTTP/1.1 request as it came: the request line's method and target, the headers
/// (names lower-cased), and the body (Content-Length or chunked). Every loopback server
/// of the test support reads its requests with `read_raw_request`.
pub(crate) struct RawRequest {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads one request; `None` at a clean end of the connection.
pub(crate) fn read_raw_request(reader: &mut impl BufRead) -> io::Result<Option<RawRequest>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
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
    let body = if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
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
    Ok(Some(RawRequest {
        method,
        target,
        headers,
        body,
    }))
}

/// Reads one request; `None` at a clean end of the connection.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Recorded>> {
    let Some(RawRequest {
        method,
        target: path,
        headers,
        body: raw_body,
    }) = read_raw_request(reader)?
    else {
        return Ok(None);
    };
    let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
    Ok(Some(Recorded {
        wire: Wire::of_path(&path),
        method,
        path,
        headers,
        raw_body,
        body,
        received: Instant::now(),
        connection: 0,
    }))
}

/// Decodes a chunked body (chunk extensions and trailers ignored).
pub(crate) fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
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
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
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

/// How a streamed body ends.
enum End {
    /// The chunked terminator: a complete response.
    Complete,
    /// The socket closes mid-body.
    Drop,
    /// Nothing more until the server is dropped.
    Hang,
}

/// Where and how one reply is written.
struct Out<'a> {
    w: &'a mut TcpStream,
    wire: Wire,
    number: usize,
    connection: &'static str,
    shared: &'a Shared,
}

impl Out<'_> {
    /// Writes a reply; returns whether the response was complete (so that the
    /// connection may be reused).
    fn reply(self, reply: &Reply) -> io::Result<bool> {
        let opts = SseOpts::default();
        match reply {
            Reply::Status {
                code,
                headers,
                body,
            } => self.plain(*code, "application/json", headers, body),
            Reply::Error {
                code,
                kind,
                message,
                headers,
            } => {
                let body = self.wire.error_body(kind, message);
                self.plain(*code, "application/json", headers, &body)
            }
            Reply::Raw {
                code,
                content_type,
                headers,
                body,
            } => self.plain(*code, content_type, headers, body),
            Reply::EventStream { bytes, complete } => {
                let end = if *complete { End::Complete } else { End::Drop };
                self.stream_bytes(bytes, opts, end)
            }
            Reply::Sse(frames) => self.stream(frames, opts, End::Complete),
            Reply::SseWith(frames, opts) => self.stream(frames, *opts, End::Complete),
            Reply::DropAfter(frames, n) => {
                self.stream(&frames[..(*n).min(frames.len())], opts, End::Drop)
            }
            Reply::Hang(frames) => self.stream(frames, opts, End::Hang),
            Reply::Barrier(_, inner) => self.reply(inner),
            Reply::Silent { ping } => {
                let frames = if *ping {
                    vec![self.wire.ping()]
                } else {
                    vec![]
                };
                let opts = SseOpts {
                    pings: false,
                    ..opts
                };
                self.stream(&frames, opts, End::Hang)
            }
            Reply::Turn { turn, opts, fault } => {
                let (mut frames, body) = self.wire.render(turn);
                let end = match fault {
                    None => End::Complete,
                    Some(Fault::DropAfter(n)) => {
                        frames.truncate(*n);
                        End::Drop
                    }
                    Some(Fault::DropBeforeEnd) => {
                        frames.truncate(body);
                        End::Drop
                    }
                    Some(Fault::HangAfter(n)) => {
                        frames.truncate(*n);
                        End::Hang
                    }
                    Some(Fault::ErrorBeforeEnd { kind, message }) => {
                        frames.truncate(body);
                        frames.push(self.wire.error_frame(kind, message));
                        End::Complete
                    }
                };
                self.stream(&frames, *opts, end)
            }
        }
    }

    /// A response with a content-length body.
    fn plain(
        self,
        code: u16,
        content_type: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> io::Result<bool> {
        let mut head = format!(
            "HTTP/1.1 {code} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
             {}: req_mock_{}\r\nconnection: {}\r\n",
            reason(code),
            body.len(),
            self.wire.request_id_header(),
            self.number,
            self.connection
        );
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        self.w.write_all(head.as_bytes())?;
        self.w.write_all(body.as_bytes())?;
        self.w.flush()?;
        Ok(true)
    }

    /// A 200 event stream of `frames` (pings interleaved per `opts`), ended per `end`;
    /// for Bedrock, the same events in event-stream frames.
    fn stream(self, frames: &[String], opts: SseOpts, end: End) -> io::Result<bool> {
        let text = sse_text_for(self.wire, frames, opts);
        let bytes = match self.wire {
            Wire::Bedrock => super::eventstream::from_sse(&text),
            _ => text.into_bytes(),
        };
        self.stream_bytes(&bytes, opts, end)
    }

    /// A 200 streamed body of `bytes` in the wire's content type, ended per `end`.
    fn stream_bytes(self, bytes: &[u8], opts: SseOpts, end: End) -> io::Result<bool> {
        let content_type = match self.wire {
            Wire::Bedrock => "application/vnd.amazon.eventstream",
            _ => "text/event-stream; charset=utf-8",
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n\
             cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
             {}: req_mock_{}\r\nconnection: {}\r\n\r\n",
            self.wire.request_id_header(),
            self.number,
            self.connection
        );
        self.w.write_all(head.as_bytes())?;
        self.w.flush()?;
        write_frames(self.w, bytes, opts)?;
        match end {
            End::Complete => {
                self.w.write_all(b"0\r\n\r\n")?;
                self.w.flush()?;
                Ok(true)
            }
            End::Drop => Ok(false),
            End::Hang => {
                let mut st = self.shared.lock();
                while !st.shutdown {
                    st = self
                        .shared
                        .changed
                        .wait(st)
                        .unwrap_or_else(|e| e.into_inner());
                }
                Ok(false)
            }
        }
    }
}

/// The SSE text of `frames` with Anthropic pings interleaved per `opts` (what the
/// client reads).
pub(crate) fn sse_text(frames: &[String], opts: SseOpts) -> String {
    sse_text_for(Wire::Anthropic, frames, opts)
}

/// The same with the pings of `wire`.
pub(crate) fn sse_text_for(wire: Wire, frames: &[String], opts: SseOpts) -> String {
    let mut text = String::new();
    for (i, f) in frames.iter().enumerate() {
        text.push_str(f);
        // After the first content_block_start (like the API), then every fourth frame.
        if opts.pings && (i == 1 || (i > 1 && i % 4 == 0)) {
            text.push_str(&wire.ping());
        }
    }
    text
}

/// Deterministic xorshift64: chunk sizes, kill points. Same seed, same numbers, so a
/// failure's seed (tests print it) replays it.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed | 1) // xorshift never leaves 0
    }

    /// Seeded from the clock: different points each run, the seed printed on failure.
    pub(crate) fn from_clock() -> (Self, u64) {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1;
        (Rng(seed), seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..bound`.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// Busy work of a random length under `bound` steps (a kill then lands anywhere in
    /// what the process is doing); returns the length, for the failure message.
    pub(crate) fn spin(&mut self, bound: u64) -> u64 {
        let steps = self.below(bound);
        let mut x = 0u64;
        for i in 0..steps {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        steps
    }
}

/// The chunk sizes the body of `len` bytes is cut into.
pub(crate) fn chunk_sizes(len: usize, opts: SseOpts) -> Vec<usize> {
    let mut rng = Rng::new(opts.seed);
    let mut sizes = Vec::new();
    let mut left = len;
    while left > 0 {
        let size = (1 + (rng.next() as usize) % opts.max_chunk.max(1)).min(left);
        sizes.push(size);
        left -= size;
    }
    sizes
}

/// Writes `text` as HTTP chunks of pseudo-random small sizes, flushing each so that the
/// client sees events and JSON split at arbitrary places.
fn write_frames(w: &mut TcpStream, bytes: &[u8], opts: SseOpts) -> io::Result<()> {
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
