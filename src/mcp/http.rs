//! The streamable-HTTP transport (MCP 2025-03-26 and later): every message is a POST to
//! the one endpoint; a request's answer is either one JSON body or an SSE stream (decoded
//! by the same `provider::sse` decoder the model's streams use) that may carry the
//! server's own requests and notifications before the response. The session id the
//! server assigns at `initialize` and the agreed protocol version go on every later
//! request; redirects are never followed, so headers (tokens) reach only the configured
//! URL. A 401 is answered by OAuth (`oauth::Authorizer`: discovery, a grant, the request
//! sent again with the token), a 403 `insufficient_scope` by a step-up, at most
//! `MAX_STEP_UPS` times per request. After `initialize`, the standalone GET stream is
//! opened when the server offers it (405: it does not): what arrives there (requests,
//! list changes, logs) is handled like what arrives inside a call. When the run ends
//! (every way out), requests still in flight get `notifications/cancelled` and then the
//! session is deleted, all within `CLOSE_TIMEOUT`.

use std::io::{BufReader, Read};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::{self, CallError, Elicitation, Inbox, Incoming, Transport};
use super::oauth::{Authorizer, Challenge};
use crate::model::provider::sse::SseReader;
use crate::util::sync::Locked;

/// Largest response body read, in bytes (JSON or the whole SSE stream): the same bound
/// as a stdio message.
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// Time to connect to the server: a loopback or LAN server accepts at once.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound of a notification's POST (the server only acknowledges it with 202).
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of an error response read to quote from it.
const ERROR_BODY_BYTES: u64 = 64 * 1024;
/// Bound of `close`, the cancellations and the DELETE that ends the session together:
/// the run is finishing and must not wait (a loopback or LAN server answers in ms).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Characters of an error body quoted in a message.
const ERROR_BODY_CHARS: usize = 300;
/// Resumptions (GET with Last-Event-ID) of one request's stream before giving up.
const MAX_RESUMES: usize = 5;
/// Wait before resuming when the server gave no `retry` (the SSE default is a few seconds;
/// a request is bounded by --mcp-timeout anyway).
const DEFAULT_RETRY_MS: u64 = 1_000;
/// Longest wait before resuming, whatever `retry` says.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);
/// Step-ups (a new grant for more scopes after a 403 `insufficient_scope`) per request:
/// a server that keeps asking is not going to be satisfied.
const MAX_STEP_UPS: usize = 2;
/// Times the standalone GET stream is opened again after the server closed it.
const MAX_STREAM_OPENS: usize = 20;
/// Bound of opening the standalone stream (its reading is unbounded: it lasts the run).
const STREAM_OPEN_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct HttpTransport {
    name: String,
    url: String,
    headers: Vec<(String, String)>,
    agent: ureq::Agent,
    session: Mutex<Option<String>>,
    protocol: Mutex<Option<String>>,
    /// The `initialize` params, to start a new session when the server ends one.
    init_params: Mutex<Option<Value>>,
    next_id: AtomicU64,
    /// The ids of the requests awaiting their answer (not `initialize`, which the spec
    /// forbids cancelling), for `close` to cancel.
    in_flight: Mutex<Vec<u64>>,
    /// `close` has run.
    closed: AtomicBool,
    /// OAuth, unless off or an Authorization header is configured.
    oauth: Option<Authorizer>,
    elicitation: Option<Elicitation>,
    inbox: Inbox,
}

