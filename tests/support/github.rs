//! A loopback mock of the GitHub REST API for `agent github`. It accepts exactly the
//! calls of `tests/fixtures/github/routes.json` (method, path template, query keys, body
//! keys, the keys of array items), the table `ci/interop/github-openapi.sh` checks
//! against GitHub's OpenAPI description, and records a violation for anything else (or
//! a request without the token, the JSON media type or the API version header). Every
//! request is recorded for assertions. It answers from a small repository state: the
//! permissions of users, the pull requests and their files, the comments it was sent
//! (ids from 1000), and faults queued per route (a 502, a secondary rate limit) that
//! the next matching request gets instead.

use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use super::routes::{keys_of, matches, strings};

/// The token tests give `agent github`; it must never appear anywhere else.
pub(crate) const GITHUB_TOKEN: &str = "ghs_TEST-github-token-DO-NOT-LEAK-42";

/// One route of the table.
#[derive(Debug, Clone)]
struct Route {
    method: String,
    path: String,
    query: Vec<String>,
    required: Vec<String>,
    keys: Vec<String>,
    items: HashMap<String, (Vec<String>, Vec<String>)>,
    status: u16,
}

fn routes() -> Vec<Route> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/github/routes.json"
    );
    let table: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    table["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| Route {
            method: r["method"].as_str().unwrap().to_string(),
            path: r["path"].as_str().unwrap().to_string(),
            query: strings(&r["query"]),
            required: strings(&r["required"]),
            keys: strings(&r["keys"]),
            items: r["items"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), (strings(&v["required"]), strings(&v["keys"]))))
                        .collect()
                })
                .unwrap_or_default(),
            status: r["status"].as_u64().unwrap() as u16,
        })
        .collect()
}

/// A request the mock received.
#[derive(Debug, Clone)]
pub(crate) struct GhRequest {
    pub method: String,
    /// Without the query.
    pub path: String,
    pub query: String,
    /// The route's template (empty when none matched).
    pub route: String,
    pub headers: Vec<(String, String)>,
    pub raw: String,
    pub body: Value,
}

impl GhRequest {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn is(&self, method: &str, route: &str) -> bool {
        self.method == method && self.route == route
    }

    /// A query parameter's value (`%XX` decoded).
    pub(crate) fn query_value(&self, key: &str) -> Option<String> {
        let raw = self
            .query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))?;
        let mut out = Vec::new();
        let b = raw.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match (
                b[i],
                raw.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16)),
            ) {
                (b'%', Some(Ok(v))) => {
                    out.push(v);
                    i += 3;
                }
                (c, _) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        Some(String::from_utf8_lossy(&out).into_owned())
    }
}

/// What the next request of a route gets instead of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GhFault {
    /// HTTP 502 (no retry-after).
    BadGateway,
    /// HTTP 403 "You have exceeded a secondary rate limit", `retry-after: 0`.
    SecondaryRateLimit,
    /// HTTP 403 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` now.
    RateLimitSpent,
}

#[derive(Default)]
struct State {
    requests: Vec<GhRequest>,
    violations: Vec<String>,
    permissions: HashMap<String, String>,
    pulls: HashMap<u64, Value>,
    files: HashMap<u64, Value>,
    /// `(ref, path)` → the file's text (`GET /contents/{path}?ref=`).
    contents: HashMap<(String, String), String>,
    comments: HashMap<u64, Vec<Value>>,
    faults: VecDeque<(String, String, GhFault)>,
    next_id: u64,
    shutdown: bool,
}

/// The server.
pub(crate) struct GithubMock {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: Option<JoinHandle<()>>,
}

