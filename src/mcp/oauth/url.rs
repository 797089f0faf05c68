//! The little URL arithmetic OAuth discovery needs, on plain strings: a URL's origin and
//! path, the RFC 8414 / RFC 9728 well-known locations, a `Location` resolved against the
//! URL it answered, whether a resource covers a server URL (RFC 8707), and query strings
//! (percent-encoding both ways). Pure functions.

/// `scheme://host[:port]` and the path (without query or fragment, `""` for none).
pub(crate) fn split(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return None;
    }
    let rest = rest.split(['#']).next().unwrap_or("");
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (host, tail) = rest.split_at(end);
    if host.is_empty() {
        return None;
    }
    let path = tail.split('?').next().unwrap_or("");
    Some((
        format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            host.to_ascii_lowercase()
        ),
        path.to_string(),
    ))
}

/// The origin of `url` (`scheme://host:port`), `None` if it is not an http(s) URL.
pub(crate) fn origin(url: &str) -> Option<String> {
    split(url).map(|(o, _)| o)
}

/// Whether two URLs have the same origin.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    matches!((origin(a), origin(b)), (Some(x), Some(y)) if x == y)
}

/// `url` without its fragment and without one trailing `/` (RFC 8707's canonical form,
/// as the MCP spec asks for the `resource` parameter).
pub(crate) fn canonical(url: &str) -> String {
    let no_frag = url.split('#').next().unwrap_or(url);
    no_frag.strip_suffix('/').unwrap_or(no_frag).to_string()
}

/// Whether the protected resource `resource` (from its metadata) covers the server URL
/// `server`: the same origin, and the server's path at or under the resource's.
pub(crate) fn resource_covers(resource: &str, server: &str) -> bool {
    let (Some((ro, rp)), Some((so, sp))) = (split(resource), split(server)) else {
        return false;
    };
    let rp = rp.trim_end_matches('/');
    let sp = sp.trim_end_matches('/');
    ro == so && (rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/")))
}

/// The well-known URLs of `kind` (`oauth-protected-resource`, ...) for `url`, in the order
/// RFC 9728 and RFC 8414 try them: with the path inserted after the well-known prefix, then
/// (only when `root_too`) at the root.
pub(crate) fn well_known(url: &str, kind: &str, root_too: bool) -> Vec<String> {
    let Some((origin, path)) = split(url) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{kind}{path}"));
    }
    if path.is_empty() || root_too {
        out.push(format!("{origin}/.well-known/{kind}"));
    }
    out
}

/// Where the metadata of the authorization server `issuer` may be (RFC 8414 §3.1, then
/// OpenID Connect Discovery, both the inserted and the appended form for a path).
pub(crate) fn as_metadata_urls(issuer: &str) -> Vec<String> {
    let Some((origin, path)) = split(issuer) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        return vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ];
    }
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// A `Location` header resolved against the URL it answered.
pub(crate) fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let Some((origin, path)) = split(base) else {
        return location.to_string();
    };
    if let Some(rest) = location.strip_prefix("//") {
        let scheme = origin.split("://").next().unwrap_or("https");
        return format!("{scheme}://{rest}");
    }
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    format!("{origin}{dir}/{location}")
}

/// Percent-encodes one query value (RFC 3986 unreserved characters kept).
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes a query value (`+` is a space, as in forms).
pub(crate) fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(value.get(i + 1..i + 3).unwrap_or(""), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` with the query parameters added.
pub(crate) fn with_query(url: &str, params: &[(&str, &str)]) -> String {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", query.join("&"))
}

/// The value of query parameter `name` in `url`.
pub(crate) fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split('#').next()?.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(k) == name).then(|| decode(v))
    })
}

#[cfg(test)]
#[path = "url_tests.rs"]
mod tests;