impl HttpTransport {
    pub(crate) fn new(
        name: &str,
        url: &str,
        headers: Vec<(String, String)>,
        oauth: Option<Authorizer>,
        elicitation: Option<Elicitation>,
    ) -> Self {
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_connect(Some(CONNECT_TIMEOUT))
                .user_agent(format!("agent/{}", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        HttpTransport {
            name: name.to_string(),
            url: url.to_string(),
            headers,
            agent,
            session: Mutex::new(None),
            protocol: Mutex::new(None),
            init_params: Mutex::new(None),
            next_id: AtomicU64::new(0),
            in_flight: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            oauth,
            elicitation,
            inbox: Inbox::default(),
        }
    }

    /// Sends with the OAuth token, if any: a 401 runs the authorization and a 403
    /// `insufficient_scope` a step-up (bounded), each followed by sending again.
    fn authorized(
        &self,
        timeout: Duration,
        send: &dyn Fn() -> Result<ureq::http::Response<ureq::Body>, CallError>,
    ) -> Result<ureq::http::Response<ureq::Body>, CallError> {
        let Some(auth) = &self.oauth else {
            return send();
        };
        auth.before_request(timeout);
        let mut resp = send()?;
        let (mut authorized, mut step_ups) = (false, 0);
        loop {
            let www = header(&resp, "www-authenticate");
            let outcome = match resp.status().as_u16() {
                401 if !authorized => {
                    authorized = true;
                    auth.unauthorized(www.as_deref(), timeout)
                }
                403 if step_ups < MAX_STEP_UPS
                    && Challenge::parse(www.as_deref().unwrap_or("")).insufficient_scope() =>
                {
                    step_ups += 1;
                    auth.step_up(www.as_deref(), timeout)
                }
                _ => return Ok(resp),
            };
            outcome.map_err(|e| CallError::Transport(format!("OAuth: {e}")))?;
            resp = send()?;
        }
    }

    fn session(&self) -> Option<String> {
        self.session.locked().clone()
    }

    /// POSTs one message; returns the response (status checked) for the caller to read.
    fn post(
        &self,
        msg: &Value,
        timeout: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, CallError> {
        let resp = self.authorized(timeout, &|| self.post_unchecked(msg, timeout))?;
        self.check(resp)
    }

    /// Whether the server ended our session (404 to a request that carried its id).
    fn session_ended(&self, resp: &ureq::http::Response<ureq::Body>) -> bool {
        resp.status().as_u16() == 404 && self.session().is_some()
    }

    /// A new session after the server ended ours: `initialize` and
    /// `notifications/initialized` again, as the spec requires.
    fn reinitialize(&self, timeout: Duration) -> Result<(), CallError> {
        crate::util::output::debug(&format!(
            "mcp {}: the server ended the session; starting a new one",
            self.name
        ));
        let params = self.init_params.locked().clone();
        *self.session.locked() = None;
        self.request("initialize", params.unwrap_or(Value::Null), timeout)?;
        self.notify("notifications/initialized", Value::Null)
    }

    /// What every request carries: the configured headers, the session, and the protocol
    /// revision the server answered (the spec asks for both on every later request).
    fn with_session<B>(&self, mut req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(token) = self.oauth.as_ref().and_then(Authorizer::bearer) {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        if let Some(s) = self.session() {
            req = req.header("Mcp-Session-Id", s.as_str());
        }
        let protocol = self.protocol.locked().clone();
        if let Some(v) = protocol {
            req = req.header("MCP-Protocol-Version", v.as_str());
        }
        req
    }

    fn post_unchecked(
        &self,
        msg: &Value,
        timeout: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, CallError> {
        let req = self
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        self.with_session(req)
            .send(msg.to_string().as_bytes())
            .map_err(|e| transport_error(e, timeout))
    }

    /// A 2xx response, or the error its status means.
    fn check(
        &self,
        resp: ureq::http::Response<ureq::Body>,
    ) -> Result<ureq::http::Response<ureq::Body>, CallError> {
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(resp);
        }
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if let Some(loc) = location.filter(|_| (300..400).contains(&status)) {
            return Err(CallError::Transport(format!(
                "HTTP {status} redirect to {loc}: not followed (configure the final URL)"
            )));
        }
        let mut body = String::new();
        let _ = resp
            .into_body()
            .into_reader()
            .take(ERROR_BODY_BYTES)
            .read_to_string(&mut body);
        let hint = if status == 404 && self.session().is_some() {
            " (the server ended the session)"
        } else {
            ""
        };
        Err(CallError::Transport(format!(
            "HTTP {status}{hint}: {}",
            crate::util::text::ellipsis(body.trim(), ERROR_BODY_CHARS)
        )))
    }

    /// Handles a message that is not the awaited response.
    fn other(&self, msg: Incoming, params: &Value, timeout: Duration) {
        self.inbox.note(&self.name, &msg, params);
        match msg {
            Incoming::Request { method, reply } => {
                crate::util::output::debug(&format!(
                    "mcp {}: the server asked {method}; answered {}",
                    self.name,
                    if reply.get("error").is_some() {
                        "method not found"
                    } else {
                        "ok"
                    }
                ));
                // A response is POSTed like any client message (answer: 202, no body).
                let _ = self.post(&reply, timeout);
            }
            Incoming::Notification { method, params } => crate::util::output::debug(&format!(
                "mcp {}: {}",
                self.name,
                client::describe_notification(&method, &params)
            )),
            Incoming::Response { id, .. } => crate::util::output::debug(&format!(
                "mcp {}: an answer to no pending request (id {id:?}) ignored",
                self.name
            )),
            Incoming::Invalid(why) => {
                crate::util::output::debug(&format!("mcp {}: ignored a message: {why}", self.name))
            }
        }
    }

    /// Looks for the response to `id` among the messages of one JSON value (a message or
    /// a batch), handling the others.
    fn scan(&self, value: Value, id: u64, timeout: Duration) -> Option<Result<Value, CallError>> {
        let msgs = match value {
            Value::Array(v) => v,
            v => vec![v],
        };
        let mut found = None;
        for m in msgs {
            let params = m.get("params").cloned().unwrap_or(Value::Null);
            match client::classify_with(m, self.elicitation) {
                Incoming::Response {
                    id: Some(got),
                    outcome,
                } if got == id && found.is_none() => found = Some(outcome),
                other => self.other(other, &params, timeout),
            }
        }
        found
    }
}

/// Where an SSE stream stopped: its last event id and the server's `retry` advice.
#[derive(Default)]
struct Resume {
    last_id: Option<String>,
    retry_ms: Option<u64>,
}

impl HttpTransport {
    /// Reads one SSE stream until the response to `id`; `None` if it ended first.
    fn read_sse(
        &self,
        body: impl Read,
        id: u64,
        timeout: Duration,
        resume: &mut Resume,
    ) -> Result<Option<Result<Value, CallError>>, CallError> {
        let mut events = SseReader::new(BufReader::new(body));
        loop {
            let ev = match events.next_event() {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                Err(e) => {
                    // A cut connection is resumable like a closed one, if we have an id.
                    if resume.last_id.is_some() && !is_timeout(&e) {
                        break;
                    }
                    return Err(read_error(e, timeout));
                }
            };
            if ev.id.is_some() {
                resume.last_id = ev.id.clone();
            }
            resume.retry_ms = events.retry_ms().or(resume.retry_ms);
            if ev.data.trim().is_empty() {
                continue; // the priming event (an id for resumption, no data)
            }
            let value: Value = serde_json::from_str(&ev.data)
                .map_err(|e| CallError::Transport(format!("an SSE event is not JSON: {e}")))?;
            if let Some(found) = self.scan(value, id, timeout) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// GET the endpoint to resume a stream after `last_id`.
    fn get_stream(&self, last_id: &str, timeout: Duration) -> Result<impl Read, CallError> {
        let resp = self.authorized(timeout, &|| {
            let req = self
                .agent
                .get(&self.url)
                .config()
                .timeout_global(Some(timeout))
                .build()
                .header("Accept", "text/event-stream")
                .header("Last-Event-ID", last_id);
            self.with_session(req)
                .call()
                .map_err(|e| transport_error(e, timeout))
        })?;
        let resp = self.check(resp)?;
        Ok(resp.into_body().into_reader().take(MAX_BODY_BYTES))
    }
}

/// A read that ran out of time, by type: the socket's own timeout, or ureq's deadline,
/// which its body reader hands back wrapped in an `io::Error` (`ureq::Error::into_io`).
fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)))
}

fn read_error(e: std::io::Error, timeout: Duration) -> CallError {
    if is_timeout(&e) {
        CallError::Timeout(timeout)
    } else {
        CallError::Transport(format!("cannot read the answer: {e}"))
    }
}

fn transport_error(e: ureq::Error, timeout: Duration) -> CallError {
    match e {
        ureq::Error::Timeout(_) => CallError::Timeout(timeout),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            CallError::Dead(format!("connection refused: {io}"))
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            CallError::Timeout(timeout)
        }
        other => CallError::Transport(other.to_string()),
    }
}

fn header(resp: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl HttpTransport {
    /// POSTs a request and reads its answer (renewing an ended session once).
    fn exchange(
        &self,
        msg: &Value,
        id: u64,
        method: &str,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let send = || self.post_unchecked(msg, timeout);
        let mut resp = self.authorized(timeout, &send)?;
        if method != "initialize" && self.session_ended(&resp) {
            self.reinitialize(timeout)?;
            resp = self.authorized(timeout, &send)?;
        }
        let resp = self.check(resp)?;
        if method == "initialize"
            && let Some(s) = header(&resp, "mcp-session-id")
        {
            *self.session.locked() = Some(s);
        }
        let kind = header(&resp, "content-type").unwrap_or_default();
        let body = resp.into_body().into_reader().take(MAX_BODY_BYTES);
        let read_err = |e| read_error(e, timeout);
        if kind.starts_with("text/event-stream") {
            let deadline = Instant::now() + timeout;
            let mut resume = Resume::default();
            if let Some(found) = self.read_sse(body, id, timeout, &mut resume)? {
                return found;
            }
            // The server closed the stream early (it may, after an event id): poll for the
            // rest with GET and Last-Event-ID, as the spec asks, waiting `retry` between.
            for _ in 0..MAX_RESUMES {
                let Some(last) = resume.last_id.clone() else {
                    break;
                };
                let wait = Duration::from_millis(resume.retry_ms.unwrap_or(DEFAULT_RETRY_MS))
                    .min(MAX_RETRY_WAIT);
                if Instant::now() + wait >= deadline {
                    return Err(CallError::Timeout(timeout));
                }
                std::thread::sleep(wait);
                let resp = self.get_stream(&last, deadline - Instant::now())?;
                if let Some(found) = self.read_sse(resp, id, timeout, &mut resume)? {
                    return found;
                }
            }
            return Err(CallError::Transport(
                "the server ended the SSE stream without answering".into(),
            ));
        }
        let mut text = String::new();
        BufReader::new(body)
            .read_to_string(&mut text)
            .map_err(read_err)?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            CallError::Transport(format!(
                "the answer ({}) is not JSON: {e}",
                if kind.is_empty() {
                    "no content type"
                } else {
                    kind.as_str()
                }
            ))
        })?;
        self.scan(value, id, timeout).unwrap_or_else(|| {
            Err(CallError::Transport(
                "the answer does not answer the request".into(),
            ))
        })
    }
}

