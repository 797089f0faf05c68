//! The images of the comment (or issue body) that called `agent github`: the links in
//! its Markdown and HTML, downloaded with the token only from GitHub's own hosts,
//! size-capped, type-checked by their bytes (`model::media`) and written to files the
//! run attaches as it does `--image` files. A failed download is a warning, never a
//! failed run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::media::{self, Kind};
use crate::model::provider::retry;
use crate::util::output;

/// Bytes of one downloaded image: more is refused unread (a screenshot is far smaller;
/// larger ones would be downscaled anyway).
pub(crate) const MAX_IMAGE_BYTES: u64 = 10 << 20;

/// Images taken from one body; the rest are warned about.
const MAX_IMAGES: usize = 10;

/// Redirects followed per image (GitHub's attachments redirect once, to a signed URL).
const MAX_REDIRECTS: usize = 3;

const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Where images may be downloaded with the token.
pub(crate) struct Hosts {
    /// `(scheme, host[:port])` of GITHUB_API_URL and GITHUB_SERVER_URL.
    origins: Vec<(String, String)>,
}

impl Hosts {
    pub(crate) fn new(api_url: &str, server_url: &str) -> Hosts {
        Hosts {
            origins: [api_url, server_url]
                .iter()
                .filter_map(|u| origin(u))
                .collect(),
        }
    }

    /// github.com, *.githubusercontent.com (https), or the API's or server's origin.
    pub(crate) fn is_github(&self, url: &str) -> bool {
        let Some((scheme, authority)) = origin(url) else {
            return false;
        };
        if scheme == "https"
            && (authority == "github.com" || authority.ends_with(".githubusercontent.com"))
        {
            return true;
        }
        self.origins
            .iter()
            .any(|(s, a)| *s == scheme && *a == authority)
    }
}

/// `(scheme, host[:port])`, lower-cased; None for anything but http(s) or a URL with
/// credentials in it.
fn origin(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let authority = match (scheme.as_str(), authority.rsplit_once(':')) {
        ("https", Some((h, "443"))) | ("http", Some((h, "80"))) => h.to_string(),
        _ => authority,
    };
    Some((scheme, authority))
}

/// The image links of a body, in order, each once: `![alt](url)`, `<img src="url">`
/// (either quote), and bare `https://github.com/user-attachments/assets/…` links.
pub(crate) fn links(body: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut at = 0;
    while let Some(i) = body[at..].find("](") {
        let start = at + i + 2;
        let opened = body[..at + i].rfind("![").is_some_and(|b| {
            // The `![` that opens this link: no `]` between it and here.
            !body[b + 2..at + i].contains(']')
        });
        if opened {
            let url: String = body[start..]
                .trim_start_matches('<')
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ')' && *c != '>')
                .collect();
            found.push((start, url));
        }
        at = start;
    }
    let lower = body.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<img") {
        let tag_start = at + i;
        let tag_end = lower[tag_start..]
            .find('>')
            .map_or(lower.len(), |e| tag_start + e);
        let tag = &lower[tag_start..tag_end];
        if let Some(s) = tag.find("src=") {
            let from = tag_start + s + 4;
            let quote = body[from..].chars().next();
            let url: String = match quote {
                Some(q @ ('"' | '\'')) => {
                    body[from + 1..].chars().take_while(|c| *c != q).collect()
                }
                _ => body[from..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '>')
                    .collect(),
            };
            found.push((from, url));
        }
        at = tag_end.max(tag_start + 4);
    }
    const BARE: &str = "https://github.com/user-attachments/assets/";
    let mut at = 0;
    while let Some(i) = lower[at..].find(BARE) {
        let start = at + i;
        let url: String = body[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | '"' | '\'' | ']'))
            .collect();
        found.push((start, url));
        at = start + BARE.len();
    }
    found.sort_by_key(|(i, _)| *i);
    let mut out: Vec<String> = Vec::new();
    for (_, url) in found {
        let url = url.replace("&amp;", "&");
        if !url.is_empty() && !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

/// Downloads the images of `body` into `dir`; the files written. Links to other hosts
/// are named in one notice and not fetched.
pub(crate) fn download(body: &str, token: &str, hosts: &Hosts, dir: &Path) -> Vec<PathBuf> {
    let agent = retry::http_agent(READ_TIMEOUT);
    let mut files = Vec::new();
    let mut tried = 0;
    for url in links(body) {
        if !hosts.is_github(&url) {
            output::info(&format!(
                "github: image {url} not downloaded: not on GitHub's own hosts"
            ));
            continue;
        }
        if tried == MAX_IMAGES {
            output::warn(&format!(
                "github: image {url} not downloaded: only the first {MAX_IMAGES} images are taken"
            ));
            continue;
        }
        tried += 1;
        let fetched = fetch(&agent, &url, token, hosts).and_then(|bytes| checked(&bytes));
        match fetched {
            Ok((bytes, ext)) => {
                let path = dir.join(format!("comment-image-{tried}.{ext}"));
                match std::fs::write(&path, &bytes) {
                    Ok(()) => files.push(path),
                    Err(e) => output::warn(&format!("github: image {url}: cannot save it: {e}")),
                }
            }
            Err(e) => output::warn(&format!("github: image {url} not attached: {e}")),
        }
    }
    files
}

/// The bytes an image may be attached with, and its file extension.
fn checked(bytes: &[u8]) -> Result<(Vec<u8>, &'static str), String> {
    let ext = match media::sniff(bytes) {
        Some(Kind::Png) => "png",
        Some(Kind::Jpeg) => "jpg",
        Some(Kind::Gif) => "gif",
        Some(Kind::WebP) => "webp",
        _ => return Err("not a PNG, JPEG, GIF or WebP image (by its content)".into()),
    };
    // As `--image` will: a truncated or oversized image is refused here, not there.
    media::prepare(bytes, None).map_err(|e| e.to_string())?;
    Ok((bytes.to_vec(), ext))
}

/// GET with the token while on GitHub's hosts; a redirect to another host is followed
/// without it.
fn fetch(agent: &ureq::Agent, url: &str, token: &str, hosts: &Hosts) -> Result<Vec<u8>, String> {
    let mut url = url.to_string();
    let mut with_token = hosts.is_github(&url);
    for _ in 0..=MAX_REDIRECTS {
        let mut req = agent.get(&url).header("accept", "image/*");
        if with_token {
            req = req.header("authorization", &format!("Bearer {token}"));
        }
        let mut resp = req.call().map_err(|e| output::redact(&e.to_string()))?;
        let status = resp.status().as_u16();
        if (300..400).contains(&status) {
            let next = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("HTTP {status} without a location"))?;
            url = join(&url, next);
            // Once off GitHub's hosts, the token is never sent again.
            with_token = with_token && hosts.is_github(&url);
            continue;
        }
        if status != 200 {
            return Err(format!("HTTP {status}"));
        }
        let over = || format!("larger than the {} MB cap", MAX_IMAGE_BYTES >> 20);
        let declared = resp
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_IMAGE_BYTES) {
            return Err(over());
        }
        let mut bytes = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(MAX_IMAGE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read it: {e}"))?;
        if bytes.len() as u64 > MAX_IMAGE_BYTES {
            return Err(over());
        }
        return Ok(bytes);
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

/// A `location` made absolute against the URL that sent it.
fn join(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let Some((scheme, rest)) = base.split_once("://") else {
        return location.to_string();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    if let Some(path) = location.strip_prefix("//") {
        return format!("{scheme}://{path}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let dir = rest.rsplit_once('/').map_or(authority, |(d, _)| d);
    format!("{scheme}://{dir}/{location}")
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
