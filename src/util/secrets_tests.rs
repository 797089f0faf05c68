//! Unit tests of `secrets.rs`.

use super::*;

#[test]
fn names() {
    assert!(is_secret_name("ANTHROPIC_API_KEY"));
    assert!(is_secret_name("FOO_API_KEY"));
    assert!(is_secret_name("github_token"));
    assert!(is_secret_name("DB_PASSWORD"));
    assert!(is_secret_name("AWS_SECRET"));
    assert!(!is_secret_name("PATH"));
    assert!(!is_secret_name("TOKENIZER"));
}

#[test]
fn scrub_keeps_named() {
    let vars = vec![
        ("PATH".to_string(), "/bin".to_string()),
        ("FOO_API_KEY".to_string(), "x".to_string()),
        ("GH_TOKEN".to_string(), "y".to_string()),
    ];
    let out = scrubbed_env(vars.into_iter(), &["GH_TOKEN".to_string()]);
    let names: Vec<_> = out.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, vec!["PATH", "GH_TOKEN"]);
}

#[test]
fn redacts_json_escaped_forms_and_longest_first() {
    let secret = "pa\"ss\\word\nline2".to_string();
    let json = serde_json::to_string(&format!("x {secret} y")).unwrap();
    assert_eq!(
        redact(&json, std::slice::from_ref(&secret)),
        "\"x [REDACTED] y\""
    );
    assert_eq!(
        redact(&format!("x {secret} y"), &[secret]),
        "x [REDACTED] y"
    );
    let short = "commonprefix".to_string();
    let long = "commonprefix-and-more-secret".to_string();
    assert_eq!(
        redact(&format!("a {long} b {short}"), &[short, long]),
        "a [REDACTED] b [REDACTED]"
    );
}

#[test]
fn stream_redaction_catches_a_secret_split_at_every_offset() {
    let secret = "ghp_0123456789abcdefghij".to_string();
    let text = format!("before {secret} between {secret}é after");
    for a in 0..=text.len() {
        for b in a..=text.len() {
            if !(text.is_char_boundary(a) && text.is_char_boundary(b)) {
                continue;
            }
            let mut r = StreamRedactor::new(std::slice::from_ref(&secret));
            let mut out = r.push(&text[..a]);
            out += &r.push(&text[a..b]);
            out += &r.push(&text[b..]);
            out += &r.finish();
            assert_eq!(
                out, "before [REDACTED] between [REDACTED]é after",
                "split at {a}, {b}"
            );
        }
    }
}

#[test]
fn stream_redaction_holds_back_only_an_end_that_could_begin_a_secret() {
    let mut r = StreamRedactor::new(&["ghp_0123456789abcdefghij".to_string()]);
    // A whole line that cannot be the start of the secret comes out at once.
    assert_eq!(r.push("GET /hello 200\n"), "GET /hello 200\n");
    assert_eq!(r.push("token gh"), "token ");
    assert_eq!(r.push("p_0123"), "");
    assert_eq!(r.push("X"), "ghp_0123X");
    assert_eq!(r.finish(), "");
}

#[test]
fn stream_redaction_without_secrets_passes_text_through() {
    let mut r = StreamRedactor::new(&["short".to_string()]);
    assert_eq!(r.push("abc"), "abc");
    assert_eq!(r.finish(), "");
}

#[test]
fn redacts_long_values_only() {
    let s = redact(
        "key=sk-ant-12345678 and ab",
        &["sk-ant-12345678".into(), "ab".into()],
    );
    assert_eq!(s, "key=[REDACTED] and ab");
}

#[test]
fn globs_match_names() {
    assert!(glob_matches("NODE_*", "NODE_OPTIONS"));
    assert!(glob_matches("*_SECRET*", "MY_SECRET_PASSWORD"));
    assert!(glob_matches("LC_*", "LC_ALL"));
    assert!(glob_matches("A?C", "ABC"));
    assert!(!glob_matches("NODE_*", "XNODE_OPTIONS"));
    assert!(!glob_matches("*_KEY", "KEYBOARD"));
    assert!(glob_matches("*", ""));
}