impl GithubMock {
    pub(crate) fn start() -> GithubMock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            next_id: 1000,
            ..State::default()
        }));
        let s = state.clone();
        let table = routes();
        let accept = thread::spawn(move || {
            for conn in listener.incoming() {
                if lock(&s).shutdown {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (s, table) = (s.clone(), table.clone());
                thread::spawn(move || {
                    let _ = serve(conn, &s, &table);
                });
            }
        });
        GithubMock {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`, for GITHUB_API_URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `login` has `permission` (admin, write, read, none) on the repository.
    pub(crate) fn permission(&self, login: &str, permission: &str) {
        lock(&self.state)
            .permissions
            .insert(login.to_string(), permission.to_string());
    }

    /// Pull request `n`: head `head_ref` at `head_sha` in `head_repo`, base `main`, and
    /// its files (each `{filename, status, additions, deletions, patch}`).
    pub(crate) fn pull(
        &self,
        n: u64,
        head_ref: &str,
        head_sha: &str,
        head_repo: &str,
        files: Value,
    ) {
        let mut st = lock(&self.state);
        st.pulls.insert(
            n,
            json!({"number": n, "title": format!("PR {n}"), "body": "",
                   "head": {"ref": head_ref, "sha": head_sha, "repo": {"full_name": head_repo}},
                   "base": {"ref": "main", "sha": "0000000000000000000000000000000000000000",
                            "repo": {"full_name": "octo/hello"}}}),
        );
        st.files.insert(n, files);
    }

    /// The file `path` on branch `git_ref` (what `GET /contents/{path}?ref=` answers).
    pub(crate) fn file_on(&self, git_ref: &str, path: &str, text: &str) {
        lock(&self.state)
            .contents
            .insert((git_ref.to_string(), path.to_string()), text.to_string());
    }

    /// An existing comment on issue `n`.
    pub(crate) fn comment(&self, n: u64, login: &str, body: &str) {
        let mut st = lock(&self.state);
        let id = st.next_id;
        st.next_id += 1;
        st.comments.entry(n).or_default().push(json!({
            "id": id, "body": body, "user": {"login": login},
            "created_at": "2026-12-01T10:00:00Z"}));
    }

    /// The next `method` request of `route` (a template of the table) gets `fault`.
    pub(crate) fn fault(&self, method: &str, route: &str, fault: GhFault) {
        lock(&self.state)
            .faults
            .push_back((method.to_string(), route.to_string(), fault));
    }

    pub(crate) fn requests(&self) -> Vec<GhRequest> {
        lock(&self.state).requests.clone()
    }

    /// The requests of one route.
    pub(crate) fn calls(&self, method: &str, route: &str) -> Vec<GhRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is(method, route))
            .collect()
    }

    /// Panics listing every request that broke the table or the headers.
    pub(crate) fn assert_valid(&self) {
        let v = lock(&self.state).violations.clone();
        assert!(
            v.is_empty(),
            "github mock: {} violation(s):\n  {}",
            v.len(),
            v.join("\n  ")
        );
    }

    /// No request carried `secret` anywhere but in its `authorization` header.
    pub(crate) fn assert_no_secret_in_bodies(&self, secret: &str) {
        for r in self.requests() {
            assert!(
                !r.raw.contains(secret),
                "{} {} has the secret in its body",
                r.method,
                r.path
            );
            assert!(!r.path.contains(secret) && !r.query.contains(secret));
        }
    }
}

impl Drop for GithubMock {
    fn drop(&mut self) {
        lock(&self.state).shutdown = true;
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn lock(s: &Mutex<State>) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn serve(conn: TcpStream, state: &Mutex<State>, table: &[Route]) -> io::Result<()> {
    let mut writer = conn.try_clone()?;
    let mut reader = BufReader::new(conn);
    let Some(super::mock::RawRequest {
        method,
        target,
        headers,
        body: raw,
    }) = super::mock::read_raw_request(&mut reader)?
    else {
        return Ok(());
    };
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.clone(), String::new()),
    };
    let body: Value = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&raw).unwrap_or(Value::String(raw.clone()))
    };
    let mut req = GhRequest {
        method,
        path,
        query,
        route: String::new(),
        headers,
        raw,
        body,
    };
    let (status, extra, answer) = {
        let mut st = lock(state);
        let found = table.iter().find_map(|r| {
            (r.method == req.method)
                .then(|| matches(&r.path, &req.path).map(|v| (r, v)))
                .flatten()
        });
        let violations = match &found {
            Some((route, _)) => check(route, &req),
            None => vec![format!("no route {} {}", req.method, req.path)],
        };
        let number = st.requests.len() + 1;
        st.violations.extend(
            violations
                .into_iter()
                .map(|v| format!("request {number} ({} {}): {v}", req.method, req.path)),
        );
        let reply = match found {
            Some((route, vars)) => {
                req.route = route.path.clone();
                let fault = st
                    .faults
                    .iter()
                    .position(|(m, r, _)| *m == req.method && *r == route.path)
                    .and_then(|i| st.faults.remove(i))
                    .map(|f| f.2);
                match fault {
                    Some(f) => fault_reply(f),
                    None => answer(&mut st, route, &vars, &req),
                }
            }
            None => (404, String::new(), json!({"message": "Not Found"})),
        };
        st.requests.push(req);
        reply
    };
    let body = answer.to_string();
    // Every answer of GitHub carries the primary rate limit; a fault may say it is spent.
    let limits = if extra.contains("x-ratelimit-") {
        String::new()
    } else {
        "x-ratelimit-remaining: 4999\r\nx-ratelimit-reset: 4102444800\r\n".to_string()
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n{limits}{extra}\r\n",
        body.len()
    );
    writer.write_all(head.as_bytes())?;
    writer.write_all(body.as_bytes())?;
    writer.flush()?;
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

/// The violations of one request against its route.
fn check(route: &Route, req: &GhRequest) -> Vec<String> {
    let mut v = Vec::new();
    let want_auth = format!("Bearer {GITHUB_TOKEN}");
    if req.header("authorization") != Some(want_auth.as_str()) {
        v.push("authorization is not `Bearer <the token>`".to_string());
    }
    if req.header("accept") != Some("application/vnd.github+json") {
        v.push(format!("accept is {:?}", req.header("accept")));
    }
    if req.header("x-github-api-version") != Some("2022-11-28") {
        v.push(format!(
            "x-github-api-version is {:?}",
            req.header("x-github-api-version")
        ));
    }
    if req.header("user-agent").is_none_or(str::is_empty) {
        v.push("no user-agent (GitHub refuses requests without one)".to_string());
    }
    for pair in req.query.split('&').filter(|p| !p.is_empty()) {
        let key = pair.split('=').next().unwrap_or_default();
        if !route.query.iter().any(|q| q == key) {
            v.push(format!("query key {key:?} is not in the table"));
        }
    }
    if req.method == "GET" {
        if !req.raw.is_empty() {
            v.push("a GET with a body".to_string());
        }
        return v;
    }
    if req.header("content-type") != Some("application/json") {
        v.push(format!("content-type is {:?}", req.header("content-type")));
    }
    let Some(obj) = req.body.as_object() else {
        v.push(format!("body is not a JSON object: {}", req.raw));
        return v;
    };
    v.extend(keys_of(obj, &route.required, &route.keys, "body"));
    for (field, (required, keys)) in &route.items {
        for (i, item) in obj
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            match item.as_object() {
                Some(o) => v.extend(keys_of(o, required, keys, &format!("{field}[{i}]"))),
                None => v.push(format!("{field}[{i}] is not an object")),
            }
        }
    }
    v
}

fn fault_reply(f: GhFault) -> (u16, String, Value) {
    match f {
        GhFault::BadGateway => (502, String::new(), json!({"message": "Server Error"})),
        GhFault::SecondaryRateLimit => (
            403,
            "retry-after: 0\r\n".to_string(),
            json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                   "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}),
        ),
        GhFault::RateLimitSpent => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            (
                403,
                format!("x-ratelimit-remaining: 0\r\nx-ratelimit-reset: {now}\r\n"),
                json!({"message": "API rate limit exceeded"}),
            )
        }
    }
}

/// The answer to a valid request, from the state.
fn answer(
    st: &mut State,
    route: &Route,
    vars: &HashMap<String, String>,
    req: &GhRequest,
) -> (u16, String, Value) {
    let num = |k: &str| vars.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let ok = |v: Value| (route.status, String::new(), v);
    let not_found = (404, String::new(), json!({"message": "Not Found"}));
    match (req.method.as_str(), route.path.as_str()) {
        ("GET", "/repos/{owner}/{repo}") => {
            ok(json!({"full_name": "octo/hello", "default_branch": "main"}))
        }
        ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission") => {
            let user = &vars["username"];
            match st.permissions.get(user) {
                Some(p) => ok(json!({"permission": p, "role_name": p, "user": {"login": user}})),
                None => (
                    404,
                    String::new(),
                    json!({"message": format!("{user} is not a user")}),
                ),
            }
        }
        ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}") => {
            match st.pulls.get(&num("pull_number")) {
                Some(p) => ok(p.clone()),
                None => not_found,
            }
        }
        ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files") => ok(st
            .files
            .get(&num("pull_number"))
            .cloned()
            .unwrap_or(json!([]))),
        ("GET", "/repos/{owner}/{repo}/contents/{path}") => {
            let git_ref = req.query_value("ref").unwrap_or_default();
            match st.contents.get(&(git_ref, vars["path"].clone())) {
                Some(text) => {
                    use base64::Engine;
                    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
                    ok(
                        json!({"type": "file", "encoding": "base64", "name": vars["path"],
                              "path": vars["path"], "content": b64}),
                    )
                }
                None => not_found,
            }
        }
        ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments") => ok(Value::Array(
            st.comments
                .get(&num("issue_number"))
                .cloned()
                .unwrap_or_default(),
        )),
        ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments") => {
            let id = st.next_id;
            st.next_id += 1;
            let n = num("issue_number");
            let c = json!({"id": id, "body": req.body["body"],
                           "html_url": format!("https://github.example/octo/hello/issues/{n}#issuecomment-{id}"),
                           "user": {"login": "github-actions[bot]"}, "created_at": "2026-12-01T12:00:00Z"});
            st.comments.entry(n).or_default().push(c.clone());
            ok(c)
        }
        ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}") => {
            let id = num("comment_id");
            let found = st.comments.values_mut().flatten().find(|c| c["id"] == id);
            match found {
                Some(c) => {
                    c["body"] = req.body["body"].clone();
                    ok(c.clone())
                }
                None => not_found,
            }
        }
        ("POST", "/repos/{owner}/{repo}/pulls") => {
            let n = 100 + st.pulls.len() as u64;
            ok(
                json!({"number": n, "html_url": format!("https://github.example/octo/hello/pull/{n}")}),
            )
        }
        ("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews") => {
            let n = num("pull_number");
            ok(
                json!({"id": 77, "html_url": format!("https://github.example/octo/hello/pull/{n}#pullrequestreview-77")}),
            )
        }
        _ => not_found,
    }
}
