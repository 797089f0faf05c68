//! OAuth for HTTP MCP servers with nobody at the keyboard, against `mcp-test-server
//! --oauth` (the server, its resource metadata, its authorization server and an IdP on
//! one loopback listener; see tests/support/mcp_oauth.rs): each grant, each client
//! authentication, discovery's fallbacks, step-up, refresh before expiry, the token
//! cache, where credentials must not go (a redirect, resource metadata on another host),
//! and the login page. Then the standalone GET stream (an elicitation request and a tool
//! list change arriving there) and resources (listed by page, read, linked).

use serde_json::{Value, json};

use super::env_with_turns;
use super::mcp_support::{HttpServer, logged_methods, read_log, write_config};
use crate::support::{RunOutput, TestEnv};

const CLIENT_ID: &str = "ci-client";
const CLIENT_SECRET: &str = "ci-client-secret-0123";

fn key(name: &str) -> String {
    format!("{}/tests/fixtures/keys/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// One run calling `tool` of server `h` (started with `--oauth SPEC` plus `extra`),
/// whose entry has `oauth`. Secrets go through the environment as `${CONF_SECRET}`.
fn run(
    spec: &str,
    oauth: Value,
    tool: (&str, Value),
    flags: &[&str],
) -> (TestEnv, RunOutput, Vec<Value>, String) {
    let env = env_with_turns(vec![vec![("c1", tool.0, tool.1)]]);
    let server = HttpServer::start(env.out("log.jsonl"), &["--oauth", spec]);
    let out = run_on(&env, &server, oauth, flags);
    let log = read_log(&server.log);
    let url = server.url.clone();
    (env, out, log, url)
}

fn run_on(env: &TestEnv, server: &HttpServer, oauth: Value, flags: &[&str]) -> RunOutput {
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"h": {"type": "http", "url": server.url, "oauth": oauth}}),
    );
    let mut args = vec!["run", "go", "--json", "-v", "--mcp-config", &cfg];
    args.extend_from_slice(flags);
    let mut cmd = env.command(&args);
    cmd.env("CONF_SECRET", CLIENT_SECRET)
        .env(
            "CONF_KEY",
            std::fs::read_to_string(key("test_rsa_pkcs8.pem")).unwrap(),
        )
        .env("CONF_REFRESH", "given-refresh-token-0123")
        .env("CONF_IDP_TOKEN", "idp-id-token-0123456789");
    let out = env.spawn_command(cmd).wait();
    for s in [
        CLIENT_SECRET,
        "given-refresh-token-0123",
        "idp-id-token-0123456789",
        "abcdefghij",
        "code-",
    ] {
        assert!(
            !out.stdout.contains(s) && !out.stderr.contains(s),
            "{s} leaked: {}",
            out.stderr
        );
    }
    out
}

fn echo() -> (&'static str, Value) {
    ("mcp__h__echo", json!({"text": "with a token"}))
}

fn entries<'a>(log: &'a [Value], what: &str) -> Vec<&'a Value> {
    log.iter().filter(|e| e["what"] == what).collect()
}

/// The first tool result the model got.
fn first_result(env: &TestEnv) -> (String, bool) {
    super::results(env).first().cloned().unwrap_or_default()
}

fn confidential() -> Value {
    json!({"client_id": CLIENT_ID, "client_secret": "${CONF_SECRET}"})
}

/// Every MCP request after the first 401 carries a token the AS issued.
fn assert_bearer_after_refusal(log: &[Value]) {
    let posts = entries(log, "http");
    assert!(!posts.is_empty(), "{log:?}");
    for p in posts {
        let a = p["msg"]["headers"]["authorization"].as_str().unwrap_or("");
        assert!(a.starts_with("Bearer tok-"), "{p}");
    }
    assert!(
        !entries(log, "http-refused").is_empty(),
        "the first request had no token"
    );
}

