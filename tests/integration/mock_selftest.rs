//! Self-tests of the mock server and its builders in both wire formats, through a raw HTTP client over
//! `TcpStream`: the integration tests are only as good as the mock they run against.

use crate::support::invariants::{check_body, check_chat_body, check_chat_head, check_head};
use crate::support::mock::{chunk_sizes, http_date, read_chunked, sse_text};
use crate::support::sse::{self, Turn};
use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, UNIX_EPOCH};

/// A response as read off the wire.
struct RawResponse {
    code: u16,
    headers: Vec<(String, String)>,
    /// The decoded body (chunked or content-length).
    body: String,
    /// Whether a chunked body ended with its `0` terminator.
    complete: bool,
    /// Size of every chunk received.
    chunks: Vec<usize>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn good_body() -> Value {
    json!({"model": "m", "max_tokens": 10, "stream": true,
           "messages": [{"role": "user", "content": "hi"}]})
}

fn request_text(body: &str, chunked: bool) -> String {
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: {API_KEY}\r\n\
         anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n"
    );
    if chunked {
        let (a, b) = body.split_at(body.len() / 2);
        format!(
            "{head}transfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        )
    } else {
        format!("{head}content-length: {}\r\n\r\n{body}", body.len())
    }
}

fn read_response(r: &mut BufReader<TcpStream>) -> RawResponse {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let code: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':').unwrap();
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut resp = RawResponse {
        code,
        headers,
        body: String::new(),
        complete: false,
        chunks: Vec::new(),
    };
    if resp.header("transfer-encoding") == Some("chunked") {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            if r.read_line(&mut size).unwrap_or(0) == 0 {
                break; // dropped mid-body
            }
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end).unwrap();
                resp.complete = true;
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).unwrap();
            assert_eq!(&chunk[n..], b"\r\n");
            body.extend_from_slice(&chunk[..n]);
            resp.chunks.push(n);
        }
        resp.body = String::from_utf8(body).unwrap();
    } else {
        let len: usize = resp.header("content-length").unwrap().parse().unwrap();
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        resp.body = String::from_utf8(body).unwrap();
        resp.complete = true;
    }
    resp
}

fn post(server: &MockServer, body: &str, chunked: bool) -> RawResponse {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(request_text(body, chunked).as_bytes()).unwrap();
    read_response(&mut BufReader::new(s))
}

/// (event, data) pairs of an SSE text; the test's own minimal reader.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let mut ev = String::new();
            let mut data = String::new();
            for line in f.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    ev = e.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = d.to_string();
                }
            }
            (ev, serde_json::from_str(&data).unwrap())
        })
        .collect()
}

