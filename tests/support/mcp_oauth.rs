//! The OAuth side of `mcp-test-server --http … --oauth SPEC`: the server's `/mcp` wants a
//! bearer token, and the same listener is its protected resource metadata, its
//! authorization server (`/as/…`: metadata, `/authorize`, `/token`, `/register`) and an
//! IdP (`/idp/token`, for cross-app access). SPEC is comma-separated options:
//! `methods=a+b` (token endpoint auth methods accepted), `grants=a+b`, `ttl=SECS`
//! (expires_in), `step-up` (`write_note` needs `mcp:write`, answered 403
//! insufficient_scope), `login-page` (`/authorize` answers a sign-in page), `no-www-prm`
//! (the 401 names no resource metadata), `prm-url=URL` (the 401 names that URL),
//! `no-prm` (no resource metadata at all: the 2025-03-26 layout, the AS at the root),
//! `openid` (the AS metadata only at OpenID's location), `no-dcr`, `cimd`,
//! `redirect=URL` (an authorised POST is answered 307 to URL), `jwt-key=DER` (RSA public
//! key that verifies `private_key_jwt`). Every AS request is logged (`as-*`) with its
//! form and Authorization header.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};

/// The pre-registered client.
pub(crate) const CLIENT_ID: &str = "ci-client";
pub(crate) const CLIENT_SECRET: &str = "ci-client-secret-0123";

#[derive(Default)]
pub(crate) struct OAuthMode {
    pub(crate) methods: Vec<String>,
    pub(crate) grants: Vec<String>,
    pub(crate) ttl: Option<u64>,
    pub(crate) step_up: bool,
    pub(crate) login_page: bool,
    pub(crate) no_www_prm: bool,
    pub(crate) prm_url: Option<String>,
    pub(crate) no_prm: bool,
    pub(crate) openid: bool,
    pub(crate) no_dcr: bool,
    pub(crate) cimd: bool,
    pub(crate) redirect: Option<String>,
    pub(crate) jwt_key: Option<Vec<u8>>,
}

impl OAuthMode {
    pub(crate) fn parse(spec: &str) -> OAuthMode {
        let mut m = OAuthMode {
            methods: [
                "client_secret_basic",
                "client_secret_post",
                "none",
                "private_key_jwt",
            ]
            .map(String::from)
            .to_vec(),
            grants: [
                "authorization_code",
                "refresh_token",
                "client_credentials",
                "urn:ietf:params:oauth:grant-type:jwt-bearer",
            ]
            .map(String::from)
            .to_vec(),
            ..OAuthMode::default()
        };
        for opt in spec.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
            let list = || v.split('+').map(String::from).collect();
            match k {
                "methods" => m.methods = list(),
                "grants" => m.grants = list(),
                "ttl" => m.ttl = v.parse().ok(),
                "step-up" => m.step_up = true,
                "login-page" => m.login_page = true,
                "no-www-prm" => m.no_www_prm = true,
                "prm-url" => m.prm_url = Some(v.to_string()),
                "no-prm" => m.no_prm = true,
                "openid" => m.openid = true,
                "no-dcr" => m.no_dcr = true,
                "cimd" => m.cimd = true,
                "redirect" => m.redirect = Some(v.to_string()),
                "jwt-key" => m.jwt_key = Some(std::fs::read(v).unwrap()),
                other => panic!("unknown --oauth option {other}"),
            }
        }
        m
    }
}

/// Tokens, codes and registered clients.
#[derive(Default)]
pub(crate) struct AuthState {
    n: u32,
    /// access token → scopes
    tokens: HashMap<String, Vec<String>>,
    /// refresh token → scopes
    refresh: HashMap<String, Vec<String>>,
    /// code → (PKCE challenge, scopes, redirect_uri)
    codes: HashMap<String, (String, Vec<String>, String)>,
    /// client id → secret (None: public)
    clients: HashMap<String, Option<String>>,
}

/// What an HTTP request looks like to the OAuth side.
pub(crate) struct Req<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) query: &'a str,
    pub(crate) headers: &'a HashMap<String, String>,
    pub(crate) body: &'a [u8],
    pub(crate) origin: String,
}

/// An answer: status line, headers, body.
pub(crate) type Resp = (String, Vec<(String, String)>, String);

fn json_resp(status: &str, v: &Value) -> Resp {
    (
        status.to_string(),
        vec![("Content-Type".into(), "application/json".into())],
        v.to_string(),
    )
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(b'?'));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn form(text: &str) -> HashMap<String, String> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn b64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn b64url_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap_or_default()
}

