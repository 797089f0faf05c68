//! Google Application Default Credentials for Vertex AI, in Google's order:
//! `GOOGLE_APPLICATION_CREDENTIALS` naming a `service_account` key (an RS256 JWT
//! assertion, `util::jwt`, exchanged at its `token_uri`), an `authorized_user` file (its
//! refresh token) or an `external_account` file (workload identity federation, what
//! `google-github-actions/auth` writes: the subject token from a file or a URL, the STS
//! exchange at `token_url`, then `service_account_impersonation_url` if set); then the
//! gcloud ADC file; then the GCE metadata server. The access token is cached until
//! [`REFRESH_BEFORE`] its expiry.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::model::provider::token_http::{self, METADATA_TIMEOUT};
use crate::util::jwt::{Alg, SigningKey};

/// A token is fetched again this long before it expires (google-auth refreshes 3m45s
/// before; a turn can stream for minutes, so a little more).
const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);
/// The scope every Vertex AI call needs.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Lifetime asked of a service-account assertion and an impersonated token.
const TOKEN_LIFETIME_SECS: u64 = 3600;
/// Google's OAuth token endpoint (authorized_user files may omit `token_uri`).
const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The GCE metadata server's host (`GCE_METADATA_HOST` overrides it).
const METADATA_HOST: &str = "metadata.google.internal";

/// The variables ADC reads, taken once.
pub(crate) type GoogleEnv = BTreeMap<String, String>;

/// The process's variables that ADC reads.
pub(crate) fn process_env() -> GoogleEnv {
    std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("GOOGLE_")
                || k.starts_with("GCE_")
                || k.starts_with("CLOUDSDK_")
                || k == "HOME"
                || k == "ANTHROPIC_VERTEX_PROJECT_ID"
                || k == "GCLOUD_PROJECT"
        })
        .collect()
}

fn var<'e>(env: &'e GoogleEnv, name: &str) -> Option<&'e str> {
    env.get(name)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
}

/// What the token comes from.
enum Source {
    ServiceAccount {
        email: String,
        key_id: Option<String>,
        key: Box<SigningKey>,
        token_uri: String,
    },
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
    },
    ExternalAccount(Value),
    Metadata(String),
}

/// The resolved source, its cached token and the project its file names.
pub(crate) struct Adc {
    source: Source,
    /// Where it was found, for messages.
    origin: String,
    token: Option<(String, u64)>,
    /// `project_id` (or `quota_project_id`) of the credentials file.
    pub(crate) project: Option<String>,
}

