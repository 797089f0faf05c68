//! The WebFetch tool: one GET of a web page on a host `--allow-web` names, turned into
//! text for the model (HTML as Markdown, text and JSON as they are). Off unless
//! `--allow-web` is given. No cookies, no credentials of ours, a timeout, a size cap,
//! redirects followed only to allowed hosts (at most `MAX_REDIRECTS`), and hosts that
//! resolve to loopback, private or link-local addresses refused unless the allow list
//! names them literally, so a page cannot send the fetcher to the runner's metadata
//! service or a service on the runner itself. Permission rules match the host:
//! `WebFetch(domain:docs.rs)`.
//!
//! Each hop resolves its host once (`net::dns::lookup`), judges every address of the
//! answer, and connects to exactly those addresses (ureq is given a resolver pinned to
//! them), so a name cannot answer a public address to the check and a private one to the
//! connection (DNS rebinding).

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::{
    Category, Subject, SubjectKind, ToolContext, ToolError, ToolResult, Traits, TypedTool,
};

/// Redirects followed: enough for http → https → a canonical host, not a loop.
const MAX_REDIRECTS: usize = 5;
/// The whole fetch (connect, redirects, body): a documentation page, not a download.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// One connection attempt: an address that does not answer is not waited on for the
/// whole fetch.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a body read: a long documentation page is well under this; the rest is cut.
const MAX_BODY_BYTES: u64 = 5 * 1024 * 1024;
/// Characters of a URL accepted.
const MAX_URL_CHARS: usize = 4_000;

const DESCRIPTION: &str = "\
Fetches a web page (HTTP GET) and returns it as text: HTML as Markdown, plain text and JSON as \
they are. Use it for the documentation, changelog or API reference of a dependency.

Only these hosts may be fetched: {HOSTS}. Redirects are followed only to them (at most 5). \
Other content types (images, archives, binaries) are refused. Pages over 5 MB are cut. The \
result starts with the final URL. `prompt` (optional) says what you are looking for; it is \
shown as a heading above the page, nothing more.";

/// WebFetch's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WebFetchInput {
    url: String,
    #[serde(default)]
    prompt: Option<String>,
}

/// `--allow-web`'s hosts: `docs.rs`, `*.example.com` (the domain and its subdomains),
/// `*` (any host), IP literals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AllowWeb(Vec<String>);

impl AllowWeb {
    /// From the flag's comma list; `Err` names a bad entry.
    pub(crate) fn parse(list: &str) -> Result<AllowWeb, String> {
        let mut hosts = Vec::new();
        for h in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            let h = h.to_ascii_lowercase();
            let bare = h.strip_prefix("*.").unwrap_or(&h);
            if h != "*"
                && (bare.is_empty()
                    || bare.contains(['/', ':', '*', '@', ' '])
                        && bare.parse::<std::net::Ipv6Addr>().is_err())
            {
                return Err(format!(
                    "--allow-web: {h:?} is not a host name (write docs.rs, *.example.com, \
                     127.0.0.1 or *)"
                ));
            }
            hosts.push(h);
        }
        if hosts.is_empty() {
            return Err("--allow-web: give at least one host (or *)".to_string());
        }
        Ok(AllowWeb(hosts))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn allows(&self, host: &str) -> bool {
        self.0.iter().any(|e| {
            e == "*"
                || e == host
                || e.strip_prefix("*.").is_some_and(|d| {
                    host == d || host.strip_suffix(d).is_some_and(|p| p.ends_with('.'))
                })
        })
    }

    /// Named as it is (not through `*`): only then may it be a private address.
    fn names(&self, host: &str) -> bool {
        self.0.iter().any(|e| e == host)
    }
}

pub(crate) struct WebFetch {
    allow: AllowWeb,
    description: String,
}

impl WebFetch {
    pub(crate) fn new(allow: AllowWeb) -> Self {
        let hosts = if allow.is_empty() {
            "none (the run was not given --allow-web)".to_string()
        } else {
            allow.0.join(", ")
        };
        WebFetch {
            description: DESCRIPTION.replace("{HOSTS}", &hosts),
            allow,
        }
    }
}

