//! The GitHub REST client of `agent github`: one blocking ureq call per attempt, retried
//! on transport failures, 5xx, 429 and secondary rate limits (a 403 or 429 that says
//! so, or `x-ratelimit-remaining: 0`), waiting what `retry-after` or `x-ratelimit-reset`
//! asks (capped as the model's retries are) or the model client's backoff. An error names
//! the call (`POST /repos/o/r/issues/1/comments: HTTP 404: Not Found`); the token is
//! redacted from every message.

use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::model::provider::retry;

/// How long a GitHub call may stay silent.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of a response read: the largest answer used (a page of 100 files with their
/// patches) fits well.
const MAX_RESPONSE_BYTES: u64 = 32 << 20;

/// The API version this client is written against.
const API_VERSION: &str = "2022-11-28";

pub(crate) use crate::commands::forge::ApiError;
use crate::commands::forge::{self, Failure, RetryPolicy};

/// The client.
pub(crate) struct Api {
    base: String,
    token: String,
    agent: ureq::Agent,
    max_retries: u32,
    backoff_base: Duration,
}

impl Api {
    pub(crate) fn new(base: &str, token: &str, max_retries: u32) -> Api {
        Api {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            agent: retry::http_agent(READ_TIMEOUT),
            max_retries,
            backoff_base: retry::DEFAULT_BACKOFF_BASE,
        }
    }

    /// The token, for downloads from GitHub's own hosts (`images`).
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    pub(crate) fn get(&self, path: &str) -> Result<Value, ApiError> {
        self.call("GET", path, None)
    }

    pub(crate) fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        self.call("POST", path, Some(body))
    }

    pub(crate) fn patch(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        self.call("PATCH", path, Some(body))
    }

    /// One call with its retries; `path` starts with `/` (a query may follow).
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let name = forge::call_name(method, path);
        let policy = RetryPolicy {
            label: "GitHub API",
            max_retries: self.max_retries,
            backoff_base: self.backoff_base,
            token: &self.token,
        };
        forge::call_with_retries(&policy, &name, || self.attempt(method, path, body))
    }

    fn attempt(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.base);
        let auth = format!("Bearer {}", self.token);
        let sent = match (method, body) {
            ("GET", _) => self
                .agent
                .get(&url)
                .header("authorization", &auth)
                .header("accept", "application/vnd.github+json")
                .header("x-github-api-version", API_VERSION)
                .call(),
            (_, body) => {
                let text = body.map(Value::to_string).unwrap_or_default();
                let req = match method {
                    "PATCH" => self.agent.patch(&url),
                    "PUT" => self.agent.put(&url),
                    _ => self.agent.post(&url),
                };
                req.header("authorization", &auth)
                    .header("accept", "application/vnd.github+json")
                    .header("x-github-api-version", API_VERSION)
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
        let remaining_zero = retry::header(response.headers(), "x-ratelimit-remaining")
            .is_some_and(|v| v.trim() == "0");
        let wait = wait_asked(response.headers(), remaining_zero, SystemTime::now());
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
            if raw.iter().all(u8::is_ascii_whitespace) {
                return Ok(Value::Null); // 204
            }
            return serde_json::from_slice(&raw).map_err(|e| Failure {
                status: Some(status),
                message: format!("HTTP {status} with a body that is not JSON: {e}"),
                retry: None,
            });
        }
        let parsed: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        let text = parsed["message"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| {
                crate::util::text::ellipsis(String::from_utf8_lossy(&raw).trim(), 300)
            });
        let secondary = text.to_ascii_lowercase().contains("secondary rate limit");
        let retryable = status >= 500
            || status == 429
            || (status == 403 && (secondary || remaining_zero || wait.is_some()));
        let message = if text.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {text}")
        };
        Err(Failure {
            status: Some(status),
            message,
            retry: retryable.then_some(wait),
        })
    }
}

/// What the response asks us to wait: `retry-after` (seconds or a date), else
/// `x-ratelimit-reset` (epoch seconds) when the limit is spent (every answer carries a
/// reset time; only then is it a wait).
fn wait_asked(headers: &ureq::http::HeaderMap, spent: bool, now: SystemTime) -> Option<Duration> {
    if let Some(d) = retry::retry_after(headers, now) {
        return Some(d);
    }
    if !spent {
        return None;
    }
    let reset: u64 = retry::header(headers, "x-ratelimit-reset")?
        .trim()
        .parse()
        .ok()?;
    let now_secs = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(reset.saturating_sub(now_secs)))
}

#[cfg(test)]
#[path = "api_tests.rs"]
mod tests;
