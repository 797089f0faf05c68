//! Name resolution for the agent's own outbound connections (WebFetch, the
//! `--allow-domain` proxy): one lookup whose answer is both judged and dialed, so a name
//! cannot answer a public address to the check and a private one to the connection.
//!
//! Test seam: in debug builds only (the integration tests run one), `AGENT_TEST_DNS`
//! answers chosen names, `name=ip/ip/…;name=ip`, one address per query in turn (the
//! last repeats), so a test plays a rebinding DNS server without a network. A release
//! build never reads it: its lookups go to the system resolver, whatever the
//! environment says.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// The debug-only variable of the test resolver.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
pub(crate) const TEST_DNS_ENV: &str = "AGENT_TEST_DNS";

/// The addresses `host` resolves to now, with `port`: one query.
pub(crate) fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    #[cfg(debug_assertions)]
    if let Some(ip) = test::answer(host) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    Ok((host, port).to_socket_addrs()?.collect())
}

#[cfg(debug_assertions)]
mod test {
    use std::net::IpAddr;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A name's answers, in turn, and how many queries it has had.
    struct Answers {
        name: String,
        ips: Vec<IpAddr>,
        asked: AtomicUsize,
    }

    /// `AGENT_TEST_DNS` parsed once; entries that do not parse are ignored (a test's
    /// typo shows as a real lookup of its name, which fails for `*.test`).
    fn table() -> &'static [Answers] {
        static TABLE: OnceLock<Vec<Answers>> = OnceLock::new();
        TABLE.get_or_init(|| {
            let spec = std::env::var(super::TEST_DNS_ENV).unwrap_or_default();
            parse(&spec)
        })
    }

    fn parse(spec: &str) -> Vec<Answers> {
        spec.split(';')
            .filter_map(|entry| {
                let (name, ips) = entry.split_once('=')?;
                let ips: Vec<IpAddr> = ips
                    .split('/')
                    .filter_map(|i| i.trim().parse().ok())
                    .collect();
                (!ips.is_empty()).then(|| Answers {
                    name: name.trim().to_ascii_lowercase(),
                    ips,
                    asked: AtomicUsize::new(0),
                })
            })
            .collect()
    }

    /// The next answer for `host`, if the table names it.
    pub(super) fn answer(host: &str) -> Option<IpAddr> {
        let a = table().iter().find(|a| a.name.eq_ignore_ascii_case(host))?;
        let n = a.asked.fetch_add(1, Ordering::SeqCst);
        a.ips.get(n.min(a.ips.len() - 1)).copied()
    }

    #[cfg(test)]
    pub(super) fn parsed(spec: &str) -> Vec<(String, Vec<IpAddr>)> {
        parse(spec).into_iter().map(|a| (a.name, a.ips)).collect()
    }
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
