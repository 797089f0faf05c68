//! Finding who issues tokens for an MCP server: its protected resource metadata (the
//! 401's `resource_metadata` per RFC 9728, else the well-known locations, path first),
//! then its authorization server's metadata (RFC 8414, then OpenID discovery), with the
//! 2025-03-26 fallbacks (no resource metadata: the server's origin is the authorization
//! server; no metadata either: `/authorize`, `/token`, `/register` at that origin).

use std::time::Duration;

use serde_json::Value;

use super::challenge::Challenge;
use super::{url, web};

/// An authorization server, as its metadata (or the fallback) describes it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Issuer {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub grant_types: Option<Vec<String>>,
    pub auth_methods: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`.
    pub accepts_metadata_documents: bool,
}

impl Issuer {
    pub(crate) fn supports_grant(&self, grant: &str) -> bool {
        self.grant_types
            .as_ref()
            .is_some_and(|g| g.iter().any(|x| x == grant))
    }
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The RFC 8707 `resource` of every authorization and token request.
    pub resource: String,
    /// The resource metadata's `scopes_supported`.
    pub resource_scopes: Option<Vec<String>>,
    pub issuer: Issuer,
}

fn strings(v: &Value, key: &str) -> Option<Vec<String>> {
    v.get(key).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The protected resource metadata, and the URL it came from.
fn resource_metadata(
    agent: &ureq::Agent,
    server: &str,
    challenge: &Challenge,
    timeout: Duration,
) -> Result<Option<Value>, String> {
    let mut urls = Vec::new();
    if let Some(u) = &challenge.resource_metadata {
        // The metadata decides where credentials go: only the server's own origin may
        // say so (a 401 naming another host's document is refused).
        if !url::same_origin(u, server) {
            return Err(format!(
                "the 401 names resource metadata at {u}, not on the server's own origin \
                 ({}): refused, no credential is sent there",
                url::origin(server).unwrap_or_default()
            ));
        }
        urls.push(u.clone());
    }
    urls.extend(url::well_known(server, "oauth-protected-resource", true));
    for u in urls {
        if let Some(doc) = web::get_json(agent, &u, timeout)?.filter(Value::is_object) {
            return Ok(Some(doc));
        }
    }
    Ok(None)
}

/// The metadata of `issuer`, or `None` when none of its well-known locations has it.
fn issuer_metadata(
    agent: &ureq::Agent,
    issuer: &str,
    timeout: Duration,
) -> Result<Option<Issuer>, String> {
    for u in url::as_metadata_urls(issuer) {
        let Some(m) = web::get_json(agent, &u, timeout)?.filter(Value::is_object) else {
            continue;
        };
        return issuer_from(&m, issuer, &u).map(Some);
    }
    Ok(None)
}

/// An authorization server's metadata document `m`, fetched from `u` for `issuer`.
pub(crate) fn issuer_from(m: &Value, issuer: &str, u: &str) -> Result<Issuer, String> {
    let Some(token_endpoint) = string(m, "token_endpoint") else {
        return Err(format!("{u}: the metadata has no token_endpoint"));
    };
    Ok(Issuer {
        issuer: string(m, "issuer").unwrap_or_else(|| issuer.to_string()),
        authorization_endpoint: string(m, "authorization_endpoint"),
        token_endpoint,
        registration_endpoint: string(m, "registration_endpoint"),
        scopes_supported: strings(m, "scopes_supported"),
        grant_types: strings(m, "grant_types_supported"),
        auth_methods: strings(m, "token_endpoint_auth_methods_supported"),
        accepts_metadata_documents: m
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// What a protected resource metadata document `doc` says for the MCP server at
/// `server`: the resource, its scopes and the authorization server to ask; refused when
/// the resource does not cover the server.
pub(crate) fn resource_from(
    doc: &Value,
    server: &str,
) -> Result<(String, Option<Vec<String>>, String), String> {
    let resource =
        string(doc, "resource").ok_or("the protected resource metadata has no \"resource\"")?;
    if !url::resource_covers(&resource, server) {
        return Err(format!(
            "the protected resource metadata is for {resource:?}, not for {server}: \
             refused (RFC 9728 §3.3), no authorization is attempted"
        ));
    }
    let issuer = strings(doc, "authorization_servers")
        .and_then(|a| a.into_iter().next())
        .ok_or("the protected resource metadata names no authorization_servers")?;
    Ok((resource, strings(doc, "scopes_supported"), issuer))
}

/// Runs discovery for the MCP server at `server`. `pinned`: the only issuer allowed.
pub(crate) fn discover(
    agent: &ureq::Agent,
    server: &str,
    challenge: &Challenge,
    pinned: Option<&str>,
    timeout: Duration,
) -> Result<Found, String> {
    let prm = resource_metadata(agent, server, challenge, timeout)?;
    let (resource, resource_scopes, issuer_url) = match &prm {
        Some(doc) => resource_from(doc, server)?,
        // 2025-03-26: the MCP server's origin is its authorization server.
        None => (
            url::canonical(server),
            None,
            url::origin(server).ok_or("the server URL has no origin")?,
        ),
    };
    if let Some(p) = pinned
        && url::canonical(p) != url::canonical(&issuer_url)
    {
        return Err(format!(
            "the server names the authorization server {issuer_url}, not the configured \
             \"authorization_server\" {p}: refused"
        ));
    }
    let issuer = match issuer_metadata(agent, &issuer_url, timeout)? {
        Some(m) => m,
        None => {
            let base = url::canonical(&issuer_url);
            Issuer {
                issuer: base.clone(),
                authorization_endpoint: Some(format!("{base}/authorize")),
                token_endpoint: format!("{base}/token"),
                registration_endpoint: Some(format!("{base}/register")),
                ..Issuer::default()
            }
        }
    };
    Ok(Found {
        resource,
        resource_scopes,
        issuer,
    })
}
