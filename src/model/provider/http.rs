//! The one HTTP provider shell: one blocking ureq POST per attempt, the body read as a
//! stream through the provider's decoder, retries (`retry`), and the recording of each
//! successful turn. What differs between APIs — path, headers, body, error bodies,
//! decoder, request-id header — is the provider's [`Wire`]; everything else is here. A
//! partial turn from a failed attempt is discarded whole. The API key goes only into
//! the wire's headers: never into an error or a log. When the model's retries end in an
//! overload, the same request goes to `--fallback-model`, which then answers for the rest
//! of the run.

use std::io::{self, BufRead, Read};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use super::retry::{
    self, AttemptError, DEFAULT_BACKOFF_BASE, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RETRIES, OnNotice,
    RetryPolicy,
};
use super::{Provider, ProviderError, ProviderErrorKind, StreamFailure, TurnRequest};
use crate::config::cli::RequestArgs;
use crate::model::turn::{StreamNotice, Turn};
use crate::record::history::BodySink;

/// What one HTTP API does its own way. A wire holds no connection state: the shell
/// owns the agent, the retries and the recorder.
pub(crate) trait Wire: Send {
    /// Appended to the base URL, e.g. `/v1/messages`.
    fn path(&self) -> &'static str;
    /// The response header naming the request, logged with -v.
    fn request_id_header(&self) -> &'static str;
    /// The wire's own headers, the credential included (`config.api_key` may be empty).
    /// The shell adds the user's `--header`s after them.
    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)>;
    /// The request body for `request`, with the options of `config`, into `out`.
    fn body<'a>(
        &self,
        request: &TurnRequest<'a>,
        config: &HttpConfig,
        out: &mut Body<'a>,
    ) -> serde_json::Result<()>;
    /// `(type, message)` of an error body this API's servers send; `None` for a body it
    /// does not understand (which is then quoted).
    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)>;
    /// The stream decoder: SSE body in, one turn out, returning at the stream's own
    /// end marker (the shell then reads the rest of the body, to keep the connection).
    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult;
}

/// What a decoder makes of a response body.
pub(crate) type TurnResult = Result<Turn, StreamFailure>;