/// A URL's parts that matter here.
struct Target {
    uri: ureq::http::Uri,
    https: bool,
    host: String,
    port: u16,
}

fn target(url: &str) -> Result<Target, String> {
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(format!("{url:?}: only http and https URLs can be fetched")),
    };
    let host = uri
        .host()
        .ok_or_else(|| format!("{url:?} names no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(format!("{url:?}: URLs with credentials are not fetched"));
    }
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok(Target {
        uri,
        https,
        host,
        port,
    })
}

/// Loopback, private (RFC 1918, unique local), link-local (the metadata services),
/// carrier-grade NAT, unspecified and the like: not the public web.
fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            // An IPv4 address carried in IPv6: mapped (`::ffff:a.b.c.d`), compatible
            // (`::a.b.c.d`, deprecated but still routed by some stacks) or NAT64's
            // well-known prefix (`64:ff9b::a.b.c.d`) reaches that IPv4 address.
            let o = v6.octets();
            let carried = (s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified())
                || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_internal(IpAddr::V4(v4)))
                || carried
                    && is_internal(IpAddr::V4(std::net::Ipv4Addr::new(
                        o[12], o[13], o[14], o[15],
                    )))
        }
    }
}

impl WebFetch {
    /// The addresses `t` is fetched from (one lookup, every address judged), or why it
    /// may not be fetched.
    fn addresses(&self, t: &Target, via: Option<&str>) -> Result<Vec<SocketAddr>, String> {
        let how = match via {
            Some(from) => format!("{from} redirected to {}", t.uri),
            None => t.uri.to_string(),
        };
        if !self.allow.allows(&t.host) {
            return Err(format!(
                "{how}: the host {} is not allowed (--allow-web {})",
                t.host,
                self.allow.0.join(",")
            ));
        }
        let addrs = match t.host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, t.port)],
            Err(_) => crate::net::dns::lookup(&t.host, t.port)
                .map_err(|e| format!("{how}: cannot resolve {}: {e}", t.host))?,
        };
        if addrs.is_empty() {
            return Err(format!("{how}: {} has no address", t.host));
        }
        if self.allow.names(&t.host) {
            return Ok(addrs);
        }
        match addrs.iter().find(|a| is_internal(a.ip())) {
            Some(a) => Err(format!(
                "{how}: {} is {}, a loopback, private or link-local address; such hosts are \
                 fetched only when --allow-web names them literally",
                t.host,
                a.ip()
            )),
            None => Ok(addrs),
        }
    }
}

/// ureq's resolver for one hop: the host that was judged gets exactly the addresses that
/// were judged; any other name ureq asks for (an `HTTPS_PROXY` the job set) resolves as
/// usual, since the proxy, not this process, connects to the page then.
#[derive(Debug)]
struct Pinned {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl Resolver for Pinned {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or("").trim_matches(['[', ']']);
        if !host.eq_ignore_ascii_case(&self.host) {
            return DefaultResolver::default().resolve(uri, config, timeout);
        }
        let mut out = self.empty();
        // ureq holds at most 16; the rest were judged too and are simply not tried.
        for a in &self.addrs {
            if out.try_push(*a).is_err() {
                break;
            }
        }
        Ok(out)
    }
}

/// Where a redirect's `Location` points, from the URL that gave it.
fn join(base: &Target, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let scheme = if base.https { "https" } else { "http" };
    let authority = base.uri.authority().map_or("", |a| a.as_str());
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let path = base.uri.path();
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    format!("{scheme}://{authority}{dir}{location}")
}

/// What the body is, by its content type.
enum Kind {
    Html,
    Text,
}

fn kind(content_type: &str) -> Option<Kind> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        "" => Some(Kind::Text),
        m if m.starts_with("text/")
            || m == "application/json"
            || m.ends_with("+json")
            || m == "application/xml"
            || m.ends_with("+xml")
            || m == "application/javascript" =>
        {
            Some(Kind::Text)
        }
        _ => None,
    }
}

