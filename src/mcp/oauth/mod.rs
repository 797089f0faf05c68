//! OAuth 2.1 for HTTP MCP servers with nobody at the keyboard (the MCP authorization spec,
//! 2025-03-26 to 2025-11-25). One `Authorizer` per server: the transport asks it for the
//! bearer token of each request, and hands it the server's 401 (`unauthorized`) and 403
//! `insufficient_scope` (`step_up`) answers. The parts, one concern each: `challenge`
//! (WWW-Authenticate), `discovery` (resource and authorization server metadata),
//! `identity` (who the client is and how it authenticates), `grants` (the token requests),
//! `browserless` (the authorization code flow without a browser), `cache`
//! (`--mcp-token-cache`), `web` (the HTTP, never following a redirect) and `url`.
//!
//! Where credentials go: the access token only to the server's own URL (the transport
//! follows no redirect); client secrets, assertions, refresh tokens and codes only to the
//! token endpoint of the authorization server that the server's own-origin metadata names
//! (and, with `authorization_server`, only to that one); an ID token only to the
//! configured IdP. Every token and secret is redacted from all output.

mod browserless;
mod cache;
mod challenge;
pub(crate) mod config;
pub(crate) mod discovery;
pub(crate) mod grants;
mod identity;
pub(crate) mod url;
mod web;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

pub(crate) use challenge::Challenge;
use config::{Grant, OAuthSpec};
use discovery::Found;
use grants::Token;
use identity::Identity;

use crate::util::sync::Locked;

/// A token this close to its expiry is renewed before the next request.
const RENEW_BEFORE_SECS: u64 = 60;

#[derive(Default)]
struct State {
    found: Option<Found>,
    identity: Option<Identity>,
    loopback: Option<browserless::Loopback>,
    token: Option<Token>,
    /// The scopes asked for last (step-up adds to them).
    scopes: Vec<String>,
}

/// The OAuth state of one server.
pub(crate) struct Authorizer {
    name: String,
    url: String,
    spec: OAuthSpec,
    cache: Option<PathBuf>,
    agent: ureq::Agent,
    state: Mutex<State>,
}

impl Authorizer {
    pub(crate) fn new(name: &str, url: &str, spec: OAuthSpec, cache: Option<PathBuf>) -> Self {
        let token = cache.as_deref().and_then(|f| cache::load(f, url));
        Authorizer {
            name: name.to_string(),
            url: url.to_string(),
            spec,
            cache,
            agent: web::agent(),
            state: Mutex::new(State {
                token,
                ..State::default()
            }),
        }
    }

    fn log(&self, msg: &str) {
        crate::util::output::debug(&format!("mcp {}: OAuth: {msg}", self.name));
    }

