//! The `"oauth"` block of an HTTP server's `.mcp.json` entry: the client's identity and
//! how it gets a token with nobody at the keyboard. Every string value may hold `${VAR}`
//! (expanded by the caller's `expand`, which also collects the values to redact).
//! Unknown keys are mistakes, as elsewhere in the file.

use serde::Deserialize;
use serde_json::Value;

/// How the client authenticates at the token endpoint (RFC 8414 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    Basic,
    Post,
    None,
    PrivateKeyJwt,
}

impl AuthMethod {
    pub(crate) fn parse(name: &str) -> Option<AuthMethod> {
        Some(match name {
            "client_secret_basic" => AuthMethod::Basic,
            "client_secret_post" => AuthMethod::Post,
            "none" => AuthMethod::None,
            "private_key_jwt" => AuthMethod::PrivateKeyJwt,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }
}

/// The grant that gets the first token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    ClientCredentials,
    AuthorizationCode,
    RefreshToken,
    /// Enterprise-managed authorization (cross-app access): the IdP's ID token exchanged
    /// for an authorization grant, then a JWT bearer grant.
    CrossApp,
}

impl Grant {
    fn parse(name: &str) -> Option<Grant> {
        Some(match name {
            "client_credentials" => Grant::ClientCredentials,
            "authorization_code" => Grant::AuthorizationCode,
            "refresh_token" => Grant::RefreshToken,
            "cross_app_access" | "urn:ietf:params:oauth:grant-type:jwt-bearer" => Grant::CrossApp,
            _ => return None,
        })
    }
}

/// The validated block. `disabled`: `"oauth": false` (a 401 is then just an error).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OAuthSpec {
    pub disabled: bool,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Requested instead of what the server asks for (each step-up adds its scopes).
    pub scopes: Option<Vec<String>>,
    pub auth_method: Option<AuthMethod>,
    /// PEM text, for `private_key_jwt`.
    pub private_key: Option<String>,
    /// "RS256" or "ES256".
    pub signing_algorithm: Option<String>,
    pub key_id: Option<String>,
    /// A Client ID Metadata Document URL, used as the client id where the authorization
    /// server accepts them.
    pub client_metadata_url: Option<String>,
    pub grant: Option<Grant>,
    pub refresh_token: Option<String>,
    pub idp_id_token: Option<String>,
    pub idp_token_endpoint: Option<String>,
    pub idp_client_id: Option<String>,
    pub idp_client_secret: Option<String>,
    /// The loopback port of the authorization code flow's redirect URI (0: any free one).
    pub redirect_port: u16,
    /// The only authorization server (issuer URL) credentials may go to.
    pub authorization_server: Option<String>,
}

impl OAuthSpec {
    /// The secrets in the block, to redact everywhere.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        [
            &self.client_secret,
            &self.private_key,
            &self.refresh_token,
            &self.idp_id_token,
            &self.idp_client_secret,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    client_id: Option<String>,
    client_secret: Option<String>,
    scopes: Option<Value>,
    token_endpoint_auth_method: Option<String>,
    private_key: Option<String>,
    signing_algorithm: Option<String>,
    key_id: Option<String>,
    client_metadata_url: Option<String>,
    grant_type: Option<String>,
    refresh_token: Option<String>,
    idp_id_token: Option<String>,
    idp_token_endpoint: Option<String>,
    idp_client_id: Option<String>,
    idp_client_secret: Option<String>,
    redirect_port: Option<u16>,
    authorization_server: Option<String>,
}

