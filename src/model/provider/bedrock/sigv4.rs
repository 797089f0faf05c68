//! AWS Signature Version 4 (the header form), for Bedrock's model calls and STS's
//! `AssumeRole`: the canonical request, the string to sign, the derived key and the
//! `authorization` header, as botocore's `SigV4Auth` computes them (checked against it:
//! `sigv4_tests.rs` holds cases botocore signed, `ci/interop/cloud_sdk.py` regenerates them).

use ring::{digest, hmac};

/// Long-term or temporary AWS credentials.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// What is signed: the request as sent.
pub(crate) struct SignInput<'a> {
    pub method: &'a str,
    /// The whole URL: `https://host[:port]/path[?query]`.
    pub url: &'a str,
    /// Headers sent besides `host` (lower-case names); all of them are signed.
    pub headers: &'a [(String, String)],
    /// Lower-case hex SHA-256 of the body.
    pub payload_sha256: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    /// Seconds since the Unix epoch.
    pub time: u64,
}

/// Lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, bytes).as_ref())
}

/// The headers to add: `x-amz-date`, `x-amz-security-token` (temporary credentials) and
/// `authorization`.
pub(crate) fn sign(creds: &AwsCredentials, input: &SignInput<'_>) -> Vec<(String, String)> {
    let amz_date = amz_date(input.time);
    let date = &amz_date[..8];
    let mut added = vec![("x-amz-date".to_string(), amz_date.clone())];
    if let Some(token) = &creds.session_token {
        added.push(("x-amz-security-token".to_string(), token.clone()));
    }
    let (host, path, query) = split_url(input.url);
    let mut headers: Vec<(String, String)> = input
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .filter(|(n, _)| !UNSIGNED_HEADERS.contains(&n.as_str()))
        .chain(added.iter().cloned())
        .chain([("host".to_string(), host.to_string())])
        .collect();
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    // Values of one name are joined with `,`, as botocore does.
    let mut canonical_headers = String::new();
    let mut names: Vec<&str> = Vec::new();
    for (name, value) in &headers {
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        if names.last() == Some(&name.as_str()) {
            canonical_headers.pop();
            canonical_headers.push(',');
        } else {
            names.push(name);
            canonical_headers.push_str(name);
            canonical_headers.push(':');
        }
        canonical_headers.push_str(&value);
        canonical_headers.push('\n');
    }
    let signed_headers = names.join(";");
    let canonical_request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        input.method,
        canonical_path(path),
        canonical_query(query),
        input.payload_sha256
    );
    let scope = format!("{date}/{}/{}/aws4_request", input.region, input.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mut key = format!("AWS4{}", creds.secret_access_key).into_bytes();
    for part in [date, input.region, input.service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    added.push((
        "authorization".to_string(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, \
             Signature={signature}",
            creds.access_key_id
        ),
    ));
    added
}

/// Headers a proxy may change or drop, so never signed (botocore's list, plus the
/// hop-by-hop `connection` the SDK removes).
const UNSIGNED_HEADERS: &[&str] = &[
    "user-agent",
    "expect",
    "x-amzn-trace-id",
    "connection",
    "authorization",
];

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data).as_ref().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `(host[:port], path, query)` of a URL; the default port is left out of the host, as
/// botocore does and as `host` is sent.
fn split_url(url: &str) -> (&str, &str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let (authority, path_query) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let host = match (scheme, authority.rsplit_once(':')) {
        ("https", Some((h, "443"))) | ("http", Some((h, "80"))) => h,
        _ => authority,
    };
    let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
    (host, if path.is_empty() { "/" } else { path }, query)
}

/// The path as sent, URI-encoded once more (every service but S3 signs the path encoded
/// twice: `%2F` in a model ARN is signed as `%252F`).
fn canonical_path(path: &str) -> String {
    uri_encode(path, false)
}

/// The query's `key=value` pairs as sent, sorted (botocore's `_canonical_query_string_url`).
fn canonical_query(query: &str) -> String {
    if query.is_empty() {
        return String::new();
    }
    let mut pairs: Vec<(&str, &str)> = query
        .split('&')
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// RFC 3986 percent-encoding of all but the unreserved characters (and `/` unless
/// `slash`), as SigV4 wants (and Bedrock's model ids in the path).
pub(crate) fn uri_encode(text: &str, slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (b == b'/' && !slash) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `YYYYMMDD'T'HHMMSS'Z'` of a Unix time.
pub(crate) fn amz_date(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// The UTC calendar fields of a Unix time (Howard Hinnant's civil-from-days).
pub(crate) fn utc(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3_600) as u32,
        (rem % 3_600 / 60) as u32,
        (rem % 60) as u32,
    )
}

/// The Unix time of an RFC 3339 / ISO 8601 UTC time (`2026-12-01T23:00:00Z`, fractions
/// and `+00:00` taken); `None` for anything else.
pub(crate) fn parse_utc(text: &str) -> Option<u64> {
    let t = text.trim();
    let b = t.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let tail = &t[19..];
    let tail = tail.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset = match tail {
        "Z" | "z" | "" | "+00:00" => 0,
        _ => {
            let sign = if tail.starts_with('-') { -1 } else { 1 };
            let hh = tail.get(1..3)?.parse::<i64>().ok()?;
            let mm = tail.get(4..6)?.parse::<i64>().ok()?;
            sign * (hh * 3_600 + mm * 60)
        }
    };
    // days_from_civil
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2.rem_euclid(400);
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3_600 + mi * 60 + s - offset;
    u64::try_from(secs).ok()
}

#[cfg(test)]
#[path = "sigv4_tests.rs"]
mod tests;
