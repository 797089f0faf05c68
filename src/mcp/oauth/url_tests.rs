//! Unit tests of `url.rs`: well-known locations, resource matching, queries.

use super::*;

#[test]
fn well_known_inserts_the_path_and_tries_the_root_only_when_asked() {
    assert_eq!(
        well_known("http://h:1/mcp", "oauth-protected-resource", true),
        [
            "http://h:1/.well-known/oauth-protected-resource/mcp",
            "http://h:1/.well-known/oauth-protected-resource"
        ]
    );
    assert_eq!(
        as_metadata_urls("https://as.example/tenant1"),
        [
            "https://as.example/.well-known/oauth-authorization-server/tenant1",
            "https://as.example/.well-known/openid-configuration/tenant1",
            "https://as.example/tenant1/.well-known/openid-configuration"
        ]
    );
    assert_eq!(as_metadata_urls("https://as.example/").len(), 2);
}

#[test]
fn a_resource_covers_its_own_paths_on_its_own_origin_only() {
    assert!(resource_covers("http://h:1/mcp", "http://h:1/mcp"));
    assert!(resource_covers("http://h:1", "http://h:1/mcp"));
    assert!(!resource_covers("http://h:1/mc", "http://h:1/mcp"));
    assert!(!resource_covers(
        "https://evil.example.com/mcp",
        "http://h:1/mcp"
    ));
    assert!(!resource_covers("http://h:2/mcp", "http://h:1/mcp"));
}

#[test]
fn locations_resolve_and_queries_round_trip() {
    assert_eq!(resolve("http://h/a/b?x", "/c"), "http://h/c");
    assert_eq!(resolve("http://h/a/b", "c"), "http://h/a/c");
    assert_eq!(resolve("http://h/a", "https://o/x"), "https://o/x");
    let u = with_query("http://h/cb", &[("code", "a b&c"), ("state", "s/1")]);
    assert_eq!(query_param(&u, "code").as_deref(), Some("a b&c"));
    assert_eq!(query_param(&u, "state").as_deref(), Some("s/1"));
    assert_eq!(query_param(&u, "none"), None);
    assert_eq!(decode("100%"), "100%");
    assert_eq!(canonical("http://h/mcp/#x"), "http://h/mcp");
}