fn vars(list: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<Vec<_>>()
        .into_iter()
}

/// The names `command_env` passed, in order.
fn passed_names(got: &CommandEnv) -> Vec<&str> {
    got.vars.iter().map(|(k, _)| k.as_str()).collect()
}

const JOB: &[(&str, &str)] = &[
    ("PATH", "/usr/bin"),
    ("HOME", "/home/u"),
    ("LC_ALL", "C"),
    ("GITHUB_SHA", "abc"),
    ("ANTHROPIC_API_KEY", "sk-ant-xxxxxxxxxx"),
    ("NPM_TOKEN", "npm_xxxxxxxxxx"),
    ("MY_SECRET_PASSWORD", "hunter2hunter2"),
    ("STRIPE_KEY", "sk_live_xxxxxxxx"),
    ("DATABASE_URL", "postgres://app:pw@db:5432/app"),
    ("PLAIN_URL", "https://example.com/a@b"),
    ("RENAMED", "sk-ant-xxxxxxxxxx"),
    ("NODE_OPTIONS", "--max-old-space-size=4096"),
    ("EDITOR", "vi"),
];

#[test]
fn scrub_removes_secret_looking_names_urls_with_passwords_and_the_runs_secrets() {
    let policy = EnvPolicy::default();
    let got = command_env(vars(JOB), &policy, &["sk-ant-xxxxxxxxxx".to_string()]);
    assert_eq!(
        passed_names(&got),
        [
            "PATH",
            "HOME",
            "LC_ALL",
            "GITHUB_SHA",
            "PLAIN_URL",
            "NODE_OPTIONS",
            "EDITOR"
        ]
    );
    // Named in the warning, except the agent's own key.
    assert_eq!(
        got.removed,
        [
            "DATABASE_URL",
            "MY_SECRET_PASSWORD",
            "NPM_TOKEN",
            "RENAMED",
            "STRIPE_KEY"
        ]
    );
    // A passed name stays, in scrub mode too.
    let policy = EnvPolicy {
        pass: vec!["STRIPE_*".into()],
        ..Default::default()
    };
    let got = command_env(vars(JOB), &policy, &[]);
    assert!(got.vars.iter().any(|(k, _)| k == "STRIPE_KEY"));
}

#[test]
fn allow_passes_only_the_list_and_the_passed_names() {
    let policy = EnvPolicy {
        mode: EnvMode::Allow,
        pass: vec!["NODE_*".into()],
        keep: vec!["EDITOR".into()],
    };
    let got = command_env(vars(JOB), &policy, &[]);
    assert_eq!(
        passed_names(&got),
        [
            "PATH",
            "HOME",
            "LC_ALL",
            "GITHUB_SHA",
            "NODE_OPTIONS",
            "EDITOR"
        ]
    );
    assert!(got.removed.is_empty());
}

/// Found by fuzzing (issue 43, `fuzz/corpus/redaction/crash-marker-completes-secret`): the
/// marker's `]` and the text after a redacted secret made the secret again.
#[test]
fn the_marker_cannot_complete_a_secret() {
    let secret = "]abcdefgh".to_string();
    let text = format!("{secret}abcdefgh and {secret}");
    let out = redact(&text, std::slice::from_ref(&secret));
    assert!(!out.contains(&secret), "{out}");
}

#[test]
fn redact_owned_keeps_a_clean_string_and_redacts_like_redact() {
    let secrets = vec!["sk-live-0123456789".to_string()];
    let clean = "nothing to hide here".repeat(100);
    let at = clean.as_ptr();
    let kept = redact_owned(clean, &secrets);
    assert_eq!(
        kept.as_ptr(),
        at,
        "a string without a secret is returned, not copied"
    );
    let text = "key sk-live-0123456789 and \"sk-live-0123456789\"";
    assert_eq!(
        redact_owned(text.to_string(), &secrets),
        redact(text, &secrets)
    );
    assert_eq!(
        redact_owned(text.to_string(), &secrets),
        "key [REDACTED] and \"[REDACTED]\""
    );
}
