//! Unit tests of `policy.rs`.

use super::*;

fn policy(allow: &[&str], deny: &[&str]) -> EgressPolicy {
    let mut p = EgressPolicy::default();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    p.add(true, "--allow-domain", &s(allow)).unwrap();
    p.add(false, "--deny-domain", &s(deny)).unwrap();
    p
}

fn allowed(p: &EgressPolicy, host: &str, port: u16) -> bool {
    matches!(p.decide(host, port), Verdict::Allow { .. })
}

#[test]
fn exact_names_subdomains_ports_and_comma_lists() {
    let p = policy(&["pypi.org, *.github.com", "example.com:8443"], &[]);
    assert!(allowed(&p, "pypi.org", 443));
    assert!(
        allowed(&p, "PyPI.org.", 80),
        "case and a trailing dot do not matter"
    );
    assert!(
        !allowed(&p, "pypi.org", 8080),
        "only 80 and 443 without a port"
    );
    assert!(
        !allowed(&p, "files.pypi.org", 443),
        "an exact name is not its subdomains"
    );
    assert!(allowed(&p, "api.github.com", 443));
    assert!(allowed(&p, "a.b.github.com", 443));
    assert!(
        !allowed(&p, "github.com", 443),
        "`*.x` is the subdomains, not x"
    );
    assert!(!allowed(&p, "evilgithub.com", 443));
    assert!(allowed(&p, "example.com", 8443));
    assert!(
        !allowed(&p, "example.com", 443),
        "a named port replaces the defaults"
    );
    assert_eq!(
        p.decide("evil.test", 443),
        Verdict::Deny("evil.test is not in --allow-domain".into())
    );
    assert!(
        matches!(p.decide("pypi.org", 22), Verdict::Deny(r) if r.contains("port 22 is not allowed"))
    );
}

#[test]
fn deny_wins_on_every_port_unless_it_names_one() {
    let p = policy(
        &["*.example.com", "a.example.com:22"],
        &["a.example.com", "b.example.com:80"],
    );
    assert!(!allowed(&p, "a.example.com", 443));
    assert!(!allowed(&p, "a.example.com", 22));
    assert!(!allowed(&p, "b.example.com", 80));
    assert!(allowed(&p, "b.example.com", 443));
    assert_eq!(
        p.decide("a.example.com", 443),
        Verdict::Deny("denied by --deny-domain a.example.com".into())
    );
}

#[test]
fn ip_literals_are_literal_allows() {
    let p = policy(&["127.0.0.1:8080", "[::1]:9000", "10.0.0.5"], &[]);
    assert_eq!(
        p.decide("127.0.0.1", 8080),
        Verdict::Allow { literal: true }
    );
    assert_eq!(p.decide("::1", 9000), Verdict::Allow { literal: true });
    assert_eq!(p.decide("[::1]", 9000), Verdict::Allow { literal: true });
    assert!(allowed(&p, "10.0.0.5", 443));
    assert!(!allowed(&p, "10.0.0.6", 443));
    let names = policy(&["pypi.org"], &[]);
    assert_eq!(
        names.decide("pypi.org", 443),
        Verdict::Allow { literal: false }
    );
}

#[test]
fn bad_entries_are_named() {
    let mut p = EgressPolicy::default();
    for (bad, says) in [
        ("https://pypi.org", "not a URL"),
        ("pypi.org/simple", "not a URL"),
        ("py pi.org", "not a host name"),
        ("*pypi.org", "not a host name"),
        ("a.*.org", "not a host name"),
        ("pypi.org:0", "not a port"),
        ("pypi.org:http", "not a port"),
        ("[::1", "unclosed"),
    ] {
        let e = p
            .add(true, "--allow-domain", &[bad.to_string()])
            .unwrap_err();
        assert!(
            e.starts_with("--allow-domain: ") && e.contains(says),
            "{bad}: {e}"
        );
    }
    assert!(p.is_empty());
}

#[test]
fn rules_print_as_written() {
    let p = policy(&["*.Example.com:8080", "[::1]:9", "x.org"], &[]);
    let shown: Vec<String> = p.allowed().iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["*.example.com:8080", "[::1]:9", "x.org"]);
}

#[test]
fn non_public_addresses_are_named() {
    let np = |s: &str| non_public(s.parse().unwrap());
    assert_eq!(np("127.0.0.1"), Some("a loopback address"));
    assert_eq!(np("10.1.2.3"), Some("a private address"));
    assert_eq!(np("172.16.0.1"), Some("a private address"));
    assert_eq!(np("192.168.1.1"), Some("a private address"));
    assert_eq!(np("169.254.169.254"), Some("a cloud metadata address"));
    assert_eq!(np("169.254.1.1"), Some("a link-local address"));
    assert_eq!(
        np("100.64.0.1"),
        Some("a shared (carrier-grade NAT) address")
    );
    assert_eq!(np("0.0.0.0"), Some("an unspecified address"));
    assert_eq!(np("192.0.2.1"), Some("a special-purpose address"));
    assert_eq!(
        np("224.0.0.1"),
        Some("a multicast, broadcast or reserved address")
    );
    assert_eq!(np("::1"), Some("a loopback address"));
    assert_eq!(
        np("::ffff:127.0.0.1"),
        Some("a loopback address"),
        "IPv4-mapped"
    );
    assert_eq!(
        np("64:ff9b::a00:1"),
        Some("a private address"),
        "NAT64 of 10.0.0.1"
    );
    assert_eq!(np("fd00:ec2::254"), Some("a cloud metadata address"));
    assert_eq!(np("fc00::1"), Some("a private (unique local) address"));
    assert_eq!(np("fe80::1"), Some("a link-local address"));
    assert_eq!(np("8.8.8.8"), None);
    assert_eq!(np("140.82.112.3"), None);
    assert_eq!(np("2606:4700::1111"), None);
}
