//! The Anthropic Messages API provider (SPEC §3.1): one blocking ureq POST per attempt,
//! the body read as a stream through the SSE decoder and turn accumulator
//! (`turn::read_turn`). The retry policy — which failures are retried, how long to wait
//! (exponential backoff with jitter, `retry-after`), and which fail at once with the
//! API's own message — is shared with the OpenAI-compatible provider (`retry`). A
//! partial turn from a failed attempt is discarded whole. The API key goes only into
//! the `x-api-key` header: never into an error or a log.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::retry::{
    self, AttemptError, DEFAULT_BACKOFF_BASE, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RETRIES,
    RetryPolicy,
};
use super::{Provider, ProviderError, ProviderErrorKind, StreamNotice, TurnRequest};
use crate::protocol::{ApiErrorBody, Message};
use crate::turn::{Turn, read_turn};

/// The API version header every request carries.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to reach the API and how hard to try.
#[derive(Clone)]
pub(crate) struct AnthropicConfig {
    /// e.g. `https://api.anthropic.com` (a trailing `/` is fine).
    pub base_url: String,
    pub api_key: String,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// A stream (or a response) silent longer than this counts as dropped.
    pub idle_timeout: Duration,
    /// First backoff delay (tests make it tiny).
    pub backoff_base: Duration,
}

impl AnthropicConfig {
    /// The defaults of SPEC §2 and §3.1 for this endpoint and key.
    #[allow(dead_code)] // used by the CLI wiring
    pub(crate) fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            max_retries: DEFAULT_MAX_RETRIES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            backoff_base: DEFAULT_BACKOFF_BASE,
        }
    }
}

impl std::fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"[REDACTED]")
            .field("max_retries", &self.max_retries)
            .field("idle_timeout", &self.idle_timeout)
            .field("backoff_base", &self.backoff_base)
            .finish()
    }
}

/// Receives the raw SSE bytes of every successful turn, with the request it answered
/// (cassette recording).
pub(crate) type Recorder = Box<dyn FnMut(&TurnRequest<'_>, &[u8]) + Send>;

pub(crate) struct AnthropicProvider {
    config: AnthropicConfig,
    url: String,
    agent: ureq::Agent,
    recorder: Option<Recorder>,
}

/// The request body of SPEC §3.1.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Value; 1]>,
    messages: CachedTail<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    stream: bool,
}

/// Prompt caching (SPEC §9): the marker every breakpoint carries.
fn ephemeral() -> Value {
    serde_json::json!({"type": "ephemeral"})
}

/// Block types that may carry a `cache_control` breakpoint.
const CACHEABLE_BLOCKS: &[&str] = &["text", "tool_result", "tool_use"];

#[cfg(test)]
mod cache_tests {
    use super::*;
    use crate::protocol::{ContentBlock, Role};
    use serde_json::json;

    #[test]
    fn breakpoints_only_on_last_tool_and_newest_message() {
        let messages = vec![
            Message::user_text("task"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "ReadFile".into(),
                    input: json!({"path": "a"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "x".into(),
                    is_error: false,
                }],
            },
        ];
        let tools = vec![json!({"name": "A"}), json!({"name": "B"})];
        let req = TurnRequest {
            model: "m",
            max_tokens: 1,
            system: "",
            messages: &messages,
            tools: &tools,
        };
        let body: Value = serde_json::from_slice(&request_body(&req).unwrap()).unwrap();
        assert!(body.get("system").is_none());
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert!(
            body["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert!(
            body["messages"][1]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        // The history itself is untouched.
        assert_eq!(
            serde_json::to_value(&messages[2]).unwrap()["content"][0].get("cache_control"),
            None
        );
    }
}

/// The history, serialised as it is except for a cache breakpoint on the last block of
/// the newest message, so that each turn reads the whole previous prefix from the cache.
/// Only that one message is copied.
struct CachedTail<'a>(&'a [Message]);

impl Serialize for CachedTail<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        if let Some((last, rest)) = self.0.split_last() {
            for m in rest {
                seq.serialize_element(m)?;
            }
            let mut last = serde_json::to_value(last).map_err(S::Error::custom)?;
            if let Some(block) = last["content"].as_array_mut().and_then(|c| c.last_mut())
                && CACHEABLE_BLOCKS.contains(&block["type"].as_str().unwrap_or(""))
            {
                block["cache_control"] = ephemeral();
            }
            seq.serialize_element(&last)?;
        }
        seq.end()
    }
}

