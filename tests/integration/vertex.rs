//! `--provider vertex` against the loopback mock speaking Vertex AI's wire (the model in
//! a `:streamRawPredict` path, the Messages body with `anthropic_version`, SSE back), with
//! each Application Default Credentials source against a loopback token service: a
//! service account's RS256 assertion (its signature verified with the public key), an
//! authorized user's refresh token, workload identity federation (a file or URL subject
//! token, the STS exchange, the service account impersonation), the gcloud ADC file, the
//! GCE metadata server; tokens cached and refreshed before expiry; no credential in any
//! output; record and replay without credentials.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::token_server::{TokenRequest, TokenServer, in_secs};
use crate::support::*;

const PROJECT: &str = "proj-1";
const REGION: &str = "us-east5";
const MODEL: &str = "claude-sonnet-4-5@20250929";
const TOKEN: &str = "ya29.vertex-token-DO-NOT-LEAK";
const KEYS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/keys");

fn path() -> String {
    format!(
        "/projects/{PROJECT}/locations/{REGION}/publishers/anthropic/models/{MODEL}:streamRawPredict"
    )
}

/// `agent run --provider vertex -m MODEL --json ARGS` at the mock, plus `vars`.
fn vertex(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> RunOutput {
    let url = env.server.url();
    let mut all = vec!["run", "--provider", "vertex", "-m", MODEL, "--json"];
    all.extend_from_slice(args);
    let mut v = vec![
        ("ANTHROPIC_VERTEX_BASE_URL", url.as_str()),
        ("CLOUD_ML_REGION", REGION),
        ("ANTHROPIC_VERTEX_PROJECT_ID", PROJECT),
        // Nothing answers here: the metadata server is never reached by accident.
        ("GCE_METADATA_HOST", "127.0.0.1:9"),
    ];
    v.extend_from_slice(vars);
    env.run_with_env(&all, &v)
}

fn assert_clean(out: &RunOutput, secrets: &[&str]) {
    out.assert_no_secret();
    for s in secrets.iter().chain(&[TOKEN, "DO-NOT-LEAK"]) {
        assert!(!out.stdout.contains(s), "{s} in stdout:\n{}", out.stdout);
        assert!(!out.stderr.contains(s), "{s} in stderr:\n{}", out.stderr);
    }
}

fn b64url(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

/// The claims of an RS256 JWT whose signature the public key fixture verifies; panics
/// (answering nothing) otherwise.
fn verified_claims(jwt: &str) -> Result<Value, String> {
    let public = std::fs::read(format!("{KEYS}/test_rsa_public_pkcs1.der")).unwrap();
    let (signed, signature) = jwt.rsplit_once('.').ok_or("not a JWT")?;
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public,
    );
    key.verify(signed.as_bytes(), &b64url(signature))
        .map_err(|_| "bad signature".to_string())?;
    let (header, claims) = signed.split_once('.').unwrap();
    let header: Value = serde_json::from_slice(&b64url(header)).unwrap();
    if header["alg"] != "RS256" || header["kid"] != "key-1" {
        return Err(format!("header {header}"));
    }
    Ok(serde_json::from_slice(&b64url(claims)).unwrap())
}

/// A token endpoint for a service account: it verifies the assertion and answers a
/// token numbered by call, valid `expires_in` seconds.
fn google_token_endpoint(expires_in: u64) -> TokenServer {
    let n = std::sync::atomic::AtomicUsize::new(0);
    TokenServer::start(move |r: &TokenRequest| {
        if r.form("grant_type").as_deref() != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
            return (
                400,
                "application/json",
                r#"{"error":"unsupported_grant_type"}"#.into(),
            );
        }
        match verified_claims(&r.form("assertion").unwrap_or_default()) {
            Ok(c)
                if c["iss"] == "ci@proj-1.iam.gserviceaccount.com"
                    && c["scope"] == "https://www.googleapis.com/auth/cloud-platform"
                    && c["aud"].as_str().is_some_and(|a| a.ends_with("/token"))
                    && c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap() == 3600 =>
            {
                let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                let body = json!({"access_token": format!("{TOKEN}-{i}"), "expires_in": expires_in,
                                  "token_type": "Bearer"});
                (200, "application/json", body.to_string())
            }
            other => (
                400,
                "application/json",
                json!({"error": "invalid_grant", "error_description": format!("{other:?}")})
                    .to_string(),
            ),
        }
    })
}

