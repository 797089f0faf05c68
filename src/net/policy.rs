//! Which hosts a confined command may reach (`--allow-domain`, `--deny-domain`, settings
//! `network.allow` / `network.deny`) and which addresses a name may resolve to.
//!
//! A rule is `host` (that name only), `*.host` (its subdomains, not `host` itself) or an
//! IP literal, each optionally with `:port`; without one an allow rule covers 80 and
//! 443 and a deny rule every port. Deny wins. Names are compared lower-case without a
//! trailing dot. A name that resolves to a loopback, private, link-local, metadata or
//! otherwise non-public address is refused: only an IP literal in the allow list opens
//! such an address (`--allow-domain 127.0.0.1:8080`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Ports an allow rule without `:port` covers.
pub(crate) const DEFAULT_PORTS: [u16; 2] = [80, 443];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Exact(String),
    /// `*.suffix`: stored without the `*.`.
    Subdomains(String),
    Ip(IpAddr),
}

/// One `host[:port]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    host: Host,
    port: Option<u16>,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Exact(h) => f.write_str(h)?,
            Host::Subdomains(h) => write!(f, "*.{h}")?,
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            Host::Ip(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

impl Rule {
    /// Parses one rule; Err names what is wrong with it.
    pub(crate) fn parse(text: &str) -> Result<Rule, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("an empty entry".into());
        }
        if t.contains("://") || t.contains('/') {
            return Err(format!("`{t}`: give a host name, not a URL"));
        }
        let (host, port) = split_port(t)?;
        let host = normalize(host);
        if host.is_empty() {
            return Err(format!("`{t}`: no host"));
        }
        if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(Rule {
                host: Host::Ip(ip),
                port,
            });
        }
        let (pattern, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, host.clone()),
        };
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
        if !valid {
            return Err(format!(
                "`{t}`: not a host name (letters, digits, `-` and dots; `*.` only as a prefix)"
            ));
        }
        Ok(Rule {
            host: if pattern {
                Host::Subdomains(name)
            } else {
                Host::Exact(name)
            },
            port,
        })
    }

    /// Whether the rule names `host` (normalised), ignoring ports.
    fn names(&self, host: &str) -> bool {
        match &self.host {
            Host::Exact(h) => h == host,
            Host::Subdomains(s) => host.len() > s.len() + 1 && host.ends_with(&format!(".{s}")),
            Host::Ip(ip) => parse_ip(host) == Some(*ip),
        }
    }

    fn covers(&self, host: &str, port: u16, default_ports: &[u16]) -> bool {
        self.names(host)
            && match self.port {
                Some(p) => p == port,
                None => default_ports.is_empty() || default_ports.contains(&port),
            }
    }

    fn is_ip(&self) -> bool {
        matches!(self.host, Host::Ip(_))
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 literal.
fn split_port(t: &str) -> Result<(&str, Option<u16>), String> {
    let bad_port = |p: &str| format!("`{t}`: `{p}` is not a port (1-65535)");
    let parse = |p: &str| match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad_port(p)),
        Ok(n) => Ok(n),
    };
    if let Some(rest) = t.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return Err(format!("`{t}`: unclosed `[`"));
        };
        return match after.strip_prefix(':') {
            Some(p) => Ok((ip, Some(parse(p)?))),
            None if after.is_empty() => Ok((ip, None)),
            None => Err(format!("`{t}`: unexpected text after `]`")),
        };
    }
    if t.matches(':').count() > 1 {
        return Ok((t, None));
    }
    match t.split_once(':') {
        Some((h, p)) => Ok((h, Some(parse(p)?))),
        None => Ok((t, None)),
    }
}

fn normalize(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

fn parse_ip(host: &str) -> Option<IpAddr> {
    host.trim_matches(['[', ']']).parse().ok()
}

/// The allow and deny lists, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EgressPolicy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

/// What the policy says about one `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Allowed; `literal` when an IP-literal rule allowed it (non-public addresses too).
    Allow {
        literal: bool,
    },
    Deny(String),
}

impl EgressPolicy {
    /// Each entry may be a comma list. `source` names the flag or setting for errors.
    pub(crate) fn add(
        &mut self,
        allow: bool,
        source: &str,
        entries: &[String],
    ) -> Result<(), String> {
        for entry in entries {
            for part in entry.split(',') {
                if part.trim().is_empty() {
                    continue;
                }
                let rule = Rule::parse(part).map_err(|e| format!("{source}: {e}"))?;
                let list = if allow {
                    &mut self.allow
                } else {
                    &mut self.deny
                };
                if !list.contains(&rule) {
                    list.push(rule);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.allow.is_empty()
    }

    pub(crate) fn allowed(&self) -> &[Rule] {
        &self.allow
    }

    pub(crate) fn denied(&self) -> &[Rule] {
        &self.deny
    }

    /// The verdict for a connection to `host:port` (a name or an IP literal).
    pub(crate) fn decide(&self, host: &str, port: u16) -> Verdict {
        let host = normalize(host);
        if let Some(rule) = self.deny.iter().find(|r| r.covers(&host, port, &[])) {
            return Verdict::Deny(format!("denied by --deny-domain {rule}"));
        }
        match self
            .allow
            .iter()
            .find(|r| r.covers(&host, port, &DEFAULT_PORTS))
        {
            Some(rule) => Verdict::Allow {
                literal: rule.is_ip(),
            },
            None if self.allow.iter().any(|r| r.names(&host)) => Verdict::Deny(format!(
                "port {port} is not allowed for {host} (--allow-domain {host}:{port} would allow it)"
            )),
            None => Verdict::Deny(format!("{host} is not in --allow-domain")),
        }
    }
}

/// Why an address may not be dialed for a name, or `None` for a public address.
pub(crate) fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return non_public_v4(v4);
            }
            non_public_v6(v6)
        }
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
        return Some("a cloud metadata address");
    }
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("a multicast, broadcast or reserved address")
    } else if (a, b, c) == (192, 0, 0)
        || ip.is_documentation()
        || (a == 198 && (b == 18 || b == 19))
    {
        Some("a special-purpose address")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Some("a cloud metadata address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if s[0] & 0xfe00 == 0xfc00 {
        Some("a private (unique local) address")
    } else if s[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        Some("a documentation address")
    } else if s[0] == 0x0064 && s[1] == 0xff9b {
        // NAT64 embeds an IPv4 address: judge that one.
        let v4 = Ipv4Addr::new(
            (s[6] >> 8) as u8,
            (s[6] & 0xff) as u8,
            (s[7] >> 8) as u8,
            (s[7] & 0xff) as u8,
        );
        non_public_v4(v4)
    } else {
        None
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