/// Parses the block (`true`/`false` or an object); `expand` expands `${VAR}`.
pub(crate) fn parse(
    value: &Value,
    expand: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<OAuthSpec, String> {
    let raw = match value {
        Value::Bool(on) => {
            return Ok(OAuthSpec {
                disabled: !on,
                ..OAuthSpec::default()
            });
        }
        Value::Object(_) => {
            serde_json::from_value::<Raw>(value.clone()).map_err(|e| format!("\"oauth\": {e}"))?
        }
        _ => return Err("\"oauth\" must be an object, true or false".into()),
    };
    let mut x = |key: &str, v: Option<String>| -> Result<Option<String>, String> {
        v.map(|s| expand(&s).map_err(|e| format!("\"oauth\".{key}: {e}")))
            .transpose()
            .map(|v| v.filter(|s| !s.is_empty()))
    };
    let scopes = match raw.scopes {
        None => None,
        Some(Value::String(s)) => Some(x("scopes", Some(s))?.unwrap_or_default()),
        Some(Value::Array(a)) => {
            let mut words = Vec::new();
            for v in a {
                let Value::String(s) = v else {
                    return Err("\"oauth\".scopes: a list of strings, or one string".into());
                };
                words.push(x("scopes", Some(s))?.unwrap_or_default());
            }
            Some(words.join(" "))
        }
        Some(_) => return Err("\"oauth\".scopes: a list of strings, or one string".into()),
    }
    .map(|s| s.split_whitespace().map(str::to_string).collect());
    let auth_method = match x("token_endpoint_auth_method", raw.token_endpoint_auth_method)? {
        None => None,
        Some(m) => Some(AuthMethod::parse(&m).ok_or_else(|| {
            format!(
                "\"oauth\".token_endpoint_auth_method {m:?}: expected client_secret_basic, \
                 client_secret_post, none or private_key_jwt"
            )
        })?),
    };
    let grant = match x("grant_type", raw.grant_type)? {
        None => None,
        Some(g) => Some(Grant::parse(&g).ok_or_else(|| {
            format!(
                "\"oauth\".grant_type {g:?}: expected client_credentials, authorization_code, \
                 refresh_token or cross_app_access"
            )
        })?),
    };
    let signing_algorithm = x("signing_algorithm", raw.signing_algorithm)?;
    if let Some(a) = &signing_algorithm {
        crate::util::jwt::Alg::parse(a).map_err(|e| format!("\"oauth\".signing_algorithm: {e}"))?;
    }
    let private_key = x("private_key", raw.private_key)?;
    if let Some(pem) = &private_key {
        let alg = crate::util::jwt::Alg::parse(signing_algorithm.as_deref().unwrap_or("RS256"))?;
        crate::util::jwt::SigningKey::from_pem(pem, alg)
            .map_err(|e| format!("\"oauth\".private_key: {e}"))?;
    }
    let spec = OAuthSpec {
        disabled: false,
        client_id: x("client_id", raw.client_id)?,
        client_secret: x("client_secret", raw.client_secret)?,
        scopes,
        auth_method,
        private_key,
        signing_algorithm,
        key_id: x("key_id", raw.key_id)?,
        client_metadata_url: x("client_metadata_url", raw.client_metadata_url)?,
        grant,
        refresh_token: x("refresh_token", raw.refresh_token)?,
        idp_id_token: x("idp_id_token", raw.idp_id_token)?,
        idp_token_endpoint: x("idp_token_endpoint", raw.idp_token_endpoint)?,
        idp_client_id: x("idp_client_id", raw.idp_client_id)?,
        idp_client_secret: x("idp_client_secret", raw.idp_client_secret)?,
        redirect_port: raw.redirect_port.unwrap_or(0),
        authorization_server: x("authorization_server", raw.authorization_server)?,
    };
    if spec.idp_id_token.is_some() && spec.idp_token_endpoint.is_none() {
        return Err(
            "\"oauth\".idp_id_token needs \"idp_token_endpoint\" (the IdP's token endpoint)".into(),
        );
    }
    if spec.private_key.is_some() && spec.client_id.is_none() {
        return Err("\"oauth\".private_key needs \"client_id\"".into());
    }
    if spec.client_secret.is_some() && spec.client_id.is_none() {
        return Err("\"oauth\".client_secret needs \"client_id\"".into());
    }
    if spec.grant == Some(Grant::RefreshToken) && spec.refresh_token.is_none() {
        return Err("\"oauth\".grant_type \"refresh_token\" needs \"refresh_token\"".into());
    }
    Ok(spec)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
