//! WebFetch against a loopback web server (named literally in `--allow-web`, as
//! docs/guide/tools.md says): HTML to Markdown, a redirect to a host not allowed refused, a 50 MB page
//! cut, a binary refused, a loopback address refused when only `*` allows it, a deny
//! rule on the domain, and the tool off without `--allow-web`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread;

use serde_json::{Value, json};

use crate::support::*;

/// Bytes of the big page: ten times the cap.
const BIG_BYTES: usize = 50 * 1024 * 1024;

/// A tiny web server on loopback; returns its port. Serves until the test process ends.
fn web_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let mut cookie = false;
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                    let lower = h.to_ascii_lowercase();
                    cookie |= lower.starts_with("cookie:") || lower.starts_with("authorization:");
                }
                let (status, ctype, extra, body): (&str, &str, String, Vec<u8>) = match path.as_str() {
                    "/page.html" => (
                        "200 OK",
                        "text/html; charset=utf-8",
                        String::new(),
                        format!(
                            "<html><head><title>t</title></head><body><h1>Release notes</h1>\
                             <p>Version <b>2.0</b> drops <a href=\"/old\">the old API</a>.</p>\
                             <ul><li>faster</li><li>smaller</li></ul><p>credentials seen: {cookie}</p>\
                             </body></html>"
                        )
                        .into_bytes(),
                    ),
                    "/hop" => ("302 Found", "text/plain", format!("Location: http://127.0.0.1:{port}/page.html\r\n"), vec![]),
                    "/away" => ("302 Found", "text/plain", format!("Location: http://localhost:{port}/page.html\r\n"), vec![]),
                    "/data.json" => ("200 OK", "application/json", String::new(), b"{\"version\": \"2.0\"}".to_vec()),
                    "/tool.bin" => ("200 OK", "application/octet-stream", String::new(), vec![0u8; 1024]),
                    "/big.txt" => ("200 OK", "text/plain", String::new(), vec![b'x'; BIG_BYTES]),
                    _ => ("404 Not Found", "text/plain", String::new(), b"no such page".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
                     Set-Cookie: session=1\r\n{extra}Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(&body);
            });
        }
    });
    port
}

fn fetch(id: &str, url: String) -> Reply {
    Reply::Sse(turn_tools(&[(
        id,
        "WebFetch",
        json!({"url": url, "prompt": "what changed"}),
    )]))
}

/// The result of call `id` in the transcript, and whether it is an error.
fn result_of(t: &Value, id: &str) -> (String, bool) {
    for m in t["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" && b["tool_use_id"] == id {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                return (text, b["is_error"] == true);
            }
        }
    }
    panic!("no result for {id}");
}

#[test]
fn pages_are_fetched_as_markdown_and_everything_else_is_refused() {
    let port = web_server();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    let env = TestEnv::new(vec![
        fetch("toolu_html", url("/page.html")),
        fetch("toolu_hop", url("/hop")),
        fetch("toolu_away", url("/away")),
        fetch("toolu_json", url("/data.json")),
        fetch("toolu_bin", url("/tool.bin")),
        fetch("toolu_big", url("/big.txt")),
        fetch("toolu_404", url("/nope")),
        Reply::Sse(turn_text("read")),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--allow-web",
        "127.0.0.1",
        "-o",
        out_file.to_str().unwrap(),
        "read the notes",
    ]);
    out.assert_code(0);
    let t = read_json(&out_file);
    assert!(
        t["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "WebFetch")
    );

    let (html, err) = result_of(&t, "toolu_html");
    assert!(!err, "{html}");
    assert!(
        html.starts_with(&format!("URL: {}\n\n# what changed\n", url("/page.html"))),
        "{html}"
    );
    assert!(html.contains("# Release notes"), "{html}");
    assert!(html.contains("**2.0**"), "{html}");
    assert!(html.contains("[the old API](/old)"), "{html}");
    assert!(!html.contains("<p>"), "{html}");

    // A redirect to an allowed host is followed, and the result names the final URL.
    let (hop, err) = result_of(&t, "toolu_hop");
    assert!(
        !err && hop.starts_with(&format!("URL: {}", url("/page.html"))),
        "{hop}"
    );
    // `/hop` set a cookie; nothing (no cookie, no credential) came back with the request
    // it redirected to.
    assert!(hop.contains("credentials seen: false"), "{hop}");
    // `localhost` is not in the list: not followed.
    let (away, err) = result_of(&t, "toolu_away");
    assert!(err, "{away}");
    assert!(
        away.contains("redirected to") && away.contains("localhost is not allowed"),
        "{away}"
    );

    let (json_page, err) = result_of(&t, "toolu_json");
    assert!(
        !err && json_page.contains("{\"version\": \"2.0\"}"),
        "{json_page}"
    );
    let (bin, err) = result_of(&t, "toolu_bin");
    assert!(err && bin.contains("application/octet-stream"), "{bin}");
    // The 50 MB page was cut at the cap: what the model got is the spilled preview,
    // and the record says how much was read.
    let big = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "toolu_big")
        .unwrap();
    assert_eq!(big["metadata"]["truncated"], true);
    assert_eq!(big["metadata"]["bytes"], 5 * 1024 * 1024);
    let (missing, err) = result_of(&t, "toolu_404");
    assert!(err && missing.starts_with("HTTP 404"), "{missing}");
}