fn service_account_file(env: &TestEnv, token_url: &str) -> String {
    let key = std::fs::read_to_string(format!("{KEYS}/test_rsa_pkcs8.pem")).unwrap();
    let file = env.out("sa.json");
    std::fs::write(
        &file,
        json!({"type": "service_account", "project_id": "proj-from-file", "private_key_id": "key-1",
               "private_key": key, "client_email": "ci@proj-1.iam.gserviceaccount.com",
               "token_uri": format!("{token_url}/token")})
        .to_string(),
    )
    .unwrap();
    file.to_str().unwrap().to_string()
}

fn two_turns() -> Vec<Reply> {
    vec![
        Reply::turn(Turn::new().tool("toolu_1", "ReadFile", json!({"path": "notes.txt"}))),
        Reply::turn(Turn::new().text("done")),
    ]
}

fn bearer(r: &Recorded) -> String {
    r.header("authorization")
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap()
        .to_string()
}

#[test]
fn a_service_account_assertion_is_verified_and_its_token_cached() {
    let env = TestEnv::new(two_turns());
    env.write("notes.txt", "alpha\n");
    let google = google_token_endpoint(3600);
    let sa = service_account_file(&env, &google.url());
    let out = vertex(
        &env,
        &[("GOOGLE_APPLICATION_CREDENTIALS", &sa)],
        &["-v", "read notes.txt"],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    let t = out.json();
    assert_eq!(t["result"], "done");
    assert_eq!(t["provider"], "vertex");
    assert_eq!(google.requests().len(), 1, "one token for the run");
    // The endpoint's check can fail: the same assertion with its signature altered.
    let assertion = google.requests()[0].form("assertion").unwrap();
    assert!(verified_claims(&assertion).is_ok());
    let (signed, signature) = assertion.rsplit_once('.').unwrap();
    let mut bad = b64url(signature);
    bad[10] ^= 1;
    let forged = format!(
        "{signed}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bad)
    );
    assert_eq!(verified_claims(&forged), Err("bad signature".to_string()));
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.path, path());
        assert_eq!(bearer(r), format!("{TOKEN}-1"));
        assert_eq!(r.body["anthropic_version"], "vertex-2023-10-16");
        assert_eq!(r.body["stream"], true);
    }
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn a_token_near_expiry_is_fetched_again_before_each_request() {
    let env = TestEnv::new(two_turns());
    env.write("notes.txt", "alpha\n");
    let google = google_token_endpoint(60);
    let sa = service_account_file(&env, &google.url());
    let out = vertex(
        &env,
        &[("GOOGLE_APPLICATION_CREDENTIALS", &sa)],
        &["-v", "read notes.txt"],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    assert_eq!(
        google.requests().len(),
        3,
        "at start, then before each request"
    );
    let tokens: Vec<String> = env.server.requests().iter().map(bearer).collect();
    assert_eq!(tokens, [format!("{TOKEN}-2"), format!("{TOKEN}-3")]);
}

#[test]
fn a_key_that_is_not_rsa_is_named_before_any_request() {
    let env = TestEnv::new(vec![]);
    let google = google_token_endpoint(3600);
    let key = std::fs::read_to_string(format!("{KEYS}/test_ec_p256_pkcs8.pem")).unwrap();
    let file = env.out("sa.json");
    std::fs::write(
        &file,
        json!({"type": "service_account", "private_key": key, "client_email": "x@y",
        "token_uri": format!("{}/token", google.url())})
        .to_string(),
    )
    .unwrap();
    let out = vertex(
        &env,
        &[("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap())],
        &["hi"],
    );
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("private_key: not an RSA PKCS#8 private key"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("BEGIN"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
    assert_eq!(google.requests().len(), 0);
}

#[test]
fn an_authorized_user_refresh_token_and_the_gcloud_file() {
    let google = TokenServer::start(|r| {
        let ok = r.form("grant_type").as_deref() == Some("refresh_token")
            && r.form("refresh_token").as_deref() == Some("1//refresh-DO-NOT-LEAK")
            && r.form("client_id").as_deref() == Some("cid.apps.googleusercontent.com");
        match ok {
            true => (
                200,
                "application/json",
                json!({"access_token": TOKEN, "expires_in": 3599}).to_string(),
            ),
            false => (
                400,
                "application/json",
                r#"{"error":"invalid_grant"}"#.into(),
            ),
        }
    });
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    // No GOOGLE_APPLICATION_CREDENTIALS: the gcloud ADC file under HOME.
    let home = env.out("home");
    std::fs::create_dir_all(home.join(".config/gcloud")).unwrap();
    std::fs::write(
        home.join(".config/gcloud/application_default_credentials.json"),
        json!({"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
               "client_secret": "client-secret-DO-NOT-LEAK", "refresh_token": "1//refresh-DO-NOT-LEAK",
               "token_uri": format!("{}/token", google.url())})
        .to_string(),
    )
    .unwrap();
    let out = vertex(&env, &[("HOME", home.to_str().unwrap())], &["-v", "hi"]);
    out.assert_code(0);
    assert_clean(
        &out,
        &["client-secret-DO-NOT-LEAK", "1//refresh-DO-NOT-LEAK"],
    );
    assert_eq!(bearer(&env.server.requests()[0]), TOKEN);
    assert_eq!(google.requests().len(), 1);
}

/// Google STS and the IAM credentials API: the exchange of a subject token for a
/// federated token, then that token for the service account's.
fn federation() -> TokenServer {
    TokenServer::start(|r| match r.path.split('?').next().unwrap_or("") {
        "/sts" => {
            let ok = r.form("grant_type").as_deref()
                == Some("urn:ietf:params:oauth:grant-type:token-exchange")
                && r.form("subject_token").as_deref() == Some("gha-oidc-jwt-DO-NOT-LEAK")
                && r.form("subject_token_type").as_deref()
                    == Some("urn:ietf:params:oauth:token-type:jwt")
                && r.form("audience").as_deref()
                    == Some(
                        "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/providers/gh",
                    )
                && r.form("requested_token_type").as_deref()
                    == Some("urn:ietf:params:oauth:token-type:access_token");
            match ok {
                true => (
                    200,
                    "application/json",
                    json!({"access_token": "federated-DO-NOT-LEAK", "expires_in": 3600,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
                    .to_string(),
                ),
                false => (
                    400,
                    "application/json",
                    format!("{{\"error\":\"invalid_request\",\"body\":{:?}}}", r.body),
                ),
            }
        }
        "/v1/projects/-/serviceAccounts/ci@proj-1.iam.gserviceaccount.com:generateAccessToken" => {
            let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
            if r.header("authorization") != Some("Bearer federated-DO-NOT-LEAK")
                || body["scope"][0] != "https://www.googleapis.com/auth/cloud-platform"
            {
                return (403, "application/json", "{}".into());
            }
            (
                200,
                "application/json",
                json!({"accessToken": TOKEN, "expireTime": in_secs(3600)}).to_string(),
            )
        }
        "/oidc" if r.header("authorization") == Some("bearer gha-request-token") => (
            200,
            "application/json",
            json!({"value": "gha-oidc-jwt-DO-NOT-LEAK"}).to_string(),
        ),
        _ => (404, "text/plain", String::new()),
    })
}

fn external_account(env: &TestEnv, server: &TokenServer, source: Value) -> String {
    let file = env.out("wif.json");
    std::fs::write(
        &file,
        json!({"type": "external_account",
               "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/gh/providers/gh",
               "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
               "token_url": format!("{}/sts", server.url()),
               "service_account_impersonation_url": format!("{}/v1/projects/-/serviceAccounts/ci@proj-1.iam.gserviceaccount.com:generateAccessToken", server.url()),
               "credential_source": source})
        .to_string(),
    )
    .unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn workload_identity_from_a_file_exchanges_then_impersonates() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let server = federation();
    let subject = env.out("oidc.jwt");
    std::fs::write(&subject, "gha-oidc-jwt-DO-NOT-LEAK\n").unwrap();
    let file = external_account(&env, &server, json!({"file": subject.to_str().unwrap()}));
    let out = vertex(
        &env,
        &[("GOOGLE_APPLICATION_CREDENTIALS", &file)],
        &["-v", "hi"],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    let calls: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], "/sts");
    assert_eq!(bearer(&env.server.requests()[0]), TOKEN);
    env.server.assert_invariants();
}

#[test]
fn workload_identity_from_a_url_reads_the_json_field() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let server = federation();
    let source = json!({"url": format!("{}/oidc?audience=x", server.url()),
                        "headers": {"Authorization": "bearer gha-request-token"},
                        "format": {"type": "json", "subject_token_field_name": "value"}});
    let file = external_account(&env, &server, source);
    let out = vertex(&env, &[("GOOGLE_APPLICATION_CREDENTIALS", &file)], &["hi"]);
    out.assert_code(0);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(bearer(&env.server.requests()[0]), TOKEN);
}

#[test]
fn the_gce_metadata_server_with_its_flavor_header() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("ok"))]);
    let metadata = TokenServer::start(|r| {
        if r.header("metadata-flavor") == Some("Google")
            && r.path == "/computeMetadata/v1/instance/service-accounts/default/token"
        {
            (
                200,
                "application/json",
                json!({"access_token": TOKEN, "expires_in": 3000}).to_string(),
            )
        } else {
            (403, "text/plain", String::new())
        }
    });
    let host = metadata.url().trim_start_matches("http://").to_string();
    let out = vertex(&env, &[("GCE_METADATA_HOST", &host)], &["hi"]);
    out.assert_code(0);
    assert_eq!(bearer(&env.server.requests()[0]), TOKEN);
}

#[test]
fn no_credentials_names_every_source_tried() {
    let env = TestEnv::new(vec![]);
    let out = vertex(&env, &[], &["hi"]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("vertex: no Google credentials: tried GOOGLE_APPLICATION_CREDENTIALS, "),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("the GCE metadata server"),
        "{}",
        out.stderr
    );
}

#[test]
fn region_and_project_are_required() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--provider", "vertex", "hi"]);
    out.assert_code(2);
    assert!(out.stderr.contains("CLOUD_ML_REGION"), "{}", out.stderr);
}

