//! Unit tests of `challenge.rs`: WWW-Authenticate parameters.

use super::*;

#[test]
fn reads_the_bearer_parameters_quoted_or_not() {
    let c = Challenge::parse(
        r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error_description="a, \"b\"""#,
    );
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert!(c.insufficient_scope());
    assert_eq!(
        c.scope,
        Some(vec!["mcp:basic".to_string(), "mcp:write".to_string()])
    );
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("http://h/.well-known/oauth-protected-resource/mcp")
    );
    let bare = Challenge::parse("Basic realm=x, Bearer error=invalid_token");
    assert_eq!(bare.error.as_deref(), Some("invalid_token"));
    assert_eq!(Challenge::parse("Bearer"), Challenge::default());
}
