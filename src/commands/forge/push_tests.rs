//! Unit tests of `push.rs`: identities, base64, the auth variables, names and messages.

use super::*;

#[test]
fn identities_parse_or_name_the_flag() {
    assert_eq!(
        Identity::parse("Agent Bot <bot@example.com>").unwrap(),
        Identity {
            name: "Agent Bot".into(),
            email: "bot@example.com".into()
        }
    );
    for bad in ["no email", "<a@b>", "n <>", "n <a@b", "n <a<b>"] {
        assert!(
            Identity::parse(bad)
                .unwrap_err()
                .starts_with("--git-author"),
            "{bad}"
        );
    }
}

#[test]
fn base64_matches_the_rfc_vectors() {
    for (plain, coded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), coded);
    }
}

#[test]
fn the_token_goes_in_a_header_for_the_server_only() {
    let env = auth_env("https://github.example/", "x-access-token", "tok");
    assert_eq!(env[0], ("GIT_CONFIG_COUNT".into(), "1".into()));
    assert_eq!(env[1].1, "http.https://github.example/.extraheader");
    assert_eq!(
        env[2].1,
        format!("AUTHORIZATION: basic {}", base64(b"x-access-token:tok"))
    );
}

#[test]
fn issue_branches_and_commit_messages() {
    assert_eq!(
        issue_branch(3, "Add a greeting!"),
        "agent/issue-3-add-a-greeting"
    );
    assert_eq!(issue_branch(4, "¿Qué?"), "agent/issue-4-qu");
    assert_eq!(issue_branch(5, "!!!"), "agent/issue-5");
    let long = issue_branch(6, &"word ".repeat(30));
    assert!(
        long.len() <= "agent/issue-6-".len() + 40 && !long.ends_with('-'),
        "{long}"
    );
    let m = commit_message(
        "\n  Fix the bug\nmore",
        "o/r#1",
        Some("alice <42+alice@users.noreply.github.com>"),
    );
    assert_eq!(
        m,
        "agent: Fix the bug\n\nRequested in o/r#1.\n\nCo-authored-by: alice <42+alice@users.noreply.github.com>\n"
    );
    assert!(!commit_message("x", "p", None).contains("Co-authored-by"));
}

#[test]
fn git_errors_name_the_command_and_hide_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let git = Git {
        workspace: dir.path(),
        env: &[(
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        )],
        exclude: vec![],
        secrets: vec!["sekrit-value-123".into()],
    };
    let e = git
        .run(&["rev-parse", "sekrit-value-123"], &[])
        .unwrap_err();
    assert!(e.starts_with("git rev-parse [REDACTED] failed"), "{e}");
    assert!(!e.contains("sekrit-value-123"));
}
