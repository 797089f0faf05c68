//! AWS credentials for Bedrock, found in the AWS SDKs' order and kept fresh: the
//! environment's keys (what `aws-actions/configure-aws-credentials` exports), web
//! identity (`AWS_ROLE_ARN` + `AWS_WEB_IDENTITY_TOKEN_FILE` → STS
//! `AssumeRoleWithWebIdentity`), the `AWS_PROFILE` of the shared config and credentials
//! files (static keys, `role_arn` with `source_profile` / `credential_source` /
//! `web_identity_token_file`, `credential_process`), the ECS/EKS container endpoint and
//! EC2's IMDSv2. Temporary credentials are fetched again from the same source
//! [`REFRESH_BEFORE`] their expiry, so a long run never signs with expired keys.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::sigv4::{self, AwsCredentials};
use crate::model::provider::token_http::{self, METADATA_TIMEOUT};

/// Temporary credentials are replaced this long before they expire (botocore's
/// mandatory refresh window): a request signed now is still valid when it arrives, and
/// a turn that streams for minutes starts with room to spare.
const REFRESH_BEFORE: Duration = Duration::from_secs(10 * 60);
/// `role_arn` → `source_profile` chains followed at most (a loop is refused by this).
const MAX_PROFILE_DEPTH: usize = 5;
/// The ECS task-role endpoint a relative URI is on.
const ECS_ENDPOINT: &str = "http://169.254.170.2";
/// EC2's instance metadata service.
const IMDS_ENDPOINT: &str = "http://169.254.169.254";
/// Lifetime asked of an IMDSv2 session token (the SDKs' 6 hours).
const IMDS_TOKEN_TTL_SECONDS: &str = "21600";
/// The STS API version of the query API.
const STS_VERSION: &str = "2011-06-15";

/// The variables the chain reads, taken once (`AWS_*`, `HOME`), so that tests and the
/// process give it the same thing.
pub(crate) type AwsEnv = BTreeMap<String, String>;

/// The environment's `AWS_*` variables and `HOME`.
pub(crate) fn process_env() -> AwsEnv {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_") || k == "HOME")
        .collect()
}

fn var<'e>(env: &'e AwsEnv, name: &str) -> Option<&'e str> {
    env.get(name)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
}

/// The `region` of the `AWS_PROFILE` (else `default`) in the shared config files, which
/// the SDKs use when `AWS_REGION` and `AWS_DEFAULT_REGION` are unset.
pub(crate) fn profile_region(env: &AwsEnv) -> Option<String> {
    let profile = var(env, "AWS_PROFILE").unwrap_or("default");
    let files = ProfileFiles::read(env).ok()?;
    files
        .get(profile)?
        .get("region")
        .filter(|r| !r.trim().is_empty())
        .map(|r| r.trim().to_string())
}

/// Where the credentials came from, to fetch them again from there.
#[derive(Clone, Debug)]
enum Source {
    Env,
    WebIdentity,
    Profile(String),
    Container,
    Imds,
}

impl Source {
    fn name(&self) -> String {
        match self {
            Source::Env => "env".into(),
            Source::WebIdentity => "web identity".into(),
            Source::Profile(p) => format!("profile {p:?}"),
            Source::Container => "container".into(),
            Source::Imds => "IMDS".into(),
        }
    }
}

/// Credentials and when they stop working (Unix seconds; `None`: long-term keys).
#[derive(Clone, Debug)]
pub(crate) struct Timed {
    pub creds: AwsCredentials,
    pub expires: Option<u64>,
}

/// The resolved source and its current credentials.
pub(crate) struct Chain {
    env: AwsEnv,
    region: String,
    source: Source,
    current: Timed,
}