/// Receives the raw SSE bytes of every successful turn, with the request it answered
/// (cassette recording).
pub(crate) type Recorder = Box<dyn FnMut(&TurnRequest<'_>, &[u8]) + Send>;

/// How to reach the API and how hard to try.
#[derive(Clone)]
pub(crate) struct HttpConfig {
    /// e.g. `https://api.anthropic.com` (a trailing `/` is fine).
    pub base_url: String,
    /// Empty: no credential header (local OpenAI-compatible servers need none).
    pub api_key: String,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// A stream (or a response) silent longer than this counts as dropped.
    pub idle_timeout: Duration,
    /// First backoff delay (tests make it tiny).
    pub backoff_base: Duration,
    /// `--tool-choice` and the other request options.
    pub request: RequestArgs,
    /// Credentials and headers for gateways.
    pub gateway: Gateway,
    /// `--fallback-model`: where a request goes once the model's retries end overloaded.
    pub fallback_model: Option<String>,
}

/// What gateways and proxies need besides the API key: a bearer token, extra headers.
#[derive(Clone, Default)]
pub(crate) struct Gateway {
    /// `ANTHROPIC_AUTH_TOKEN`: sent as `Authorization: Bearer` instead of `x-api-key`.
    pub auth_token: Option<String>,
    /// `--header` and `ANTHROPIC_CUSTOM_HEADERS`, in that order.
    pub headers: Vec<(String, String)>,
}

/// Header names whose values are credentials: never shown, never recorded.
const SECRET_HEADER_WORDS: &[&str] = &["auth", "key", "token", "secret", "cookie", "password"];

/// Longest header value taken: a header is a line, not a document.
const MAX_HEADER_VALUE_BYTES: usize = 8 * 1024;

/// The characters RFC 9110 allows in a header name besides letters and digits.
const HEADER_NAME_PUNCTUATION: &[u8] = b"!#$%&'*+-.^_`|~";

impl Gateway {
    /// The gateway of `--header` values and `ANTHROPIC_CUSTOM_HEADERS` (one header per
    /// line); a malformed header is an error naming where it came from.
    pub(crate) fn new(
        auth_token: Option<String>,
        flags: &[String],
        env_headers: Option<&str>,
    ) -> Result<Gateway, String> {
        let from_env = env_headers
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim().is_empty());
        let all = flags
            .iter()
            .map(|h| ("--header", h.as_str()))
            .chain(from_env.map(|h| ("ANTHROPIC_CUSTOM_HEADERS", h)));
        let mut headers = Vec::new();
        for (source, line) in all {
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("{source} {line:?}: expected 'Name: value'"));
            };
            let (name, value) = (name.trim(), value.trim());
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || HEADER_NAME_PUNCTUATION.contains(&b));
            if !valid_name {
                return Err(format!("{source} {line:?}: {name:?} is not a header name"));
            }
            if value.len() > MAX_HEADER_VALUE_BYTES || value.bytes().any(|b| b.is_ascii_control()) {
                return Err(format!(
                    "{source} {name}: the value has control characters or is over \
                     {MAX_HEADER_VALUE_BYTES} bytes"
                ));
            }
            headers.push((name.to_string(), value.to_string()));
        }
        Ok(Gateway {
            auth_token: auth_token.filter(|t| !t.is_empty()),
            headers,
        })
    }

    /// The values to redact wherever they could show: the token, and the values of
    /// headers whose names say they are credentials (`Bearer xyz`: `xyz` too).
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let secret_name = |name: &str| {
            let name = name.to_ascii_lowercase();
            SECRET_HEADER_WORDS.iter().any(|w| name.contains(w))
        };
        let headers = self
            .headers
            .iter()
            .filter(|(name, _)| secret_name(name))
            .flat_map(|(_, value)| {
                let last = value.rsplit(' ').next().unwrap_or(value).to_string();
                [value.clone(), last]
            });
        self.auth_token
            .iter()
            .cloned()
            .chain(headers)
            .filter(|v| !v.is_empty())
            .collect()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Gateway")
            .field(
                "auth_token",
                &self.auth_token.as_ref().map(|_| "[REDACTED]"),
            )
            .field("headers", &names)
            .finish()
    }
}

impl HttpConfig {
    /// The defaults of SPEC §2 and §3.1 for this endpoint and key.
    pub(crate) fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        HttpConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            max_retries: DEFAULT_MAX_RETRIES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            backoff_base: DEFAULT_BACKOFF_BASE,
            request: RequestArgs::default(),
            gateway: Gateway::default(),
            fallback_model: None,
        }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"[REDACTED]")
            .field("max_retries", &self.max_retries)
            .field("idle_timeout", &self.idle_timeout)
            .field("backoff_base", &self.backoff_base)
            .field("request", &self.request)
            .field("gateway", &self.gateway)
            .field("fallback_model", &self.fallback_model)
            .finish()
    }
}

/// A provider reached over HTTP, speaking `wire`.
pub(crate) struct HttpProvider {
    wire: Box<dyn Wire>,
    config: HttpConfig,
    url: String,
    agent: ureq::Agent,
    recorder: Option<Recorder>,
    /// Set once the model was overloaded and the fallback took over: from then on every
    /// request goes to the fallback (an overloaded model rarely recovers within a run,
    /// and going back would pay its retries again on every turn).
    on_fallback: bool,
}

impl HttpProvider {
    /// `recorder` tees the raw SSE bytes of each successful turn (failed attempts are
    /// not recorded).
    pub(crate) fn new(wire: Box<dyn Wire>, config: HttpConfig, recorder: Option<Recorder>) -> Self {
        let agent = retry::http_agent(config.idle_timeout);
        let url = format!("{}{}", config.base_url.trim_end_matches('/'), wire.path());
        HttpProvider {
            wire,
            config,
            url,
            agent,
            recorder,
            on_fallback: false,
        }
    }