/// Reassembles a turn the way the binary must: text, tool inputs, stop reason.
fn assemble(frames: &[String]) -> (String, Vec<(String, String, String)>, String) {
    let mut text = String::new();
    let mut tools: Vec<(String, String, String)> = Vec::new();
    let mut stop = String::new();
    for (ev, d) in events(&frames.concat()) {
        assert_eq!(ev, d["type"], "event name matches data type");
        match ev.as_str() {
            "content_block_start" if d["content_block"]["type"] == "tool_use" => {
                let b = &d["content_block"];
                tools.push((
                    b["id"].as_str().unwrap().into(),
                    b["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            "content_block_delta" => match d["delta"]["type"].as_str().unwrap() {
                "text_delta" => text.push_str(d["delta"]["text"].as_str().unwrap()),
                "input_json_delta" => tools
                    .last_mut()
                    .unwrap()
                    .2
                    .push_str(d["delta"]["partial_json"].as_str().unwrap()),
                _ => {}
            },
            "message_delta" => stop = d["delta"]["stop_reason"].as_str().unwrap().into(),
            _ => {}
        }
    }
    (text, tools, stop)
}

#[test]
fn sse_reply_is_chunked_small_with_pings_and_recorded() {
    let frames = turn_text("hello there, world");
    let server = MockServer::start(vec![Reply::Sse(frames.clone())]);
    let body = good_body().to_string();
    let resp = post(&server, &body, false);
    assert_eq!(resp.code, 200);
    assert_eq!(
        resp.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert!(resp.complete);
    assert_eq!(resp.body, sse_text(&frames, SseOpts::default()));
    assert!(resp.body.contains("event: ping"));
    assert!(
        resp.chunks.len() > 10,
        "many small chunks: {:?}",
        resp.chunks
    );
    assert!(
        resp.chunks
            .iter()
            .all(|&c| c <= SseOpts::default().max_chunk)
    );
    let (text, tools, stop) = assemble(&frames);
    assert_eq!(text, "hello there, world");
    assert!(tools.is_empty());
    assert_eq!(stop, "end_turn");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("X-Api-Key"), Some(API_KEY));
    assert_eq!(reqs[0].body, good_body());
    assert_eq!(reqs[0].first_user_text(), "hi");
    server.assert_invariants();
    server.assert_script_consumed();
}

#[test]
fn chunked_request_body_is_decoded() {
    let server = MockServer::start(vec![Reply::Sse(turn_text("ok"))]);
    let resp = post(&server, &good_body().to_string(), true);
    assert_eq!(resp.code, 200);
    assert_eq!(server.requests()[0].body, good_body());
    server.assert_invariants();
}

#[test]
fn read_chunked_handles_extensions_and_trailers() {
    let raw = b"3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: 1\r\n\r\n";
    assert_eq!(read_chunked(&mut &raw[..]).unwrap(), b"abcde");
    let cut = b"3\r\nab";
    assert!(read_chunked(&mut &cut[..]).is_err());
}

#[test]
fn chunk_sizes_cover_the_body_and_vary() {
    let opts = SseOpts::default();
    let sizes = chunk_sizes(1000, opts);
    assert_eq!(sizes.iter().sum::<usize>(), 1000);
    assert!(sizes.iter().all(|&s| (1..=opts.max_chunk).contains(&s)));
    let distinct: std::collections::HashSet<_> = sizes.iter().collect();
    assert!(distinct.len() > 5, "sizes vary: {sizes:?}");
}

#[test]
fn status_reply_has_code_headers_and_body() {
    let server = MockServer::start(vec![
        Reply::rate_limited(1),
        Reply::bad_request("bad thing"),
    ]);
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 429);
    assert_eq!(resp.header("retry-after"), Some("1"));
    assert_eq!(
        serde_json::from_str::<Value>(&resp.body).unwrap()["error"]["type"],
        "rate_limit_error"
    );
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 400);
    let v: Value = serde_json::from_str(&resp.body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["message"], "bad thing");
    server.assert_invariants();
}

#[test]
fn drop_after_sends_n_frames_then_closes_without_terminator() {
    let frames = turn_tools(&[("toolu_1", "Bash", json!({"command": "echo x"}))]);
    let server = MockServer::start(vec![Reply::DropAfter(frames.clone(), 3)]);
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 200);
    assert!(!resp.complete, "the chunked body must not be terminated");
    assert_eq!(resp.body, sse_text(&frames[..3], SseOpts::default()));
    assert!(!resp.body.contains("message_stop"));
    server.assert_invariants();
}

#[test]
fn hang_sends_frames_then_nothing_until_dropped() {
    let frames = vec![sse::message_start(1, 0, 0)];
    let server = MockServer::start(vec![Reply::Hang(frames.clone())]);
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(request_text(&good_body().to_string(), false).as_bytes())
        .unwrap();
    server.wait_for_requests(1);
    let mut r = BufReader::new(s.try_clone().unwrap());
    // Headers, then exactly the frame's bytes in chunks.
    let mut got = String::new();
    loop {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        if l == "\r\n" {
            break;
        }
    }
    let want = sse_text(&frames, SseOpts::default());
    while got.len() < want.len() {
        let mut size = String::new();
        r.read_line(&mut size).unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk).unwrap();
        got.push_str(std::str::from_utf8(&chunk[..n]).unwrap());
    }
    assert_eq!(got, want);
    // Silence: a short read timeout expires with nothing read.
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut byte = [0u8; 1];
    let err = r.read(&mut byte).unwrap_err();
    assert!(matches!(
        err.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ));
    // Dropping the server releases the connection: EOF (or reset).
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    drop(server);
    assert!(matches!(r.read(&mut byte), Ok(0) | Err(_)));
}