impl Chain {
    /// Finds the first source that has credentials. A source that is configured but
    /// fails is the error (as the SDKs do); none configured is the error naming each.
    pub(crate) fn resolve(env: AwsEnv, region: &str, now: u64) -> Result<Chain, String> {
        let profile = var(&env, "AWS_PROFILE").unwrap_or("default").to_string();
        let mut tried = Vec::new();
        let mut imds_why = String::new();
        for source in [
            Source::Env,
            Source::WebIdentity,
            Source::Profile(profile),
            Source::Container,
            Source::Imds,
        ] {
            tried.push(source.name());
            match fetch(&env, region, &source, now) {
                Ok(Some(current)) => {
                    return Ok(Chain {
                        env,
                        region: region.to_string(),
                        source,
                        current,
                    });
                }
                Ok(None) => {}
                Err(e) if matches!(source, Source::Imds) => imds_why = e,
                Err(e) => {
                    return Err(format!(
                        "bedrock: AWS credentials from {}: {e}",
                        source.name()
                    ));
                }
            }
        }
        let why = if imds_why.is_empty() {
            String::new()
        } else {
            format!(" (IMDS: {imds_why})")
        };
        Err(format!(
            "bedrock: no AWS credentials: tried {}{why}; set AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY, AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE, or \
             AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK",
            tried.join(", ")
        ))
    }

    /// The credentials to sign with at `now`, fetched again when they expire within
    /// [`REFRESH_BEFORE`].
    pub(crate) fn current(&mut self, now: u64) -> Result<&AwsCredentials, String> {
        let stale = self
            .current
            .expires
            .is_some_and(|at| at <= now + REFRESH_BEFORE.as_secs());
        if stale {
            let name = self.source.name();
            let fresh = fetch(&self.env, &self.region, &self.source, now)
                .map_err(|e| format!("bedrock: refreshing the AWS credentials from {name}: {e}"))?
                .ok_or_else(|| {
                    format!("bedrock: refreshing the AWS credentials: {name} has none any more")
                })?;
            crate::util::output::debug(&format!("bedrock: AWS credentials refreshed from {name}"));
            self.current = fresh;
        }
        Ok(&self.current.creds)
    }

    /// The values to redact: the secret key and the session token.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let c = &self.current.creds;
        [Some(c.secret_access_key.clone()), c.session_token.clone()]
            .into_iter()
            .flatten()
            .collect()
    }
}

/// `Ok(None)`: the source is not configured here.
fn fetch(env: &AwsEnv, region: &str, source: &Source, now: u64) -> Result<Option<Timed>, String> {
    match source {
        Source::Env => Ok(from_env(env)),
        Source::WebIdentity => {
            let (Some(role), Some(file)) = (
                var(env, "AWS_ROLE_ARN"),
                var(env, "AWS_WEB_IDENTITY_TOKEN_FILE"),
            ) else {
                return Ok(None);
            };
            let session = var(env, "AWS_ROLE_SESSION_NAME").map(String::from);
            web_identity(env, region, role, file, session, now).map(Some)
        }
        Source::Profile(name) => {
            let files = ProfileFiles::read(env)?;
            let explicit = var(env, "AWS_PROFILE").is_some();
            if !files.has(name) {
                return match explicit {
                    true => Err(format!(
                        "AWS_PROFILE {name:?} is in neither {} nor {}",
                        files.config_path.display(),
                        files.credentials_path.display()
                    )),
                    false => Ok(None),
                };
            }
            profile(env, region, &files, name, 0, now).map(Some)
        }
        Source::Container => container(env),
        Source::Imds => {
            if var(env, "AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            {
                return Ok(None);
            }
            imds(env).map(Some)
        }
    }
}

fn from_env(env: &AwsEnv) -> Option<Timed> {
    let id = var(env, "AWS_ACCESS_KEY_ID")?;
    let secret = var(env, "AWS_SECRET_ACCESS_KEY")?;
    Some(Timed {
        creds: AwsCredentials {
            access_key_id: id.to_string(),
            secret_access_key: secret.to_string(),
            session_token: var(env, "AWS_SESSION_TOKEN").map(String::from),
        },
        expires: var(env, "AWS_CREDENTIAL_EXPIRATION").and_then(sigv4::parse_utc),
    })
}

/// STS as the SDKs find it: `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`, the regional one.
fn sts_endpoint(env: &AwsEnv, region: &str) -> String {
    var(env, "AWS_ENDPOINT_URL_STS")
        .or_else(|| var(env, "AWS_ENDPOINT_URL"))
        .map(|u| u.trim_end_matches('/').to_string())
        .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"))
}

fn session_name(given: Option<String>, now: u64) -> String {
    given.unwrap_or_else(|| format!("agent-{now}"))
}