impl TypedTool for WebFetch {
    type Input = WebFetchInput;
    /// Reads the web: no side effects here, runs in parallel, rules name the host.
    const TRAITS: Traits = Traits {
        read_only: true,
        destructive: false,
        concurrency_safe: true,
        category: Category::Web,
        subject_kind: SubjectKind::Domain,
        records_changes: true,
        companion_of: None,
        edit_style: super::EditStyle::Any,
    };

    fn name(&self) -> &str {
        "WebFetch"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http(s) URL to fetch."},
                "prompt": {"type": "string", "description": "What you are looking for (shown as a heading)."}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &WebFetchInput) -> Subject {
        Subject::Domain(target(&input.url).map(|t| t.host).unwrap_or_default())
    }

    fn validate(&self, input: &WebFetchInput) -> Result<(), ToolError> {
        if input.url.chars().count() > MAX_URL_CHARS {
            return Err(ToolError::failed(format!(
                "`url` is over {MAX_URL_CHARS} characters"
            )));
        }
        target(&input.url).map(|_| ()).map_err(ToolError::Failed)
    }

    fn execute(&self, _ctx: &ToolContext, input: &WebFetchInput) -> Result<ToolResult, ToolError> {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(FETCH_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .user_agent(format!("agent/{} (WebFetch)", env!("CARGO_PKG_VERSION")))
            .build();
        let mut url = input.url.clone();
        let mut via: Option<String> = None;
        let mut redirects = 0;
        let response = loop {
            let t = target(&url).map_err(ToolError::Failed)?;
            let addrs = self
                .addresses(&t, via.as_deref())
                .map_err(|why| ToolError::Failed(format!("not fetched: {why}")))?;
            // An agent per hop: its resolver is pinned to this hop's judged addresses,
            // and no pooled connection crosses hops.
            let pinned = Pinned {
                host: t.host.clone(),
                addrs,
            };
            let agent =
                ureq::Agent::with_parts(config.clone(), DefaultConnector::default(), pinned);
            let response = agent
                .get(&url)
                .header(
                    "accept",
                    "text/html, text/plain, application/json, */*;q=0.1",
                )
                .call()
                .map_err(|e| ToolError::Failed(format!("fetching {url} failed: {e}")))?;
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            match location {
                Some(loc) if (300..400).contains(&status) => {
                    redirects += 1;
                    if redirects > MAX_REDIRECTS {
                        return Err(ToolError::Failed(format!(
                            "not fetched: more than {MAX_REDIRECTS} redirects (the last to {loc})"
                        )));
                    }
                    via = Some(url.clone());
                    url = join(&t, &loc);
                }
                _ => break response,
            }
        };
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let Some(kind) = kind(&content_type) else {
            return Err(ToolError::Failed(format!(
                "not read: {url} is {content_type}; WebFetch reads HTML, text and JSON only"
            )));
        };
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|e| ToolError::Failed(format!("reading {url} failed: {e}")))?;
        let cut = body.len() as u64 > MAX_BODY_BYTES;
        body.truncate(MAX_BODY_BYTES as usize);
        let text = String::from_utf8_lossy(&body);
        let page = match kind {
            Kind::Html => htmd::convert(&text).map_err(|e| {
                ToolError::Failed(format!("{url}: the HTML could not be converted: {e}"))
            })?,
            Kind::Text => text.into_owned(),
        };
        let mut content = format!("URL: {url}\n");
        if let Some(p) = input.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            content.push_str(&format!(
                "\n# {}\n",
                p.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
        content.push('\n');
        content.push_str(page.trim());
        if cut {
            content.push_str(&format!(
                "\n\n[... the page was cut at {} MB ...]",
                MAX_BODY_BYTES / (1024 * 1024)
            ));
        }
        let result = if status >= 400 {
            ToolResult::error(format!("HTTP {status} from {url}\n\n{content}"))
        } else {
            ToolResult::ok(content)
        };
        Ok(result
            .with_meta("url", url.as_str())
            .with_meta("status", status)
            .with_meta("content_type", content_type)
            .with_meta("bytes", body.len() as u64)
            .with_meta("truncated", cut)
            .with_meta("redirects", redirects as u64))
    }
}

#[cfg(test)]
#[path = "web_fetch_tests.rs"]
mod tests;