#[test]
fn exhausted_script_answers_an_error_and_is_a_violation() {
    let server = MockServer::start(vec![]);
    let resp = post(&server, &good_body().to_string(), false);
    assert!(resp.code >= 400);
    assert!(resp.body.contains("exhausted"), "{}", resp.body);
    let v = server.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("script exhausted"));
    let caught =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.assert_invariants()));
    assert!(caught.is_err());
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = MockServer::start_keep_alive(vec![
        Reply::Sse(turn_text("one")),
        Reply::overloaded(),
        Reply::Sse(turn_text("two")),
    ]);
    let s = TcpStream::connect(server.addr()).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let body = good_body().to_string();
    let mut codes = Vec::new();
    for _ in 0..3 {
        w.write_all(request_text(&body, false).as_bytes()).unwrap();
        let resp = read_response(&mut r);
        assert!(resp.complete);
        codes.push(resp.code);
    }
    assert_eq!(codes, [200, 529, 200]);
    assert_eq!(server.request_count(), 3);
    server.assert_invariants();
}

#[test]
fn turn_tools_streams_fragmented_input_starting_with_empty() {
    let input = json!({"path": "src/lib.rs", "content": "fn main() { println!(\"héllo\"); }"});
    let frames = turn_tools(&[
        ("toolu_1", "ReadFile", json!({"path": "a.txt"})),
        ("toolu_2", "WriteFile", input.clone()),
    ]);
    let (_, tools, stop) = assemble(&frames);
    assert_eq!(stop, "tool_use");
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[1].0, "toolu_2");
    assert_eq!(tools[1].1, "WriteFile");
    assert_eq!(serde_json::from_str::<Value>(&tools[1].2).unwrap(), input);
    let first_delta = events(&frames.concat())
        .into_iter()
        .find(|(e, _)| e == "content_block_delta")
        .unwrap();
    assert_eq!(first_delta.1["delta"]["partial_json"], "");
    let fragments = events(&frames.concat())
        .iter()
        .filter(|(e, d)| e == "content_block_delta" && d["index"] == 1)
        .count();
    assert!(fragments > 3, "input is fragmented");
}

#[test]
fn frames_are_sometimes_padded_and_always_terminated() {
    let frames = Turn::new()
        .thinking("let me think about it", "sig123")
        .text("answer")
        .frames();
    assert!(
        frames
            .iter()
            .all(|f| f.ends_with("\n\n") && f.starts_with("event: "))
    );
    assert!(
        frames.iter().any(|f| f.contains("} \n")),
        "some padded JSON"
    );
    let evs = events(&frames.concat());
    assert_eq!(evs.first().unwrap().0, "message_start");
    assert_eq!(evs.last().unwrap().0, "message_stop");
    assert!(
        evs.iter()
            .any(|(_, d)| d["delta"]["type"] == "signature_delta")
    );
}

#[test]
fn usage_is_cumulative_in_message_delta() {
    let frames = Turn::new().text("x").usage(123, 45).cache(6, 7).frames();
    let evs = events(&frames.concat());
    let start = &evs[0].1["message"]["usage"];
    assert_eq!(start["input_tokens"], 123);
    assert_eq!(start["output_tokens"], 1);
    let delta = evs.iter().find(|(e, _)| e == "message_delta").unwrap();
    assert_eq!(delta.1["usage"]["output_tokens"], 45);
    assert_eq!(delta.1["usage"]["input_tokens"], 123);
    assert_eq!(delta.1["usage"]["cache_read_input_tokens"], 7);
}

#[test]
fn cut_tool_turn_has_no_block_stop_and_max_tokens() {
    let frames =
        turn_max_tokens_cut_tool("Writing", "toolu_9", "WriteFile", r#"{"path": "a", "con"#);
    let evs = events(&frames.concat());
    let stops = evs
        .iter()
        .filter(|(e, _)| e == "content_block_stop")
        .count();
    assert_eq!(stops, 1, "only the text block is stopped");
    let (_, tools, stop) = assemble(&frames);
    assert_eq!(stop, "max_tokens");
    assert_eq!(tools[0].2, r#"{"path": "a", "con"#);
}

#[test]
fn error_event_has_the_wild_shape() {
    let f = sse::error_event("overloaded_error", "Overloaded");
    let evs = events(&f);
    assert_eq!(evs[0].0, "error");
    assert_eq!(evs[0].1["error"]["type"], "overloaded_error");
    assert!(evs[0].1["error"]["details"].is_null());
}

fn msgs(messages: Value) -> Value {
    json!({"model": "m", "max_tokens": 10, "stream": true, "messages": messages})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "ReadFile", "input": {"path": "a"}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "x"})
}