/// `AssumeRoleWithWebIdentity`: the token file is read at each call (the CI runner or
/// EKS rotates it), the call is not signed.
fn web_identity(
    env: &AwsEnv,
    region: &str,
    role: &str,
    token_file: &str,
    session: Option<String>,
    now: u64,
) -> Result<Timed, String> {
    let token = std::fs::read_to_string(token_file)
        .map_err(|e| format!("AWS_WEB_IDENTITY_TOKEN_FILE {token_file}: {e}"))?;
    let session = session_name(session, now);
    let body = token_http::form(&[
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", STS_VERSION),
        ("RoleArn", role),
        ("RoleSessionName", &session),
        ("WebIdentityToken", token.trim()),
    ]);
    let url = format!("{}/", sts_endpoint(env, region));
    let answer = token_http::call(
        "POST",
        &url,
        &[("content-type", "application/x-www-form-urlencoded")],
        Some(&body),
        Duration::from_secs(10),
    )?;
    sts_credentials(&sts_answer(answer)?)
}

/// `AssumeRole` signed with `source`'s credentials.
fn assume_role(
    env: &AwsEnv,
    region: &str,
    source: &AwsCredentials,
    role: &str,
    session: Option<String>,
    external_id: Option<&str>,
    now: u64,
) -> Result<Timed, String> {
    let session = session_name(session, now);
    let mut pairs = vec![
        ("Action", "AssumeRole"),
        ("Version", STS_VERSION),
        ("RoleArn", role),
        ("RoleSessionName", session.as_str()),
    ];
    if let Some(id) = external_id {
        pairs.push(("ExternalId", id));
    }
    let body = token_http::form(&pairs);
    let url = format!("{}/", sts_endpoint(env, region));
    let headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded; charset=utf-8".to_string(),
    )];
    let hash = sigv4::sha256_hex(body.as_bytes());
    let signed = sigv4::sign(
        source,
        &sigv4::SignInput {
            method: "POST",
            url: &url,
            headers: &headers,
            payload_sha256: &hash,
            region,
            service: "sts",
            time: now,
        },
    );
    let all: Vec<(&str, &str)> = headers
        .iter()
        .chain(&signed)
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let answer = token_http::call("POST", &url, &all, Some(&body), Duration::from_secs(10))?;
    sts_credentials(&sts_answer(answer)?)
}

/// The body of a 2xx STS answer; an error names STS's own code and message.
fn sts_answer(answer: token_http::Answer) -> Result<String, String> {
    if (200..300).contains(&answer.status) {
        return Ok(answer.body);
    }
    match (
        xml_tag(&answer.body, "Code"),
        xml_tag(&answer.body, "Message"),
    ) {
        (Some(code), message) => Err(format!(
            "STS answered HTTP {}: {code}: {}",
            answer.status,
            message.unwrap_or_default()
        )),
        _ => answer.ok("STS"),
    }
}

pub(crate) fn sts_credentials(xml: &str) -> Result<Timed, String> {
    let get = |tag: &str| xml_tag(xml, tag).ok_or_else(|| format!("the STS answer has no <{tag}>"));
    Ok(Timed {
        creds: AwsCredentials {
            access_key_id: get("AccessKeyId")?,
            secret_access_key: get("SecretAccessKey")?,
            session_token: Some(get("SessionToken")?),
        },
        expires: xml_tag(xml, "Expiration").and_then(|t| sigv4::parse_utc(&t)),
    })
}

