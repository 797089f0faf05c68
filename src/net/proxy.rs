//! The filtering proxy a confined command's traffic goes through: HTTP `CONNECT`
//! (HTTPS, and any TCP a client tunnels) and absolute-form HTTP (`GET http://h/p`). Each
//! request is judged by the policy before anything is dialed; an allowed name is
//! resolved once, here, and exactly that address is dialed (no rebinding between check
//! and connect). A refusal is recorded (`Denial`), written into the command's output and
//! answered with 403.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;

use crate::net::policy::{EgressPolicy, Verdict, non_public};

/// Longest request head read before the request is judged.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// A client must send its request head within this.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const DIAL_TIMEOUT: Duration = Duration::from_secs(15);

/// One refused connection, as the transcript lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Denial {
    pub host: String,
    pub port: u16,
    pub command: String,
    pub reason: String,
}

impl Denial {
    /// The line the command's output gets (and the log).
    pub(crate) fn text(&self) -> String {
        format!(
            "agent: network: refused a connection to {}:{}: {}",
            self.host, self.port, self.reason
        )
    }
}

type Sink = Box<dyn Fn(&Denial) + Send + Sync>;
static SINK: OnceLock<Sink> = OnceLock::new();

/// Where denials go besides the command's output (the transcript, `--jsonl`); set once.
pub(crate) fn on_denial(f: impl Fn(&Denial) + Send + Sync + 'static) {
    let _ = SINK.set(Box::new(f));
}

/// Names to addresses. Tests map names (`allowed.test`) to loopback servers; a name so
/// mapped stands for a public host (it would be one on the internet), so its address is
/// not judged. Every other name goes to the system resolver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resolver {
    fixed: HashMap<String, IpAddr>,
}

impl Resolver {
    /// `name=ip;name=ip` (the test-only `AGENT_TEST_RESOLVE`).
    pub(crate) fn with_fixed(spec: &str) -> Result<Resolver, String> {
        let mut fixed = HashMap::new();
        for entry in spec.split([';', ',']).filter(|e| !e.trim().is_empty()) {
            let (name, ip) = entry
                .split_once('=')
                .ok_or_else(|| format!("`{entry}`: expected name=ip"))?;
            let ip = ip
                .trim()
                .parse()
                .map_err(|_| format!("`{entry}`: not an IP address"))?;
            fixed.insert(name.trim().to_ascii_lowercase(), ip);
        }
        Ok(Resolver { fixed })
    }

    /// The addresses to dial for `host`, or why there are none.
    fn resolve(&self, host: &str, port: u16, literal: bool) -> Result<Vec<SocketAddr>, String> {
        if let Some(ip) = self.fixed.get(host) {
            return Ok(vec![SocketAddr::new(*ip, port)]);
        }
        if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
            return match non_public(ip) {
                Some(why) if !literal => Err(format!("{ip} is {why}")),
                _ => Ok(vec![SocketAddr::new(ip, port)]),
            };
        }
        let addrs: Vec<SocketAddr> = crate::net::dns::lookup(host, port)
            .map_err(|e| format!("cannot resolve {host}: {e}"))?;
        let public: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| non_public(a.ip()).is_none())
            .collect();
        match (public.is_empty(), addrs.first()) {
            (false, _) => Ok(public),
            (true, Some(a)) => Err(format!(
                "{host} resolves to {} ({}); only an IP address named in --allow-domain may be \
                 reached there",
                a.ip(),
                non_public(a.ip()).unwrap_or("not public")
            )),
            (true, None) => Err(format!("{host} has no address")),
        }
    }
}

/// What one command's connections share.
pub(crate) struct Session {
    pub policy: Arc<EgressPolicy>,
    pub resolver: Arc<Resolver>,
    /// The command line, for the record.
    pub command: String,
    /// The command's output pipe while it runs (denials are written there); `None` after.
    pub output: Mutex<Option<std::fs::File>>,
}