fn b64_decode(s: &str) -> String {
    use base64::Engine as _;
    String::from_utf8_lossy(
        &base64::engine::general_purpose::STANDARD
            .decode(s)
            .unwrap_or_default(),
    )
    .into_owned()
}

impl OAuthMode {
    fn issuer(&self, origin: &str) -> String {
        if self.no_prm {
            origin.to_string()
        } else {
            format!("{origin}/as")
        }
    }

    fn metadata(&self, origin: &str) -> Value {
        let mut m = json!({
            "issuer": self.issuer(origin),
            "authorization_endpoint": format!("{origin}/as/authorize"),
            "token_endpoint": format!("{origin}/as/token"),
            "response_types_supported": ["code"],
            "grant_types_supported": self.grants,
            "token_endpoint_auth_methods_supported": self.methods,
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["mcp:read", "mcp:write", "offline_access"],
        });
        if !self.no_dcr {
            m["registration_endpoint"] = json!(format!("{origin}/as/register"));
        }
        if self.cimd {
            m["client_id_metadata_document_supported"] = json!(true);
        }
        m
    }

    /// The 401 or 403 challenge.
    fn challenge(&self, origin: &str, error: &str, scope: &str) -> String {
        let mut h = format!("Bearer error=\"{error}\", scope=\"{scope}\"");
        let prm = match &self.prm_url {
            Some(u) => Some(u.clone()),
            None if self.no_www_prm || self.no_prm => None,
            None => Some(format!("{origin}/.well-known/oauth-protected-resource/mcp")),
        };
        if let Some(u) = prm {
            h.push_str(&format!(", resource_metadata=\"{u}\""));
        }
        h
    }

    /// Checks an MCP request's token. `None`: go on; `Some`: the answer.
    pub(crate) fn guard(
        &self,
        st: &Mutex<AuthState>,
        req: &Req,
        mcp_method: &str,
        tool: &str,
    ) -> Option<Resp> {
        let token = req
            .headers
            .get("authorization")
            .and_then(|a| a.strip_prefix("Bearer "));
        let scopes = token.and_then(|t| st.lock().unwrap().tokens.get(t).cloned());
        let Some(scopes) = scopes else {
            let www = self.challenge(&req.origin, "invalid_token", "mcp:read");
            return Some((
                "401 Unauthorized".into(),
                vec![
                    ("WWW-Authenticate".into(), www),
                    ("Content-Type".into(), "application/json".into()),
                ],
                json!({"error": "invalid_token", "error_description": "Missing or unknown token"})
                    .to_string(),
            ));
        };
        if self.step_up
            && mcp_method == "tools/call"
            && tool == "write_note"
            && !scopes.iter().any(|s| s == "mcp:write")
        {
            let www = self.challenge(&req.origin, "insufficient_scope", "mcp:read mcp:write");
            return Some((
                "403 Forbidden".into(),
                vec![("WWW-Authenticate".into(), www)],
                json!({"error": "insufficient_scope"}).to_string(),
            ));
        }
        if let Some(to) = &self.redirect {
            return Some((
                "307 Temporary Redirect".into(),
                vec![("Location".into(), to.clone())],
                String::new(),
            ));
        }
        None
    }

    /// The metadata and AS routes; `None` for a path that is not one of them.
    pub(crate) fn route(
        &self,
        st: &Mutex<AuthState>,
        req: &Req,
        log: &dyn Fn(&str, &Value),
    ) -> Option<Resp> {
        let origin = req.origin.as_str();
        let not_found = || ("404 Not Found".to_string(), vec![], "not here".to_string());
        match (req.method, req.path) {
            ("GET", p) if p.starts_with("/.well-known/oauth-protected-resource") => {
                log("as-prm", &json!({"path": p}));
                if self.no_prm || p != "/.well-known/oauth-protected-resource/mcp" {
                    return Some(not_found());
                }
                Some(json_resp(
                    "200 OK",
                    &json!({
                        "resource": format!("{origin}/mcp"),
                        "authorization_servers": [self.issuer(origin)],
                        "scopes_supported": ["mcp:read"],
                    }),
                ))
            }
            ("GET", p) if p.starts_with("/.well-known/") => {
                log("as-metadata", &json!({"path": p}));
                let wanted = match (self.no_prm, self.openid) {
                    (true, _) => "/.well-known/oauth-authorization-server",
                    (false, false) => "/.well-known/oauth-authorization-server/as",
                    (false, true) => "/.well-known/openid-configuration/as",
                };
                if p == wanted {
                    Some(json_resp("200 OK", &self.metadata(origin)))
                } else {
                    Some(not_found())
                }
            }
            ("GET", "/as/authorize") => Some(self.authorize(st, req, log)),
            ("POST", "/as/token") => Some(self.token(st, req, log)),
            ("POST", "/as/register") if !self.no_dcr => Some(self.register(st, req, log)),
            ("POST", "/idp/token") => Some(self.idp(req, log)),
            _ => None,
        }
    }