    fn attempt(
        &mut self,
        body: &Body<'_>,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, AttemptError> {
        let mut post = self.agent.post(&self.url);
        for (name, value) in self.wire.headers(&self.config) {
            post = post.header(name, &value);
        }
        for (name, value) in &self.config.gateway.headers {
            post = post.header(name, value);
        }
        // With the length given, ureq sends the pieces as one plain body (no chunking).
        let post = post.header("content-length", body.len().to_string());
        let sent = post.send(ureq::SendBody::from_reader(&mut body.reader()));
        let response = sent.map_err(|e| {
            retry::transport_error(e, &self.config.base_url, self.config.idle_timeout)
        })?;
        let status = response.status().as_u16();
        if crate::util::output::debug_enabled() {
            let name = self.wire.request_id_header();
            let id = retry::header(response.headers(), name).unwrap_or("-");
            crate::util::output::debug(&format!("HTTP {status} ({name} {id})"));
        }
        if (300..400).contains(&status) {
            return Err(retry::redirect_error(&response));
        }
        if !(200..300).contains(&status) {
            let wire = &self.wire;
            return Err(retry::http_error(response, &|raw| {
                wire.parse_error_body(raw)
            }));
        }
        // No content type is let through (some servers send none); any other than an
        // event stream means something else answered.
        if let Some(kind) = retry::header(response.headers(), "content-type")
            && !kind.to_ascii_lowercase().contains("text/event-stream")
        {
            let kind = kind.to_string();
            return Err(retry::wrong_content_type(response, &kind));
        }
        on_notice(StreamNotice::TurnStarted);
        let tee = Tee {
            inner: response.into_body().into_reader(),
            copy: self.recorder.as_ref().map(|_| Vec::new()),
        };
        let mut reader = io::BufReader::with_capacity(retry::READ_BUFFER_BYTES, tee);
        match self.wire.decode(&mut reader, on_notice) {
            Ok(turn) => {
                let copy = reader.get_mut().copy.take();
                if let (Some(record), Some(bytes)) = (&mut self.recorder, &copy) {
                    record(request, bytes);
                }
                drain(reader);
                Ok(turn)
            }
            Err(failure) => Err(retry::stream_error(failure, self.config.idle_timeout)),
        }
    }
}

impl HttpProvider {
    /// One turn from `request.model`, retries included. A turn whose stream did not name
    /// its model gets the one asked for, so the transcript always says who answered.
    fn turn_with_retries(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let mut turn = self.try_model(request, on_notice)?;
        if turn.model.is_empty() {
            turn.model = request.model.to_string();
        }
        Ok(turn)
    }

    fn try_model(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let mut body = Body::default();
        match self.wire.body(request, &self.config, &mut body) {
            Ok(()) => self.send_with_retries(&body, request, on_notice),
            Err(e) => Err(ProviderError {
                kind: ProviderErrorKind::Transport,
                message: format!("could not serialise the request: {e}"),
            }),
        }
    }

    /// Sends `body` (the request's), retrying as the policy allows.
    fn send_with_retries(
        &mut self,
        body: &Body<'_>,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let secrets: Vec<String> = Some(self.config.api_key.clone())
            .filter(|k| !k.is_empty())
            .into_iter()
            .chain(self.config.gateway.secret_values())
            .collect();
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            backoff_base: self.config.backoff_base,
        };
        // A page that is not an event stream is tried once more (a portal may let the
        // second request through), never again.
        let mut wrong_type_seen = false;
        retry::with_retries(policy, &secrets, on_notice, &mut |on_notice| {
            log_request(&self.url, request, body.len());
            self.attempt(body, request, on_notice).map_err(|mut e| {
                if matches!(&e.error.kind, ProviderErrorKind::Http { error_type, .. }
                    if error_type == retry::WRONG_CONTENT_TYPE)
                {
                    e.retryable &= !wrong_type_seen;
                    wrong_type_seen = true;
                }
                e
            })
        })
    }
}

