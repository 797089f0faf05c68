//! Unit tests of `api.rs` against a loopback server that answers a script.

use super::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

/// Answers each connection with the next `(status, extra headers, body)`; returns the
/// base URL and a handle giving the request lines seen.
fn serve(
    script: Vec<(u16, &'static str, &'static str)>,
) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for (status, extra, body) in script {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut len = 0;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut b = vec![0; len];
            std::io::Read::read_exact(&mut reader, &mut b).unwrap();
            seen.push(format!("{} {}", line.trim(), String::from_utf8_lossy(&b)));
            let mut w = conn;
            write!(w, "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}", body.len()).unwrap();
        }
        seen
    });
    (url, handle)
}

fn api(url: &str) -> Api {
    let mut a = Api::new(url, "tok-SECRET-123456", 2);
    a.backoff_base = Duration::ZERO;
    a
}

#[test]
fn a_5xx_is_retried_and_the_answer_returned() {
    let (url, h) = serve(vec![
        (502, "", "{}"),
        (500, "retry-after: 0\r\n", ""),
        (201, "", r#"{"id": 5}"#),
    ]);
    let v = api(&url)
        .post("/repos/o/r/issues/1/comments", &json!({"body": "hi"}))
        .unwrap();
    assert_eq!(v["id"], 5);
    let seen = h.join().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter()
            .all(|s| s == "POST /repos/o/r/issues/1/comments HTTP/1.1 {\"body\":\"hi\"}"),
        "{seen:?}"
    );
}

#[test]
fn rate_limits_are_retried_and_other_4xx_are_not() {
    let (url, h) = serve(vec![
        (
            403,
            "",
            r#"{"message": "You have exceeded a secondary rate limit"}"#,
        ),
        (429, "retry-after: 0\r\n", "{}"),
        (
            403,
            "x-ratelimit-remaining: 0\r\nx-ratelimit-reset: 1\r\n",
            "{}",
        ),
    ]);
    let e = api(&url).get("/repos/o/r").unwrap_err();
    assert_eq!(e.status, Some(403));
    assert!(
        e.message.ends_with("(gave up after 2 retries)"),
        "{}",
        e.message
    );
    assert_eq!(h.join().unwrap().len(), 3);

    let (url, h) = serve(vec![(
        403,
        "",
        r#"{"message": "Resource not accessible by integration"}"#,
    )]);
    let e = api(&url)
        .get("/repos/o/r/pulls/1?per_page=100")
        .unwrap_err();
    assert_eq!(
        e.message,
        "GitHub API GET /repos/o/r/pulls/1: HTTP 403: Resource not accessible by integration"
    );
    assert_eq!(h.join().unwrap().len(), 1, "not retried");
}

#[test]
fn the_token_never_shows_in_an_error() {
    let (url, h) = serve(vec![(
        404,
        "",
        r#"{"message": "no such token tok-SECRET-123456"}"#,
    )]);
    let e = api(&url).patch("/x", &json!({})).unwrap_err();
    assert_eq!(
        e.message,
        "GitHub API PATCH /x: HTTP 404: no such token [REDACTED]"
    );
    h.join().unwrap();
}

#[test]
fn a_spent_limit_waits_until_the_reset_and_only_then() {
    let mut h = ureq::http::HeaderMap::new();
    h.insert("x-ratelimit-reset", "1000".parse().unwrap());
    let now = UNIX_EPOCH + Duration::from_secs(990);
    assert_eq!(wait_asked(&h, true, now), Some(Duration::from_secs(10)));
    assert_eq!(
        wait_asked(&h, false, now),
        None,
        "every answer has a reset time"
    );
    h.insert("retry-after", "3".parse().unwrap());
    assert_eq!(wait_asked(&h, false, now), Some(Duration::from_secs(3)));
}