#[test]
fn client_credentials_with_each_client_authentication_method() {
    for (method, oauth, spec) in [
        (
            "client_secret_basic",
            confidential(),
            "methods=client_secret_basic,grants=client_credentials",
        ),
        (
            "client_secret_post",
            confidential(),
            "methods=client_secret_post,grants=client_credentials",
        ),
        (
            "private_key_jwt",
            json!({"client_id": CLIENT_ID, "private_key": "${CONF_KEY}", "signing_algorithm": "RS256"}),
            &*format!(
                "methods=private_key_jwt,grants=client_credentials,jwt-key={}",
                key("test_rsa_public_pkcs1.der")
            ),
        ),
    ] {
        let (env, out, log, url) = run(spec, oauth, echo(), &[]);
        out.assert_code(0);
        assert_eq!(
            first_result(&env),
            ("echo: with a token".into(), false),
            "{method}"
        );
        let tokens = entries(&log, "as-token");
        assert_eq!(tokens.len(), 1, "{method}: {tokens:?}");
        let t = &tokens[0]["msg"];
        assert_eq!(t["client_auth"], method, "{t}");
        assert_eq!(t["form"]["grant_type"], "client_credentials");
        assert_eq!(t["form"]["resource"], url, "RFC 8707 resource: {t}");
        assert_eq!(t["form"]["scope"], "mcp:read", "the 401's scope: {t}");
        assert_bearer_after_refusal(&log);
    }
}