impl Provider for HttpProvider {
    fn stream_turn(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let Some(fallback) = self.config.fallback_model.clone() else {
            return self.turn_with_retries(request, on_notice);
        };
        let primary = request.model;
        let on_fallback = TurnRequest {
            model: &fallback,
            ..*request
        };
        if self.on_fallback {
            return self
                .turn_with_retries(&on_fallback, on_notice)
                .map_err(|e| fallback_failed(e, primary, &fallback, true));
        }
        let overloaded = match self.turn_with_retries(request, on_notice) {
            Err(e) if retry::is_overload(&e) => e,
            other => return other,
        };
        crate::util::output::warn(&format!(
            "{primary} is overloaded ({}); the request goes to the fallback model \
             {fallback}, which answers for the rest of the run",
            overloaded.message
        ));
        on_notice(StreamNotice::Fallback {
            from: primary,
            to: &fallback,
            reason: &overloaded.message,
        });
        self.on_fallback = true;
        self.turn_with_retries(&on_fallback, on_notice)
            .map_err(|e| match retry::is_overload(&e) {
                true => ProviderError {
                    message: format!(
                        "both models are overloaded: {primary}: {}; then the fallback \
                         model {fallback}: {}",
                        overloaded.message, e.message
                    ),
                    kind: e.kind,
                },
                false => fallback_failed(e, primary, &fallback, false),
            })
    }
}

/// A failure of the fallback model, saying which model failed and why it was asked.
fn fallback_failed(
    e: ProviderError,
    primary: &str,
    fallback: &str,
    earlier: bool,
) -> ProviderError {
    let when = if earlier { " earlier in the run" } else { "" };
    let what = if retry::is_overload(&e) {
        "is overloaded too"
    } else {
        "failed"
    };
    ProviderError {
        message: format!(
            "the fallback model {fallback} {what} ({primary} was overloaded{when}): {}",
            e.message
        ),
        kind: e.kind,
    }
}

/// How long the end of a body is waited for after the stream's end marker: the rest is
/// normally the chunked terminator, already on its way.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes read after the end marker: a server that goes on sending is not worth its
/// connection.
const MAX_DRAIN_BYTES: u64 = 1024 * 1024;

/// Reads the body to its end after the decoder stopped at the stream's end marker, so
/// that ureq returns the connection to its pool and the next turn reuses it (no new TCP
/// and TLS handshake). A reader thread does it, waited for at most [`DRAIN_TIMEOUT`]: a
/// server that keeps the body open costs a new connection, never a hung turn. The thread
/// is kept for the next turn: a thread spawned per turn cost more than the drain.
fn drain<R: io::Read + Send + 'static>(reader: R) {
    let idle = IDLE_DRAINER
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let Some(drainer) = idle.or_else(Drainer::spawn) else {
        return; // no thread to be had: the connection is closed instead
    };
    if drainer.jobs.send(Box::new(reader)).is_err() {
        return;
    }
    if drainer.done.recv_timeout(DRAIN_TIMEOUT).is_ok() {
        // Kept for the next turn. When another run of the process (`agent batch`) put
        // one back first, this one's thread ends as its channel closes.
        let mut slot = IDLE_DRAINER.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(drainer);
        }
    }
    // On a timeout the thread is still reading: dropping its channel here ends it when
    // that read does, and the next turn gets a new one.
}

/// The drain thread between turns, if one is idle.
static IDLE_DRAINER: Mutex<Option<Drainer>> = Mutex::new(None);

/// A long-lived drain thread's ends: bodies in, one `()` out per body drained.
struct Drainer {
    jobs: mpsc::Sender<Box<dyn io::Read + Send>>,
    done: mpsc::Receiver<()>,
}

