//! Unit tests of `proxy.rs`.

use super::*;

#[test]
fn connect_and_absolute_form_requests_are_parsed() {
    let r = Request::parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443").unwrap();
    assert!(r.connect);
    assert_eq!((r.host.as_str(), r.port), ("pypi.org", 443));
    let r = Request::parse("CONNECT [::1]:8443 HTTP/1.1").unwrap();
    assert_eq!((r.host.as_str(), r.port), ("::1", 8443));
    let r = Request::parse(
        "GET http://user@example.com/a/b?c=1 HTTP/1.1\r\nHost: example.com\r\n\
         Proxy-Connection: keep-alive\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\nAccept: */*",
    )
    .unwrap();
    assert!(!r.connect);
    assert_eq!((r.host.as_str(), r.port), ("example.com", 80));
    assert_eq!(
        r.origin_form_head(),
        "GET /a/b?c=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let r = Request::parse("GET http://example.com:8080 HTTP/1.1").unwrap();
    assert_eq!((r.port, r.path.as_str()), (8080, "/"));
    // Not proxy requests: an origin-form request, https:// absolute form, no port.
    assert!(Request::parse("GET / HTTP/1.1").is_none());
    assert!(Request::parse("GET https://example.com/ HTTP/1.1").is_none());
    assert!(Request::parse("CONNECT example.com HTTP/1.1").is_none());
    assert!(Request::parse("CONNECT example.com:0 HTTP/1.1").is_none());
    assert!(Request::parse("HELLO").is_none());
    // Only a plain name: `*.allowed.test` must not match `evil@x.allowed.test` and dial
    // whatever the resolver makes of it.
    assert!(Request::parse("CONNECT evil.com@x.allowed.test:443 HTTP/1.1").is_none());
    assert!(Request::parse("CONNECT a%2fb.test:443 HTTP/1.1").is_none());
}

#[test]
fn the_test_resolver_maps_names_and_judges_everything_else() {
    let r = Resolver::with_fixed("a.test=127.0.0.1; b.test=10.0.0.1").unwrap();
    assert_eq!(
        r.resolve("a.test", 80, false).unwrap(),
        vec!["127.0.0.1:80".parse().unwrap()]
    );
    // An IP address is judged unless a literal rule allowed it.
    let e = r.resolve("10.0.0.9", 80, false).unwrap_err();
    assert_eq!(e, "10.0.0.9 is a private address");
    assert!(r.resolve("10.0.0.9", 80, true).is_ok());
    // A name the system resolves to loopback is refused.
    let e = Resolver::default()
        .resolve("localhost", 80, false)
        .unwrap_err();
    assert!(
        e.contains("localhost resolves to") && e.contains("loopback"),
        "{e}"
    );
    assert!(Resolver::with_fixed("nonsense").is_err());
    assert!(Resolver::with_fixed("a=not-an-ip").is_err());
}

/// The whole path on loopback: a denied CONNECT is answered 403, the text goes to the
/// command's output, and an allowed absolute-form request reaches the server rewritten.
#[test]
fn serve_refuses_and_forwards() {
    use std::net::TcpListener;
    let origin = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = origin.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = origin.accept().unwrap();
        let head = read_head(&mut s).unwrap().0;
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap();
        head
    });
    let mut policy = EgressPolicy::default();
    policy.add(true, "t", &[format!("ok.test:{port}")]).unwrap();
    let out = tempfile::NamedTempFile::new().unwrap();
    let session = Arc::new(Session {
        policy: Arc::new(policy),
        resolver: Arc::new(Resolver::with_fixed("ok.test=127.0.0.1;no.test=127.0.0.1").unwrap()),
        command: "curl something".into(),
        output: Mutex::new(Some(out.reopen().unwrap())),
    });
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let paddr = proxy.local_addr().unwrap();
    let s2 = session.clone();
    let serving = std::thread::spawn(move || {
        for _ in 0..2 {
            let (c, _) = proxy.accept().unwrap();
            serve(&s2, c);
        }
    });
    let mut c = TcpStream::connect(paddr).unwrap();
    c.write_all(b"CONNECT no.test:443 HTTP/1.1\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("no.test is not in --allow-domain"),
        "{answer}"
    );
    let mut c = TcpStream::connect(paddr).unwrap();
    write!(
        c,
        "GET http://ok.test:{port}/x HTTP/1.1\r\nHost: ok.test\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    assert!(answer.ends_with("ok"), "{answer}");
    // The relay ends when both sides have finished sending.
    drop(c);
    serving.join().unwrap();
    assert!(
        server
            .join()
            .unwrap()
            .starts_with("GET /x HTTP/1.1\r\nHost: ok.test\r\n")
    );
    let written = std::fs::read_to_string(out.path()).unwrap();
    assert_eq!(
        written,
        "agent: network: refused a connection to no.test:443: no.test is not in --allow-domain\n"
    );
}
