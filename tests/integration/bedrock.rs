//! `--provider bedrock` against the loopback mock speaking Bedrock's wire (SigV4 or a
//! Bearer key, the Messages body without model and stream, AWS event-stream frames built
//! by `support::eventstream`), with each AWS credential source against a loopback token
//! service (`support::token_server`): environment keys, web identity through STS (and
//! refresh before expiry in a long run), a profile's role through STS `AssumeRole`,
//! `credential_process`, the container endpoint with its token file, IMDSv2; then the
//! faults (exceptions by class, bad CRCs, cut frames), the fallback model, record and
//! replay without credentials, and no credential in any output.

use serde_json::{Value, json};

use crate::support::token_server::{TokenServer, in_secs, sts_xml};
use crate::support::*;

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const AKID: &str = "AKIDBEDROCKTEST0001";
const SECRET: &str = "bedrock-secret-DO-NOT-LEAK-abcdef0123";
const SESSION: &str = "bedrock-session-DO-NOT-LEAK-token-xyz";
/// What each token service hands out: never to be seen in any output either.
const ISSUED_SECRET: &str = "issued-secret-DO-NOT-LEAK";
const ISSUED_TOKEN: &str = "issued-session-DO-NOT-LEAK";

/// `agent run --provider bedrock -m MODEL --json ARGS` at the mock, region us-east-1,
/// IMDS off, plus `vars`.
fn bedrock(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> RunOutput {
    let url = env.server.url();
    let mut all = vec!["run", "--provider", "bedrock", "-m", MODEL, "--json"];
    all.extend_from_slice(args);
    let mut v = vec![
        ("ANTHROPIC_BEDROCK_BASE_URL", url.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    v.extend_from_slice(vars);
    env.run_with_env(&all, &v)
}

const ENV_KEYS: &[(&str, &str)] = &[
    ("AWS_ACCESS_KEY_ID", AKID),
    ("AWS_SECRET_ACCESS_KEY", SECRET),
    ("AWS_SESSION_TOKEN", SESSION),
];

/// Asserts that none of `secrets` (nor the test's own) is in the run's output.
fn assert_clean(out: &RunOutput, secrets: &[&str]) {
    out.assert_no_secret();
    for s in secrets
        .iter()
        .chain(&[SECRET, SESSION, ISSUED_SECRET, ISSUED_TOKEN])
    {
        assert!(!out.stdout.contains(s), "{s} in stdout:\n{}", out.stdout);
        assert!(!out.stderr.contains(s), "{s} in stderr:\n{}", out.stderr);
    }
    assert!(!out.stderr.contains("Signature="), "{}", out.stderr);
}

/// The SigV4 `authorization` of a request: (credential scope, signed headers).
fn sigv4(r: &Recorded) -> (String, String) {
    let auth = r.header("authorization").expect("signed");
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .unwrap_or_else(|| panic!("not SigV4: {auth}"));
    let (credential, rest) = rest.split_once(", SignedHeaders=").unwrap();
    let (signed, signature) = rest.split_once(", Signature=").unwrap();
    assert_eq!(signature.len(), 64, "{auth}");
    (credential.to_string(), signed.to_string())
}

fn key_id(r: &Recorded) -> String {
    sigv4(r).0.split('/').next().unwrap().to_string()
}

fn two_turns(env_path: &str) -> Vec<Reply> {
    vec![
        Reply::turn(Turn::new().tool("toolu_1", "ReadFile", json!({"path": env_path}))),
        Reply::turn(Turn::new().text("done")),
    ]
}

#[test]
fn env_keys_sign_every_request_and_the_event_stream_decodes() {
    let env = TestEnv::new(two_turns("notes.txt"));
    env.write("notes.txt", "alpha\n");
    let out = bedrock(&env, ENV_KEYS, &["-v", "read notes.txt"]);
    out.assert_code(0);
    assert_clean(&out, &[]);
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "done");
    assert_eq!(t["provider"], "bedrock");
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(
            r.path,
            format!("/model/{MODEL}/invoke-with-response-stream")
        );
        let (credential, signed) = sigv4(r);
        let date = &r.header("x-amz-date").unwrap()[..8];
        assert_eq!(
            credential,
            format!("{AKID}/{date}/us-east-1/bedrock/aws4_request")
        );
        for h in ["content-type", "host", "x-amz-date", "x-amz-security-token"] {
            assert!(
                signed.split(';').any(|s| s == h),
                "{h} not signed: {signed}"
            );
        }
        assert_eq!(r.header("x-amz-security-token"), Some(SESSION));
        assert_eq!(r.body["anthropic_version"], "bedrock-2023-05-31");
        assert!(r.header("x-api-key").is_none());
        assert!(r.header("anthropic-version").is_none());
    }
    assert_eq!(reqs[1].tool_results()[0].content.trim(), "1\talpha".trim());
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn an_arn_model_id_is_escaped_as_the_sdk_escapes_it() {
    let arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0";
    // The stream names the model by its ARN too: its price must still be found.
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok").model(arn))]);
    let url = env.server.url();
    let out = env.run_with_env(
        &["run", "--provider", "bedrock", "-m", arn, "--json", "hi"],
        &[
            ("ANTHROPIC_BEDROCK_BASE_URL", &url),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", AKID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
        ],
    );
    out.assert_code(0);
    assert_eq!(
        env.server.requests()[0].path,
        "/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
    );
    // No session token: none sent, none signed.
    assert!(
        env.server.requests()[0]
            .header("x-amz-security-token")
            .is_none()
    );
    // The ARN's model maps to the Anthropic price table, as every cloud id does.
    let t = out.json();
    assert_eq!(t["models_used"][0]["model"], arn);
    assert!(
        t["models_used"][0]["cost_usd"].as_f64().unwrap() > 0.0,
        "{t}"
    );
    assert!(t["total_cost_usd"].as_f64().unwrap() > 0.0);
    env.server.assert_invariants();
}

/// An STS that answers `AssumeRoleWithWebIdentity` (and `AssumeRole`) with keys
/// numbered by call, expiring `expires_in` seconds from now.
fn sts(expires_in: u64) -> TokenServer {
    let calls = std::sync::atomic::AtomicUsize::new(0);
    TokenServer::start(move |r| {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let action = r.form("Action").unwrap_or_default();
        let xml = sts_xml(
            &action,
            &format!("ASIASTS{n}"),
            &format!("{ISSUED_SECRET}-{n}"),
            &format!("{ISSUED_TOKEN}-{n}"),
            &in_secs(expires_in),
        );
        (200, "text/xml", xml)
    })
}

fn web_identity_run(env: &TestEnv, sts: &TokenServer) -> RunOutput {
    let token_file = env.out("oidc-token");
    std::fs::write(&token_file, "eyJ.github-oidc.jwt\n").unwrap();
    let sts_url = sts.url();
    bedrock(
        env,
        &[
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
            ("AWS_ROLE_SESSION_NAME", "gha-run-1"),
            ("AWS_ENDPOINT_URL_STS", &sts_url),
        ],
        &["-v", "read notes.txt"],
    )
}

#[test]
fn web_identity_goes_through_sts_once_when_the_keys_last() {
    let env = TestEnv::new(two_turns("notes.txt"));
    env.write("notes.txt", "alpha\n");
    let sts = sts(3600);
    let out = web_identity_run(&env, &sts);
    out.assert_code(0);
    assert_clean(&out, &["eyJ.github-oidc.jwt"]);
    let calls = sts.requests();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call.method, "POST");
    assert_eq!(
        call.form("Action").as_deref(),
        Some("AssumeRoleWithWebIdentity")
    );
    assert_eq!(
        call.form("RoleArn").as_deref(),
        Some("arn:aws:iam::123456789012:role/ci")
    );
    assert_eq!(call.form("RoleSessionName").as_deref(), Some("gha-run-1"));
    assert_eq!(
        call.form("WebIdentityToken").as_deref(),
        Some("eyJ.github-oidc.jwt")
    );
    assert!(
        call.header("authorization").is_none(),
        "the web identity call is unsigned"
    );
    for r in env.server.requests() {
        assert_eq!(key_id(&r), "ASIASTS1");
        assert_eq!(
            r.header("x-amz-security-token"),
            Some(format!("{ISSUED_TOKEN}-1").as_str())
        );
    }
    env.server.assert_invariants();
}

/// Keys that expire within the refresh window are fetched again before each request
/// they would sign: a long run never signs with keys about to expire.
#[test]
fn web_identity_keys_near_expiry_are_refreshed_before_each_request() {
    let env = TestEnv::new(two_turns("notes.txt"));
    env.write("notes.txt", "alpha\n");
    let sts = sts(120);
    let out = web_identity_run(&env, &sts);
    out.assert_code(0);
    assert_clean(&out, &[]);
    // Resolved at start, then refreshed before each of the two requests.
    assert_eq!(sts.requests().len(), 3);
    let keys: Vec<String> = env.server.requests().iter().map(key_id).collect();
    assert_eq!(keys, ["ASIASTS2", "ASIASTS3"]);
    assert!(
        out.stderr
            .contains("AWS credentials refreshed from web identity"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_profile_role_is_assumed_with_its_source_profiles_keys() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let config = env.out("aws-config");
    let credentials = env.out("aws-credentials");
    std::fs::write(
        &config,
        "[default]\nregion = eu-west-1\n\n[profile ci]\nrole_arn = arn:aws:iam::123456789012:role/deploy\n\
         source_profile = base\nrole_session_name = from-profile\nexternal_id = ext-1\nregion = ap-south-1\n\n[profile base]\n",
    )
    .unwrap();
    std::fs::write(
        &credentials,
        format!("[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    let sts = sts(3600);
    let sts_url = sts.url();
    let url = env.server.url();
    // No AWS_REGION: the region is the profile's (eu-west-1 is the default profile's).
    let out = env.run_with_env(
        &["run", "--provider", "bedrock", "-m", MODEL, "--json", "hi"],
        &[
            ("ANTHROPIC_BEDROCK_BASE_URL", &url),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_PROFILE", "ci"),
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
            ("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap()),
            ("AWS_ENDPOINT_URL", &sts_url),
        ],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    assert!(
        sigv4(&env.server.requests()[0])
            .0
            .contains("/ap-south-1/bedrock/")
    );
    let call = &sts.requests()[0];
    assert_eq!(call.form("Action").as_deref(), Some("AssumeRole"));
    assert_eq!(
        call.form("RoleSessionName").as_deref(),
        Some("from-profile")
    );
    assert_eq!(call.form("ExternalId").as_deref(), Some("ext-1"));
    let auth = call.header("authorization").expect("AssumeRole is signed");
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDBASE/"),
        "{auth}"
    );
    assert!(auth.contains("/ap-south-1/sts/aws4_request"), "{auth}");
    assert_eq!(key_id(&env.server.requests()[0]), "ASIASTS1");
}

#[test]
fn a_profile_credential_process_supplies_the_keys() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let json_file = env.out("creds.json");
    std::fs::write(
        &json_file,
        json!({"Version": 1, "AccessKeyId": "AKIDPROCESS", "SecretAccessKey": ISSUED_SECRET,
               "SessionToken": ISSUED_TOKEN, "Expiration": in_secs(3600)})
        .to_string(),
    )
    .unwrap();
    let config = env.out("aws-config");
    std::fs::write(
        &config,
        format!(
            "[profile proc]\ncredential_process = cat {}\n",
            json_file.display()
        ),
    )
    .unwrap();
    let out = bedrock(
        &env,
        &[
            ("AWS_PROFILE", "proc"),
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ],
        &["hi"],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    let r = &env.server.requests()[0];
    assert_eq!(key_id(r), "AKIDPROCESS");
    assert_eq!(r.header("x-amz-security-token"), Some(ISSUED_TOKEN));
}

#[test]
fn container_credentials_use_the_authorization_token_file() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let token_file = env.out("pod-token");
    std::fs::write(&token_file, "pod-identity-token-DO-NOT-LEAK\n").unwrap();
    let service = TokenServer::start(|r| {
        if r.header("authorization") != Some("pod-identity-token-DO-NOT-LEAK") {
            return (401, "application/json", "{}".into());
        }
        let body = json!({"AccessKeyId": "ASIACONTAINER", "SecretAccessKey": ISSUED_SECRET,
                          "Token": ISSUED_TOKEN, "Expiration": in_secs(3600)});
        (200, "application/json", body.to_string())
    });
    let uri = format!("{}/v1/credentials", service.url());
    let out = bedrock(
        &env,
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                token_file.to_str().unwrap(),
            ),
        ],
        &["-v", "hi"],
    );
    out.assert_code(0);
    assert_clean(&out, &["pod-identity-token-DO-NOT-LEAK"]);
    assert_eq!(service.requests_to("/v1/credentials").len(), 1);
    assert_eq!(key_id(&env.server.requests()[0]), "ASIACONTAINER");
    // The container's token went to the container endpoint only.
    let model = &env.server.requests()[0];
    assert!(
        model
            .headers
            .iter()
            .all(|(_, v)| !v.contains("pod-identity-token"))
    );
}

#[test]
fn a_container_full_uri_over_plain_http_elsewhere_is_refused() {
    let env = TestEnv::new(vec![]);
    let out = bedrock(
        &env,
        &[(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "http://192.0.2.1/creds",
        )],
        &["hi"],
    );
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("bedrock: AWS credentials from container"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 0);
}

/// IMDSv2: a session token first (PUT with its TTL), then the role and its keys, each
/// with the token.
fn imds() -> TokenServer {
    TokenServer::start(|r| {
        let with_token = r.header("x-aws-ec2-metadata-token") == Some("imds-session-1");
        match (r.method.as_str(), r.path.as_str()) {
            ("PUT", "/latest/api/token")
                if r.header("x-aws-ec2-metadata-token-ttl-seconds").is_some() =>
            {
                (200, "text/plain", "imds-session-1".into())
            }
            ("GET", "/latest/meta-data/iam/security-credentials/") if with_token => {
                (200, "text/plain", "ci-role\n".into())
            }
            ("GET", "/latest/meta-data/iam/security-credentials/ci-role") if with_token => {
                let body = json!({"Code": "Success", "AccessKeyId": "ASIAIMDS",
                                  "SecretAccessKey": ISSUED_SECRET, "Token": ISSUED_TOKEN,
                                  "Expiration": in_secs(3600)});
                (200, "application/json", body.to_string())
            }
            _ => (401, "text/plain", "".into()),
        }
    })
}

#[test]
fn imdsv2_credentials_with_the_session_token() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let service = imds();
    let url = service.url();
    let out = bedrock(
        &env,
        &[
            ("AWS_EC2_METADATA_DISABLED", "false"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url),
        ],
        &["hi"],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    let calls: Vec<(String, String)> = service
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect();
    assert_eq!(calls[0], ("PUT".into(), "/latest/api/token".into()));
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(key_id(&env.server.requests()[0]), "ASIAIMDS");
}

#[test]
fn no_credentials_names_every_source_tried() {
    let env = TestEnv::new(vec![]);
    let nothing = TokenServer::start(|_| (404, "text/plain", "".into()));
    let url = nothing.url();
    let out = bedrock(
        &env,
        &[
            ("AWS_EC2_METADATA_DISABLED", "false"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url),
        ],
        &["hi"],
    );
    out.assert_code(2);
    assert!(
        out.stderr.contains(
            "bedrock: no AWS credentials: tried env, web identity, profile \"default\", container, IMDS"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn no_region_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    let out = env.run_with_env(&["run", "--provider", "bedrock", "hi"], ENV_KEYS);
    out.assert_code(2);
    assert!(out.stderr.contains("AWS_REGION"), "{}", out.stderr);
}

#[test]
fn a_bedrock_api_key_is_sent_as_a_bearer_token_unsigned() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let key = "ABSKbedrock-api-key-DO-NOT-LEAK-123";
    let out = bedrock(&env, &[("AWS_BEARER_TOKEN_BEDROCK", key)], &["-v", "hi"]);
    out.assert_code(0);
    assert_clean(&out, &[key]);
    let r = &env.server.requests()[0];
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    assert!(r.header("x-amz-date").is_none());
    env.server.assert_invariants();
}

#[test]
fn claude_code_use_bedrock_selects_the_provider() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let url = env.server.url();
    let mut vars = vec![
        ("CLAUDE_CODE_USE_BEDROCK", "1"),
        ("ANTHROPIC_BEDROCK_BASE_URL", url.as_str()),
        ("AWS_REGION", "us-west-2"),
    ];
    vars.extend_from_slice(ENV_KEYS);
    let out = env.run_with_env(&["run", "--json", "hi"], &vars);
    out.assert_code(0);
    assert_eq!(out.json()["provider"], "bedrock");
    let r = &env.server.requests()[0];
    // The default model: Claude Sonnet 4.5's global inference profile.
    assert_eq!(
        r.path,
        "/model/global.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
    );
    assert!(sigv4(r).0.contains("/us-west-2/bedrock/"));
}

fn exception(kind: &str) -> Reply {
    Reply::EventStream {
        bytes: eventstream::exception(kind, "try later"),
        complete: true,
    }
}

#[test]
fn exceptions_are_retried_by_their_class() {
    let env = TestEnv::new(vec![
        exception("throttlingException"),
        exception("modelStreamErrorException"),
        Reply::turn(Turn::new().text("made it")),
    ]);
    let out = bedrock(&env, ENV_KEYS, &["hi"]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["result"], "made it");
    assert_eq!(t["retries"], 2);
    assert!(
        out.stderr.contains("throttlingException: try later"),
        "{}",
        out.stderr
    );

    let env = TestEnv::new(vec![exception("validationException")]);
    let out = bedrock(&env, ENV_KEYS, &["hi"]);
    assert_ne!(out.code(), Some(0));
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("validationException"),
        "{t}"
    );
    assert_eq!(env.server.request_count(), 1, "not retried");
}

#[test]
fn bad_crcs_and_cut_frames_are_dropped_streams_retried() {
    let mut bad_prelude = eventstream::chunk(r#"{"type":"message_start","message":{"id":"m"}}"#);
    bad_prelude[8] ^= 1;
    let mut bad_message = eventstream::chunk(r#"{"type":"message_start","message":{"id":"m"}}"#);
    let last = bad_message.len() - 1;
    bad_message[last] ^= 1;
    let cut = eventstream::chunk(r#"{"type":"message_start","message":{"id":"m"}}"#);
    let env = TestEnv::new(vec![
        Reply::EventStream {
            bytes: bad_prelude,
            complete: true,
        },
        Reply::EventStream {
            bytes: bad_message,
            complete: true,
        },
        // A body that ends cleanly in the middle of a message.
        Reply::EventStream {
            bytes: cut[..cut.len() - 7].to_vec(),
            complete: true,
        },
        Reply::turn(Turn::new().text("whole")).with_fault(Fault::DropAfter(2)),
        Reply::turn(Turn::new().text("whole")),
    ]);
    let out = bedrock(&env, ENV_KEYS, &["--max-retries", "4", "hi"]);
    out.assert_code(0);
    assert_eq!(out.json()["result"], "whole");
    assert_eq!(out.json()["retries"], 4);
    for what in ["prelude CRC", "message CRC", "ended inside a message"] {
        assert!(out.stderr.contains(what), "{what}: {}", out.stderr);
    }
    env.server.assert_script_consumed();
}

#[test]
fn a_service_unavailable_model_falls_back() {
    let env = TestEnv::new(vec![
        exception("serviceUnavailableException"),
        Reply::turn(Turn::new().text("from the fallback")),
    ]);
    let fallback = "us.anthropic.claude-haiku-4-5-20251001-v1:0";
    let out = bedrock(
        &env,
        ENV_KEYS,
        &["--max-retries", "0", "--fallback-model", fallback, "hi"],
    );
    out.assert_code(0);
    assert_eq!(out.json()["result"], "from the fallback");
    let paths: Vec<String> = env
        .server
        .requests()
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        paths[1],
        format!("/model/{fallback}/invoke-with-response-stream")
    );
}

#[test]
fn thinking_and_betas_go_in_the_body_and_caching_stays() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let out = bedrock(
        &env,
        ENV_KEYS,
        &[
            "--thinking-budget",
            "2048",
            "--betas",
            "context-1m-2025-08-07",
            "hi",
        ],
    );
    out.assert_code(0);
    let r = &env.server.requests()[0];
    assert!(r.header("anthropic-beta").is_none());
    let betas: Vec<&str> = r.body["anthropic_beta"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(betas.contains(&"context-1m-2025-08-07"), "{betas:?}");
    assert!(
        betas.contains(&"interleaved-thinking-2025-05-14"),
        "{betas:?}"
    );
    assert_eq!(r.body["thinking"]["budget_tokens"], 2048);
    assert!(
        r.body["system"][0]["cache_control"].is_object(),
        "{}",
        r.body
    );
    env.server.assert_invariants();
}

#[test]
fn a_recorded_bedrock_run_replays_without_credentials_and_holds_none() {
    let env = TestEnv::new(two_turns("notes.txt"));
    env.write("notes.txt", "alpha\n");
    let cassette = env.out("bedrock.jsonl");
    let transcript = env.out("t.json");
    let out = bedrock(
        &env,
        ENV_KEYS,
        &[
            "--record",
            cassette.to_str().unwrap(),
            "-o",
            transcript.to_str().unwrap(),
            "read notes.txt",
        ],
    );
    out.assert_code(0);
    for file in [&cassette, &transcript] {
        let text = assert_file_has_no_secret(file);
        for s in [SECRET, SESSION, AKID, "Signature=", "AWS4-HMAC"] {
            assert!(!text.contains(s), "{s} in {}", file.display());
        }
    }
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&cassette)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["provider"], "bedrock");
    // No AWS variable, no region, no Bedrock URL: replay needs none.
    let replayed = env.run(&[
        "run",
        "--replay",
        cassette.to_str().unwrap(),
        "--json",
        "read notes.txt",
    ]);
    replayed.assert_code(0);
    let t = replayed.json();
    assert_eq!(t["result"], "done");
    assert_eq!(t["provider"], "bedrock");
    assert_eq!(env.server.request_count(), 2, "replay sent nothing");
}

#[test]
fn the_aws_secret_never_reaches_a_bash_command() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool("toolu_1", "Bash", json!({"command": "env"}))),
        Reply::turn(Turn::new().text("ok")),
    ]);
    let out = bedrock(&env, ENV_KEYS, &["--allow-bash", "run env"]);
    out.assert_code(0);
    let results = env.server.requests()[1].tool_results();
    assert!(
        results[0].content.contains("AWS_REGION=us-east-1"),
        "{}",
        results[0].content
    );
    assert!(!results[0].content.contains(SECRET));
    assert!(!results[0].content.contains(SESSION));
}

