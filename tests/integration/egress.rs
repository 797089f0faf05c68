//! `--allow-domain`: commands in their own network namespace behind the agent's proxy.
//! Names are mapped to loopback servers by the test-only resolver (`AGENT_TEST_RESOLVE`),
//! so nothing here reaches the internet. Each test that needs user namespaces says so
//! and is skipped (with the reason on stderr) where the machine refuses them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::support::*;

/// Whether this machine lets an unprivileged process make user + network namespaces:
/// the tests that need them are skipped (saying so) where it does not.
fn userns_available() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["-Urn", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: `unshare -Urn true` fails here: no user namespaces for --allow-domain");
    }
    ok
}

fn have(tool: &str) -> bool {
    let ok = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: `{tool}` is not installed");
    }
    ok
}

/// A loopback HTTP server answering every request with 200 and `body`; counts requests.
struct HttpServer {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl HttpServer {
    fn start(body: &'static str) -> HttpServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                h.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        HttpServer { port, hits }
    }
}

/// One Bash call running `cmd`, then a final answer.
fn bash(cmd: &str) -> Vec<Reply> {
    vec![
        Reply::Sse(turn_tools(&[("toolu_net", "Bash", json!({"command": cmd}))])),
        Reply::Sse(turn_text("done")),
    ]
}

/// The text of the Bash call's result, as the model saw it.
fn bash_result(t: &Value) -> String {
    let msgs = t["messages"].as_array().expect("messages");
    for m in msgs {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" && b["tool_use_id"] == "toolu_net" {
                return match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
            }
        }
    }
    panic!("no result for the Bash call in {t}");
}

const RESOLVE: &str = "allowed.test=127.0.0.1;denied.test=127.0.0.1";

fn run_net(env: &TestEnv, extra: &[&str], vars: &[(&str, &str)]) -> RunOutput {
    let mut args = vec!["run", "--allow-bash", "--json"];
    args.extend_from_slice(extra);
    args.push("go");
    let mut all = vec![("AGENT_TEST_RESOLVE", RESOLVE)];
    all.extend_from_slice(vars);
    env.run_with_env(&args, &all)
}

#[test]
fn curl_reaches_an_allowed_name_and_a_denied_one_is_refused_and_recorded() {
    if !userns_available() || !have("curl") {
        return;
    }
    let server = HttpServer::start("hello from allowed");
    let p = server.port;
    let cmd = format!(
        "curl -sS http://allowed.test:{p}/; echo; \
         curl -s -o /dev/null -w 'denied:%{{http_code}}\\n' http://denied.test:{p}/; \
         curl -sS https://denied.test:{p}/ 2>&1 | head -1; echo \"proxy=$HTTPS_PROXY\""
    );
    let env = TestEnv::new(bash(&cmd));
    let allow = format!("allowed.test:{p}");
    let out = run_net(&env, &["--allow-domain", &allow], &[]);
    out.assert_code(0);
    let t = out.json();
    let text = bash_result(&t);
    eprintln!("{text}");
    assert!(text.contains("hello from allowed"), "{text}");
    assert!(text.contains("denied:403"), "{text}");
    assert!(
        text.contains(&format!(
            "agent: network: refused a connection to denied.test:{p}: denied.test is not in --allow-domain"
        )),
        "{text}"
    );
    assert!(text.contains("proxy=http://127.0.0.1:"), "{text}");
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "only the allowed request got through");
    assert_eq!(t["network"]["tier"], "namespace", "{}", t["network"]);
    assert_eq!(t["network"]["allow"], json!([allow]));
    let denials = t["network_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 2, "{denials:?}");
    for d in denials {
        assert_eq!(d["host"], "denied.test");
        assert_eq!(d["port"], p);
        assert!(d["command"].as_str().unwrap().contains("curl -sS http://allowed.test"), "{d}");
        assert_eq!(d["reason"], "denied.test is not in --allow-domain");
    }
}
