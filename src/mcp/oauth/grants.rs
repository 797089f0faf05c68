//! The token requests that need no person: `client_credentials`, `refresh_token`, the
//! code exchange of the authorization code flow, and enterprise-managed authorization
//! (cross-app access: the IdP's ID token exchanged at the IdP for an ID-JAG, RFC 8693,
//! then a JWT bearer grant, RFC 7523, at the MCP server's authorization server). Every
//! request carries the RFC 8707 `resource`. Each token received is added to the values
//! redacted everywhere.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::config::OAuthSpec;
use super::discovery::Found;
use super::identity::{self, Identity};
use super::web;

/// An access token and what came with it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub access: String,
    pub refresh: Option<String>,
    /// Unix seconds.
    pub expires_at: Option<u64>,
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "token (scopes {:?}, expires {:?})",
            self.scopes, self.expires_at
        )
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A token response (RFC 6749 §5.1). `asked`: the scopes requested, the token's when
/// the answer does not say. Its tokens join the values redacted everywhere.
fn token(answer: &Value, asked: &[String], old_refresh: Option<&str>) -> Result<Token, String> {
    let t = read_token(answer, asked, old_refresh, now_secs())?;
    crate::util::output::add_secret(&t.access);
    if let Some(r) = &t.refresh {
        crate::util::output::add_secret(r);
    }
    Ok(t)
}

/// `token`'s reading of the answer at the time `now`, pure (the fuzz target's door).
pub(crate) fn read_token(
    answer: &Value,
    asked: &[String],
    old_refresh: Option<&str>,
    now: u64,
) -> Result<Token, String> {
    let access = answer
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("the token response has no access_token")?
        .to_string();
    let refresh = answer
        .get("refresh_token")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| old_refresh.map(str::to_string));
    let expires_at = answer
        .get("expires_in")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .map(|s| now.saturating_add(s))
        .or_else(|| jwt_expiry(&access));
    let scopes = match answer.get("scope").and_then(Value::as_str) {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => asked.to_vec(),
    };
    Ok(Token {
        access,
        refresh,
        expires_at,
        scopes,
    })
}

/// The `exp` of an access token that is a JWT, for a response without `expires_in`
/// (the token is only read, never trusted for anything else).
pub(crate) fn jwt_expiry(token: &str) -> Option<u64> {
    let claims = token.split('.').nth(1)?;
    let bytes = crate::util::jwt::base64url_decode(claims).ok()?;
    serde_json::from_slice::<Value>(&bytes)
        .ok()?
        .get("exp")?
        .as_u64()
}

fn pair(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

/// POSTs a token request with the client's authentication.
pub(crate) fn request(
    agent: &ureq::Agent,
    found: &Found,
    id: &Identity,
    mut form: Vec<(String, String)>,
    scopes: &[String],
    timeout: Duration,
) -> Result<Token, String> {
    form.push(pair("resource", &found.resource));
    if !scopes.is_empty() && !form.iter().any(|(k, _)| k == "scope") {
        form.push(pair("scope", &scopes.join(" ")));
    }
    let basic = identity::authenticate(id, &mut form, &found.issuer.issuer)?;
    let old_refresh = form
        .iter()
        .find(|(k, _)| k == "refresh_token")
        .map(|(_, v)| v.clone());
    let answer = web::post_form(
        agent,
        &found.issuer.token_endpoint,
        &form,
        basic.as_deref(),
        timeout,
    )?;
    token(&answer, scopes, old_refresh.as_deref())
}

pub(crate) fn client_credentials(
    agent: &ureq::Agent,
    found: &Found,
    id: &Identity,
    scopes: &[String],
    timeout: Duration,
) -> Result<Token, String> {
    request(
        agent,
        found,
        id,
        vec![pair("grant_type", "client_credentials")],
        scopes,
        timeout,
    )
}

pub(crate) fn refresh(
    agent: &ureq::Agent,
    found: &Found,
    id: &Identity,
    refresh_token: &str,
    scopes: &[String],
    timeout: Duration,
) -> Result<Token, String> {
    let form = vec![
        pair("grant_type", "refresh_token"),
        pair("refresh_token", refresh_token),
    ];
    request(agent, found, id, form, scopes, timeout)
}

/// Enterprise-managed authorization: the ID-JAG from the IdP, then the JWT bearer grant.
pub(crate) fn cross_app(
    agent: &ureq::Agent,
    found: &Found,
    spec: &OAuthSpec,
    id: &Identity,
    scopes: &[String],
    timeout: Duration,
) -> Result<Token, String> {
    let (Some(id_token), Some(idp)) = (&spec.idp_id_token, &spec.idp_token_endpoint) else {
        return Err("cross-app access needs \"idp_id_token\" and \"idp_token_endpoint\"".into());
    };
    let mut form = vec![
        pair(
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        pair(
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:id-jag",
        ),
        pair("subject_token", id_token),
        pair(
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:id_token",
        ),
        pair("audience", &found.issuer.issuer),
        pair("resource", &found.resource),
    ];
    if !scopes.is_empty() {
        form.push(pair("scope", &scopes.join(" ")));
    }
    if let Some(c) = &spec.idp_client_id {
        form.push(pair("client_id", c));
    }
    if let Some(s) = &spec.idp_client_secret {
        form.push(pair("client_secret", s));
    }
    let answer = web::post_form(agent, idp, &form, None, timeout)
        .map_err(|e| format!("the IdP's token exchange: {e}"))?;
    let jag = answer
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or("the IdP's token exchange returned no access_token (the ID-JAG)")?
        .to_string();
    crate::util::output::add_secret(&jag);
    let form = vec![
        pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        pair("assertion", &jag),
    ];
    request(agent, found, id, form, scopes, timeout)
}