/// The providers guide's GitHub Actions jobs for the clouds parse, use OIDC and set the
/// variables this agent reads.
#[test]
fn the_guides_cloud_jobs_are_oidc_workflows() {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/providers.md"
    ))
    .unwrap();
    let section = readme
        .split("## Claude on Amazon Bedrock, Google Vertex AI and Microsoft Foundry")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let jobs: Vec<serde_yaml::Value> = section
        .split("```yaml\n")
        .skip(1)
        .map(|b| serde_yaml::from_str(b.split("```").next().unwrap()).unwrap())
        .collect();
    assert_eq!(jobs.len(), 3);
    let expect = [
        (
            "aws-actions/configure-aws-credentials@v4",
            "role-to-assume",
            "CLAUDE_CODE_USE_BEDROCK",
        ),
        (
            "google-github-actions/auth@v2",
            "workload_identity_provider",
            "CLAUDE_CODE_USE_VERTEX",
        ),
        ("azure/login@v2", "client-id", "CLAUDE_CODE_USE_FOUNDRY"),
    ];
    for (job, (action, input, switch)) in jobs.iter().zip(expect) {
        let job = &job["jobs"]["agent"];
        assert_eq!(job["permissions"]["id-token"], "write");
        let steps = job["steps"].as_sequence().unwrap();
        let auth = steps
            .iter()
            .find(|s| s["uses"] == action)
            .unwrap_or_else(|| panic!("{action}"));
        assert!(auth["with"][input].is_string(), "{action}: {input}");
        let run = steps.last().unwrap();
        assert_eq!(run["env"][switch], "1");
        assert!(run["run"].as_str().unwrap().contains("agent run"));
    }
}

/// A token service that answers a redirect is not followed: the web identity token goes
/// nowhere else.
#[test]
fn a_redirect_from_sts_is_not_followed() {
    let env = TestEnv::new(vec![]);
    let elsewhere = TokenServer::start(|_| (200, "text/xml", String::new()));
    let target = format!("{}/", elsewhere.url());
    let sts = TokenServer::start(move |_| (307, "text/plain", target.clone()));
    let token_file = env.out("oidc-token");
    std::fs::write(&token_file, "eyJ.github-oidc.jwt").unwrap();
    let sts_url = sts.url();
    let out = bedrock(
        &env,
        &[
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
            ("AWS_ENDPOINT_URL_STS", &sts_url),
        ],
        &["hi"],
    );
    out.assert_code(2);
    assert!(out.stderr.contains("redirect"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("bedrock: AWS credentials from web identity"),
        "{}",
        out.stderr
    );
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");
    assert_eq!(env.server.request_count(), 0);
}