impl Drainer {
    /// A new drain thread, or `None` when the system has no thread to give.
    fn spawn() -> Option<Drainer> {
        let (jobs, inbox) = mpsc::channel::<Box<dyn io::Read + Send>>();
        let (finished, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("agent-drain".into())
            .spawn(move || {
                for mut reader in inbox {
                    let _ = io::copy(&mut (&mut reader).take(MAX_DRAIN_BYTES), &mut io::sink());
                    drop(reader); // the connection goes back to the pool here, or is closed
                    if finished.send(()).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Drainer { jobs, done })
    }
}

/// A request body in pieces: the wire's own bytes (the head, separators, the cache
/// breakpoint) and the history's stored message JSON, borrowed. It is sent with its
/// length up front and read piece by piece into ureq's send buffer, so the history is
/// never copied into a body of its own: that copy, as big as the history, was a long
/// run's largest allocation and a memcpy of the whole history every turn.
#[derive(Default)]
pub(crate) struct Body<'a> {
    own: Vec<u8>,
    parts: Vec<Part<'a>>,
    len: usize,
}

#[derive(Clone, Copy)]
enum Part<'a> {
    /// A range of `own`.
    Own(usize, usize),
    History(&'a [u8]),
}

impl<'a> BodySink<'a> for Body<'a> {
    fn own(&mut self, bytes: &[u8]) {
        let start = self.own.len();
        self.own.extend_from_slice(bytes);
        self.len += bytes.len();
        match self.parts.last_mut() {
            Some(Part::Own(_, end)) if *end == start => *end = self.own.len(),
            _ => self.parts.push(Part::Own(start, self.own.len())),
        }
    }

    fn history(&mut self, bytes: &'a [u8]) {
        self.len += bytes.len();
        self.parts.push(Part::History(bytes));
    }
}

impl<'a> Body<'a> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes from the start (each attempt sends them anew).
    pub(crate) fn reader(&self) -> BodyReader<'_, 'a> {
        BodyReader {
            body: self,
            part: 0,
            offset: 0,
        }
    }
}

/// Reads a [`Body`]'s pieces in order.
pub(crate) struct BodyReader<'b, 'a> {
    body: &'b Body<'a>,
    part: usize,
    offset: usize,
}

impl Read for BodyReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len()
            && let Some(part) = self.body.parts.get(self.part)
        {
            let bytes = match *part {
                Part::Own(start, end) => &self.body.own[start..end],
                Part::History(bytes) => bytes,
            };
            let rest = &bytes[self.offset..];
            let k = rest.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&rest[..k]);
            n += k;
            self.offset += k;
            if self.offset == bytes.len() {
                self.part += 1;
                self.offset = 0;
            }
        }
        Ok(n)
    }
}

/// With -v: one line per attempt, before it is sent.
fn log_request(url: &str, request: &TurnRequest<'_>, body_bytes: usize) {
    if crate::util::output::debug_enabled() {
        crate::util::output::debug(&format!(
            "POST {url} (model {}, {} messages, {} tools, {body_bytes} bytes)",
            request.model,
            request.messages.len(),
            request.tools.len(),
        ));
    }
}

/// Copies what is read from the body when recording; a pass-through otherwise.
struct Tee<R> {
    inner: R,
    copy: Option<Vec<u8>>,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(copy) = &mut self.copy {
            copy.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the reader's buffer size, the pieces come out whole and in order, adjacent
    /// own bytes are one piece, and the length is known before anything is read.
    #[test]
    fn a_body_reads_its_pieces_in_order_through_any_buffer() {
        let history = [b"{\"role\":\"user\"}".as_slice(), b"{\"x\":1}".as_slice()];
        let mut body = Body::default();
        body.own(b"{\"model\":\"m\"");
        body.own(b",\"messages\":[");
        body.history(history[0]);
        body.own(b",");
        body.history(history[1]);
        body.history(b"");
        body.own(b"]}");
        let whole = b"{\"model\":\"m\",\"messages\":[{\"role\":\"user\"},{\"x\":1}]}";
        assert_eq!(body.len(), whole.len());
        assert_eq!(body.parts.len(), 6);
        for size in [1, 3, 7, whole.len(), 4096] {
            let (mut reader, mut out, mut buf) = (body.reader(), Vec::new(), vec![0; size]);
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                assert!(
                    n == size || out.len() + n == whole.len(),
                    "short read of {n}"
                );
                out.extend_from_slice(&buf[..n]);
            }
            assert_eq!(out, whole, "buffer of {size}");
        }
    }
}