impl Adc {
    /// Finds the credentials; a file that is named but unusable is the error.
    pub(crate) fn resolve(env: &GoogleEnv) -> Result<Adc, String> {
        if let Some(path) = var(env, "GOOGLE_APPLICATION_CREDENTIALS") {
            return from_file(&PathBuf::from(path), "GOOGLE_APPLICATION_CREDENTIALS");
        }
        let gcloud = var(env, "CLOUDSDK_CONFIG")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(var(env, "HOME").unwrap_or(".")).join(".config/gcloud")
            })
            .join("application_default_credentials.json");
        if gcloud.exists() {
            return from_file(&gcloud, "the gcloud ADC file");
        }
        let host = var(env, "GCE_METADATA_HOST")
            .or_else(|| var(env, "GCE_METADATA_IP"))
            .unwrap_or(METADATA_HOST);
        let base = if host.starts_with("http://") || host.starts_with("https://") {
            host.trim_end_matches('/').to_string()
        } else {
            format!("http://{host}")
        };
        // The metadata server answers at once on GCE; elsewhere nothing answers.
        let probe = token_http::call(
            "GET",
            &format!("{base}/computeMetadata/v1/instance/service-accounts/default/token"),
            &[("metadata-flavor", "Google")],
            None,
            METADATA_TIMEOUT,
        );
        match probe {
            Ok(a) if (200..300).contains(&a.status) => {
                let mut adc = Adc {
                    source: Source::Metadata(base),
                    origin: "the GCE metadata server".into(),
                    token: None,
                    project: None,
                };
                adc.token = Some(parse_token(&a.body, "the GCE metadata server", unix_now())?);
                Ok(adc)
            }
            other => {
                let why = match other {
                    Ok(a) => format!("HTTP {}", a.status),
                    Err(e) => e,
                };
                Err(format!(
                    "vertex: no Google credentials: tried GOOGLE_APPLICATION_CREDENTIALS, \
                     {}, the GCE metadata server ({why}); run `gcloud auth \
                     application-default login`, or use google-github-actions/auth",
                    gcloud.display()
                ))
            }
        }
    }

    /// A valid access token at `now`, fetched when none is cached or it nears expiry.
    pub(crate) fn token(&mut self, now: u64) -> Result<&str, String> {
        let fresh = self
            .token
            .as_ref()
            .is_some_and(|(_, exp)| *exp > now + REFRESH_BEFORE.as_secs());
        if !fresh {
            let had = self.token.is_some();
            let token = fetch(&self.source, now)
                .map_err(|e| format!("vertex: a token from {}: {e}", self.origin))?;
            if had {
                crate::util::output::debug(&format!(
                    "vertex: token refreshed from {}",
                    self.origin
                ));
            }
            self.token = Some(token);
        }
        Ok(self.token.as_ref().map_or("", |(t, _)| t.as_str()))
    }

    /// The values to redact: the token and the secrets of the file.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self.token.iter().map(|(t, _)| t.clone()).collect();
        if let Source::AuthorizedUser {
            client_secret,
            refresh_token,
            ..
        } = &self.source
        {
            out.extend([client_secret.clone(), refresh_token.clone()]);
        }
        out
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn from_file(path: &PathBuf, named_by: &str) -> Result<Adc, String> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("vertex: {named_by} {shown}: {e}"))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("vertex: {named_by} {shown} is not JSON: {e}"))?;
    let s = |k: &str| v[k].as_str().filter(|s| !s.is_empty()).map(String::from);
    let need = |k: &str| s(k).ok_or_else(|| format!("vertex: {named_by} {shown} has no {k}"));
    let project = s("project_id").or_else(|| s("quota_project_id"));
    let source = match v["type"].as_str().unwrap_or("") {
        "service_account" => Source::ServiceAccount {
            key: Box::new(
                SigningKey::from_pem(&need("private_key")?, Alg::Rs256)
                    .map_err(|e| format!("vertex: {named_by} {shown}: private_key: {e}"))?,
            ),
            email: need("client_email")?,
            key_id: s("private_key_id"),
            token_uri: s("token_uri").unwrap_or_else(|| GOOGLE_TOKEN_URI.into()),
        },
        "authorized_user" => Source::AuthorizedUser {
            client_id: need("client_id")?,
            client_secret: need("client_secret")?,
            refresh_token: need("refresh_token")?,
            token_uri: s("token_uri").unwrap_or_else(|| GOOGLE_TOKEN_URI.into()),
        },
        "external_account" => {
            need("token_url")?;
            need("audience")?;
            need("subject_token_type")?;
            Source::ExternalAccount(v.clone())
        }
        other => {
            return Err(format!(
                "vertex: {named_by} {shown}: credentials of type {other:?} are not supported \
                 (service_account, authorized_user, external_account are)"
            ));
        }
    };
    Ok(Adc {
        source,
        origin: format!("{named_by} {shown}"),
        token: None,
        project,
    })
}

/// `(access_token, expires at)` of an OAuth token answer (`expires_in` seconds).
pub(crate) fn parse_token(body: &str, from: &str, now: u64) -> Result<(String, u64), String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("{from} answered no token JSON: {e}"))?;
    let token = v["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{from} answered no access_token"))?;
    let expires_in = v["expires_in"].as_u64().unwrap_or(TOKEN_LIFETIME_SECS);
    Ok((token.to_string(), now.saturating_add(expires_in)))
}

fn post_form(url: &str, pairs: &[(&str, &str)], extra: &[(&str, &str)]) -> Result<String, String> {
    let mut headers = vec![("content-type", "application/x-www-form-urlencoded")];
    headers.extend_from_slice(extra);
    token_http::call(
        "POST",
        url,
        &headers,
        Some(&token_http::form(pairs)),
        Duration::from_secs(10),
    )?
    .ok(token_http::shown(url))
}