/// The text of the first `<tag>…</tag>`, entities decoded (STS's answers are flat).
pub(crate) fn xml_tag(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&format!("</{tag}>"))?;
    Some(
        xml[start..end]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// The shared config and credentials files (`AWS_CONFIG_FILE`,
/// `AWS_SHARED_CREDENTIALS_FILE`, else under `~/.aws/`), parsed.
struct ProfileFiles {
    config_path: PathBuf,
    credentials_path: PathBuf,
    config: BTreeMap<String, BTreeMap<String, String>>,
    credentials: BTreeMap<String, BTreeMap<String, String>>,
}

impl ProfileFiles {
    fn read(env: &AwsEnv) -> Result<ProfileFiles, String> {
        let home = PathBuf::from(var(env, "HOME").unwrap_or("."));
        let path = |name: &str, default: &str| {
            var(env, name)
                .map(|p| match p.strip_prefix("~/") {
                    Some(rest) => home.join(rest),
                    None => PathBuf::from(p),
                })
                .unwrap_or_else(|| home.join(".aws").join(default))
        };
        let config_path = path("AWS_CONFIG_FILE", "config");
        let credentials_path = path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
        let load = |p: &PathBuf| match std::fs::read_to_string(p) {
            Ok(text) => Ok(parse_ini(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(format!("{}: {e}", p.display())),
        };
        Ok(ProfileFiles {
            config: load(&config_path)?,
            credentials: load(&credentials_path)?,
            config_path,
            credentials_path,
        })
    }

    /// The profile's settings: the config file's `[profile NAME]` (`[default]` for the
    /// default), with the credentials file's `[NAME]` over them.
    fn get(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let in_config = self.config.get(&format!("profile {name}")).or_else(|| {
            (name == "default")
                .then(|| self.config.get("default"))
                .flatten()
        });
        let in_credentials = self.credentials.get(name);
        if in_config.is_none() && in_credentials.is_none() {
            return None;
        }
        let mut merged = in_config.cloned().unwrap_or_default();
        merged.extend(in_credentials.cloned().unwrap_or_default());
        Some(merged)
    }

    fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// `[section]` → `key = value` (names lower-cased; comments and the indented lines of
/// nested settings skipped).
pub(crate) fn parse_ini(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            section = Some(name);
        } else if let (Some(s), Some((k, v))) = (&section, line.split_once('=')) {
            out.entry(s.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

fn profile(
    env: &AwsEnv,
    region: &str,
    files: &ProfileFiles,
    name: &str,
    depth: usize,
    now: u64,
) -> Result<Timed, String> {
    if depth > MAX_PROFILE_DEPTH {
        return Err(format!(
            "profile {name:?}: more than {MAX_PROFILE_DEPTH} source_profile steps (a loop?)"
        ));
    }
    let p = files
        .get(name)
        .ok_or_else(|| format!("profile {name:?} is not in {}", files.config_path.display()))?;
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let static_keys = || -> Option<Timed> {
        Some(Timed {
            creds: AwsCredentials {
                access_key_id: get("aws_access_key_id")?.to_string(),
                secret_access_key: get("aws_secret_access_key")?.to_string(),
                session_token: get("aws_session_token").map(String::from),
            },
            expires: None,
        })
    };
    let region = get("region").unwrap_or(region);
    if let Some(role) = get("role_arn") {
        let session = get("role_session_name").map(String::from);
        if let Some(file) = get("web_identity_token_file") {
            return web_identity(env, region, role, file, session, now);
        }
        let source = match (get("source_profile"), get("credential_source")) {
            // A profile may be its own source: its static keys assume its role.
            (Some(src), _) if src == name => static_keys()
                .ok_or_else(|| format!("profile {name:?} is its own source_profile but has no keys"))?,
            (Some(src), _) => profile(env, region, files, src, depth + 1, now)?,
            (None, Some("Environment")) => from_env(env)
                .ok_or_else(|| format!("profile {name:?}: credential_source Environment, but AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set"))?,
            (None, Some("Ec2InstanceMetadata")) => imds(env)?,
            (None, Some("EcsContainer")) => container(env)?
                .ok_or_else(|| format!("profile {name:?}: credential_source EcsContainer, but no container endpoint is set"))?,
            (None, Some(other)) => {
                return Err(format!("profile {name:?}: unknown credential_source {other:?}"));
            }
            (None, None) => {
                return Err(format!(
                    "profile {name:?} has role_arn but no source_profile, credential_source \
                     or web_identity_token_file"
                ));
            }
        };
        return assume_role(
            env,
            region,
            &source.creds,
            role,
            session,
            get("external_id"),
            now,
        );
    }
    if let Some(command) = get("credential_process") {
        return credential_process(name, command);
    }
    static_keys().ok_or_else(|| {
        format!(
            "profile {name:?} has no credentials this agent reads (aws_access_key_id and \
             aws_secret_access_key, role_arn, or credential_process; for SSO, run `aws \
             configure export-credentials` into the environment)"
        )
    })
}

/// `credential_process`: a command printing `{"Version":1,"AccessKeyId",…}`.
fn credential_process(name: &str, command: &str) -> Result<Timed, String> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("profile {name:?}: credential_process could not start: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "profile {name:?}: credential_process exited with {}",
            output.status
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        format!("profile {name:?}: credential_process printed no credentials JSON: {e}")
    })?;
    json_credentials(&v, "SessionToken")
        .map_err(|e| format!("profile {name:?}: credential_process: {e}"))
}

/// `{"AccessKeyId","SecretAccessKey",TOKEN_FIELD,"Expiration"}` (credential_process,
/// the container endpoint and IMDS all answer so; the token's name differs).
pub(crate) fn json_credentials(v: &serde_json::Value, token_field: &str) -> Result<Timed, String> {
    let get = |k: &str| {
        v[k].as_str()
            .filter(|s| !s.is_empty())
            .map(String::from)
            .ok_or_else(|| format!("the answer has no {k}"))
    };
    Ok(Timed {
        creds: AwsCredentials {
            access_key_id: get("AccessKeyId")?,
            secret_access_key: get("SecretAccessKey")?,
            session_token: v[token_field]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(String::from),
        },
        expires: v["Expiration"].as_str().and_then(sigv4::parse_utc),
    })
}

/// The ECS/EKS container credentials endpoint, with its authorization token (the file
/// read at each call: EKS Pod Identity rotates it).
fn container(env: &AwsEnv) -> Result<Option<Timed>, String> {
    let url = match (
        var(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        var(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
    ) {
        (Some(relative), _) => format!("{ECS_ENDPOINT}{relative}"),
        (None, Some(full)) => {
            if !container_host_allowed(full) {
                return Err(format!(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI {}: must be https, or http on a \
                     loopback or the ECS/EKS link-local address",
                    token_http::shown(full)
                ));
            }
            full.to_string()
        }
        (None, None) => return Ok(None),
    };
    let token = match var(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| format!("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {file}: {e}"))?
                .trim()
                .to_string(),
        ),
        None => var(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN").map(String::from),
    };
    let mut headers = vec![("accept", "application/json")];
    if let Some(token) = &token {
        headers.push(("authorization", token.as_str()));
    }
    let body = token_http::call("GET", &url, &headers, None, Duration::from_secs(5))?
        .ok("the container credentials endpoint")?;
    let v: serde_json::Value = serde_json::from_str(&body)
        .map_err(|e| format!("the container credentials endpoint answered no JSON: {e}"))?;
    json_credentials(&v, "Token").map(Some)
}

/// What the SDKs let `AWS_CONTAINER_CREDENTIALS_FULL_URI` be: https anywhere, http only
/// on a loopback address or ECS's and EKS's link-local ones.
fn container_host_allowed(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host == "localhost"
        || host == "169.254.170.2"
        || host == "169.254.170.23"
        || host.eq_ignore_ascii_case("fd00:ec2::23")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// IMDSv2: a session token (PUT), the role name, then the role's credentials.
fn imds(env: &AwsEnv) -> Result<Timed, String> {
    let base = var(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .unwrap_or(IMDS_ENDPOINT)
        .trim_end_matches('/')
        .to_string();
    let token = token_http::call(
        "PUT",
        &format!("{base}/latest/api/token"),
        &[(
            "x-aws-ec2-metadata-token-ttl-seconds",
            IMDS_TOKEN_TTL_SECONDS,
        )],
        Some(""),
        METADATA_TIMEOUT,
    )?
    .ok("IMDS")?;
    let token = token.trim();
    let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
    let auth = [("x-aws-ec2-metadata-token", token)];
    let roles = token_http::call("GET", &roles_url, &auth, None, METADATA_TIMEOUT)?.ok("IMDS")?;
    let role = roles
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or("the instance has no IAM role")?;
    let body = token_http::call(
        "GET",
        &format!("{roles_url}{role}"),
        &auth,
        None,
        METADATA_TIMEOUT,
    )?
    .ok("IMDS")?;
    let v: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("IMDS answered no JSON: {e}"))?;
    if let Some(code) = v["Code"].as_str().filter(|c| *c != "Success") {
        return Err(format!(
            "IMDS: {code}: {}",
            v["Message"].as_str().unwrap_or("")
        ));
    }
    json_credentials(&v, "Token")
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