/// The `tools` array exactly as sent: the registry's definitions with the prompt-cache
/// breakpoint on the last one (`agent tools` prints this too).
pub(crate) fn api_tools(tools: &[Value]) -> Vec<Value> {
    let mut tools = tools.to_vec();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    tools
}

/// The request body with prompt-cache breakpoints on the last tool definition, the
/// system prompt and the newest message. The prefix order is tools → system → messages,
/// so the first two cache everything a run re-sends every turn.
fn request_body(request: &TurnRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let tools = api_tools(request.tools);
    let system = (!request.system.is_empty()).then(|| {
        [serde_json::json!({"type": "text", "text": request.system, "cache_control": ephemeral()})]
    });
    serde_json::to_vec(&RequestBody {
        model: request.model,
        max_tokens: request.max_tokens,
        system,
        messages: CachedTail(request.messages),
        tools,
        stream: true,
    })
}

/// An HTTP error body: `{"type":"error","error":{"type","message"},"request_id"?}`.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiErrorBody,
}

/// The `(type, message)` of an Anthropic error body.
fn parse_error_body(raw: &[u8]) -> Option<(String, String)> {
    let env = serde_json::from_slice::<ErrorEnvelope>(raw).ok()?;
    Some((env.error.kind, env.error.message))
}

impl AnthropicProvider {
    pub(crate) fn new(config: AnthropicConfig) -> Self {
        let agent = retry::http_agent(config.idle_timeout);
        let url = format!("{}/v1/messages", config.base_url.trim_end_matches('/'));
        AnthropicProvider {
            config,
            url,
            agent,
            recorder: None,
        }
    }

    /// Tee the raw SSE bytes of each successful turn to `recorder` (failed attempts are
    /// not recorded).
    #[allow(dead_code)] // used by cassette recording
    pub(crate) fn set_recorder(&mut self, recorder: Recorder) {
        self.recorder = Some(recorder);
    }

