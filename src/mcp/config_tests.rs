//! Unit tests of the MCP configuration: Claude Code's shapes, variable expansion, names,
//! and every mistake naming its file and server.

use super::*;

fn vars(name: &str) -> Option<String> {
    match name {
        "HOME_DIR" => Some("/home/u".into()),
        "GH_PAT" => Some("ghp_secretvalue123".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn one(text: &str) -> Result<ServerSpec, String> {
    parse(text, Path::new("/cfg/x.json"), &vars).map(|mut v| {
        assert_eq!(v.len(), 1);
        v.remove(0)
    })
}

#[test]
fn claude_code_stdio_entry_loads_unchanged() {
    // What `claude mcp add --scope project` writes.
    let s = one(r#"{"mcpServers": {"fs": {"type": "stdio", "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", "docs"], "env": {}}}}"#)
    .unwrap();
    assert_eq!(s.name, "fs");
    assert_eq!(
        s.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-filesystem".into(),
                "docs".into()
            ],
            env: vec![],
            cwd: None,
        }
    );
    // `type` is optional for stdio.
    let s =
        one(r#"{"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}"#).unwrap();
    assert_eq!(s.transport.kind(), "stdio");
}

#[test]
fn http_entry_with_headers() {
    let s = one(
        r#"{"mcpServers": {"api": {"type": "http", "url": "http://127.0.0.1:8/mcp",
        "headers": {"Authorization": "Bearer ${GH_PAT}"}}}}"#,
    )
    .unwrap();
    assert_eq!(
        s.transport,
        Transport::Http {
            url: "http://127.0.0.1:8/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer ghp_secretvalue123".into())],
            oauth: Box::default(),
        }
    );
    assert_eq!(s.secret_values(), vec!["Bearer ghp_secretvalue123"]);
    // The token alone is redacted too, as `--header`'s is.
    assert_eq!(
        s.redacted_values(),
        vec!["Bearer ghp_secretvalue123", "ghp_secretvalue123"]
    );
    let s = one(
        r#"{"mcpServers": {"api": {"type": "http", "url": "http://127.0.0.1:8/mcp",
        "headers": {"X-Auth": "id=${GH_PAT};v=1"}}}}"#,
    )
    .unwrap();
    assert!(
        s.redacted_values()
            .contains(&"ghp_secretvalue123".to_string()),
        "an expanded variable is redacted wherever it sits: {:?}",
        s.redacted_values()
    );
}

#[test]
fn variables_expand_in_command_args_env_url_headers() {
    let s = one(r#"{"mcpServers": {"x": {"command": "${HOME_DIR}/bin/srv",
        "args": ["--root=${HOME_DIR}", "${MISSING:-dflt}", "$PLAIN", "${EMPTY:-e}"],
        "env": {"TOKEN": "${GH_PAT}", "B": "b"}, "cwd": "sub"}}}"#)
    .unwrap();
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = s.transport.clone()
    else {
        panic!("stdio expected")
    };
    assert_eq!(command, "/home/u/bin/srv");
    assert_eq!(args, vec!["--root=/home/u", "dflt", "$PLAIN", "e"]);
    assert_eq!(
        env,
        vec![
            ("B".into(), "b".into()),
            ("TOKEN".into(), "ghp_secretvalue123".into())
        ]
    );
    assert_eq!(cwd, Some(PathBuf::from("sub")));
    assert_eq!(s.secret_values(), vec!["b", "ghp_secretvalue123"]);
    let s =
        one(r#"{"mcpServers": {"h": {"type": "http", "url": "${U:-http://h:1}/mcp"}}}"#).unwrap();
    assert!(matches!(s.transport, Transport::Http { url, .. } if url == "http://h:1/mcp"));
}

#[test]
fn expand_edge_cases() {
    assert_eq!(
        expand("a${HOME_DIR}b${HOME_DIR}", &vars).unwrap(),
        "a/home/ub/home/u"
    );
    assert_eq!(expand("${X:-a:-b}", &vars).unwrap(), "a:-b");
    assert_eq!(expand("${X:-}", &vars).unwrap(), "");
    assert_eq!(expand("no vars $ here", &vars).unwrap(), "no vars $ here");
    assert!(
        expand("${UNSET}", &vars)
            .unwrap_err()
            .contains("UNSET is not set")
    );
    assert!(expand("${EMPTY}", &vars).unwrap_err().contains("EMPTY"));
    assert!(
        expand("${OPEN", &vars)
            .unwrap_err()
            .contains("unterminated")
    );
    assert!(expand("${}", &vars).unwrap_err().contains("does not name"));
    assert!(
        expand("${A B}", &vars)
            .unwrap_err()
            .contains("does not name")
    );
}

