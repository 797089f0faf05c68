//! What the shell sends besides the wire's own headers: the base URL, the key and the
//! retry settings (`HttpConfig`), and a gateway's extra credential and headers (`Gateway`),
//! whose secret values are redacted everywhere.

use std::time::Duration;

use crate::config::cli::RequestArgs;
use crate::model::provider::retry::{
    DEFAULT_BACKOFF_BASE, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RETRIES,
};

/// How to reach the API and how hard to try.
#[derive(Clone)]
pub(crate) struct HttpConfig {
    /// e.g. `https://api.anthropic.com` (a trailing `/` is fine).
    pub base_url: String,
    /// Empty: no credential header (local OpenAI-compatible servers need none).
    pub api_key: String,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// A stream (or a response) silent longer than this counts as dropped.
    pub idle_timeout: Duration,
    /// First backoff delay (tests make it tiny).
    pub backoff_base: Duration,
    /// `--tool-choice` and the other request options.
    pub request: RequestArgs,
    /// Credentials and headers for gateways.
    pub gateway: Gateway,
    /// `--fallback-model`: where a request goes once the model's retries end overloaded.
    pub fallback_model: Option<String>,
    /// The same for every request of a run (its session id): the Responses API's
    /// `prompt_cache_key`, so the run's requests reach one prompt cache. Empty: none sent.
    pub cache_key: String,
}

/// What gateways and proxies need besides the API key: a bearer token, extra headers.
#[derive(Clone, Default)]
pub(crate) struct Gateway {
    /// `ANTHROPIC_AUTH_TOKEN`: sent as `Authorization: Bearer` instead of `x-api-key`.
    pub auth_token: Option<String>,
    /// `--header` and `ANTHROPIC_CUSTOM_HEADERS`, in that order.
    pub headers: Vec<(String, String)>,
}

/// Header names whose values are credentials: never shown, never recorded.
const SECRET_HEADER_WORDS: &[&str] = &["auth", "key", "token", "secret", "cookie", "password"];

/// Longest header value taken: a header is a line, not a document.
const MAX_HEADER_VALUE_BYTES: usize = 8 * 1024;

/// The characters RFC 9110 allows in a header name besides letters and digits.
const HEADER_NAME_PUNCTUATION: &[u8] = b"!#$%&'*+-.^_`|~";

impl Gateway {
    /// The gateway of `--header` values and `ANTHROPIC_CUSTOM_HEADERS` (one header per
    /// line); a malformed header is an error naming where it came from.
    pub(crate) fn new(
        auth_token: Option<String>,
        flags: &[String],
        env_headers: Option<&str>,
    ) -> Result<Gateway, String> {
        let from_env = env_headers
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim().is_empty());
        let all = flags
            .iter()
            .map(|h| ("--header", h.as_str()))
            .chain(from_env.map(|h| ("ANTHROPIC_CUSTOM_HEADERS", h)));
        let mut headers = Vec::new();
        for (source, line) in all {
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("{source} {line:?}: expected 'Name: value'"));
            };
            let (name, value) = (name.trim(), value.trim());
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || HEADER_NAME_PUNCTUATION.contains(&b));
            if !valid_name {
                return Err(format!("{source} {line:?}: {name:?} is not a header name"));
            }
            if value.len() > MAX_HEADER_VALUE_BYTES || value.bytes().any(|b| b.is_ascii_control()) {
                return Err(format!(
                    "{source} {name}: the value has control characters or is over \
                     {MAX_HEADER_VALUE_BYTES} bytes"
                ));
            }
            headers.push((name.to_string(), value.to_string()));
        }
        Ok(Gateway {
            auth_token: auth_token.filter(|t| !t.is_empty()),
            headers,
        })
    }

    /// The values to redact wherever they could show: the token, and the values of
    /// headers whose names say they are credentials (`Bearer xyz`: `xyz` too).
    pub(crate) fn secret_values(&self) -> Vec<String> {
        let secret_name = |name: &str| {
            let name = name.to_ascii_lowercase();
            SECRET_HEADER_WORDS.iter().any(|w| name.contains(w))
        };
        let headers = self
            .headers
            .iter()
            .filter(|(name, _)| secret_name(name))
            .flat_map(|(_, value)| {
                let last = value.rsplit(' ').next().unwrap_or(value).to_string();
                [value.clone(), last]
            });
        self.auth_token
            .iter()
            .cloned()
            .chain(headers)
            .filter(|v| !v.is_empty())
            .collect()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Gateway")
            .field(
                "auth_token",
                &self.auth_token.as_ref().map(|_| "[REDACTED]"),
            )
            .field("headers", &names)
            .finish()
    }
}

impl HttpConfig {
    /// The defaults of SPEC §2 and §3.1 for this endpoint and key.
    pub(crate) fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        HttpConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            max_retries: DEFAULT_MAX_RETRIES,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            backoff_base: DEFAULT_BACKOFF_BASE,
            request: RequestArgs::default(),
            gateway: Gateway::default(),
            fallback_model: None,
            cache_key: String::new(),
        }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"[REDACTED]")
            .field("max_retries", &self.max_retries)
            .field("idle_timeout", &self.idle_timeout)
            .field("backoff_base", &self.backoff_base)
            .field("request", &self.request)
            .field("gateway", &self.gateway)
            .field("fallback_model", &self.fallback_model)
            .field("cache_key", &self.cache_key)
            .finish()
    }
}
