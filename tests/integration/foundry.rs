//! `--provider foundry`: the Messages API at a Foundry resource, with the key in both
//! `x-api-key` and `api-key` (as `AnthropicFoundry` sends it) or an Entra ID token as a
//! Bearer; the resource's URL; no credential in any output; record and replay.

use serde_json::json;

use crate::support::*;

const FOUNDRY_KEY: &str = "foundry-key-DO-NOT-LEAK-0123456789";
const ENTRA: &str = "eyJ0eXAi.entra-token-DO-NOT-LEAK";

fn foundry(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> RunOutput {
    let url = env.server.url();
    let mut all = vec![
        "run",
        "--provider",
        "foundry",
        "-m",
        "claude-sonnet-4-5",
        "--json",
    ];
    all.extend_from_slice(args);
    let mut v = vec![("ANTHROPIC_FOUNDRY_BASE_URL", url.as_str())];
    v.extend_from_slice(vars);
    env.run_with_env(&all, &v)
}

fn assert_clean(out: &RunOutput) {
    out.assert_no_secret();
    for s in [FOUNDRY_KEY, ENTRA] {
        assert!(
            !out.stdout.contains(s) && !out.stderr.contains(s),
            "{s} shown"
        );
    }
}

#[test]
fn a_foundry_key_goes_in_both_key_headers() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool("toolu_1", "ReadFile", json!({"path": "notes.txt"}))),
        Reply::turn(Turn::new().text("done")),
    ]);
    env.write("notes.txt", "alpha\n");
    let cassette = env.out("f.jsonl");
    let out = foundry(
        &env,
        &[("ANTHROPIC_FOUNDRY_API_KEY", FOUNDRY_KEY)],
        &[
            "-v",
            "--record",
            cassette.to_str().unwrap(),
            "read notes.txt",
        ],
    );
    out.assert_code(0);
    assert_clean(&out);
    assert_eq!(out.json()["provider"], "foundry");
    for r in env.server.requests() {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(FOUNDRY_KEY));
        assert_eq!(r.header("api-key"), Some(FOUNDRY_KEY));
        assert!(r.header("authorization").is_none());
        // ANTHROPIC_API_KEY (set in every test run) is never sent to Foundry.
        assert!(r.headers.iter().all(|(_, v)| !v.contains(API_KEY)));
    }
    env.server.assert_invariants();
    let text = assert_file_has_no_secret(&cassette);
    assert!(!text.contains(FOUNDRY_KEY));
    let replayed = env.run(&[
        "run",
        "--replay",
        cassette.to_str().unwrap(),
        "--json",
        "read notes.txt",
    ]);
    replayed.assert_code(0);
    assert_eq!(replayed.json()["result"], "done");
}

#[test]
fn an_entra_id_token_is_a_bearer_and_no_key_is_sent() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let out = foundry(
        &env,
        &[("ANTHROPIC_FOUNDRY_AUTH_TOKEN", ENTRA)],
        &["-v", "hi"],
    );
    out.assert_code(0);
    assert_clean(&out);
    let r = &env.server.requests()[0];
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {ENTRA}").as_str())
    );
    assert!(r.header("x-api-key").is_none() && r.header("api-key").is_none());
}

#[test]
fn claude_code_use_foundry_needs_a_resource_and_a_credential() {
    let env = TestEnv::new(vec![]);
    let out = env.run_with_env(&["run", "hi"], &[("CLAUDE_CODE_USE_FOUNDRY", "1")]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("ANTHROPIC_FOUNDRY_API_KEY"),
        "{}",
        out.stderr
    );
    let out = env.run_with_env(
        &["run", "hi"],
        &[
            ("CLAUDE_CODE_USE_FOUNDRY", "1"),
            ("ANTHROPIC_FOUNDRY_API_KEY", FOUNDRY_KEY),
        ],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains("ANTHROPIC_FOUNDRY_RESOURCE"),
        "{}",
        out.stderr
    );
    assert_clean(&out);
}
