//! The one HTTP provider shell: one blocking ureq POST per attempt, the body read as a
//! stream through the provider's decoder, retries (`retry`), and the recording of each
//! successful turn. What differs between APIs — path, headers, body, error bodies,
//! decoder, request-id header — is the provider's [`Wire`]; everything else is here. A
//! partial turn from a failed attempt is discarded whole. The API key goes only into
//! the wire's headers: never into an error or a log. When the model's retries end in an
//! overload, the same request goes to `--fallback-model`, which then answers for the rest
//! of the run.

use std::io::{self, BufRead, Read};

use super::retry::{self, AttemptError, OnNotice, RetryPolicy};
use super::{Provider, ProviderError, ProviderErrorKind, StreamFailure, TurnRequest};
use crate::model::turn::{StreamNotice, Turn};

mod body;
mod drain;
mod gateway;

pub(crate) use body::Body;
use drain::drain;
pub(crate) use gateway::{Gateway, HttpConfig};

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

    // The hooks of the clouds (Bedrock, Vertex AI, Foundry); the defaults are the
    // Anthropic API's and OpenAI's.

    /// The URL of a request to `model`: the clouds put the model in the path.
    fn url(&self, base_url: &str, _model: &str) -> String {
        format!("{}{}", base_url.trim_end_matches('/'), self.path())
    }
    /// The credential headers of one attempt, computed over the request as it will be
    /// sent (SigV4 signs the URL, the headers and the body; OAuth tokens are fetched and
    /// refreshed here). `Err` is a credential source that failed (retried).
    fn authorize(&self, _request: &Outgoing<'_>) -> Result<Vec<(String, String)>, String> {
        Ok(Vec::new())
    }
    /// The values to redact from messages: the credentials in use now.
    fn secrets(&self) -> Vec<String> {
        Vec::new()
    }
    /// The content type of a streamed answer (a 200 of any other is refused).
    fn stream_content_type(&self) -> &'static str {
        "text/event-stream"
    }
    /// The response body as the SSE text `decode` reads: Bedrock's binary event-stream
    /// frames become Anthropic events here. What this returns is also what cassettes
    /// record, so replay decodes every provider's turns as SSE.
    fn unframe<'r>(&self, body: Box<dyn Read + Send + 'r>) -> Box<dyn Read + Send + 'r> {
        body
    }
}

/// One attempt's request as [`Wire::authorize`] sees it.
pub(crate) struct Outgoing<'r> {
    pub method: &'static str,
    pub url: &'r str,
    /// The wire's and the gateway's headers, lower-case names.
    pub headers: &'r [(String, String)],
    pub body: &'r Body<'r>,
}

/// What a decoder makes of a response body.
pub(crate) type TurnResult = Result<Turn, StreamFailure>;

/// Receives the raw SSE bytes of every successful turn, with the request it answered
/// (cassette recording).
pub(crate) type Recorder = Box<dyn FnMut(&TurnRequest<'_>, &[u8]) + Send>;

/// A provider reached over HTTP, speaking `wire`.
pub(crate) struct HttpProvider {
    wire: Box<dyn Wire>,
    config: HttpConfig,
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
        HttpProvider {
            wire,
            config,
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
        let url = self.wire.url(&self.config.base_url, request.model);
        let mut headers: Vec<(String, String)> = self
            .wire
            .headers(&self.config)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .chain(self.config.gateway.headers.iter().cloned())
            .collect();
        let outgoing = Outgoing {
            method: "POST",
            url: &url,
            headers: &headers,
            body,
        };
        let credentials = self
            .wire
            .authorize(&outgoing)
            .map_err(|message| AttemptError {
                error: ProviderError {
                    kind: ProviderErrorKind::Transport,
                    message,
                },
                retryable: true,
                retry_after: None,
            })?;
        headers.extend(credentials);
        let mut post = self.agent.post(&url);
        for (name, value) in &headers {
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
            && !kind
                .to_ascii_lowercase()
                .contains(self.wire.stream_content_type())
        {
            let kind = kind.to_string();
            return Err(retry::wrong_content_type(response, &kind));
        }
        on_notice(StreamNotice::TurnStarted);
        let tee = Tee {
            inner: self
                .wire
                .unframe(Box::new(response.into_body().into_reader())),
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
            .chain(self.wire.secrets())
            .collect();
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            backoff_base: self.config.backoff_base,
        };
        // A page that is not an event stream is tried once more (a portal may let the
        // second request through), never again.
        let mut wrong_type_seen = false;
        // Credentials a wire fetched during the run (STS keys, Google tokens) join the
        // values redacted from every output, not only from this request's errors.
        for s in &secrets {
            crate::util::output::add_secret(s);
        }
        let result = retry::with_retries(policy, &secrets, on_notice, &mut |on_notice| {
            let url = self.wire.url(&self.config.base_url, request.model);
            log_request(&url, request, body.len());
            self.attempt(body, request, on_notice).map_err(|mut e| {
                if matches!(&e.error.kind, ProviderErrorKind::Http { error_type, .. }
                    if error_type == retry::WRONG_CONTENT_TYPE)
                {
                    e.retryable &= !wrong_type_seen;
                    wrong_type_seen = true;
                }
                e
            })
        });
        // An attempt may have refreshed them.
        for s in self.wire.secrets() {
            crate::util::output::add_secret(&s);
        }
        result
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
