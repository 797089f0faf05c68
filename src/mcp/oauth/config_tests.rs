//! Unit tests of `config.rs`: the `"oauth"` block.

use serde_json::json;

use super::*;

fn parse_with(v: serde_json::Value) -> Result<OAuthSpec, String> {
    let mut x = |t: &str| Ok(t.replace("${S}", "secret-value-123"));
    parse(&v, &mut x)
}

#[test]
fn the_block_is_expanded_checked_and_its_secrets_listed() {
    let s = parse_with(
        json!({"client_id": "c", "client_secret": "${S}", "scopes": ["a", "b c"],
                              "token_endpoint_auth_method": "client_secret_post",
                              "grant_type": "client_credentials"}),
    )
    .unwrap();
    assert_eq!(s.client_secret.as_deref(), Some("secret-value-123"));
    assert_eq!(s.scopes, Some(vec!["a".into(), "b".into(), "c".into()]));
    assert_eq!(s.auth_method, Some(AuthMethod::Post));
    assert_eq!(s.grant, Some(Grant::ClientCredentials));
    assert_eq!(s.secret_values(), ["secret-value-123"]);
    assert!(parse_with(json!(false)).unwrap().disabled);
    assert!(!parse_with(json!(true)).unwrap().disabled);
    for (bad, says) in [
        (json!({"client_secret": "x"}), "needs \"client_id\""),
        (json!({"token_endpoint_auth_method": "magic"}), "magic"),
        (json!({"grant_type": "implicit"}), "implicit"),
        (json!({"idp_id_token": "t"}), "idp_token_endpoint"),
        (
            json!({"client_id": "c", "private_key": "not a pem"}),
            "private_key",
        ),
        (json!({"colour": 1}), "colour"),
        (json!("yes"), "must be an object"),
    ] {
        let e = parse_with(bad.clone()).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}
