//! Unit tests of WebFetch's pure parts: the allow list, addresses, redirects' targets,
//! content types. Fetching is tested against a loopback server in
//! `tests/integration/web_fetch.rs`.

use super::*;

#[test]
fn the_allow_list_matches_hosts_subdomains_and_everything() {
    let a = AllowWeb::parse("docs.rs, *.Example.com,127.0.0.1").unwrap();
    assert!(a.allows("docs.rs") && !a.allows("evil-docs.rs") && !a.allows("sub.docs.rs"));
    assert!(a.allows("example.com") && a.allows("a.b.example.com"));
    assert!(!a.allows("badexample.com"));
    assert!(a.allows("127.0.0.1") && a.names("127.0.0.1") && !a.names("a.example.com"));
    let all = AllowWeb::parse("*").unwrap();
    assert!(all.allows("anything.org") && !all.names("127.0.0.1"));
    for bad in ["", " , ", "http://x", "a/b", "user@host"] {
        assert!(AllowWeb::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn internal_addresses_are_known() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "fd00:ec2::254",
        "224.0.0.1",
        "ff02::1",
    ] {
        assert!(is_internal(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "93.184.216.34",
        "8.8.8.8",
        "2606:4700::1111",
        "203.0.113.10",
        "64:ff9b::808:808",
    ] {
        assert!(!is_internal(ip.parse().unwrap()), "{ip}");
    }
}

#[test]
fn urls_and_redirect_targets() {
    let t = target("http://127.0.0.1:8080/docs/a/page.html?x=1").unwrap();
    assert_eq!(
        (t.host.as_str(), t.port, t.https),
        ("127.0.0.1", 8080, false)
    );
    assert_eq!(join(&t, "https://other.org/x"), "https://other.org/x");
    assert_eq!(join(&t, "/root"), "http://127.0.0.1:8080/root");
    assert_eq!(
        join(&t, "next.html"),
        "http://127.0.0.1:8080/docs/a/next.html"
    );
    assert_eq!(join(&t, "//cdn.org/y"), "http://cdn.org/y");
    assert_eq!(target("https://[::1]/").unwrap().host, "::1");
    assert!(target("ftp://x.org/").is_err());
    assert!(target("file:///etc/passwd").is_err());
    assert!(target("http://user:pw@x.org/").is_err());
    assert!(target("not a url").is_err());
}

#[test]
fn content_types() {
    assert!(matches!(kind("text/html; charset=utf-8"), Some(Kind::Html)));
    assert!(matches!(kind("application/json"), Some(Kind::Text)));
    assert!(matches!(kind("application/problem+json"), Some(Kind::Text)));
    assert!(matches!(kind("text/plain"), Some(Kind::Text)));
    assert!(kind("application/octet-stream").is_none());
    assert!(kind("image/png").is_none());
}

#[test]
fn html_becomes_markdown() {
    let md = htmd::convert(
        "<h1>Title</h1><p>Some <b>bold</b> and a <a href=\"/x\">link</a>.</p><ul><li>one</li></ul>",
    )
    .unwrap();
    assert!(md.contains("# Title"), "{md}");
    assert!(md.contains("**bold**"), "{md}");
    assert!(md.contains("[link](/x)"), "{md}");
    assert!(md.contains("one"), "{md}");
}

#[test]
fn off_without_allow_web_and_on_with_it() {
    use crate::tools::registry::{Registry, ToolSelection};
    assert!(
        Registry::builtin(&ToolSelection::default())
            .get("WebFetch")
            .is_none()
    );
    let sel = ToolSelection {
        allow_web: AllowWeb::parse("docs.rs").unwrap(),
        ..Default::default()
    };
    let r = Registry::builtin(&sel);
    let t = r.get("WebFetch").expect("on with --allow-web");
    assert!(t.is_read_only() && t.is_concurrency_safe(&serde_json::json!({})));
    assert!(t.description().contains("docs.rs"));
}