    fn authorize(&self, st: &Mutex<AuthState>, req: &Req, log: &dyn Fn(&str, &Value)) -> Resp {
        let q = form(req.query);
        log("as-authorize", &json!(q));
        if self.login_page {
            return (
                "200 OK".into(),
                vec![("Content-Type".into(), "text/html".into())],
                "<html><form>Sign in: <input name=user></form></html>".into(),
            );
        }
        let mut s = st.lock().unwrap();
        s.n += 1;
        let code = format!("code-{}-0123456789", s.n);
        let scopes: Vec<String> = q
            .get("scope")
            .map(|x| x.split(' ').map(String::from).collect())
            .unwrap_or_default();
        let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
        s.codes.insert(
            code.clone(),
            (
                q.get("code_challenge").cloned().unwrap_or_default(),
                scopes,
                redirect.clone(),
            ),
        );
        let state = q.get("state").cloned().unwrap_or_default();
        // Through a page of our own first, as an approval step does.
        let to = format!("{redirect}?code={code}&state={state}");
        (
            "302 Found".into(),
            vec![("Location".into(), to)],
            String::new(),
        )
    }

    /// The client authentication of a token request: (method, client id), or an error.
    fn client_auth(
        &self,
        st: &Mutex<AuthState>,
        req: &Req,
        f: &HashMap<String, String>,
    ) -> Result<(String, String), String> {
        let (method, id, secret) = if let Some(b) = req
            .headers
            .get("authorization")
            .and_then(|a| a.strip_prefix("Basic "))
        {
            let pair = b64_decode(b);
            let (i, s) = pair.split_once(':').unwrap_or((&pair, ""));
            ("client_secret_basic", decode(i), Some(decode(s)))
        } else if let Some(a) = f.get("client_assertion") {
            let id = f.get("client_id").cloned().unwrap_or_default();
            let parts: Vec<&str> = a.split('.').collect();
            let claims: Value = serde_json::from_slice(&b64url_decode(parts.get(1).unwrap_or(&"")))
                .unwrap_or_default();
            let issuer = self.issuer(&req.origin);
            if claims["iss"] != json!(id)
                || claims["sub"] != json!(id)
                || claims["aud"] != json!(issuer)
            {
                return Err(format!("bad assertion claims {claims}"));
            }
            if let Some(der) = &self.jwt_key {
                let key = ring::signature::UnparsedPublicKey::new(
                    &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                    der,
                );
                let input = format!("{}.{}", parts[0], parts[1]);
                key.verify(
                    input.as_bytes(),
                    &b64url_decode(parts.get(2).unwrap_or(&"")),
                )
                .map_err(|_| "the assertion's signature does not verify".to_string())?;
            }
            return Ok(("private_key_jwt".into(), id));
        } else if let Some(s) = f.get("client_secret") {
            (
                "client_secret_post",
                f.get("client_id").cloned().unwrap_or_default(),
                Some(s.clone()),
            )
        } else {
            (
                "none",
                f.get("client_id").cloned().unwrap_or_default(),
                None,
            )
        };
        if !self.methods.iter().any(|m| m == method) {
            return Err(format!("{method} is not accepted"));
        }
        let known = if id == CLIENT_ID {
            Some(Some(CLIENT_SECRET.to_string()))
        } else if id.starts_with("http") {
            Some(None)
        } else {
            st.lock().unwrap().clients.get(&id).cloned()
        };
        match known {
            Some(expected) if expected == secret => Ok((method.into(), id)),
            Some(_) => Err(format!("wrong secret for {id}")),
            None => Err(format!("unknown client {id}")),
        }
    }