#[test]
fn pairing_accepts_a_correct_conversation() {
    let body = msgs(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("a"), tool_result("b")]},
        {"role": "assistant", "content": [tool_use("c")]},
        {"role": "user", "content": [tool_result("c"), {"type": "text", "text": "more"}]},
    ]));
    assert_eq!(check_body(&body), Vec::<String>::new());
}

#[test]
fn pairing_violations_are_each_reported() {
    let cases = [
        // unanswered: last message is the tool_use
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [tool_use("a")]}]),
        // wrong order
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
               {"role": "user", "content": [tool_result("b"), tool_result("a")]}]),
        // text before the results
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [tool_use("a")]},
               {"role": "user", "content": [{"type": "text", "text": "x"}, tool_result("a")]}]),
        // missing one
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
               {"role": "user", "content": [tool_result("a")]}]),
        // extra result
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [tool_use("a")]},
               {"role": "user", "content": [tool_result("a"), tool_result("z")]}]),
        // orphan result
        json!([{"role": "user", "content": [tool_result("a")]}]),
        // duplicate id
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [tool_use("a")]},
               {"role": "user", "content": [tool_result("a")]},
               {"role": "assistant", "content": [tool_use("a")]},
               {"role": "user", "content": [tool_result("a")]}]),
        // input not an object
        json!([{"role": "user", "content": "go"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "X", "input": "{}"}]},
               {"role": "user", "content": [tool_result("a")]}]),
        // empty text block
        json!([{"role": "user", "content": [{"type": "text", "text": ""}]}]),
        // empty content
        json!([{"role": "user", "content": "go"}, {"role": "assistant", "content": []}]),
    ];
    for (i, c) in cases.iter().enumerate() {
        let v = check_body(&msgs(c.clone()));
        assert!(!v.is_empty(), "case {i} should be a violation: {c}");
    }
}

#[test]
fn body_and_head_checks() {
    assert!(
        !check_body(
            &json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]})
        )
        .is_empty(),
        "stream missing"
    );
    assert!(
        !check_body(&json!({"model": "m", "max_tokens": 10, "stream": true,
        "tools": [{"name": "A", "description": "d", "input_schema": {"type": "object"}},
                  {"name": "A", "description": "d", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "x"}]}))
        .is_empty(),
        "duplicate tool"
    );
    let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    let good = h(&[
        ("x-api-key", "k"),
        ("anthropic-version", "2023-06-01"),
        ("content-type", "application/json"),
    ]);
    assert!(check_head("POST", "/v1/messages", &good).is_empty());
    assert!(!check_head("POST", "/v1/messages", &good[1..]).is_empty());
    assert!(!check_head("POST", "/messages", &good).is_empty());
    assert!(
        !check_head(
            "POST",
            "/v1/messages",
            &h(&[("x-api-key", "k"), ("content-type", "application/json")])
        )
        .is_empty()
    );
}

#[test]
fn invariant_violation_on_a_request_is_recorded() {
    let server = MockServer::start(vec![Reply::Sse(turn_text("x"))]);
    let body = msgs(json!([{"role": "user", "content": "go"},
                           {"role": "assistant", "content": [tool_use("a")]}]));
    post(&server, &body.to_string(), false);
    let v = server.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("request 1:"), "{v:?}");
}

// ---------------------------------------------------------------------------------
// The OpenAI-compatible wire, the wire-neutral vocabulary, and the HTTP extras.

fn chat_body() -> Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
}

/// A chat-completions request as an OpenAI client sends it.
fn chat_request(body: &str) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {OPENAI_KEY}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn post_chat(server: &MockServer, body: &str) -> RawResponse {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(chat_request(body).as_bytes()).unwrap();
    read_response(&mut BufReader::new(s))
}

/// A chat stream reassembled the way the binary must.
#[derive(Debug, Default, PartialEq)]
struct ChatSeen {
    text: String,
    /// `(id, name, arguments)` by index.
    calls: Vec<(String, String, String)>,
    finish: String,
    usage: Value,
    /// `data: [DONE]` came.
    done: bool,
}