impl Transport for HttpTransport {
    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if method == "initialize" {
            *self.init_params.locked() = Some(params.clone());
        }
        let msg = client::request_message(id, method, params);
        let cancellable = method != "initialize";
        if cancellable {
            self.in_flight.locked().push(id);
        }
        let outcome = self.exchange(&msg, id, method, timeout);
        if cancellable {
            self.in_flight.locked().retain(|i| *i != id);
        }
        if let Err(CallError::Timeout(_)) = &outcome
            && method != "initialize"
        {
            // As on stdio: the server may stop working on it.
            let _ = self.notify(
                "notifications/cancelled",
                serde_json::json!({"requestId": id, "reason": "timed out"}),
            );
        }
        outcome
    }

    fn notify(&self, method: &str, params: Value) -> Result<(), CallError> {
        self.post(
            &client::notification_message(method, params),
            NOTIFY_TIMEOUT,
        )
        .map(drop)
    }

    fn set_protocol_version(&self, version: &str) {
        *self.protocol.locked() = Some(version.to_string());
    }

    fn inbox(&self) -> Option<&Inbox> {
        Some(&self.inbox)
    }

    /// Opens the standalone GET stream on a thread of its own, for the run.
    fn listen(self: std::sync::Arc<Self>) {
        let name = format!("mcp-{}-stream", self.name);
        let _ = std::thread::Builder::new()
            .name(name)
            .spawn(move || self.standalone_stream());
    }

    /// The calls in flight are cancelled (in parallel, within half the bound), then the
    /// session is deleted within what is left of `CLOSE_TIMEOUT`.
    fn close(&self, why: &str) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let deadline = Instant::now() + CLOSE_TIMEOUT;
        let running = self.in_flight.locked().clone();
        std::thread::scope(|scope| {
            for id in running {
                let msg = client::notification_message(
                    "notifications/cancelled",
                    serde_json::json!({"requestId": id, "reason": why}),
                );
                let cancel = move || drop(self.post(&msg, CLOSE_TIMEOUT / 2));
                let _ = std::thread::Builder::new().spawn_scoped(scope, cancel);
            }
        });
        if self.session().is_none() {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let req = self
            .agent
            .delete(&self.url)
            .config()
            .timeout_global(Some(left))
            .build();
        let _ = self.with_session(req).call();
    }
}