    /// The access token to send, if there is one.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.state.locked().token.as_ref().map(|t| t.access.clone())
    }

    /// Renews a token about to expire (refresh token, else the grant again, when that
    /// needs no person); a failure is logged and the request goes with the old one.
    pub(crate) fn before_request(&self, timeout: Duration) {
        let mut st = self.state.locked();
        let due = st
            .token
            .as_ref()
            .and_then(|t| t.expires_at)
            .is_some_and(|at| at <= grants::now_secs() + RENEW_BEFORE_SECS);
        if !due || st.found.is_none() {
            return;
        }
        self.log("the token is about to expire; renewing it");
        if let Err(e) = self.renew(&mut st, timeout) {
            self.log(&format!("renewing failed: {e}"));
        }
    }

    /// After a 401: a refresh if a token was sent and can be refreshed, else discovery
    /// (from the challenge) and a new grant.
    pub(crate) fn unauthorized(&self, www: Option<&str>, timeout: Duration) -> Result<(), String> {
        let challenge = Challenge::parse(www.unwrap_or(""));
        let mut st = self.state.locked();
        if st.token.is_some() && st.found.is_some() {
            self.log("the token was refused (401)");
            if self.renew(&mut st, timeout).is_ok() {
                return Ok(());
            }
        }
        st.token = None;
        let found = discovery::discover(
            &self.agent,
            &self.url,
            &challenge,
            self.spec.authorization_server.as_deref(),
            timeout,
        )?;
        self.log(&format!(
            "authorization server {} (token endpoint {}), resource {}",
            found.issuer.issuer, found.issuer.token_endpoint, found.resource
        ));
        st.scopes = self.spec.scopes.clone().unwrap_or_else(|| {
            challenge
                .scope
                .clone()
                .or_else(|| found.resource_scopes.clone())
                .unwrap_or_default()
        });
        st.found = Some(found);
        self.obtain(&mut st, timeout)
    }

    /// After a 403 `insufficient_scope`: a new grant for the scopes held plus those the
    /// challenge names. The caller bounds how often.
    pub(crate) fn step_up(&self, www: Option<&str>, timeout: Duration) -> Result<(), String> {
        let challenge = Challenge::parse(www.unwrap_or(""));
        let mut st = self.state.locked();
        if st.found.is_none() {
            drop(st);
            return self.unauthorized(www, timeout);
        }
        let mut scopes = st.scopes.clone();
        for s in challenge.scope.into_iter().flatten() {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        self.log(&format!(
            "403 insufficient_scope: asking for {:?}",
            scopes.join(" ")
        ));
        st.scopes = scopes;
        self.obtain(&mut st, timeout)
    }

    /// The refresh token if there is one, else the grant again when it needs no person.
    fn renew(&self, st: &mut State, timeout: Duration) -> Result<(), String> {
        let refresh = st.token.as_ref().and_then(|t| t.refresh.clone());
        let (Some(found), Some(refresh)) = (st.found.clone(), refresh) else {
            return self.obtain(st, timeout);
        };
        let id = self.identity(st, false, timeout)?;
        let token = grants::refresh(&self.agent, &found, &id, &refresh, &st.scopes, timeout)?;
        self.log("refreshed the token");
        self.keep(st, token);
        Ok(())
    }

    /// Which grant gets the first token: the block's `grant_type`, else what the
    /// configuration has (an IdP token, a refresh token, a secret or key the server
    /// takes for `client_credentials`), else the authorization code flow.
    fn grant(&self, found: &Found) -> Grant {
        if let Some(g) = self.spec.grant {
            return g;
        }
        if self.spec.idp_id_token.is_some() {
            return Grant::CrossApp;
        }
        if self.spec.refresh_token.is_some() {
            return Grant::RefreshToken;
        }
        let confidential = self.spec.client_secret.is_some() || self.spec.private_key.is_some();
        if confidential && found.issuer.supports_grant("client_credentials") {
            return Grant::ClientCredentials;
        }
        Grant::AuthorizationCode
    }

    fn identity(
        &self,
        st: &mut State,
        redirect: bool,
        timeout: Duration,
    ) -> Result<Identity, String> {
        if let Some(id) = &st.identity {
            return Ok(id.clone());
        }
        let found = st
            .found
            .clone()
            .ok_or("no authorization server discovered")?;
        if redirect && st.loopback.is_none() {
            st.loopback = Some(browserless::Loopback::bind(self.spec.redirect_port)?);
        }
        let redirect_uri = st.loopback.as_ref().map(|l| l.redirect_uri.clone());
        let id = identity::identify(
            &self.spec,
            &found.issuer,
            redirect_uri.as_deref().filter(|_| redirect),
            &self.agent,
            timeout,
        )?;
        self.log(&format!("{id:?}"));
        st.identity = Some(id.clone());
        Ok(id)
    }

    /// Runs the grant for `st.scopes` and keeps the token.
    fn obtain(&self, st: &mut State, timeout: Duration) -> Result<(), String> {
        let found = st
            .found
            .clone()
            .ok_or("no authorization server discovered")?;
        let grant = self.grant(&found);
        let mut scopes = st.scopes.clone();
        // A refresh token needs offline_access where the server lists it (SEP-2207);
        // never where it does not.
        let offline = "offline_access".to_string();
        let lists_offline = found
            .issuer
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.contains(&offline));
        if grant == Grant::AuthorizationCode && lists_offline && !scopes.contains(&offline) {
            scopes.push(offline);
        }
        let id = self.identity(st, grant == Grant::AuthorizationCode, timeout)?;
        self.log(&format!("{grant:?} grant, scopes {:?}", scopes.join(" ")));
        let token = match grant {
            Grant::ClientCredentials => {
                grants::client_credentials(&self.agent, &found, &id, &scopes, timeout)
            }
            Grant::RefreshToken => {
                let refresh = st
                    .token
                    .as_ref()
                    .and_then(|t| t.refresh.clone())
                    .or_else(|| self.spec.refresh_token.clone())
                    .ok_or("no refresh token")?;
                grants::refresh(&self.agent, &found, &id, &refresh, &scopes, timeout)
            }
            Grant::CrossApp => {
                grants::cross_app(&self.agent, &found, &self.spec, &id, &scopes, timeout)
            }
            Grant::AuthorizationCode => {
                let loopback = st.loopback.as_ref().ok_or("no redirect listener")?;
                browserless::authorize(
                    &self.agent,
                    &found,
                    &id,
                    loopback,
                    &scopes,
                    &self.name,
                    timeout,
                )
            }
        }?;
        self.keep(st, token);
        Ok(())
    }

    fn keep(&self, st: &mut State, token: Token) {
        self.log(&format!("got a {token:?}"));
        if let Some(f) = &self.cache {
            cache::store(f, &self.url, &token);
        }
        st.token = Some(token);
    }
}
