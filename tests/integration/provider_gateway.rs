//! Gateways and proxies: `ANTHROPIC_AUTH_TOKEN` as a bearer token,
//! `--header` and `ANTHROPIC_CUSTOM_HEADERS` on both providers, `--betas` as one
//! `anthropic-beta` header, and credentials in headers kept out of every output.

use crate::support::*;

const TOKEN: &str = "gw-token-DO-NOT-LEAK-55501234";
const HEADER_SECRET: &str = "hdr-secret-DO-NOT-LEAK-7770123";

fn text() -> Reply {
    Reply::turn(Turn::new().text("ok"))
}

fn assert_hidden(out: &RunOutput, secret: &str) {
    assert!(!out.stdout.contains(secret), "in stdout: {}", out.stdout);
    assert!(!out.stderr.contains(secret), "in stderr: {}", out.stderr);
}

#[test]
fn an_auth_token_is_sent_as_bearer_instead_of_the_key() {
    let env = TestEnv::new(vec![text(), text()]);
    // The token alone is enough: no ANTHROPIC_API_KEY needed.
    let mut alone = env.command(&["run", "--json", "hi"]);
    alone
        .env_remove("ANTHROPIC_API_KEY")
        .env("ANTHROPIC_AUTH_TOKEN", TOKEN);
    // Beside a key, the token wins.
    let mut both = env.command(&["run", "--json", "hi"]);
    both.env("ANTHROPIC_AUTH_TOKEN", TOKEN);
    for c in [alone, both] {
        let out = env.spawn_command(c).wait();
        out.assert_code(0).assert_no_secret();
        assert_hidden(&out, TOKEN);
    }
    for r in env.server.requests() {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(r.header("x-api-key"), None);
    }
}

#[test]
fn headers_from_flags_and_the_environment_reach_both_providers() {
    let env = TestEnv::new(vec![
        text(),
        text(),
        Reply::api_error(401, "authentication_error", &format!("bad {HEADER_SECRET}")),
    ]);
    let secret_header = format!("X-Gateway-Key: {HEADER_SECRET}");
    let custom = ("ANTHROPIC_CUSTOM_HEADERS", "X-One: 1\n\nX-Two:  two words ");
    let base = env.server.openai_url();
    let cassette = env.out("c.jsonl");
    let flags = [
        "--header",
        "X-Route: team-a",
        "--header",
        &secret_header,
        "--record",
        cassette.to_str().unwrap(),
    ];
    let mut anthropic = vec!["run", "--json"];
    anthropic.extend_from_slice(&flags);
    anthropic.push("hi");
    let mut openai = vec!["run", "--json", "--provider", "openai", "-m", "m"];
    openai.extend_from_slice(&["--base-url", &base]);
    openai.extend_from_slice(&flags);
    openai.push("hi");
    for args in [&anthropic, &openai] {
        let out = env.run_with_env(args, &[custom]);
        out.assert_code(0);
        assert_hidden(&out, HEADER_SECRET);
        let recorded = std::fs::read_to_string(&cassette).unwrap();
        assert!(
            !recorded.contains(HEADER_SECRET),
            "headers are never recorded"
        );
    }
    for r in env.server.requests() {
        assert_eq!(r.header("x-route"), Some("team-a"), "{}", r.path);
        assert_eq!(r.header("x-gateway-key"), Some(HEADER_SECRET));
        assert_eq!(r.header("x-one"), Some("1"));
        assert_eq!(r.header("x-two"), Some("two words"));
    }
    // A server echoing the credential: redacted in the error.
    let args = ["run", "--json", "--header", &secret_header, "hi"];
    let out2 = env.run_with_env(&args, &[]);
    out2.assert_code(1);
    assert_hidden(&out2, HEADER_SECRET);
    let message = out2.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("[REDACTED]"), "{message}");
}

#[test]
fn a_malformed_header_is_a_usage_error_naming_where_it_came_from() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--header", "no colon here", "hi"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--header"), "{}", out.stderr);
    let out = env.run_with_env(
        &["run", "hi"],
        &[("ANTHROPIC_CUSTOM_HEADERS", "Bad Name: x")],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains("ANTHROPIC_CUSTOM_HEADERS"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn betas_become_one_anthropic_beta_header() {
    let env = TestEnv::new(vec![text(), text()]);
    env.run(&["run", "--json", "hi"]).assert_code(0);
    env.run(&[
        "run",
        "--json",
        "--betas",
        "beta-a,beta-b",
        "--context-1m",
        "hi",
    ])
    .assert_code(0);
    let reqs = env.server.requests();
    assert_eq!(reqs[0].header("anthropic-beta"), None);
    let betas: Vec<&str> = reqs[1]
        .headers
        .iter()
        .filter(|(n, _)| n == "anthropic-beta")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(betas, ["beta-a,beta-b,context-1m-2025-08-07"]);
}
