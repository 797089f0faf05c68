//! The HTTP requests of OAuth: metadata GETs, form POSTs to a token endpoint, the
//! registration POST and the authorization-URL fetch. Redirects are never followed here
//! (a credential must not ride one to another host); the authorization flow follows its
//! own, carrying nothing secret. Bodies are bounded.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

/// Largest metadata or token response read.
const MAX_BODY_BYTES: u64 = 1024 * 1024;
/// Characters of an error body quoted in a message.
const ERROR_BODY_CHARS: usize = 300;

pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(10)))
            .user_agent(format!("agent/{}", env!("CARGO_PKG_VERSION")))
            .build(),
    )
}

/// A response, read.
pub(crate) struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub content_type: String,
    pub body: String,
}

fn read(resp: ureq::http::Response<ureq::Body>) -> Page {
    let status = resp.status().as_u16();
    let h = |n: &str| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let location = h("location");
    let content_type = h("content-type").unwrap_or_default();
    let mut body = String::new();
    let _ = resp
        .into_body()
        .into_reader()
        .take(MAX_BODY_BYTES)
        .read_to_string(&mut body);
    Page {
        status,
        location,
        content_type,
        body,
    }
}

fn failed(e: ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer in time".into(),
        e => e.to_string(),
    }
}

/// GET without following redirects.
pub(crate) fn get(agent: &ureq::Agent, url: &str, timeout: Duration) -> Result<Page, String> {
    agent
        .get(url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .header("Accept", "application/json, text/html;q=0.5")
        .header("MCP-Protocol-Version", crate::mcp::client::PROTOCOL_VERSION)
        .call()
        .map(read)
        .map_err(|e| format!("GET {url}: {}", failed(e)))
}

/// GET a JSON document: `Ok(None)` when the server has none there (any non-2xx).
pub(crate) fn get_json(
    agent: &ureq::Agent,
    url: &str,
    timeout: Duration,
) -> Result<Option<Value>, String> {
    let page = get(agent, url, timeout)?;
    if !(200..300).contains(&page.status) {
        return Ok(None);
    }
    serde_json::from_str(&page.body)
        .map(Some)
        .map_err(|e| format!("{url}: not JSON: {e}"))
}

/// The error of a non-2xx token or registration answer: the OAuth `error` and
/// `error_description` when it has them.
fn oauth_error(what: &str, page: &Page) -> String {
    if let Some(loc) = page
        .location
        .as_ref()
        .filter(|_| (300..400).contains(&page.status))
    {
        return format!(
            "{what}: HTTP {} redirect to {loc}: not followed",
            page.status
        );
    }
    let parsed: Option<Value> = serde_json::from_str(&page.body).ok();
    let field = |k: &str| {
        parsed
            .as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match (field("error"), field("error_description")) {
        (Some(e), Some(d)) => format!("{what}: HTTP {} {e}: {d}", page.status),
        (Some(e), None) => format!("{what}: HTTP {} {e}", page.status),
        _ => format!(
            "{what}: HTTP {}: {}",
            page.status,
            crate::util::text::ellipsis(page.body.trim(), ERROR_BODY_CHARS)
        ),
    }
}

/// POSTs a form (a token request); `basic` is `client_secret_basic`'s header value.
pub(crate) fn post_form(
    agent: &ureq::Agent,
    url: &str,
    form: &[(String, String)],
    basic: Option<&str>,
    timeout: Duration,
) -> Result<Value, String> {
    let mut req = agent
        .post(url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .header("Accept", "application/json");
    if let Some(b) = basic {
        req = req.header("Authorization", b);
    }
    let page = req
        .send_form(form.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map(read)
        .map_err(|e| format!("POST {url}: {}", failed(e)))?;
    if !(200..300).contains(&page.status) {
        return Err(oauth_error(&format!("the token endpoint {url}"), &page));
    }
    serde_json::from_str(&page.body).map_err(|e| format!("{url}: the answer is not JSON: {e}"))
}

/// POSTs JSON (dynamic client registration).
pub(crate) fn post_json(
    agent: &ureq::Agent,
    url: &str,
    body: &Value,
    timeout: Duration,
) -> Result<Value, String> {
    let page = agent
        .post(url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .send(body.to_string().as_bytes())
        .map(read)
        .map_err(|e| format!("POST {url}: {}", failed(e)))?;
    if !(200..300).contains(&page.status) {
        return Err(oauth_error(
            &format!("the registration endpoint {url}"),
            &page,
        ));
    }
    serde_json::from_str(&page.body).map_err(|e| format!("{url}: the answer is not JSON: {e}"))
}