impl Session {
    fn deny(&self, host: &str, port: u16, reason: String, client: &mut TcpStream) {
        let d = Denial {
            host: host.to_string(),
            port,
            command: self.command.clone(),
            reason,
        };
        let text = d.text();
        if let Ok(mut out) = self.output.lock()
            && let Some(f) = out.as_mut()
        {
            let _ = writeln!(f, "{text}");
        }
        if let Some(sink) = SINK.get() {
            sink(&d);
        }
        let body = format!("{text}\n");
        let _ = write!(
            client,
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

/// Serves one client connection to its end.
pub(crate) fn serve(session: &Session, mut client: TcpStream) {
    let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
    let Some((head, rest)) = read_head(&mut client) else {
        return;
    };
    let Some(req) = Request::parse(&head) else {
        let _ = client.write_all(
            b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        );
        return;
    };
    let (host, port) = (req.host.to_ascii_lowercase(), req.port);
    let literal = match session.policy.decide(&host, port) {
        Verdict::Deny(reason) => return session.deny(&host, port, reason, &mut client),
        Verdict::Allow { literal } => literal,
    };
    let addrs = match session
        .resolver
        .resolve(host.trim_end_matches('.'), port, literal)
    {
        Ok(a) => a,
        Err(reason) => return session.deny(&host, port, reason, &mut client),
    };
    let mut upstream = None;
    let mut last_err = String::new();
    for a in &addrs {
        match TcpStream::connect_timeout(a, DIAL_TIMEOUT) {
            Ok(s) => {
                upstream = Some(s);
                break;
            }
            Err(e) => last_err = format!("{a}: {e}"),
        }
    }
    let Some(mut upstream) = upstream else {
        let body = format!("agent: network: cannot connect to {host}:{port}: {last_err}\n");
        let _ = write!(
            client,
            "HTTP/1.1 502 Bad Gateway\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    };
    let _ = client.set_read_timeout(None);
    let first = if req.connect {
        if client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .is_err()
        {
            return;
        }
        rest
    } else {
        let mut bytes = req.origin_form_head().into_bytes();
        bytes.extend_from_slice(&rest);
        bytes
    };
    if upstream.write_all(&first).is_err() {
        return;
    }
    relay(client, upstream);
}

/// Reads up to the end of the request head; returns it and what came after it.
fn read_head(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Some((String::from_utf8_lossy(&buf).into_owned(), rest));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return None;
        }
    }
}

/// A proxy request's target and, for plain HTTP, the request to pass on.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    connect: bool,
    host: String,
    port: u16,
    method: String,
    path: String,
    version: String,
    headers: Vec<String>,
}

impl Request {
    fn parse(head: &str) -> Option<Request> {
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target, version) = (first.next()?, first.next()?, first.next()?);
        let headers: Vec<String> = lines
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = split_authority(target, None)?;
            return Some(Request {
                connect: true,
                host,
                port,
                method: method.into(),
                path: String::new(),
                version: version.into(),
                headers,
            });
        }
        let rest = target
            .get(..7)
            .filter(|s| s.eq_ignore_ascii_case("http://"))
            .and_then(|_| target.get(7..))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = authority.rsplit('@').next()?;
        let (host, port) = split_authority(authority, Some(80))?;
        Some(Request {
            connect: false,
            host,
            port,
            method: method.into(),
            path: path.into(),
            version: version.into(),
            headers,
        })
    }

    /// The request as the origin server expects it: origin-form, no proxy headers, and
    /// one request per connection (a second one on it could not be judged).
    fn origin_form_head(&self) -> String {
        let mut out = format!("{} {} {}\r\n", self.method, self.path, self.version);
        for h in &self.headers {
            let name = h
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                continue;
            }
            out.push_str(h);
            out.push_str("\r\n");
        }
        out.push_str("Connection: close\r\n\r\n");
        out
    }
}

/// `host:port` / `[v6]:port`; `default` when there is no port.
fn split_authority(a: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        (ip.to_string(), after.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (a.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok().filter(|&p| p != 0)?,
        None => default?,
    };
    // A name or an address, nothing else (no `user@`, no spaces or control bytes).
    let plain = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'));
    (!host.is_empty() && plain).then_some((host, port))
}

/// Copies both ways until each side has finished sending.
fn relay(client: TcpStream, upstream: TcpStream) {
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::Builder::new()
        .name("net-relay".into())
        .spawn(move || pump(c2, u2));
    pump(upstream, client);
    if let Ok(t) = up {
        let _ = t.join();
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