    fn issue(&self, st: &Mutex<AuthState>, scopes: Vec<String>) -> Value {
        let mut s = st.lock().unwrap();
        s.n += 1;
        let access = format!("tok-{}-abcdefghij", s.n);
        let refresh = format!("ref-{}-abcdefghij", s.n);
        s.tokens.insert(access.clone(), scopes.clone());
        s.refresh.insert(refresh.clone(), scopes.clone());
        json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
               "expires_in": self.ttl.unwrap_or(3600), "scope": scopes.join(" ")})
    }

    fn token(&self, st: &Mutex<AuthState>, req: &Req, log: &dyn Fn(&str, &Value)) -> Resp {
        let f = form(&String::from_utf8_lossy(req.body));
        let grant = f.get("grant_type").cloned().unwrap_or_default();
        let auth = self.client_auth(st, req, &f);
        log(
            "as-token",
            &json!({"form": f, "authorization": req.headers.get("authorization"),
                                "client_auth": auth.as_ref().map(|a| a.0.clone()).unwrap_or_else(|e| e.clone())}),
        );
        if let Err(e) = auth {
            return json_resp(
                "401 Unauthorized",
                &json!({"error": "invalid_client", "error_description": e}),
            );
        }
        if !self.grants.contains(&grant) {
            return json_resp(
                "400 Bad Request",
                &json!({"error": "unsupported_grant_type"}),
            );
        }
        let scopes = |k: &str| -> Vec<String> {
            f.get(k)
                .map(|x| x.split(' ').map(String::from).collect())
                .unwrap_or_else(|| vec!["mcp:read".into()])
        };
        let granted = match grant.as_str() {
            "client_credentials" => scopes("scope"),
            "refresh_token" => {
                let r = f.get("refresh_token").cloned().unwrap_or_default();
                let known = st.lock().unwrap().refresh.get(&r).cloned();
                match known
                    .or_else(|| (r == "given-refresh-token-0123").then(|| vec!["mcp:read".into()]))
                {
                    Some(s) => s,
                    None => {
                        return json_resp("400 Bad Request", &json!({"error": "invalid_grant"}));
                    }
                }
            }
            "authorization_code" => {
                let code = f.get("code").cloned().unwrap_or_default();
                let Some((challenge, s, redirect)) = st.lock().unwrap().codes.remove(&code) else {
                    return json_resp("400 Bad Request", &json!({"error": "invalid_grant"}));
                };
                let verifier = f.get("code_verifier").cloned().unwrap_or_default();
                let computed = b64url(
                    ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()).as_ref(),
                );
                if computed != challenge || f.get("redirect_uri") != Some(&redirect) {
                    return json_resp(
                        "400 Bad Request",
                        &json!({"error": "invalid_grant", "error_description": "PKCE or redirect_uri mismatch"}),
                    );
                }
                s
            }
            "urn:ietf:params:oauth:grant-type:jwt-bearer" => {
                if f.get("assertion").map(String::as_str) != Some("id-jag-0123456789") {
                    return json_resp("400 Bad Request", &json!({"error": "invalid_grant"}));
                }
                scopes("scope")
            }
            _ => {
                return json_resp(
                    "400 Bad Request",
                    &json!({"error": "unsupported_grant_type"}),
                );
            }
        };
        json_resp("200 OK", &self.issue(st, granted))
    }

    fn register(&self, st: &Mutex<AuthState>, req: &Req, log: &dyn Fn(&str, &Value)) -> Resp {
        let body: Value = serde_json::from_slice(req.body).unwrap_or_default();
        log("as-register", &body);
        let mut s = st.lock().unwrap();
        s.n += 1;
        let id = format!("dcr-{}", s.n);
        let public = self.methods.iter().any(|m| m == "none");
        let secret = (!public).then(|| format!("dcr-secret-{}-0123456789", s.n));
        s.clients.insert(id.clone(), secret.clone());
        let method = if public {
            "none"
        } else {
            self.methods[0].as_str()
        };
        let mut answer = json!({"client_id": id, "token_endpoint_auth_method": method,
                                "redirect_uris": body["redirect_uris"]});
        if let Some(sec) = secret {
            answer["client_secret"] = json!(sec);
        }
        json_resp("201 Created", &answer)
    }

    fn idp(&self, req: &Req, log: &dyn Fn(&str, &Value)) -> Resp {
        let f = form(&String::from_utf8_lossy(req.body));
        log("idp-token", &json!(f));
        let ok = f.get("grant_type").map(String::as_str)
            == Some("urn:ietf:params:oauth:grant-type:token-exchange")
            && f.get("subject_token").map(String::as_str) == Some("idp-id-token-0123456789")
            && f.get("subject_token_type").map(String::as_str)
                == Some("urn:ietf:params:oauth:token-type:id_token")
            && f.get("requested_token_type").map(String::as_str)
                == Some("urn:ietf:params:oauth:token-type:id-jag")
            && f.get("audience") == Some(&self.issuer(&req.origin));
        if !ok {
            return json_resp("400 Bad Request", &json!({"error": "invalid_request"}));
        }
        json_resp(
            "200 OK",
            &json!({"access_token": "id-jag-0123456789",
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
        )
    }
}
