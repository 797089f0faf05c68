use super::*;

#[test]
fn the_clients_mcp_servers_become_a_config_file_of_claude_codes_shape() {
    let params = json!({"cwd": "/", "mcpServers": [
        {"name": "s", "command": "/bin/srv", "args": ["-v"], "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "h", "url": "http://127.0.0.1:1/mcp",
         "headers": [{"name": "Authorization", "value": "Bearer x"}]},
    ]});
    let spec = SessionSpec::from_params(&params).unwrap();
    assert_eq!(
        Value::Object(spec.mcp),
        json!({
            "s": {"command": "/bin/srv", "args": ["-v"], "env": {"K": "v"}},
            "h": {"type": "http", "url": "http://127.0.0.1:1/mcp",
                  "headers": {"Authorization": "Bearer x"}},
        })
    );
}

#[test]
fn bad_session_params_are_invalid_params_naming_what_is_wrong() {
    for (params, needle) in [
        (json!({}), "cwd"),
        (json!({"cwd": "rel"}), "absolute"),
        (json!({"cwd": "/no/such/dir/here"}), "not a directory"),
        (json!({"cwd": "/", "mcpServers": {}}), "array"),
        (
            json!({"cwd": "/", "mcpServers": [{"command": "x"}]}),
            "name",
        ),
        (
            json!({"cwd": "/", "mcpServers": [{"type": "sse", "name": "s", "url": "u"}]}),
            "SSE",
        ),
    ] {
        let e = SessionSpec::from_params(&params).unwrap_err();
        assert_eq!(e.code, super::super::wire::INVALID_PARAMS);
        assert!(e.message.contains(needle), "{params}: {}", e.message);
    }
}

#[test]
fn a_session_id_never_names_a_path_out_of_the_store() {
    assert!(valid_id(&new_id()));
    for bad in ["", "..", "../x", "a/b", "a b", &"x".repeat(129)] {
        assert!(!valid_id(bad), "{bad}");
    }
}