#[test]
fn names_are_checked() {
    for ok in ["a", "git-hub", "my_srv2", "A-b_c"] {
        assert!(check_name(ok).is_ok(), "{ok}");
    }
    assert!(check_name(&"s".repeat(40)).is_ok());
    for bad in ["", "a b", "a.b", "a__b", "__x", "é", "a/b", &"s".repeat(41)] {
        assert!(check_name(bad).is_err(), "{bad}");
    }
}

#[test]
fn every_mistake_names_file_and_server() {
    for (text, needle) in [
        (r#"{"mcpServers": {"a__b": {"command": "x"}}}"#, "`__`"),
        (
            r#"{"mcpServers": {"a b": {"command": "x"}}}"#,
            "letters, digits",
        ),
        (
            r#"{"mcpServers": {"s": {"args": ["x"]}}}"#,
            "\"command\" is missing",
        ),
        (
            r#"{"mcpServers": {"s": {"command": " "}}}"#,
            "\"command\" is empty",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "bogus": 1}}}"#,
            "bogus",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "env": {"A": 1}}}}"#,
            "must be a string",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "x", "args": "y"}}}"#,
            "invalid type",
        ),
        (
            r#"{"mcpServers": {"s": {"command": "${NOPE}"}}}"#,
            "NOPE is not set",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "http"}}}"#,
            "\"url\" is missing",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "http", "url": "ftp://x"}}}"#,
            "http://",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "http", "url": "http://x", "command": "c"}}}"#,
            "belong",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "stdio", "command": "c", "url": "http://x"}}}"#,
            "belong",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "sse", "url": "http://x"}}}"#,
            "not supported",
        ),
        (
            r#"{"mcpServers": {"s": {"type": "ws", "url": "http://x"}}}"#,
            "unknown \"type\"",
        ),
    ] {
        let e = one(text).unwrap_err();
        assert!(
            e.contains("/cfg/x.json") && e.contains("server"),
            "{text}: {e}"
        );
        assert!(e.contains(needle), "{text}: {e}");
    }
    for (text, needle) in [
        ("{", "invalid JSON"),
        ("[]", "expected an object"),
        (r#"{"servers": {}}"#, "unknown key \"servers\""),
        ("{}", "no \"mcpServers\""),
        (r#"{"mcpServers": []}"#, "must be an object"),
    ] {
        let e = parse(text, Path::new("/cfg/x.json"), &vars).unwrap_err();
        assert!(
            e.contains("/cfg/x.json") && e.contains(needle),
            "{text}: {e}"
        );
    }
}

#[test]
fn project_file_then_flags_later_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(PROJECT_FILE),
        r#"{"mcpServers": {"a": {"command": "proj"}, "b": {"command": "proj-b"}}}"#,
    )
    .unwrap();
    let extra = dir.path().join("extra.json");
    std::fs::write(&extra, r#"{"mcpServers": {"a": {"command": "flag"}}}"#).unwrap();
    let files = [extra.clone()];
    let load_with = |no_project| {
        load(
            &Sources {
                workspace: dir.path(),
                files: &files,
                no_project_settings: no_project,
            },
            &vars,
        )
        .unwrap()
    };
    let all = load_with(false);
    let commands: Vec<_> = all
        .iter()
        .map(|s| match &s.transport {
            Transport::Stdio { command, .. } => (s.name.as_str(), command.as_str()),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(commands, vec![("a", "flag"), ("b", "proj-b")]);
    let only_flag = load_with(true);
    assert_eq!(only_flag.len(), 1);
    assert_eq!(only_flag[0].file, extra);

    let missing = [dir.path().join("nope.json")];
    let e = load(
        &Sources {
            workspace: dir.path(),
            files: &missing,
            no_project_settings: true,
        },
        &vars,
    )
    .unwrap_err();
    assert!(e.contains("--mcp-config") && e.contains("nope.json"), "{e}");
}
