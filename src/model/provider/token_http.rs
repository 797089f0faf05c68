//! The small HTTP calls of the cloud providers' credential sources (AWS STS, the
//! container and instance metadata endpoints, Google's token endpoints): one blocking
//! request each, no redirect followed (a credential goes only to the host it belongs
//! to), short timeouts, a bounded answer. Errors never quote what was sent.

use std::io::Read;
use std::time::Duration;

/// Connect and read timeout of a token service: it answers at once or not at all.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// The instance metadata service is link-local: off EC2 nothing answers, so waiting
/// longer would only delay the "no credentials" error (the AWS SDKs wait 1 s too).
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(1);
/// Bytes of a token answer read: credentials are a few kilobytes.
const MAX_ANSWER_BYTES: u64 = 256 * 1024;

/// An answer: its status and body text.
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    /// The body when the status is 2xx; else an error quoting the start of the body
    /// (token services explain refusals there, and never echo the credential).
    pub(crate) fn ok(self, what: &str) -> Result<String, String> {
        if (200..300).contains(&self.status) {
            return Ok(self.body);
        }
        let quoted = crate::util::text::ellipsis(self.body.trim(), 300);
        Err(format!("{what} answered HTTP {}: {quoted}", self.status))
    }
}

/// One request; `body` is sent as is with the headers given.
pub(crate) fn call(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    timeout: Duration,
) -> Result<Answer, String> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(timeout))
            .timeout_global(Some(TOKEN_TIMEOUT))
            .user_agent(format!("agent/{}", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let request = ureq::http::Request::builder().method(method).uri(url);
    let request = headers
        .iter()
        .fold(request, |r, (name, value)| r.header(*name, *value));
    let failed = |e: &dyn std::fmt::Display| format!("{method} {}: {e}", shown(url));
    let response = match body {
        Some(body) => agent.run(request.body(body.to_string()).map_err(|e| failed(&e))?),
        None => agent.run(request.body(()).map_err(|e| failed(&e))?),
    }
    .map_err(|e| failed(&e))?;
    let status = response.status().as_u16();
    let mut text = String::new();
    response
        .into_body()
        .into_reader()
        .take(MAX_ANSWER_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("{method} {}: reading the answer: {e}", shown(url)))?;
    if (300..400).contains(&status) {
        return Err(format!(
            "{method} {} answered a redirect (HTTP {status}): not followed, so that no \
             credential goes to another host",
            shown(url)
        ));
    }
    Ok(Answer { status, body: text })
}

/// A URL without its query (which may carry a token) for messages.
pub(crate) fn shown(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// `application/x-www-form-urlencoded` of `pairs`.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
