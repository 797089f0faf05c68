//! Who the client is at the authorization server, in the order: credentials
//! pre-registered in the `oauth` block, a Client ID Metadata Document URL (where the
//! server accepts them), dynamic client registration (RFC 7591); and how it proves it at
//! the token endpoint (`client_secret_basic`, `client_secret_post`, `none`,
//! `private_key_jwt` with RS256 or ES256).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::config::{AuthMethod, OAuthSpec};
use super::discovery::Issuer;
use super::{url, web};
use crate::util::jwt::{self, Alg, SigningKey};

/// Lifetime of a `private_key_jwt` assertion.
const ASSERTION_SECONDS: u64 = 300;

/// The client, as the token endpoint will know it.
#[derive(Clone)]
pub(crate) struct Identity {
    pub client_id: String,
    pub secret: Option<String>,
    pub method: AuthMethod,
    pub key: Option<std::sync::Arc<SigningKey>>,
    pub key_id: Option<String>,
    /// How it was obtained, for the -v log.
    pub source: &'static str,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "client {:?} ({}, {}",
            self.client_id,
            self.source,
            self.method.as_str()
        )?;
        match &self.key {
            Some(k) => write!(f, " {})", k.alg().as_str()),
            None => f.write_str(")"),
        }
    }
}

/// The method for a client with `secret`/`key`, when neither the block nor a
/// registration said: the first the server lists that the client can do.
fn pick_method(
    spec_method: Option<AuthMethod>,
    has_secret: bool,
    has_key: bool,
    issuer: &Issuer,
) -> AuthMethod {
    if let Some(m) = spec_method {
        return m;
    }
    if has_key {
        return AuthMethod::PrivateKeyJwt;
    }
    if !has_secret {
        return AuthMethod::None;
    }
    let listed = issuer.auth_methods.clone().unwrap_or_default();
    listed
        .iter()
        .filter_map(|m| AuthMethod::parse(m))
        .find(|m| matches!(m, AuthMethod::Basic | AuthMethod::Post))
        // RFC 8414's default is client_secret_basic.
        .unwrap_or(AuthMethod::Basic)
}

/// Dynamic client registration's metadata for this client.
fn registration_request(redirect_uri: Option<&str>, grants: &[&str], method: AuthMethod) -> Value {
    let mut body = json!({
        "client_name": "agent",
        "grant_types": grants,
        "token_endpoint_auth_method": method.as_str(),
        "software_id": "agent",
        "software_version": env!("CARGO_PKG_VERSION"),
    });
    if let Some(r) = redirect_uri {
        body["redirect_uris"] = json!([r]);
        body["response_types"] = json!(["code"]);
    }
    body
}

/// Who the client is for `issuer`. `redirect_uri`: the loopback URI the authorization
/// code flow will use (registered with DCR). `registered` gets each new secret, to
/// redact.
pub(crate) fn identify(
    spec: &OAuthSpec,
    issuer: &Issuer,
    redirect_uri: Option<&str>,
    agent: &ureq::Agent,
    timeout: Duration,
) -> Result<Identity, String> {
    if let Some(id) = &spec.client_id {
        let key = match &spec.private_key {
            Some(pem) => {
                let alg = Alg::parse(spec.signing_algorithm.as_deref().unwrap_or("RS256"))?;
                Some(std::sync::Arc::new(SigningKey::from_pem(pem, alg)?))
            }
            None => None,
        };
        let method = pick_method(
            spec.auth_method,
            spec.client_secret.is_some(),
            key.is_some(),
            issuer,
        );
        return Ok(Identity {
            client_id: id.clone(),
            secret: spec.client_secret.clone(),
            method,
            key,
            key_id: spec.key_id.clone(),
            source: "pre-registered",
        });
    }
    if let Some(doc) = &spec.client_metadata_url
        && issuer.accepts_metadata_documents
    {
        return Ok(Identity {
            client_id: doc.clone(),
            secret: None,
            method: AuthMethod::None,
            key: None,
            key_id: None,
            source: "client ID metadata document",
        });
    }
    let Some(endpoint) = &issuer.registration_endpoint else {
        return Err(format!(
            "the authorization server {} offers no dynamic client registration: give \
             \"oauth\": {{\"client_id\": …}} (and a \"client_secret\" or \"private_key\")",
            issuer.issuer
        ));
    };
    // A public client unless the server only takes secrets.
    let listed = issuer.auth_methods.clone().unwrap_or_default();
    let wanted = if listed.is_empty() || listed.iter().any(|m| m == "none") {
        AuthMethod::None
    } else {
        pick_method(None, true, false, issuer)
    };
    let grants: &[&str] = if redirect_uri.is_some() {
        &["authorization_code", "refresh_token"]
    } else {
        &["client_credentials"]
    };
    let answer = web::post_json(
        agent,
        endpoint,
        &registration_request(redirect_uri, grants, wanted),
        timeout,
    )?;
    let client_id = answer
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the registration at {endpoint} returned no client_id"))?
        .to_string();
    let secret = answer
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if let Some(s) = &secret {
        crate::util::output::add_secret(s);
    }
    let method = match answer
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .and_then(AuthMethod::parse)
    {
        Some(m) => m,
        None if secret.is_some() => pick_method(None, true, false, issuer),
        None => AuthMethod::None,
    };
    Ok(Identity {
        client_id,
        secret,
        method,
        key: None,
        key_id: None,
        source: "dynamic registration",
    })
}

/// `application/x-www-form-urlencoded` of one credential (RFC 6749 §2.3.1 asks for it
/// before the Basic encoding).
fn form_encode(s: &str) -> String {
    url::encode(s)
}

/// Adds the client's authentication to a token request's `form`; returns the
/// `Authorization` header value for `client_secret_basic`. `audience`: the
/// authorization server's issuer, the `aud` of a `private_key_jwt` assertion.
pub(crate) fn authenticate(
    id: &Identity,
    form: &mut Vec<(String, String)>,
    audience: &str,
) -> Result<Option<String>, String> {
    let secret = || {
        id.secret.clone().ok_or_else(|| {
            format!(
                "token_endpoint_auth_method {} needs \"client_secret\"",
                id.method.as_str()
            )
        })
    };
    let mut push = |k: &str, v: String| form.push((k.to_string(), v));
    match id.method {
        AuthMethod::Basic => {
            let pair = format!("{}:{}", form_encode(&id.client_id), form_encode(&secret()?));
            return Ok(Some(format!("Basic {}", jwt::base64_std(pair.as_bytes()))));
        }
        AuthMethod::Post => {
            push("client_id", id.client_id.clone());
            push("client_secret", secret()?);
        }
        AuthMethod::None => push("client_id", id.client_id.clone()),
        AuthMethod::PrivateKeyJwt => {
            let key = id
                .key
                .as_ref()
                .ok_or("token_endpoint_auth_method private_key_jwt needs \"private_key\"")?;
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let mut jti = [0u8; 16];
            getrandom::fill(&mut jti).map_err(|e| format!("no randomness: {e}"))?;
            let claims = json!({
                "iss": id.client_id, "sub": id.client_id, "aud": audience,
                "iat": now, "exp": now + ASSERTION_SECONDS, "jti": jwt::base64url(&jti),
            });
            let assertion = key.sign(id.key_id.as_deref(), &claims)?;
            push("client_id", id.client_id.clone());
            push(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            );
            push("client_assertion", assertion);
        }
    }
    Ok(None)
}
