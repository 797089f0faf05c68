//! A loopback mock of an OpenAI-compatible chat-completions server (std `TcpListener`,
//! one scripted reply per connection, SSE bodies in uneven chunked-transfer pieces),
//! the builders of its chat-completion-chunk streams, and a runner for the built
//! `agent` binary. Kept apart from the Anthropic mock: the wire differs, the HTTP
//! plumbing is a few lines.

#![allow(dead_code)] // each test uses part of the kit

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One scripted answer.
pub enum Reply {
    /// A 200 event stream, complete.
    Sse(Vec<u8>),
    /// A 200 event stream cut off: the connection closes mid-body, as a dropped
    /// connection would.
    Dropped(Vec<u8>),
    /// Any status with extra headers and a JSON (or other) body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

impl Reply {
    /// `{"error":{"message","type","code"}}` with `status`.
    pub fn error(status: u16, kind: &str, message: &str, headers: &[(&str, &str)]) -> Reply {
        let body = json!({"error": {"message": message, "type": kind, "param": null,
                                     "code": null}});
        Reply::Status {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.to_string(),
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub request_line: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct OpenAiMock {
    /// e.g. `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl OpenAiMock {
    /// Answers the n-th connection with the n-th reply; past the script, a 500 that says
    /// so (so that a test expecting fewer requests fails loudly).
    pub fn start(replies: Vec<Reply>) -> OpenAiMock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::error(500, "mock_exhausted", "the mock has no more replies", &[])
                });
                answer(stream, reply, &log);
            }
        });
        OpenAiMock { base_url, seen }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(mut stream: TcpStream, reply: Reply, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    let _ = reader.read_exact(&mut body);
    log.lock().unwrap().push(Seen {
        request_line: request_line.trim_end().to_string(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let bytes = match reply {
        Reply::Sse(body) => sse_response(&body, true),
        Reply::Dropped(body) => sse_response(&body, false),
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut out = format!("HTTP/1.1 {status} Mock\r\ncontent-type: application/json\r\n");
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            ));
            out.into_bytes()
        }
    };
    let _ = stream.write_all(&bytes);
    let _ = stream.flush();
}

/// A 200 SSE response in uneven chunks; without `complete` the terminating chunk is
/// left out and the connection simply closes.
fn sse_response(body: &[u8], complete: bool) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
        transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        .to_vec();
    let mut rest = body;
    let mut size = 5;
    while !rest.is_empty() {
        let n = size.min(rest.len());
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\r\n");
        rest = &rest[n..];
        size = size * 2 + 3;
    }
    if complete {
        out.extend_from_slice(b"0\r\n\r\n");
    }
    out
}

// ---------------------------------------------------------------------------------
// Chunk-stream builders, in the shape real servers send.

fn chunk(choices: Value, usage: Value) -> String {
    let c = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
                   "created": 1_760_000_000, "model": "mock-model",
                   "system_fingerprint": "fp_mock", "choices": choices, "usage": usage});
    format!("data: {c}\n\n")
}

fn delta(d: Value, finish: Option<&str>) -> String {
    chunk(
        json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]),
        Value::Null,
    )
}

fn end(finish: &str, prompt: u64, completion: u64) -> String {
    let mut s = delta(json!({}), Some(finish));
    s.push_str(&chunk(
        json!([]),
        json!({"prompt_tokens": prompt, "completion_tokens": completion,
               "total_tokens": prompt + completion,
               "prompt_tokens_details": {"cached_tokens": 0}}),
    ));
    s.push_str("data: [DONE]\n\n");
    s
}

/// A text answer in a few pieces, `stop`, usage, `[DONE]`.
pub fn text_turn(text: &str) -> Vec<u8> {
    let mut s = delta(json!({"role": "assistant", "content": ""}), None);
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    for piece in [&text[..mid], &text[mid..]] {
        s.push_str(&delta(json!({"content": piece}), None));
    }
    s.push_str(&end("stop", 50, 7));
    s.into_bytes()
}

/// Optional text, then the calls `(id, name, arguments)` with their arguments split in
/// fragments, `tool_calls`, usage, `[DONE]`.
pub fn tool_turn(text: Option<&str>, calls: &[(&str, &str, Value)]) -> Vec<u8> {
    tool_turn_parts(text, calls, true)
}

/// The same turn, without its finish, usage and `[DONE]` (for dropped streams).
pub fn tool_turn_prefix(text: Option<&str>, calls: &[(&str, &str, Value)]) -> Vec<u8> {
    tool_turn_parts(text, calls, false)
}

fn tool_turn_parts(text: Option<&str>, calls: &[(&str, &str, Value)], finish: bool) -> Vec<u8> {
    let mut s = delta(json!({"role": "assistant", "content": null}), None);
    if let Some(t) = text {
        s.push_str(&delta(json!({"content": t}), None));
    }
    for (index, (id, name, args)) in calls.iter().enumerate() {
        s.push_str(&delta(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        let args = args.to_string();
        let chars: Vec<char> = args.chars().collect();
        for piece in chars.chunks(4) {
            let piece: String = piece.iter().collect();
            s.push_str(&delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    if finish {
        s.push_str(&end("tool_calls", 100, 20));
    }
    s.into_bytes()
}

// ---------------------------------------------------------------------------------
// Running the binary.

/// Variables that would leak the developer's setup into a test run.
const SCRUBBED_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AGENT_MODEL",
    "AGENT_PROVIDER",
];

/// Runs `agent run ARGS` in `workspace` with `env` set on top of a scrubbed
/// environment, stdin closed.
pub fn run_agent(workspace: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.arg("run").arg("-C").arg(workspace).args(args);
    for v in SCRUBBED_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// The stdout of a `--json` run, parsed.
pub fn transcript(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