#[test]
fn authorization_code_without_a_browser_registers_dynamically_as_a_public_client() {
    let (env, out, log, url) = run("", json!({}), echo(), &[]);
    out.assert_code(0);
    assert_eq!(first_result(&env).0, "echo: with a token");
    let reg = entries(&log, "as-register");
    assert_eq!(reg.len(), 1);
    let redirect = reg[0]["msg"]["redirect_uris"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let auth = &entries(&log, "as-authorize")[0]["msg"];
    assert_eq!(auth["code_challenge_method"], "S256");
    assert_eq!(auth["resource"], url);
    assert_eq!(auth["redirect_uri"], redirect);
    // offline_access: the AS lists it, and a refresh token needs it.
    assert_eq!(auth["scope"], "mcp:read offline_access");
    let t = &entries(&log, "as-token")[0]["msg"];
    assert_eq!(t["form"]["grant_type"], "authorization_code");
    assert_eq!(t["client_auth"], "none");
    assert_eq!(t["form"]["resource"], url);
    assert_bearer_after_refusal(&log);
}

#[test]
fn pre_registered_credentials_come_before_registration() {
    let (_env, out, log, _) = run(
        "grants=authorization_code+refresh_token",
        confidential(),
        echo(),
        &[],
    );
    out.assert_code(0);
    assert!(entries(&log, "as-register").is_empty());
    let t = &entries(&log, "as-token")[0]["msg"];
    assert_eq!(t["form"]["grant_type"], "authorization_code");
    assert_eq!(t["client_auth"], "client_secret_basic");
    assert_eq!(
        entries(&log, "as-authorize")[0]["msg"]["client_id"],
        CLIENT_ID
    );
}

#[test]
fn a_refresh_token_from_the_environment_is_the_grant() {
    let oauth = json!({"client_id": CLIENT_ID, "client_secret": "${CONF_SECRET}",
                       "refresh_token": "${CONF_REFRESH}"});
    let (_env, out, log, _) = run("", oauth, echo(), &[]);
    out.assert_code(0);
    let t = &entries(&log, "as-token")[0]["msg"];
    assert_eq!(t["form"]["grant_type"], "refresh_token");
    assert_eq!(t["form"]["refresh_token"], "given-refresh-token-0123");
    assert!(entries(&log, "as-authorize").is_empty());
}

#[test]
fn a_token_about_to_expire_is_refreshed_before_the_next_request() {
    // expires_in 5: inside the renewal margin at once, so the request after the grant
    // (tools/list, then the call) goes with a refreshed token.
    let (env, out, log, _) = run(
        "ttl=5,grants=client_credentials+refresh_token",
        confidential(),
        echo(),
        &[],
    );
    out.assert_code(0);
    let tokens = entries(&log, "as-token");
    let grants: Vec<&str> = tokens
        .iter()
        .map(|t| t["msg"]["form"]["grant_type"].as_str().unwrap())
        .collect();
    assert_eq!(grants[0], "client_credentials");
    assert!(
        grants[1..].iter().all(|g| *g == "refresh_token") && grants.len() > 1,
        "{grants:?}"
    );
    assert_eq!(
        tokens[1]["msg"]["form"]["refresh_token"],
        "ref-1-abcdefghij"
    );
    assert_eq!(first_result(&env).0, "echo: with a token");
}

#[test]
fn enterprise_managed_authorization_exchanges_the_idp_token_then_uses_jwt_bearer() {
    let env = env_with_turns(vec![vec![("c1", echo().0, echo().1)]]);
    let server = HttpServer::start(env.out("log.jsonl"), &["--oauth", ""]);
    let origin = server.url.trim_end_matches("/mcp").to_string();
    let oauth = json!({"client_id": CLIENT_ID, "client_secret": "${CONF_SECRET}",
                       "idp_id_token": "${CONF_IDP_TOKEN}",
                       "idp_token_endpoint": format!("{origin}/idp/token"),
                       "idp_client_id": "idp-client"});
    let out = run_on(&env, &server, oauth, &[]);
    out.assert_code(0);
    let log = read_log(&server.log);
    let idp = &entries(&log, "idp-token")[0]["msg"];
    assert_eq!(idp["audience"], format!("{origin}/as"));
    assert_eq!(idp["resource"], server.url);
    assert_eq!(idp["client_id"], "idp-client");
    let t = &entries(&log, "as-token")[0]["msg"];
    assert_eq!(
        t["form"]["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(t["client_auth"], "client_secret_basic");
    assert_eq!(first_result(&env).0, "echo: with a token");
}

#[test]
fn discovery_falls_back_to_well_known_openid_and_the_2025_03_26_layout() {
    for (spec, prm_paths, metadata_path) in [
        // No resource_metadata in the 401: the path-inserted well-known location.
        (
            "no-www-prm,grants=client_credentials",
            vec!["/.well-known/oauth-protected-resource/mcp"],
            "/.well-known/oauth-authorization-server/as",
        ),
        // RFC 8414's location missing: OpenID discovery's.
        (
            "openid,grants=client_credentials",
            vec!["/.well-known/oauth-protected-resource/mcp"],
            "/.well-known/openid-configuration/as",
        ),
        // No resource metadata at all: the server's origin is the AS (2025-03-26).
        (
            "no-prm,grants=client_credentials",
            vec![
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ],
            "/.well-known/oauth-authorization-server",
        ),
    ] {
        let (env, out, log, _) = run(spec, confidential(), echo(), &[]);
        out.assert_code(0);
        let prm: Vec<&str> = entries(&log, "as-prm")
            .iter()
            .map(|e| e["msg"]["path"].as_str().unwrap())
            .collect();
        assert_eq!(prm, prm_paths, "{spec}");
        let meta: Vec<&str> = entries(&log, "as-metadata")
            .iter()
            .map(|e| e["msg"]["path"].as_str().unwrap())
            .collect();
        assert_eq!(meta.last(), Some(&metadata_path), "{spec}: {meta:?}");
        assert_eq!(first_result(&env).0, "echo: with a token", "{spec}");
    }
}

#[test]
fn a_403_insufficient_scope_steps_up_and_the_call_goes_through() {
    // The HTTP server runs in the tests' directory: an absolute path of the test's own.
    let note = std::env::temp_dir().join(format!("agent-step-up-{}.txt", std::process::id()));
    let path = note.to_str().unwrap();
    let tool = ("mcp__h__write_note", json!({"path": path, "text": "x"}));
    let (env, out, log, _) = run(
        "step-up,grants=client_credentials",
        confidential(),
        tool,
        &["--allow-mcp"],
    );
    out.assert_code(0);
    assert_eq!(first_result(&env), (format!("wrote {path}"), false));
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "x");
    let _ = std::fs::remove_file(&note);
    let scopes: Vec<&str> = entries(&log, "as-token")
        .iter()
        .map(|t| t["msg"]["form"]["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["mcp:read", "mcp:read mcp:write"]);
    let refused: Vec<&Value> = entries(&log, "http-refused");
    assert!(
        refused
            .iter()
            .any(|r| r["msg"]["status"] == "403 Forbidden"),
        "{refused:?}"
    );
}

#[test]
fn tokens_never_follow_a_redirect_nor_go_to_resource_metadata_on_another_host() {
    let base = env_with_turns(vec![]);
    let thief = HttpServer::start(base.out("thief.jsonl"), &[]);
    let thief_origin = thief.url.trim_end_matches("/mcp").to_string();
    for spec in [
        format!("redirect={}", thief.url),
        format!("prm-url={thief_origin}/.well-known/oauth-protected-resource/mcp"),
    ] {
        let env = env_with_turns(vec![vec![("c1", echo().0, echo().1)]]);
        let server = HttpServer::start(
            env.out("log.jsonl"),
            &["--oauth", &format!("{spec},grants=client_credentials")],
        );
        let out = run_on(&env, &server, confidential(), &[]);
        out.assert_code(0);
        let t = out.json();
        let s = &t["mcp_servers"][0];
        assert_eq!(s["status"], "failed", "{spec}: {s}");
        let err = s["error"].as_str().unwrap();
        if spec.starts_with("redirect") {
            assert!(
                err.contains("redirect") && err.contains("not followed"),
                "{err}"
            );
        } else {
            assert!(
                err.contains("refused") && err.contains("not on the server's own origin"),
                "{err}"
            );
            assert!(entries(&read_log(&server.log), "as-token").is_empty());
        }
        assert!(
            read_log(&thief.log).iter().all(|e| e["what"] == "pid"),
            "the other host got a request: {spec}"
        );
    }
}

#[test]
fn a_login_page_is_a_clear_error_naming_the_server_and_how_to_give_a_token() {
    let (_env, out, log, _) = run("login-page", json!({}), echo(), &["--strict-mcp"]);
    out.assert_code(2);
    for want in [
        "MCP server \"h\"",
        "a page (HTTP 200, text/html)",
        "Bearer ${TOKEN}",
        "refresh_token",
        "client_id",
    ] {
        assert!(out.stderr.contains(want), "{want}: {}", out.stderr);
    }
    assert!(entries(&log, "as-token").is_empty());
}

#[test]
fn the_token_cache_is_private_and_spares_the_next_run_a_grant() {
    use std::os::unix::fs::PermissionsExt;
    let env = env_with_turns(vec![vec![("c1", echo().0, echo().1)]]);
    let server = HttpServer::start(
        env.out("log.jsonl"),
        &["--oauth", "grants=client_credentials"],
    );
    let cache = env.out("tokens.json");
    let c = cache.to_str().unwrap();
    run_on(&env, &server, confidential(), &["--mcp-token-cache", c]).assert_code(0);
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert!(
        doc[&server.url]["access_token"]
            .as_str()
            .unwrap()
            .starts_with("tok-")
    );
    let env2 = env_with_turns(vec![vec![("c1", echo().0, echo().1)]]);
    run_on(&env2, &server, confidential(), &["--mcp-token-cache", c]).assert_code(0);
    assert_eq!(
        entries(&read_log(&server.log), "as-token").len(),
        1,
        "the cached token was used"
    );
    // Without the flag nothing is written.
    assert!(
        std::fs::read_dir(env2.out("")).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("token"))
    );
}

#[test]
fn the_standalone_stream_delivers_an_elicitation_and_a_tool_list_change() {
    for (flag, action) in [
        (Some("defaults"), "accept"),
        (Some("decline"), "decline"),
        (None, ""),
    ] {
        let env = env_with_turns(vec![vec![("c1", "mcp__h__elicit", json!({}))]]);
        let server = HttpServer::start(env.out("log.jsonl"), &["--standalone", "--sse"]);
        let cfg = write_config(
            &env.out("mcp.json"),
            json!({"h": {"type": "http", "url": server.url}}),
        );
        let mut args = vec!["run", "go", "--json", "--mcp-config", &cfg];
        if let Some(f) = flag {
            args.extend(["--mcp-elicitation", f]);
        }
        let out = env.run(&args);
        out.assert_code(0);
        let log = read_log(&server.log);
        let init = &entries(&log, "http")[0]["msg"]["body"]["params"]["capabilities"];
        let t = out.json();
        let call = &t["tool_calls"][0];
        let result = first_result(&env).0;
        let result = result.as_str();
        match flag {
            Some("defaults") => {
                assert_eq!(init, &json!({"elicitation": {}}));
                assert_eq!(
                    result,
                    r#"answer: {"action":"accept","content":{"branch":"main"}}"#
                );
            }
            Some(_) => assert_eq!(result, r#"answer: {"action":"decline"}"#),
            None => {
                assert_eq!(init, &json!({}));
                assert_eq!(result, "answer: null", "method not found");
            }
        }
        if flag.is_some() {
            let e = &call["metadata"]["elicitations"][0];
            assert_eq!(e["message"], "Which branch?");
            assert_eq!(e["action"], action);
        }
        // The list change is heard: the tools are listed again before the next request
        // (the same list: nothing to record).
        let methods = logged_methods(&read_log(&server.log));
        let after_call = methods.iter().skip_while(|m| *m != "tools/call");
        assert!(
            after_call.filter(|m| *m == "tools/list").count() > 0,
            "{methods:?}"
        );
        assert!(t["mcp_servers"][0].get("tools_changed").is_none(), "{t}");
    }
}

#[test]
fn resources_are_listed_page_by_page_and_read_text_inline_binary_as_a_note() {
    let env = env_with_turns(vec![
        vec![("l1", "mcp__r__list_resources", json!({}))],
        vec![("l2", "mcp__r__list_resources", json!({"cursor": "res-2"}))],
        vec![
            ("k1", "mcp__r__linked", json!({})),
            (
                "r1",
                "mcp__r__read_resource",
                json!({"uri": "file:///notes.txt"}),
            ),
            (
                "r2",
                "mcp__r__read_resource",
                json!({"uri": "file:///logo.png"}),
            ),
            (
                "r3",
                "mcp__r__read_resource",
                json!({"uri": "file:///missing"}),
            ),
        ],
    ]);
    let server = HttpServer::start(env.out("log.jsonl"), &["--resources"]);
    // The same over stdio, where a server without resources gets no resource tools.
    let cfg = write_config(
        &env.out("mcp.json"),
        json!({"r": {"type": "http", "url": server.url},
               "s": super::mcp_support::stdio_entry(&[], json!({}))}),
    );
    let out = env.run(&["run", "go", "--json", "--mcp-config", &cfg]);
    out.assert_code(0);
    let r = super::results(&env);
    assert_eq!(
        r[0].0,
        "file:///notes.txt notes (text/plain): The notes.\nnextCursor: res-2 (pass it as cursor for the next page)"
    );
    assert_eq!(r[1].0, "file:///logo.png logo (image/png)");
    assert_eq!(
        r[2].0,
        "see the notes\n[resource link: file:///notes.txt (notes); read it with mcp__r__read_resource]"
    );
    assert_eq!(r[3], ("The launch code is 4242.".to_string(), false));
    assert_eq!(
        r[4].0,
        // An image resource goes to the model as an image; this blob is not one.
        "[the resource file:///logo.png (image/png) not sent: the resource file:///logo.png is \
         not a PNG, JPEG, GIF, WebP or PDF file (by its content, whatever its name)]"
    );
    assert!(
        r[5].1 && r[5].0.contains("Resource not found"),
        "{:?}",
        r[5]
    );
    let t = out.json();
    let tools = |i: usize| {
        t["mcp_servers"][i]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(tools(0).contains(&"mcp__r__read_resource".to_string()));
    assert!(
        !tools(1)
            .iter()
            .any(|n| n.ends_with("_resource") || n.ends_with("_resources"))
    );
}