impl HttpTransport {
    /// The standalone stream: GET the endpoint (405: not offered), handle every message
    /// that arrives, and open it again (after the server's `retry`, with `Last-Event-ID`)
    /// when the server closes it, until the run ends.
    fn standalone_stream(&self) {
        let mut resume = Resume::default();
        for _ in 0..MAX_STREAM_OPENS {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let send = || {
                let base = self
                    .agent
                    .get(&self.url)
                    .config()
                    .timeout_global(None)
                    .timeout_connect(Some(STREAM_OPEN_TIMEOUT))
                    .timeout_recv_response(Some(STREAM_OPEN_TIMEOUT))
                    .build()
                    .header("Accept", "text/event-stream");
                let mut req = self.with_session(base);
                if let Some(id) = &resume.last_id {
                    req = req.header("Last-Event-ID", id.as_str());
                }
                req.call()
                    .map_err(|e| transport_error(e, STREAM_OPEN_TIMEOUT))
            };
            let resp = match self.authorized(STREAM_OPEN_TIMEOUT, &send) {
                Ok(r) => r,
                Err(e) => {
                    crate::util::output::debug(&format!(
                        "mcp {}: the standalone stream: {e}",
                        self.name
                    ));
                    return;
                }
            };
            let status = resp.status().as_u16();
            let kind = header(&resp, "content-type").unwrap_or_default();
            if status == 405 {
                crate::util::output::debug(&format!(
                    "mcp {}: the server offers no standalone stream (405)",
                    self.name
                ));
                return;
            }
            if !(200..300).contains(&status) || !kind.starts_with("text/event-stream") {
                crate::util::output::debug(&format!(
                    "mcp {}: no standalone stream (HTTP {status}, {kind:?})",
                    self.name
                ));
                return;
            }
            crate::util::output::debug(&format!(
                "mcp {}: the standalone stream is open",
                self.name
            ));
            self.read_standalone(resp.into_body().into_reader(), &mut resume);
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let wait = Duration::from_millis(resume.retry_ms.unwrap_or(DEFAULT_RETRY_MS))
                .min(MAX_RETRY_WAIT);
            std::thread::sleep(wait);
        }
    }

    /// Reads the standalone stream until it ends, handling every message.
    fn read_standalone(&self, body: impl Read, resume: &mut Resume) {
        let mut events = SseReader::new(BufReader::new(body));
        while let Ok(Some(ev)) = events.next_event() {
            if ev.id.is_some() {
                resume.last_id = ev.id.clone();
            }
            resume.retry_ms = events.retry_ms().or(resume.retry_ms);
            if ev.data.trim().is_empty() {
                continue;
            }
            let Ok(value) = serde_json::from_str::<Value>(&ev.data) else {
                crate::util::output::debug(&format!(
                    "mcp {}: the standalone stream sent an event that is not JSON",
                    self.name
                ));
                continue;
            };
            let msgs = match value {
                Value::Array(v) => v,
                v => vec![v],
            };
            for m in msgs {
                let params = m.get("params").cloned().unwrap_or(Value::Null);
                let msg = client::classify_with(m, self.elicitation);
                self.other(msg, &params, NOTIFY_TIMEOUT);
            }
        }
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