#[test]
fn loopback_needs_naming_literally_and_rules_match_the_domain() {
    let port = web_server();
    let url = format!("http://127.0.0.1:{port}/page.html");
    // `*` allows every host, but not a loopback address.
    let env = TestEnv::new(vec![
        fetch("toolu_star", url.clone()),
        Reply::Sse(turn_text("no")),
    ]);
    let out_file = env.out("t.json");
    env.run(&[
        "run",
        "--allow-web",
        "*",
        "-o",
        out_file.to_str().unwrap(),
        "x",
    ])
    .assert_code(0);
    let (star, err) = result_of(&read_json(&out_file), "toolu_star");
    assert!(
        err && star.contains("loopback, private or link-local"),
        "{star}"
    );

    // A deny rule on the domain.
    let env = TestEnv::new(vec![
        fetch("toolu_deny", url.clone()),
        Reply::Sse(turn_text("no")),
    ]);
    let out_file = env.out("t.json");
    env.run(&[
        "run",
        "--allow-web",
        "127.0.0.1",
        "--disallowed-tools",
        "WebFetch(domain:127.0.0.1)",
        "-o",
        out_file.to_str().unwrap(),
        "x",
    ])
    .assert_code(0);
    let t = read_json(&out_file);
    let (denied, err) = result_of(&t, "toolu_deny");
    assert!(
        err && denied.contains("WebFetch(domain:127.0.0.1)"),
        "{denied}"
    );
    assert_eq!(t["permission_denials"].as_array().unwrap().len(), 1);

    // Off without --allow-web; a rule that names no domain is exit 2.
    let env = TestEnv::new(vec![Reply::Sse(turn_text("ok"))]);
    let out = env.run(&["run", "x"]);
    out.assert_code(0);
    assert!(
        !env.server.requests()[0]
            .tool_names()
            .contains(&"WebFetch".to_string())
    );
    let bad = env.run(&["run", "--disallowed-tools", "WebFetch(docs.rs)", "x"]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("domain:docs.rs"), "{}", bad.stderr);
    let bad = env.run(&["run", "--allow-web", "a/b", "x"]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("--allow-web"), "{}", bad.stderr);
}

/// A loopback server that counts the connections it accepts and answers each with a
/// page (`/hop` redirects to `to`, if given). Returns its port and the count.
fn counting_server(to: Option<String>) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            let mut line = String::new();
            let _ = BufReader::new(conn.try_clone().unwrap()).read_line(&mut line);
            let head = match (&to, line.contains(" /hop ")) {
                (Some(to), true) => format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n"
                ),
                _ => "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\
                      Connection: close\r\n\r\nloopback secret"[..]
                    .to_string(),
            };
            let _ = conn.write_all(head.as_bytes());
        }
    });
    (port, hits)
}

/// One WebFetch of `url` under `--allow-web allow`, the test resolver answering `dns`:
/// the result and whether it is an error.
fn fetch_with_dns(url: String, allow: &str, dns: &str) -> (String, bool) {
    let env = TestEnv::new(vec![fetch("toolu_f", url), Reply::Sse(turn_text("done"))]);
    let out_file = env.out("t.json");
    env.run_with_env(
        &[
            "run",
            "--allow-web",
            allow,
            "-o",
            out_file.to_str().unwrap(),
            "x",
        ],
        &[("AGENT_TEST_DNS", dns)],
    )
    .assert_code(0);
    result_of(&read_json(&out_file), "toolu_f")
}

/// DNS rebinding (issue 46): the test resolver answers `rebind.test` with a public
/// address (203.0.113.10) to the first query and loopback to every later one, and the
/// run allows `*.test` (a pattern, so private addresses are refused). WebFetch
/// resolves once, judges that answer and connects to exactly it, so the loopback server
/// never sees a request, directly or through a redirect from an allowed host. Before the
/// fix the check and the connection each resolved, and the second query's loopback
/// answer was dialed.
#[test]
fn a_name_that_rebinds_to_loopback_is_never_dialed_there() {
    use std::sync::atomic::Ordering;
    const REBIND: &str = "rebind.test=203.0.113.10/127.0.0.1";
    let (victim, hits) = counting_server(None);
    let direct = format!("http://rebind.test:{victim}/secret");
    let (got, _) = fetch_with_dns(direct.clone(), "*.test", REBIND);
    assert!(!got.contains("loopback secret"), "{got}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "{got}");

    // The same through a redirect: an allowed loopback host (named literally) sends the
    // fetcher to the rebinding name.
    let (redirector, redirector_hits) = counting_server(Some(direct.clone()));
    let hop = format!("http://localhost:{redirector}/hop");
    let (got, _) = fetch_with_dns(hop, "localhost,*.test", REBIND);
    assert_eq!(redirector_hits.load(Ordering::SeqCst), 1, "{got}");
    assert!(!got.contains("loopback secret"), "{got}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "{got}");

    // The control: a name that answers loopback to its first query is refused at the
    // check, so the seam does steer the lookup the check makes.
    let (got, err) = fetch_with_dns(direct, "*.test", "rebind.test=127.0.0.1");
    assert!(err && got.contains("rebind.test is 127.0.0.1"), "{got}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "{got}");
}
