//! Unit tests of the credential chain's pure parts: the shared files, STS's XML, the
//! container endpoint's allowed hosts, the order of sources and the refresh window (the
//! token services themselves are tests/integration/bedrock.rs's).

use super::*;

fn env(pairs: &[(&str, &str)]) -> AwsEnv {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn ini_sections_keys_comments_and_nested_lines() {
    let ini = parse_ini(
        "# comment\n[default]\nregion = us-east-1\n\n[profile  ci ]\nRole_Arn=arn:x\ns3 =\n  max_concurrent_requests = 20\n; more\n",
    );
    assert_eq!(ini["default"]["region"], "us-east-1");
    assert_eq!(ini["profile ci"]["role_arn"], "arn:x");
    assert!(!ini["profile ci"].contains_key("max_concurrent_requests"));
}

#[test]
fn sts_xml_is_read_and_errors_name_the_code() {
    let xml = "<AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>\
               <SecretAccessKey>s&amp;k</SecretAccessKey><SessionToken>t</SessionToken>\
               <Expiration>2026-12-01T23:00:00Z</Expiration></Credentials></AssumeRoleResult>";
    let t = sts_credentials(xml).unwrap();
    assert_eq!(t.creds.secret_access_key, "s&k");
    assert_eq!(t.expires, sigv4::parse_utc("2026-12-01T23:00:00Z"));
    let refused = token_http::Answer {
        status: 403,
        body: "<ErrorResponse><Error><Code>AccessDenied</Code><Message>Not authorized</Message></Error></ErrorResponse>".into(),
    };
    assert_eq!(
        sts_answer(refused).unwrap_err(),
        "STS answered HTTP 403: AccessDenied: Not authorized"
    );
}

#[test]
fn container_full_uris_over_http_are_loopback_or_the_link_local_ones() {
    for ok in [
        "https://anywhere.example/creds",
        "http://127.0.0.1:8080/creds",
        "http://localhost/creds",
        "http://[::1]:9/x",
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
    ] {
        assert!(container_host_allowed(ok), "{ok}");
    }
    for bad in [
        "http://192.0.2.1/creds",
        "http://169.254.169.254/",
        "ftp://x/",
    ] {
        assert!(!container_host_allowed(bad), "{bad}");
    }
}

#[test]
fn env_keys_come_first_and_last_until_they_expire() {
    let e = env(&[
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ROLE_ARN", "arn:aws:iam::1:role/x"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent"),
    ]);
    let mut chain = Chain::resolve(e, "us-east-1", 1_000).unwrap();
    assert_eq!(chain.current(1_000_000).unwrap().access_key_id, "AKID");
    assert_eq!(chain.secrets(), ["secret"]);
}

#[test]
fn a_configured_source_that_fails_is_the_error() {
    let e = env(&[
        ("AWS_ROLE_ARN", "arn:aws:iam::1:role/x"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token"),
    ]);
    let err = Chain::resolve(e, "us-east-1", 0).err().unwrap();
    assert!(err.starts_with("bedrock: AWS credentials from web identity: AWS_WEB_IDENTITY_TOKEN_FILE /nonexistent/token"), "{err}");
}

#[test]
fn an_explicit_profile_that_is_nowhere_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(&[
        ("AWS_PROFILE", "missing"),
        ("HOME", dir.path().to_str().unwrap()),
    ]);
    let err = Chain::resolve(e, "us-east-1", 0).err().unwrap();
    assert!(
        err.contains("AWS_PROFILE \"missing\" is in neither"),
        "{err}"
    );
}

#[test]
fn static_profile_keys_and_a_source_profile_loop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".aws")).unwrap();
    std::fs::write(
        dir.path().join(".aws/credentials"),
        "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\naws_session_token = t\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".aws/config"),
        "[profile a]\nrole_arn = arn:a\nsource_profile = b\n[profile b]\nrole_arn = arn:b\nsource_profile = a\n",
    )
    .unwrap();
    let home = dir.path().to_str().unwrap();
    let mut chain = Chain::resolve(env(&[("HOME", home)]), "us-east-1", 0).unwrap();
    let c = chain.current(0).unwrap();
    assert_eq!(
        (c.access_key_id.as_str(), c.session_token.as_deref()),
        ("AKIDFILE", Some("t"))
    );
    let err = Chain::resolve(env(&[("HOME", home), ("AWS_PROFILE", "a")]), "us-east-1", 0)
        .err()
        .unwrap();
    assert!(err.contains("source_profile steps (a loop?)"), "{err}");
}