/// Reassembles a chat stream; comments (pings) are skipped.
fn assemble_chat(text: &str) -> ChatSeen {
    let mut seen = ChatSeen::default();
    for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
        if frame.starts_with(':') {
            continue;
        }
        let data = frame.strip_prefix("data: ").unwrap();
        if data == "[DONE]" {
            seen.done = true;
            continue;
        }
        let c: Value = serde_json::from_str(data).unwrap();
        if !c["usage"].is_null() {
            seen.usage = c["usage"].clone();
        }
        for choice in c["choices"].as_array().unwrap() {
            let d = &choice["delta"];
            seen.text.push_str(d["content"].as_str().unwrap_or(""));
            for tc in d["tool_calls"].as_array().into_iter().flatten() {
                let i = tc["index"].as_u64().unwrap() as usize;
                if i == seen.calls.len() {
                    seen.calls.push((
                        tc["id"].as_str().unwrap().into(),
                        tc["function"]["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                seen.calls[i]
                    .2
                    .push_str(tc["function"]["arguments"].as_str().unwrap());
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                seen.finish = f.to_string();
            }
        }
    }
    seen
}

#[test]
fn one_turn_is_rendered_in_the_wire_of_each_request() {
    let turn = Turn::new()
        .text("Reading both.")
        .tool("call_a", "ReadFile", json!({"path": "a.txt"}))
        .tool("call_b", "Glob", json!({"pattern": "**/*.rs"}))
        .usage(120, 30)
        .cache(0, 40);
    let server = MockServer::start(vec![Reply::turn(turn.clone()), Reply::turn(turn)]);

    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.header("request-id"), Some("req_mock_1"));
    let (text, tools, stop) = assemble(std::slice::from_ref(&resp.body));
    assert_eq!(text, "Reading both.");
    assert_eq!(
        tools[1],
        (
            "call_b".into(),
            "Glob".into(),
            r#"{"pattern":"**/*.rs"}"#.into()
        )
    );
    assert_eq!(stop, "tool_use");

    let resp = post_chat(&server, &chat_body().to_string());
    assert!(resp.complete);
    assert_eq!(resp.header("x-request-id"), Some("req_mock_2"));
    assert!(resp.chunks.len() > 10, "small chunks: {:?}", resp.chunks);
    assert!(
        resp.body.contains("\n: ping"),
        "comment pings: {}",
        resp.body
    );
    let seen = assemble_chat(&resp.body);
    assert_eq!(seen.text, "Reading both.");
    assert_eq!(seen.calls.len(), 2);
    let read: (String, String, String) = (
        "call_a".into(),
        "ReadFile".into(),
        r#"{"path":"a.txt"}"#.into(),
    );
    assert_eq!(seen.calls[0], read);
    assert_eq!(seen.calls[1].2, r#"{"pattern":"**/*.rs"}"#);
    assert_eq!(seen.finish, "tool_calls");
    let usage = &seen.usage;
    assert_eq!(
        usage["prompt_tokens"], 160,
        "prompt tokens include cache reads"
    );
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 40);
    assert_eq!(usage["completion_tokens"], 30);
    assert!(seen.done);

    let reqs = server.requests();
    assert_eq!(reqs[0].wire, Wire::Anthropic);
    assert_eq!(reqs[1].wire, Wire::OpenAi);
    assert_eq!(
        reqs[1].header("Authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    server.assert_invariants();
}

#[test]
fn stop_reasons_map_to_finish_reasons() {
    let server = MockServer::start(vec![
        Reply::turn(Turn::new().text("x")),
        Reply::turn(Turn::new().text("x").cut_tool("c", "WriteFile", r#"{"pa"#)),
    ]);
    let seen = assemble_chat(&post_chat(&server, &chat_body().to_string()).body);
    assert_eq!(seen.finish, "stop");
    let seen = assemble_chat(&post_chat(&server, &chat_body().to_string()).body);
    assert_eq!(seen.finish, "length");
    assert_eq!(seen.calls[0].2, r#"{"pa"#);
}

#[test]
fn turn_faults_cut_hang_or_error_in_either_wire() {
    let turn = Turn::new().text("partial answer").usage(5, 5);
    let server = MockServer::start(vec![
        Reply::turn(turn.clone()).with_fault(Fault::DropBeforeEnd),
        Reply::turn(turn.clone()).with_fault(Fault::DropAfter(2)),
        Reply::turn(turn.clone()).with_fault(Fault::ErrorBeforeEnd {
            kind: "server_error".into(),
            message: "boom".into(),
        }),
        Reply::turn(turn.clone()).with_fault(Fault::ErrorBeforeEnd {
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        }),
    ]);
    let resp = post_chat(&server, &chat_body().to_string());
    assert!(!resp.complete);
    let seen = assemble_chat(&resp.body);
    assert_eq!(seen.text, "partial answer");
    assert_eq!(
        (seen.finish.as_str(), &seen.usage, seen.done),
        ("", &Value::Null, false)
    );

    let resp = post(&server, &good_body().to_string(), false);
    assert!(!resp.complete);
    let evs = events(&resp.body);
    let names: Vec<_> = evs.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["message_start", "content_block_start", "ping"]);

    let resp = post_chat(&server, &chat_body().to_string());
    assert!(resp.complete);
    assert!(resp.body.contains(r#"data: {"error":{"#), "{}", resp.body);
    assert!(!resp.body.contains("[DONE]"));

    let resp = post(&server, &good_body().to_string(), false);
    let evs = events(&resp.body);
    assert_eq!(evs.last().unwrap().0, "error");
    assert!(!evs.iter().any(|(e, _)| e == "message_delta"));
}

#[test]
fn errors_take_the_shape_of_the_wire() {
    let server = MockServer::start(vec![Reply::bad_request("nope"), Reply::bad_request("nope")]);
    let a: Value =
        serde_json::from_str(&post(&server, &good_body().to_string(), false).body).unwrap();
    assert_eq!(a["type"], "error");
    assert_eq!(a["error"]["type"], "invalid_request_error");
    let resp = post_chat(&server, &chat_body().to_string());
    assert_eq!(resp.code, 400);
    let o: Value = serde_json::from_str(&resp.body).unwrap();
    assert_eq!(o["error"]["message"], "nope");
    assert_eq!(o["error"]["type"], "invalid_request_error");
    assert!(o.get("type").is_none());
}

#[test]
fn connections_are_counted_and_each_request_knows_its_own() {
    let server = MockServer::start_keep_alive(vec![
        Reply::turn(Turn::new().text("1")),
        Reply::turn(Turn::new().text("2")),
        Reply::turn(Turn::new().text("3")),
    ]);
    let s = TcpStream::connect(server.addr()).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    for _ in 0..2 {
        w.write_all(chat_request(&chat_body().to_string()).as_bytes())
            .unwrap();
        assert!(read_response(&mut r).complete);
    }
    post_chat(&server, &chat_body().to_string());
    assert_eq!(server.connections(), 2);
    let on: Vec<_> = server.requests().iter().map(|r| r.connection).collect();
    assert_eq!(on, [1, 1, 2]);

    let closing = MockServer::start(vec![Reply::overloaded(), Reply::overloaded()]);
    post(&closing, &good_body().to_string(), false);
    post(&closing, &good_body().to_string(), false);
    assert_eq!(closing.connections(), 2);
}

#[test]
fn redirects_raw_bodies_and_retry_after_dates() {
    let huge = "x".repeat(200_000);
    let server = MockServer::start(vec![
        Reply::redirect(307, "http://127.0.0.1:1/v1/messages"),
        Reply::raw(
            200,
            "text/html; charset=utf-8",
            "<html><body>Sign in</body></html>",
        ),
        Reply::raw(500, "text/plain", &huge),
        Reply::rate_limited_until(UNIX_EPOCH + Duration::from_secs(784_111_777)),
    ]);
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 307);
    assert_eq!(
        resp.header("location"),
        Some("http://127.0.0.1:1/v1/messages")
    );
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 200);
    assert_eq!(
        resp.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(resp.body, "<html><body>Sign in</body></html>");
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 500);
    assert_eq!(resp.body.len(), huge.len());
    let resp = post(&server, &good_body().to_string(), false);
    assert_eq!(resp.code, 429);
    assert_eq!(
        resp.header("retry-after"),
        Some("Sun, 06 Nov 1994 08:49:37 GMT")
    );
    assert_eq!(
        http_date(UNIX_EPOCH + Duration::from_secs(1_709_210_096)),
        "Thu, 29 Feb 2024 12:34:56 GMT"
    );
    server.assert_invariants();
}

/// Reads the head of a response and then whatever arrives within a short wait.
fn head_then_idle(server: &MockServer, req: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        head.push_str(&l);
        if l == "\r\n" {
            break;
        }
    }
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match r.read(&mut buf) {
            Ok(0) => panic!("the connection closed; a stalled server keeps it open"),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    (head, got)
}

#[test]
fn silence_and_ping_then_silence_send_headers_and_stall() {
    let server = MockServer::start(vec![
        Reply::silence(),
        Reply::ping_then_silence(),
        Reply::turn(Turn::new().text("never finished"))
            .with_fault(Fault::HangAfter(1))
            .with_opts(SseOpts {
                max_chunk: 4096,
                ..SseOpts::default()
            }),
    ]);
    let (head, got) = head_then_idle(&server, &request_text(&good_body().to_string(), false));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    assert!(got.is_empty(), "{:?}", String::from_utf8_lossy(&got));
    let (_, got) = head_then_idle(&server, &chat_request(&chat_body().to_string()));
    let got = String::from_utf8(got).unwrap();
    assert!(got.contains(": ping"), "{got}");
    assert!(!got.contains("data:"), "{got}");
    let (_, got) = head_then_idle(&server, &chat_request(&chat_body().to_string()));
    let got = String::from_utf8(got).unwrap();
    assert!(got.contains(r#""role":"assistant""#), "{got}");
    assert!(!got.contains("never"), "only the first frame: {got}");
    server.assert_invariants();
}

fn chat(messages: Value) -> Value {
    json!({"model": "m", "stream": true, "messages": messages})
}

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "ReadFile", "arguments": "{}"}})
}

fn tool_msg(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "x"})
}

#[test]
fn chat_pairing_accepts_a_correct_conversation_and_reports_each_violation() {
    let good = chat(json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
        tool_msg("a"), tool_msg("b"),
        {"role": "assistant", "content": "done"},
    ]));
    assert_eq!(check_chat_body(&good), Vec::<String>::new());
    let user = json!({"role": "user", "content": "go"});
    let cases = [
        json!([user, {"role": "assistant", "tool_calls": [call("a")]}]),
        json!([user, {"role": "assistant", "tool_calls": [call("a"), call("b")]},
               tool_msg("b"), tool_msg("a")]),
        json!([user, {"role": "assistant", "tool_calls": [call("a")]}, tool_msg("a"),
               tool_msg("z")]),
        json!([user, tool_msg("a")]),
        json!([user, {"role": "assistant", "tool_calls": [call("a")]}, tool_msg("a"),
               {"role": "assistant", "tool_calls": [call("a")]}, tool_msg("a")]),
        json!([user, {"role": "assistant", "tool_calls": [call("a")]}, user, tool_msg("a")]),
        json!([{"role": "robot", "content": "x"}]),
    ];
    for (i, c) in cases.iter().enumerate() {
        assert!(
            !check_chat_body(&chat(c.clone())).is_empty(),
            "case {i}: {c}"
        );
    }
    assert!(!check_chat_body(&json!({"model": "m", "messages": [user]})).is_empty());
    let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    let json_ct = ("content-type", "application/json");
    assert!(check_chat_head("POST", &h(&[json_ct])).is_empty());
    assert!(check_chat_head("POST", &h(&[json_ct, ("authorization", "Bearer k")])).is_empty());
    assert!(!check_chat_head("POST", &h(&[json_ct, ("authorization", "k")])).is_empty());
    assert!(!check_chat_head("POST", &h(&[json_ct, ("x-api-key", "k")])).is_empty());
    assert!(!check_chat_head("GET", &h(&[json_ct])).is_empty());
}

#[test]
fn recorded_streams_are_replayed_byte_for_byte() {
    let name = "llama_cpp_python_text.sse";
    let file = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/servers")
            .join(name),
    )
    .unwrap();
    assert!(
        file.contains("\r\n\r\n"),
        "the CRLF framing survived the checkout"
    );
    let server = MockServer::start(vec![Reply::recorded(name)]);
    let resp = post_chat(&server, &chat_body().to_string());
    assert!(resp.complete);
    assert!(resp.chunks.len() > 10, "still cut into chunks");
    assert_eq!(resp.body, file, "no pings or other bytes added");
}
