//! The authorization code flow with PKCE (S256) and nobody at the keyboard: `agent`
//! listens on a loopback `redirect_uri`, fetches the authorization URL itself and follows
//! its redirects (bounded, carrying no credential: the URL holds only the client id, the
//! PKCE challenge, the state, the scopes and the resource) until one points at that
//! URI, and takes the code from it. An authorization server that auto-approves (a
//! pre-authorised client, a CI tenant) answers with such a redirect; one that answers
//! with a page needs a person, and the error says how to give a token instead.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::discovery::Found;
use super::grants::{self, Token};
use super::identity::Identity;
use super::{url, web};
use crate::util::jwt;

/// Redirects followed from the authorization URL before giving up.
const MAX_REDIRECTS: usize = 10;

/// The loopback listener whose address is the flow's `redirect_uri`: held for the flow,
/// so that the port stays ours.
pub(crate) struct Loopback {
    _listener: TcpListener,
    pub redirect_uri: String,
}

impl Loopback {
    pub(crate) fn bind(port: u16) -> Result<Loopback, String> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port} for the redirect: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("the redirect listener: {e}"))?
            .port();
        Ok(Loopback {
            _listener: listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }
}

fn random(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness: {e}"))?;
    Ok(jwt::base64url(&buf))
}

/// PKCE's S256 challenge of `verifier`.
pub(crate) fn challenge(verifier: &str) -> String {
    jwt::base64url(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()).as_ref())
}

/// What a person would have to do, for the error when the flow needs one.
fn needs_a_person(server: &str, why: &str) -> String {
    format!(
        "the authorization server wants a person: {why}. agent runs unattended; give \
         MCP server {server:?} a token instead (\"headers\": {{\"Authorization\": \"Bearer \
         ${{TOKEN}}\"}}), a refresh token (\"oauth\": {{\"refresh_token\": \"${{REFRESH_TOKEN}}\"}}), \
         or client credentials (\"oauth\": {{\"client_id\": …, \"client_secret\": …}})"
    )
}

/// Runs the flow; `server` names the MCP server in messages.
pub(crate) fn authorize(
    agent: &ureq::Agent,
    found: &Found,
    id: &Identity,
    loopback: &Loopback,
    scopes: &[String],
    server: &str,
    timeout: Duration,
) -> Result<Token, String> {
    let endpoint = found
        .issuer
        .authorization_endpoint
        .as_ref()
        .ok_or("the authorization server has no authorization_endpoint")?;
    let verifier = random(32)?;
    let state = random(16)?;
    let code_challenge = challenge(&verifier);
    let mut params = vec![
        ("response_type", "code"),
        ("client_id", id.client_id.as_str()),
        ("redirect_uri", loopback.redirect_uri.as_str()),
        ("code_challenge", code_challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", found.resource.as_str()),
    ];
    let scope = scopes.join(" ");
    if !scope.is_empty() {
        params.push(("scope", scope.as_str()));
    }
    let deadline = Instant::now() + timeout;
    let mut at = url::with_query(endpoint, &params);
    let mut code = None;
    for _ in 0..=MAX_REDIRECTS {
        if at.starts_with(&loopback.redirect_uri) {
            if let Some(err) = url::query_param(&at, "error") {
                let detail = url::query_param(&at, "error_description").unwrap_or_default();
                return Err(format!("the authorization was refused: {err} {detail}")
                    .trim()
                    .to_string());
            }
            if url::query_param(&at, "state").as_deref() != Some(state.as_str()) {
                return Err("the redirect's state does not match the request's: refused".into());
            }
            code = Some(
                url::query_param(&at, "code")
                    .ok_or("the redirect carries no authorization code")?,
            );
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let page = web::get(agent, &at, left)?;
        match (page.status, page.location) {
            (300..=399, Some(loc)) => at = url::resolve(&at, &loc),
            (200..=299, _) => {
                let kind = if page.content_type.is_empty() {
                    "no content type".to_string()
                } else {
                    page.content_type.clone()
                };
                return Err(needs_a_person(
                    server,
                    &format!(
                        "the authorization URL answered with a page (HTTP {}, {kind}), a login or consent screen",
                        page.status
                    ),
                ));
            }
            (status, _) => {
                return Err(format!(
                    "the authorization URL answered HTTP {status}: {}",
                    crate::util::text::ellipsis(page.body.trim(), 200)
                ));
            }
        }
    }
    let Some(code) = code else {
        return Err(needs_a_person(
            server,
            &format!("more than {MAX_REDIRECTS} redirects"),
        ));
    };
    crate::util::output::add_secret(&code);
    let form = vec![
        ("grant_type".to_string(), "authorization_code".to_string()),
        ("code".to_string(), code),
        ("redirect_uri".to_string(), loopback.redirect_uri.clone()),
        ("code_verifier".to_string(), verifier),
    ];
    let left = deadline.saturating_duration_since(Instant::now());
    // The scopes were granted with the code; the token request does not repeat them.
    let mut token = grants::request(agent, found, id, form, &[], left)?;
    if token.scopes.is_empty() {
        token.scopes = scopes.to_vec();
    }
    Ok(token)
}