fn fetch(source: &Source, now: u64) -> Result<(String, u64), String> {
    match source {
        Source::ServiceAccount {
            email,
            key_id,
            key,
            token_uri,
        } => {
            let claims = json!({
                "iss": email, "scope": SCOPE, "aud": token_uri,
                "iat": now, "exp": now + TOKEN_LIFETIME_SECS,
            });
            let assertion = key.sign(key_id.as_deref(), &claims)?;
            let body = post_form(
                token_uri,
                &[
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    ("assertion", &assertion),
                ],
                &[],
            )?;
            parse_token(&body, token_http::shown(token_uri), now)
        }
        Source::AuthorizedUser {
            client_id,
            client_secret,
            refresh_token,
            token_uri,
        } => {
            let body = post_form(
                token_uri,
                &[
                    ("grant_type", "refresh_token"),
                    ("client_id", client_id),
                    ("client_secret", client_secret),
                    ("refresh_token", refresh_token),
                ],
                &[],
            )?;
            parse_token(&body, token_http::shown(token_uri), now)
        }
        Source::ExternalAccount(file) => external_account(file, now),
        Source::Metadata(base) => {
            let body = token_http::call(
                "GET",
                &format!("{base}/computeMetadata/v1/instance/service-accounts/default/token"),
                &[("metadata-flavor", "Google")],
                None,
                METADATA_TIMEOUT,
            )?
            .ok("the GCE metadata server")?;
            parse_token(&body, "the GCE metadata server", now)
        }
    }
}

/// Workload identity federation: the subject token, Google STS's token exchange, then
/// the service account's impersonation when the file names one.
fn external_account(file: &Value, now: u64) -> Result<(String, u64), String> {
    let s = |k: &str| file[k].as_str().unwrap_or("");
    let source = &file["credential_source"];
    let raw = if let Some(path) = source["file"].as_str() {
        std::fs::read_to_string(path).map_err(|e| format!("credential_source file {path}: {e}"))?
    } else if let Some(url) = source["url"].as_str() {
        let headers: Vec<(String, String)> = source["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| Some((k.to_ascii_lowercase(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        token_http::call("GET", url, &refs, None, Duration::from_secs(10))?
            .ok(&format!("credential_source url {}", token_http::shown(url)))?
    } else {
        return Err(
            "credential_source has neither file nor url (executable and AWS sources are not \
             supported)"
                .into(),
        );
    };
    let subject = match source["format"]["type"].as_str() {
        Some("json") => {
            let field = source["format"]["subject_token_field_name"]
                .as_str()
                .unwrap_or("access_token");
            let v: Value = serde_json::from_str(&raw)
                .map_err(|e| format!("the subject token source is not JSON: {e}"))?;
            v[field]
                .as_str()
                .ok_or_else(|| format!("the subject token JSON has no {field}"))?
                .to_string()
        }
        _ => raw.trim().to_string(),
    };
    let mut basic = String::new();
    if let (Some(id), Some(secret)) = (file["client_id"].as_str(), file["client_secret"].as_str()) {
        basic = format!(
            "Basic {}",
            crate::util::jwt::base64_std(format!("{id}:{secret}").as_bytes())
        );
    }
    let extra: Vec<(&str, &str)> = if basic.is_empty() {
        Vec::new()
    } else {
        vec![("authorization", basic.as_str())]
    };
    let sts_scope = if file["service_account_impersonation_url"].is_string() {
        SCOPE
    } else {
        file["scopes"][0].as_str().unwrap_or(SCOPE)
    };
    let body = post_form(
        s("token_url"),
        &[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("audience", s("audience")),
            ("scope", sts_scope),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("subject_token", &subject),
            ("subject_token_type", s("subject_token_type")),
        ],
        &extra,
    )?;
    let federated = parse_token(&body, "the STS token exchange", now)?;
    let Some(url) = file["service_account_impersonation_url"].as_str() else {
        return Ok(federated);
    };
    let lifetime = file["service_account_impersonation"]["token_lifetime_seconds"]
        .as_u64()
        .unwrap_or(TOKEN_LIFETIME_SECS);
    let bearer = format!("Bearer {}", federated.0);
    let request = json!({"scope": [SCOPE], "lifetime": format!("{lifetime}s")}).to_string();
    let body = token_http::call(
        "POST",
        url,
        &[
            ("content-type", "application/json"),
            ("authorization", &bearer),
        ],
        Some(&request),
        Duration::from_secs(10),
    )?
    .ok("the service account impersonation")?;
    let v: Value = serde_json::from_str(&body)
        .map_err(|e| format!("the impersonation answered no JSON: {e}"))?;
    let token = v["accessToken"]
        .as_str()
        .ok_or("the impersonation answered no accessToken")?;
    let expires = v["expireTime"]
        .as_str()
        .and_then(crate::model::provider::bedrock::sigv4::parse_utc)
        .unwrap_or(now + lifetime);
    Ok((token.to_string(), expires))
}
