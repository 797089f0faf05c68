//! The GitLab REST v4 client of `agent gitlab`: one blocking ureq call per attempt with
//! the token in `PRIVATE-TOKEN`, retried on transport failures, 5xx and 429, waiting what
//! `Retry-After` or (the limit spent) `RateLimit-Reset` asks, capped as the model's
//! retries are, or the model client's backoff. A self-managed instance's CA bundle
//! (`CI_SERVER_TLS_CA_FILE`) is the only root the client trusts when given. An error
//! names the call (`GitLab API POST /projects/7/issues/3/notes: HTTP 403: …`), says
//! which scope a 403 `insufficient_scope` wants, and never holds the token.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::commands::forge::{self, ApiError, Failure, RetryPolicy, call_name};
use crate::model::provider::retry;

/// How long a GitLab call may stay silent.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of a response read: a page of 100 diffs fits well.
const MAX_RESPONSE_BYTES: u64 = 32 << 20;

/// The client.
pub(crate) struct Api {
    base: String,
    token: String,
    agent: ureq::Agent,
    max_retries: u32,
    backoff_base: Duration,
}

impl Api {
    /// `base` is `CI_API_V4_URL` (`https://HOST/api/v4`); `ca_file` a PEM bundle that
    /// replaces the built-in roots.
    pub(crate) fn new(
        base: &str,
        token: &str,
        max_retries: u32,
        ca_file: Option<&Path>,
    ) -> Result<Api, String> {
        let agent = match ca_file {
            None => retry::http_agent(READ_TIMEOUT),
            Some(path) => agent_trusting(path)?,
        };
        Ok(Api {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            agent,
            max_retries,
            backoff_base: retry::DEFAULT_BACKOFF_BASE,
        })
    }

    pub(crate) fn get(&self, path: &str) -> Result<Value, ApiError> {
        self.call("GET", path, None)
    }

    pub(crate) fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        self.call("POST", path, Some(body))
    }

    pub(crate) fn put(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        self.call("PUT", path, Some(body))
    }

    /// A raw file (`GET …/repository/files/:path/raw`): its text, not JSON.
    pub(crate) fn get_text(&self, path: &str) -> Result<String, ApiError> {
        self.call_raw("GET", path, None)
            .map(|raw| String::from_utf8_lossy(&raw).into_owned())
    }

    /// One call with its retries; `path` starts with `/` (a query may follow).
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let raw = self.call_raw(method, path, body)?;
        if raw.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null); // 204
        }
        serde_json::from_slice(&raw).map_err(|e| ApiError {
            status: None,
            message: format!(
                "GitLab API {}: the answer is not JSON: {e}",
                call_name(method, path)
            ),
        })
    }

    fn call_raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Vec<u8>, ApiError> {
        let name = call_name(method, path);
        let policy = RetryPolicy {
            label: "GitLab API",
            max_retries: self.max_retries,
            backoff_base: self.backoff_base,
            token: &self.token,
        };
        forge::call_with_retries(&policy, &name, || self.attempt(method, path, body))
    }

    fn attempt(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Vec<u8>, Failure> {
        let url = format!("{}{path}", self.base);
        let sent = match (method, body) {
            ("GET", _) => self
                .agent
                .get(&url)
                .header("private-token", &self.token)
                .header("accept", "application/json")
                .call(),
            (_, body) => {
                let text = body.map(Value::to_string).unwrap_or_default();
                let req = match method {
                    "PUT" => self.agent.put(&url),
                    _ => self.agent.post(&url),
                };
                req.header("private-token", &self.token)
                    .header("accept", "application/json")
                    .header("content-type", "application/json")
                    .send(text.as_bytes())
            }
        };
        let response = sent.map_err(|e| Failure {
            status: None,
            message: format!("connection failed: {e}"),
            retry: (!matches!(e, ureq::Error::BadUri(_) | ureq::Error::Http(_))).then_some(None),
        })?;
        let status = response.status().as_u16();
        let wait = wait_asked(response.headers(), status, SystemTime::now());
        let mut raw = Vec::new();
        let read = response
            .into_body()
            .into_reader()
            .take(MAX_RESPONSE_BYTES)
            .read_to_end(&mut raw);
        if (200..300).contains(&status) {
            read.map_err(|e| Failure {
                status: Some(status),
                message: format!("the response failed mid-read: {e}"),
                retry: Some(None),
            })?;
            return Ok(raw);
        }
        let retryable = status >= 500 || status == 429;
        Err(Failure {
            status: Some(status),
            message: error_text(status, &raw),
            retry: retryable.then_some(wait),
        })
    }
}

/// A ureq agent whose only roots are the PEM bundle's certificates.
fn agent_trusting(path: &Path) -> Result<ureq::Agent, String> {
    use ureq::tls::{PemItem, RootCerts, TlsConfig};
    let what = |e: &dyn std::fmt::Display| format!("CI_SERVER_TLS_CA_FILE {}: {e}", path.display());
    let pem = std::fs::read(path).map_err(|e| what(&e))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let PemItem::Certificate(c) = item.map_err(|e| what(&e))? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err(what(&"no certificate in the file"));
    }
    let tls = TlsConfig::builder()
        .root_certs(RootCerts::new_with_certs(&certs))
        .build();
    Ok(retry::http_agent_with_tls(READ_TIMEOUT, tls))
}

/// `HTTP 403: …`: GitLab's `message` (a string or a map of field errors) or its OAuth
/// error, and for a missing scope, which scope and which token it takes.
pub(crate) fn error_text(status: u16, raw: &[u8]) -> String {
    let parsed: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
    let text = match (&parsed["message"], &parsed["error"]) {
        (Value::String(m), _) => m.clone(),
        (m @ Value::Object(_), _) => m.to_string(),
        (_, Value::String(e)) => match parsed["error_description"].as_str() {
            Some(d) => format!("{e}: {d}"),
            None => e.clone(),
        },
        _ => crate::util::text::ellipsis(String::from_utf8_lossy(raw).trim(), 300),
    };
    let mut message = if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    };
    if parsed["error"] == "insufficient_scope" {
        let scope = parsed["scope"].as_str().unwrap_or("api");
        message.push_str(&format!(
            " (the token lacks the `{scope}` scope: GITLAB_TOKEN must be a project, group or \
             personal access token with the `api` scope)"
        ));
    } else if status == 401 {
        message.push_str(" (GITLAB_TOKEN is not a valid token: expired, revoked or mistyped?)");
    }
    message
}

/// What the response asks us to wait: `Retry-After` (seconds or a date), else, when the
/// limit is spent (a 429, or `RateLimit-Remaining: 0`), `RateLimit-Reset` (epoch seconds).
fn wait_asked(headers: &ureq::http::HeaderMap, status: u16, now: SystemTime) -> Option<Duration> {
    if let Some(d) = retry::retry_after(headers, now) {
        return Some(d);
    }
    let spent = status == 429
        || retry::header(headers, "ratelimit-remaining").is_some_and(|v| v.trim() == "0");
    if !spent {
        return None;
    }
    let reset: u64 = retry::header(headers, "ratelimit-reset")?
        .trim()
        .parse()
        .ok()?;
    let now_secs = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(reset.saturating_sub(now_secs)))
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