    fn attempt(
        &mut self,
        body: &[u8],
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, AttemptError> {
        let sent = self
            .agent
            .post(&self.url)
            .header("x-api-key", &self.config.api_key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("content-type", "application/json")
            .send(body);
        retry::receive(
            sent,
            retry::Exchange {
                base_url: &self.config.base_url,
                idle_timeout: self.config.idle_timeout,
                request_id_header: "request-id",
                parse_error_body,
                decode: |r, n| read_turn(r, n),
                recorder: self.recorder.as_mut(),
            },
            request,
            on_notice,
        )
    }
}

impl Provider for AnthropicProvider {
    fn stream_turn(
        &mut self,
        request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        let body = request_body(request).map_err(|e| ProviderError {
            kind: ProviderErrorKind::Transport,
            message: format!("could not serialise the request: {e}"),
        })?;
        let secrets = [self.config.api_key.clone()];
        let policy = RetryPolicy {
            max_retries: self.config.max_retries,
            backoff_base: self.config.backoff_base,
        };
        retry::with_retries(policy, &secrets, on_notice, &mut |on_notice| {
            retry::log_request(&self.url, request, body.len());
            self.attempt(&body, request, on_notice)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::StopReason;
    use serde_json::json;
    use std::io::{self, BufRead, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    const KEY: &str = "sk-ant-test-0123456789-SECRET";

    /// One scripted answer of the loopback server.
    enum Reply {
        /// Written whole, then the connection is closed.
        Bytes(Vec<u8>),
        /// Written, then the server goes silent for the duration before closing.
        Stall(Vec<u8>, Duration),
    }

    #[derive(Debug)]
    struct Recorded {
        request_line: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Recorded {
        fn header(&self, name: &str) -> Vec<&str> {
            self.headers
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .collect()
        }
    }

    /// A minimal HTTP/1.1 server on 127.0.0.1 answering each connection with the next
    /// scripted reply (the full mock lives in tests/support).
    struct Server {
        base_url: String,
        requests: Arc<Mutex<Vec<Recorded>>>,
    }

    impl Server {
        fn start(replies: Vec<Reply>) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let base_url = format!("http://{}", listener.local_addr().unwrap());
            let requests = Arc::new(Mutex::new(Vec::new()));
            let log = Arc::clone(&requests);
            std::thread::spawn(move || {
                for reply in replies {
                    let Ok((stream, _)) = listener.accept() else {
                        return;
                    };
                    let log = Arc::clone(&log);
                    std::thread::spawn(move || answer(stream, reply, &log));
                }
            });
            Server { base_url, requests }
        }

        fn count(&self) -> usize {
            self.requests.lock().unwrap().len()
        }
    }

    fn answer(mut stream: TcpStream, reply: Reply, log: &Mutex<Vec<Recorded>>) {
        let mut reader = io::BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        log.lock().unwrap().push(Recorded {
            request_line: request_line.trim_end().to_string(),
            headers,
            body,
        });
        match reply {
            Reply::Bytes(bytes) => {
                let _ = stream.write_all(&bytes);
            }
            Reply::Stall(bytes, hold) => {
                let _ = stream.write_all(&bytes);
                let _ = stream.flush();
                std::thread::sleep(hold);
            }
        }
    }

    /// A 200 SSE response in uneven chunks (chunked transfer encoding); `complete:
    /// false` leaves out the terminating chunk, as a dropped connection would.
    fn sse_response(body: &[u8], complete: bool) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
            transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            .to_vec();
        let mut rest = body;
        let mut size = 7;
        while !rest.is_empty() {
            let n = size.min(rest.len());
            out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
            out.extend_from_slice(&rest[..n]);
            out.extend_from_slice(b"\r\n");
            rest = &rest[n..];
            size = size * 3 + 1;
        }
        if complete {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        out
    }

    fn status_response(status: u16, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
        let mut out = format!("HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\n");
        for (k, v) in headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ));
        out.into_bytes()
    }

    fn api_error(status: u16, kind: &str, message: &str, headers: &[(&str, &str)]) -> Reply {
        let body = json!({"type": "error", "error": {"type": kind, "message": message},
            "request_id": "req_1"});
        Reply::Bytes(status_response(status, headers, &body.to_string()))
    }

    fn text_stream(text: &str) -> Vec<u8> {
        let events = [
            json!({"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":3,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}),
            json!({"type":"message_stop"}),
        ];
        frame(&events)
    }

    fn frame(events: &[Value]) -> Vec<u8> {
        let mut out = String::new();
        for e in events {
            out.push_str(&format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap()
            ));
        }
        out.into_bytes()
    }

    fn ok(text: &str) -> Reply {
        Reply::Bytes(sse_response(&text_stream(text), true))
    }

    fn config(server: &Server) -> AnthropicConfig {
        AnthropicConfig {
            max_retries: 4,
            idle_timeout: Duration::from_secs(10),
            backoff_base: Duration::from_millis(1),
            ..AnthropicConfig::new(format!("{}/", server.base_url), KEY)
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Heard {
        Started,
        Text(String),
        Ready(String),
        Retry(u32, String, Duration),
    }

    fn run(config: AnthropicConfig) -> (Result<Turn, ProviderError>, Vec<Heard>) {
        let messages = vec![Message::user_text("hi")];
        let tools = vec![json!({"name": "Bash", "input_schema": {"type": "object"}})];
        let request = TurnRequest {
            model: "claude-test",
            max_tokens: 1000,
            system: "be brief",
            messages: &messages,
            tools: &tools,
        };
        let mut heard = Vec::new();
        let mut provider = AnthropicProvider::new(config);
        let result = provider.stream_turn(&request, &mut |n| {
            heard.push(match n {
                StreamNotice::TurnStarted => Heard::Started,
                StreamNotice::TextDelta(t) => Heard::Text(t.to_string()),
                StreamNotice::ToolReady(c) => Heard::Ready(c.id.clone()),
                StreamNotice::Retry {
                    attempt,
                    reason,
                    delay,
                } => Heard::Retry(attempt, reason.to_string(), delay),
            })
        });
        (result, heard)
    }

    fn retries(heard: &[Heard]) -> Vec<(u32, String)> {
        heard
            .iter()
            .filter_map(|h| match h {
                Heard::Retry(a, r, _) => Some((*a, r.clone())),
                _ => None,
            })
            .collect()
    }

    fn text_of(turn: &Turn) -> String {
        serde_json::to_value(&turn.message.content).unwrap()[0]["text"]
            .as_str()
            .unwrap()
            .into()
    }

    #[test]
    fn sends_the_headers_and_body_and_records_the_successful_stream() {
        let server = Server::start(vec![ok("hello")]);
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&recorded);
        let mut provider = AnthropicProvider::new(config(&server));
        provider.set_recorder(Box::new(move |req, bytes| {
            sink.lock()
                .unwrap()
                .push((req.model.to_string(), bytes.to_vec()));
        }));
        let messages = vec![Message::user_text("hi")];
        let tools = vec![json!({"name": "Bash", "input_schema": {"type": "object"}})];
        let request = TurnRequest {
            model: "claude-test",
            max_tokens: 1000,
            system: "be brief",
            messages: &messages,
            tools: &tools,
        };
        let mut heard = Vec::new();
        let turn = provider
            .stream_turn(&request, &mut |n| heard.push(format!("{n:?}")))
            .unwrap();
        assert_eq!(text_of(&turn), "hello");
        assert_eq!(turn.stop_reason, StopReason::EndTurn);
        assert_eq!(
            heard,
            vec![
                "TurnStarted".to_string(),
                "TextDelta(\"hello\")".to_string()
            ]
        );

        let requests = server.requests.lock().unwrap();
        assert_eq!(requests.len(), 1);
        let r = &requests[0];
        assert_eq!(r.request_line, "POST /v1/messages HTTP/1.1");
        assert_eq!(r.header("x-api-key"), vec![KEY]);
        assert_eq!(r.header("anthropic-version"), vec!["2023-06-01"]);
        assert_eq!(r.header("content-type"), vec!["application/json"]);
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 1000,
                "system": [{"type": "text", "text": "be brief",
                            "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi",
                              "cache_control": {"type": "ephemeral"}}]}],
                "tools": [{"name": "Bash", "input_schema": {"type": "object"},
                           "cache_control": {"type": "ephemeral"}}],
                "stream": true
            })
        );
        let recorded = recorded.lock().unwrap();
        assert_eq!(recorded.len(), 1);
        assert_eq!(recorded[0].0, "claude-test");
        assert_eq!(
            recorded[0].1,
            text_stream("hello"),
            "the raw SSE bytes, de-chunked"
        );
    }

    #[test]
    fn overloaded_twice_then_ok_counts_two_retries() {
        let server = Server::start(vec![
            api_error(529, "overloaded_error", "Overloaded", &[]),
            api_error(529, "overloaded_error", "Overloaded", &[]),
            ok("third time"),
        ]);
        let (result, heard) = run(config(&server));
        assert_eq!(text_of(&result.unwrap()), "third time");
        let r = retries(&heard);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            (1, "HTTP 529 overloaded_error: Overloaded".to_string())
        );
        assert_eq!(r[1].0, 2);
        assert_eq!(server.count(), 3);
    }

    #[test]
    fn retry_after_is_honoured() {
        let server = Server::start(vec![
            api_error(
                429,
                "rate_limit_error",
                "slow down",
                &[("retry-after", "1")],
            ),
            ok("after the wait"),
        ]);
        let (result, heard) = run(config(&server));
        assert!(result.is_ok());
        match &heard[..] {
            [Heard::Retry(1, reason, delay), Heard::Started, ..] => {
                assert_eq!(*delay, Duration::from_secs(1));
                assert!(reason.contains("rate_limit_error: slow down"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retry_after_ms_wins_and_is_fractional() {
        let server = Server::start(vec![
            api_error(
                503,
                "api_error",
                "busy",
                &[("retry-after-ms", "12.5"), ("retry-after", "9")],
            ),
            ok("ok"),
        ]);
        let (result, heard) = run(config(&server));
        assert!(result.is_ok());
        assert!(matches!(heard[0], Heard::Retry(1, _, d) if d == Duration::from_micros(12_500)));
    }

    #[test]
    fn bad_request_fails_fast_with_the_api_message() {
        let server = Server::start(vec![
            api_error(
                400,
                "invalid_request_error",
                "messages.0: tool_use ids were found without tool_result blocks",
                &[("x-should-retry", "true")],
            ),
            ok("never"),
        ]);
        let (result, heard) = run(config(&server));
        let err = result.unwrap_err();
        assert_eq!(
            err.kind,
            ProviderErrorKind::Http {
                status: 400,
                error_type: "invalid_request_error".into()
            }
        );
        assert_eq!(
            err.message,
            "HTTP 400 invalid_request_error: messages.0: tool_use ids were found without tool_result blocks"
        );
        assert!(heard.is_empty(), "{heard:?}");
        assert_eq!(server.count(), 1);
    }

    #[test]
    fn x_should_retry_false_stops_a_retryable_status() {
        let server = Server::start(vec![
            api_error(500, "api_error", "do not", &[("x-should-retry", "false")]),
            ok("never"),
        ]);
        let (result, _) = run(config(&server));
        assert!(result.unwrap_err().message.contains("do not"));
        assert_eq!(server.count(), 1);
    }

    #[test]
    fn the_api_key_never_appears_in_errors() {
        let echo = format!("invalid x-api-key: {KEY}");
        let server = Server::start(vec![api_error(401, "authentication_error", &echo, &[])]);
        let err = run(config(&server)).0.unwrap_err();
        assert!(!err.message.contains(KEY), "{}", err.message);
        assert!(err.message.contains("[REDACTED]"));
        assert!(!format!("{:?}", config(&server)).contains(KEY));
    }

    #[test]
    fn non_json_error_body_is_quoted() {
        let server = Server::start(vec![Reply::Bytes(status_response(
            404,
            &[],
            "<html>no such route</html>",
        ))]);
        let err = run(config(&server)).0.unwrap_err();
        assert_eq!(err.message, "HTTP 404: <html>no such route</html>");
        assert_eq!(
            err.kind,
            ProviderErrorKind::Http {
                status: 404,
                error_type: String::new()
            }
        );
    }

    #[test]
    fn a_stream_dropped_mid_turn_is_retried_and_its_calls_discarded() {
        let partial = frame(&[
            json!({"type":"message_start","message":{"id":"msg_p","model":"m"}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_partial","name":"Bash","input":{}}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"rm x\"}"}}),
            json!({"type":"content_block_stop","index":0}),
        ]);
        let mut cut = partial.clone();
        cut.extend_from_slice(b"event: content_block_start\ndata: {\"type\":\"content_bl");
        let server = Server::start(vec![Reply::Bytes(sse_response(&cut, false)), ok("clean")]);
        let recorded = Arc::new(Mutex::new(0));
        let count = Arc::clone(&recorded);
        let mut provider = AnthropicProvider::new(config(&server));
        provider.set_recorder(Box::new(move |_, _| *count.lock().unwrap() += 1));
        let messages = vec![Message::user_text("hi")];
        let request = TurnRequest {
            model: "m",
            max_tokens: 10,
            system: "",
            messages: &messages,
            tools: &[],
        };
        let mut heard = Vec::new();
        let turn = provider
            .stream_turn(&request, &mut |n| {
                heard.push(match n {
                    StreamNotice::TurnStarted => "started".to_string(),
                    StreamNotice::ToolReady(c) => format!("ready {}", c.id),
                    StreamNotice::Retry { attempt, .. } => format!("retry {attempt}"),
                    StreamNotice::TextDelta(t) => format!("text {t}"),
                })
            })
            .unwrap();
        assert!(
            turn.calls.is_empty(),
            "the partial turn's call is not returned"
        );
        assert_eq!(text_of(&turn), "clean");
        assert_eq!(
            heard,
            [
                "started",
                "ready toolu_partial",
                "retry 1",
                "started",
                "text clean"
            ]
        );
        assert_eq!(
            *recorded.lock().unwrap(),
            1,
            "only the successful attempt is recorded"
        );
        // No system prompt and no tools: the fields are left out.
        let body: Value = serde_json::from_slice(&server.requests.lock().unwrap()[0].body).unwrap();
        assert!(
            body.get("system").is_none() && body.get("tools").is_none(),
            "{body}"
        );
    }

    #[test]
    fn an_overloaded_error_event_is_retried() {
        let failing = frame(&[
            json!({"type":"message_start","message":{"id":"msg_p","model":"m"}}),
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        ]);
        let server = Server::start(vec![Reply::Bytes(sse_response(&failing, true)), ok("fine")]);
        let (result, heard) = run(config(&server));
        assert_eq!(text_of(&result.unwrap()), "fine");
        assert_eq!(
            retries(&heard),
            vec![(1, "stream error overloaded_error: Overloaded".into())]
        );
    }

    #[test]
    fn a_silent_stream_times_out_instead_of_hanging() {
        let head = sse_response(&text_stream("x")[..40], false);
        let stall = || Reply::Stall(head.clone(), Duration::from_secs(5));
        let server = Server::start(vec![stall(), ok("after the stall")]);
        let cfg = AnthropicConfig {
            idle_timeout: Duration::from_millis(300),
            ..config(&server)
        };
        let (result, heard) = run(cfg.clone());
        assert_eq!(text_of(&result.unwrap()), "after the stall");
        let r = retries(&heard);
        assert_eq!(r.len(), 1);
        assert!(r[0].1.contains("idle timeout (300ms)"), "{}", r[0].1);

        // Out of retries, it is a transport error that says so.
        let server = Server::start(vec![stall()]);
        let cfg = AnthropicConfig {
            max_retries: 0,
            ..cfg
        };
        let err = run(AnthropicConfig {
            base_url: server.base_url.clone(),
            ..cfg
        })
        .0
        .unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Transport);
        assert!(err.message.contains("idle timeout"), "{}", err.message);
    }

    #[test]
    fn a_server_silent_before_its_headers_times_out_too() {
        let server = Server::start(vec![Reply::Stall(Vec::new(), Duration::from_secs(5))]);
        let cfg = AnthropicConfig {
            idle_timeout: Duration::from_millis(300),
            max_retries: 0,
            ..config(&server)
        };
        let err = run(cfg).0.unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Transport);
        assert!(err.message.contains("idle timeout"), "{}", err.message);
    }

    #[test]
    fn gives_up_after_max_retries_with_the_last_error() {
        let server = Server::start(vec![
            api_error(503, "api_error", "first", &[]),
            api_error(503, "api_error", "second", &[]),
            api_error(502, "api_error", "last", &[]),
            ok("too late"),
        ]);
        let (result, heard) = run(AnthropicConfig {
            max_retries: 2,
            ..config(&server)
        });
        let err = result.unwrap_err();
        assert_eq!(
            err.message,
            "HTTP 502 api_error: last (gave up after 2 retries)"
        );
        assert_eq!(
            err.kind,
            ProviderErrorKind::Http {
                status: 502,
                error_type: "api_error".into()
            }
        );
        assert_eq!(retries(&heard).len(), 2);
        assert_eq!(server.count(), 3);
    }

    #[test]
    fn connection_refused_is_retried_then_a_transport_error() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = AnthropicConfig {
            max_retries: 1,
            backoff_base: Duration::from_millis(1),
            ..AnthropicConfig::new(format!("http://127.0.0.1:{port}"), KEY)
        };
        let (result, heard) = run(cfg);
        let err = result.unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Transport);
        assert!(
            err.message.contains("connection to http://127.0.0.1"),
            "{}",
            err.message
        );
        assert_eq!(retries(&heard).len(), 1);
    }

    #[test]
    fn a_bad_url_is_not_retried() {
        let cfg = AnthropicConfig {
            ..AnthropicConfig::new("not a url", KEY)
        };
        let (result, heard) = run(cfg);
        assert_eq!(result.unwrap_err().kind, ProviderErrorKind::Transport);
        assert!(heard.is_empty());
    }
}