#[test]
fn claude_code_use_vertex_and_record_replay_without_credentials() {
    let env = TestEnv::new(two_turns());
    env.write("notes.txt", "alpha\n");
    let google = google_token_endpoint(3600);
    let sa = service_account_file(&env, &google.url());
    let cassette = env.out("vertex.jsonl");
    let transcript = env.out("t.json");
    let url = env.server.url();
    let out = env.run_with_env(
        &[
            "run",
            "--json",
            "--record",
            cassette.to_str().unwrap(),
            "-o",
            transcript.to_str().unwrap(),
            "read notes.txt",
        ],
        &[
            ("CLAUDE_CODE_USE_VERTEX", "1"),
            ("ANTHROPIC_VERTEX_BASE_URL", &url),
            ("CLOUD_ML_REGION", "global"),
            ("GOOGLE_APPLICATION_CREDENTIALS", &sa),
        ],
    );
    out.assert_code(0);
    assert_clean(&out, &[]);
    // The project came from the service account file.
    assert_eq!(
        env.server.requests()[0].path,
        "/projects/proj-from-file/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    for file in [&cassette, &transcript] {
        let text = assert_file_has_no_secret(file);
        assert!(!text.contains(TOKEN), "token in {}", file.display());
        assert!(!text.contains("PRIVATE KEY"));
    }
    let replayed = env.run(&[
        "run",
        "--replay",
        cassette.to_str().unwrap(),
        "--json",
        "read notes.txt",
    ]);
    replayed.assert_code(0);
    assert_eq!(replayed.json()["result"], "done");
    assert_eq!(replayed.json()["provider"], "vertex");
    assert_eq!(env.server.request_count(), 2);
}

#[test]
fn a_token_fetched_during_the_run_is_redacted_from_the_answer_too() {
    // The model repeats the access token (a page it read held it, say): the token was
    // fetched at run time, so only the late-secret list can know to hide it.
    let leaked = format!("{TOKEN}-1");
    let env = TestEnv::new(vec![Reply::turn(
        Turn::new().text(&format!("the token is {leaked}")),
    )]);
    let google = google_token_endpoint(3600);
    let sa = service_account_file(&env, &google.url());
    let out = vertex(
        &env,
        &[("GOOGLE_APPLICATION_CREDENTIALS", &sa)],
        &["say it"],
    );
    out.assert_code(0);
    let t = out.json();
    let result = t["result"].as_str().unwrap();
    assert!(result.starts_with("the token is "), "{result}");
    assert!(!result.contains(&leaked), "{result}");
    assert_clean(&out, &[&leaked]);
}
