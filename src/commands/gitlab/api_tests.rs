//! Unit tests of the GitLab `api.rs` against a loopback server that answers a script.

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
    let mut a = Api::new(url, "glpat-SECRET-123456", 2, None).unwrap();
    a.backoff_base = Duration::ZERO;
    a
}

#[test]
fn a_5xx_and_a_429_are_retried_and_the_answer_returned() {
    let (url, h) = serve(vec![
        (502, "", "{}"),
        (
            429,
            "ratelimit-remaining: 0\r\nratelimit-reset: 1\r\n",
            r#"{"message": "Retry later"}"#,
        ),
        (201, "", r#"{"id": 5}"#),
    ]);
    let v = api(&url)
        .post("/projects/7/issues/1/notes", &json!({"body": "hi"}))
        .unwrap();
    assert_eq!(v["id"], 5);
    let seen = h.join().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter()
            .all(|s| s == "POST /projects/7/issues/1/notes HTTP/1.1 {\"body\":\"hi\"}"),
        "{seen:?}"
    );
}

#[test]
fn a_missing_scope_says_which_and_is_not_retried() {
    let (url, h) = serve(vec![(
        403,
        "",
        r#"{"error": "insufficient_scope", "error_description": "The request requires higher privileges than provided by the access token.", "scope": "api"}"#,
    )]);
    let e = api(&url)
        .post(
            "/projects/7/merge_requests/5/notes?x=1",
            &json!({"body": "b"}),
        )
        .unwrap_err();
    assert_eq!(e.status, Some(403));
    assert!(
        e.message.starts_with("GitLab API POST /projects/7/merge_requests/5/notes: HTTP 403: insufficient_scope: The request requires higher privileges"),
        "{}",
        e.message
    );
    assert!(e.message.contains("lacks the `api` scope"), "{}", e.message);
    assert_eq!(h.join().unwrap().len(), 1, "not retried");
}

#[test]
fn field_errors_and_the_token_in_an_error() {
    let (url, h) = serve(vec![
        (400, "", r#"{"message": {"source_branch": ["is invalid"]}}"#),
        (
            404,
            "",
            r#"{"message": "404 glpat-SECRET-123456 Not Found"}"#,
        ),
        (401, "", r#"{"message": "401 Unauthorized"}"#),
    ]);
    let a = api(&url);
    let e = a
        .post("/projects/7/merge_requests", &json!({}))
        .unwrap_err();
    assert_eq!(
        e.message,
        r#"GitLab API POST /projects/7/merge_requests: HTTP 400: {"source_branch":["is invalid"]}"#
    );
    let e = a.put("/x", &json!({})).unwrap_err();
    assert_eq!(
        e.message,
        "GitLab API PUT /x: HTTP 404: 404 [REDACTED] Not Found"
    );
    let e = a.get("/projects/7").unwrap_err();
    assert!(e.message.contains("not a valid token"), "{}", e.message);
    h.join().unwrap();
}

#[test]
fn the_wait_is_retry_after_else_the_reset_of_a_spent_limit() {
    let mut h = ureq::http::HeaderMap::new();
    h.insert("ratelimit-reset", "1000".parse().unwrap());
    let now = UNIX_EPOCH + Duration::from_secs(990);
    assert_eq!(wait_asked(&h, 429, now), Some(Duration::from_secs(10)));
    assert_eq!(wait_asked(&h, 500, now), None, "the limit is not spent");
    h.insert("ratelimit-remaining", "0".parse().unwrap());
    assert_eq!(wait_asked(&h, 500, now), Some(Duration::from_secs(10)));
    h.insert("retry-after", "3".parse().unwrap());
    assert_eq!(wait_asked(&h, 429, now), Some(Duration::from_secs(3)));
}

#[test]
fn a_ca_file_must_hold_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ca.pem");
    std::fs::write(&f, "not a pem").unwrap();
    let e = Api::new("https://g/api/v4", "t", 0, Some(&f))
        .err()
        .unwrap();
    assert!(e.starts_with("CI_SERVER_TLS_CA_FILE"), "{e}");
    assert!(Api::new("https://g/api/v4", "t", 0, Some(Path::new("/nonexistent"))).is_err());
}
