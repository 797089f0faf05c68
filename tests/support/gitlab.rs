//! A loopback mock of the GitLab REST API v4 for `agent gitlab`. It accepts exactly the
//! calls of `tests/fixtures/gitlab/routes.json` (method, path template under `/api/v4`,
//! query keys, body keys, the keys of an object field: the table `ci/interop/gitlab.sh`
//! checks against GitLab's OpenAPI description and python-gitlab's requests), and records
//! a violation for anything else (or a request without the token in `PRIVATE-TOKEN`,
//! without `accept: application/json`, or a body that is not JSON). Every request is
//! recorded for assertions. It answers from a small project state: members and their
//! access levels, issues and merge requests with their notes (ids from 5000), merge
//! requests' refs and diffs, files on branches, and faults queued per route (a 502, a
//! 429 with `Retry-After`, a 403 `insufficient_scope`) that the next matching request
//! gets instead.

use serde_json::{Map, Value, json};
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use super::routes::{keys_of, matches, strings};

/// The token tests give `agent gitlab`; it must never appear anywhere else.
pub(crate) const GITLAB_TOKEN: &str = "glpat-TEST-gitlab-token-DO-NOT-LEAK-42";
/// The job token the runner would set; it must never appear anywhere either.
pub(crate) const JOB_TOKEN: &str = "glcbt-TEST-job-token-DO-NOT-LEAK-43";

/// The prefix of every route.
const PREFIX: &str = "/api/v4";

#[derive(Debug, Clone)]
struct Route {
    method: String,
    path: String,
    query: Vec<String>,
    required: Vec<String>,
    keys: Vec<String>,
    objects: HashMap<String, (Vec<String>, Vec<String>)>,
    status: u16,
}

fn routes() -> Vec<Route> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gitlab/routes.json"
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
            objects: r["objects"]
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

/// `%XX` decoded.
pub(crate) fn decode(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = Vec::new();
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
    String::from_utf8_lossy(&out).into_owned()
}

/// A request the mock received.
#[derive(Debug, Clone)]
pub(crate) struct GlRequest {
    pub method: String,
    /// Without `/api/v4` and the query.
    pub path: String,
    pub query: String,
    /// The route's template (empty when none matched).
    pub route: String,
    pub headers: Vec<(String, String)>,
    pub raw: String,
    pub body: Value,
}

impl GlRequest {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter's value (`%XX` decoded).
    pub(crate) fn query_value(&self, key: &str) -> Option<String> {
        self.query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .map(decode)
    }
}

/// What the next request of a route gets instead of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GlFault {
    /// HTTP 502 (no Retry-After).
    BadGateway,
    /// HTTP 429 with `Retry-After: 0` and the RateLimit headers spent.
    TooManyRequests,
    /// HTTP 403 `insufficient_scope` (a `read_api` token asked to write).
    InsufficientScope,
}

#[derive(Default)]
struct State {
    requests: Vec<GlRequest>,
    violations: Vec<String>,
    /// user id → access level.
    members: HashMap<u64, u64>,
    /// merge request iid → the `GET` answer.
    mrs: HashMap<u64, Value>,
    /// merge request iid → its diffs.
    diffs: HashMap<u64, Value>,
    /// `(ref, path)` → the file's text.
    files: HashMap<(String, String), String>,
    /// `("issues" | "merge_requests", iid)` → notes, oldest first.
    notes: HashMap<(String, u64), Vec<Value>>,
    faults: VecDeque<(String, String, GlFault)>,
    next_id: u64,
    shutdown: bool,
}

/// The server.
pub(crate) struct GitlabMock {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: Option<JoinHandle<()>>,
}

impl GitlabMock {
    pub(crate) fn start() -> GitlabMock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            next_id: 5000,
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
        GitlabMock {
            addr,
            state,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT/api/v4`, for CI_API_V4_URL.
    pub(crate) fn api_url(&self) -> String {
        format!("http://{}{PREFIX}", self.addr)
    }

    /// User `id` has `level` (10 Guest, 20 Reporter, 30 Developer, 40 Maintainer).
    pub(crate) fn member(&self, id: u64, level: u64) {
        lock(&self.state).members.insert(id, level);
    }

    /// Merge request `iid`: `source_branch` at `head_sha` from project `source_project`
    /// into main, and its diffs (each `{old_path, new_path, diff, new_file, …}`).
    pub(crate) fn merge_request(
        &self,
        iid: u64,
        source_branch: &str,
        head_sha: &str,
        source_project: u64,
        diffs: Value,
    ) {
        let mut st = lock(&self.state);
        st.mrs.insert(
            iid,
            json!({"id": 500 + iid, "iid": iid, "project_id": 7, "title": format!("MR {iid}"),
                   "description": "", "state": "opened", "source_branch": source_branch,
                   "target_branch": "main", "source_project_id": source_project,
                   "target_project_id": 7, "sha": head_sha,
                   "diff_refs": {"base_sha": "b".repeat(40), "start_sha": "c".repeat(40), "head_sha": head_sha},
                   "web_url": format!("https://gitlab.example/group/hello/-/merge_requests/{iid}")}),
        );
        st.diffs.insert(iid, diffs);
    }

    /// The file `path` on branch `git_ref`.
    pub(crate) fn file_on(&self, git_ref: &str, path: &str, text: &str) {
        lock(&self.state)
            .files
            .insert((git_ref.to_string(), path.to_string()), text.to_string());
    }

    /// An existing note on an issue (`"issues"`) or merge request (`"merge_requests"`).
    pub(crate) fn note(&self, kind: &str, iid: u64, username: &str, body: &str, system: bool) {
        let mut st = lock(&self.state);
        let id = st.next_id;
        st.next_id += 1;
        st.notes
            .entry((kind.to_string(), iid))
            .or_default()
            .push(json!({
            "id": id, "body": body, "author": {"id": 9, "username": username},
            "created_at": "2026-12-01T10:00:00.000Z", "system": system}));
    }

    /// The next `method` request of `route` gets `fault`.
    pub(crate) fn fault(&self, method: &str, route: &str, fault: GlFault) {
        lock(&self.state)
            .faults
            .push_back((method.to_string(), route.to_string(), fault));
    }

    pub(crate) fn requests(&self) -> Vec<GlRequest> {
        lock(&self.state).requests.clone()
    }

    /// The requests of one route.
    pub(crate) fn calls(&self, method: &str, route: &str) -> Vec<GlRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.route == route)
            .collect()
    }

    /// Panics listing every request that broke the table or the headers.
    pub(crate) fn assert_valid(&self) {
        let v = lock(&self.state).violations.clone();
        assert!(
            v.is_empty(),
            "gitlab mock: {} violation(s):\n  {}",
            v.len(),
            v.join("\n  ")
        );
    }

    /// No request carried `secret` anywhere but in its `private-token` header.
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

impl Drop for GitlabMock {
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
    let mut req = GlRequest {
        method,
        path: path.strip_prefix(PREFIX).unwrap_or(&path).to_string(),
        query,
        route: String::new(),
        headers,
        raw,
        body,
    };
    let (status, extra, answer) = {
        let mut st = lock(state);
        let found = path.strip_prefix(PREFIX).and_then(|p| {
            table.iter().find_map(|r| {
                (r.method == req.method)
                    .then(|| matches(&r.path, p).map(|v| (r, v)))
                    .flatten()
            })
        });
        let violations = match &found {
            Some((route, _)) => check(route, &req),
            None => vec![format!("no route {} {path}", req.method)],
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
            None => (404, String::new(), json!({"message": "404 Not Found"})),
        };
        st.requests.push(req);
        reply
    };
    let (content_type, body) = match answer {
        Value::String(text) if status < 300 => ("text/plain; charset=utf-8", text),
        v => ("application/json", v.to_string()),
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\nratelimit-limit: 2000\r\n{extra}\r\n",
        body.len()
    );
    writer.write_all(head.as_bytes())?;
    writer.write_all(body.as_bytes())?;
    writer.flush()?;
    let _ = writer.shutdown(Shutdown::Both);
    Ok(())
}

/// The violations of one request against its route.
fn check(route: &Route, req: &GlRequest) -> Vec<String> {
    let mut v = Vec::new();
    if req.header("private-token") != Some(GITLAB_TOKEN) {
        v.push("private-token is not the token".to_string());
    }
    if req.header("authorization").is_some() || req.header("job-token").is_some() {
        v.push("a second credential header".to_string());
    }
    if req.header("accept") != Some("application/json") {
        v.push(format!("accept is {:?}", req.header("accept")));
    }
    if req.header("user-agent").is_none_or(str::is_empty) {
        v.push("no user-agent".to_string());
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
    for (field, (required, keys)) in &route.objects {
        match obj.get(field) {
            Some(Value::Object(o)) => v.extend(keys_of(o, required, keys, field)),
            Some(other) => v.push(format!("{field} is not an object: {other}")),
            None => {}
        }
    }
    v
}

fn fault_reply(f: GlFault) -> (u16, String, Value) {
    match f {
        GlFault::BadGateway => (502, String::new(), json!({"message": "502 Bad Gateway"})),
        GlFault::TooManyRequests => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            (
                429,
                format!("retry-after: 0\r\nratelimit-remaining: 0\r\nratelimit-reset: {now}\r\n"),
                json!({"message": "Retry later"}),
            )
        }
        GlFault::InsufficientScope => (
            403,
            String::new(),
            json!({"error": "insufficient_scope",
                   "error_description": "The request requires higher privileges than provided by the access token.",
                   "scope": "api"}),
        ),
    }
}

/// The answer to a valid request, from the state.
fn answer(
    st: &mut State,
    route: &Route,
    vars: &HashMap<String, String>,
    req: &GlRequest,
) -> (u16, String, Value) {
    let num = |k: &str| vars.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let ok = |v: Value| (route.status, String::new(), v);
    let not_found = (404, String::new(), json!({"message": "404 Not Found"}));
    let web = "https://gitlab.example/group/hello";
    let item = |kind: &str| {
        if kind.contains("merge_requests") {
            ("merge_requests".to_string(), num("merge_request_iid"))
        } else {
            ("issues".to_string(), num("issue_iid"))
        }
    };
    match (req.method.as_str(), route.path.as_str()) {
        ("GET", "/projects/{id}") => ok(json!({"id": 7, "path_with_namespace": "group/hello",
                                              "default_branch": "main", "web_url": web})),
        ("GET", "/projects/{id}/members/all/{user_id}") => {
            let id = num("user_id");
            match st.members.get(&id) {
                Some(level) => ok(json!({"id": id, "username": format!("user{id}"),
                                         "state": "active", "access_level": level})),
                None => not_found,
            }
        }
        ("GET", "/projects/{id}/merge_requests/{merge_request_iid}") => {
            match st.mrs.get(&num("merge_request_iid")) {
                Some(mr) => ok(mr.clone()),
                None => not_found,
            }
        }
        ("GET", "/projects/{id}/merge_requests/{merge_request_iid}/diffs") => ok(st
            .diffs
            .get(&num("merge_request_iid"))
            .cloned()
            .unwrap_or(json!([]))),
        ("GET", "/projects/{id}/repository/files/{file_path}/raw") => {
            let git_ref = req.query_value("ref").unwrap_or_default();
            match st.files.get(&(git_ref, decode(&vars["file_path"]))) {
                Some(text) => ok(Value::String(text.clone())),
                None => (404, String::new(), json!({"message": "404 File Not Found"})),
            }
        }
        ("GET", p) if p.ends_with("/notes") => {
            let mut notes = st.notes.get(&item(p)).cloned().unwrap_or_default();
            notes.reverse(); // sort=desc
            ok(Value::Array(notes))
        }
        ("POST", p) if p.ends_with("/notes") => {
            let id = st.next_id;
            st.next_id += 1;
            let n = json!({"id": id, "body": req.body["body"], "system": false,
                           "author": {"id": 77, "username": "project_7_bot_agent"},
                           "created_at": "2026-12-01T12:00:00.000Z"});
            st.notes.entry(item(p)).or_default().push(n.clone());
            ok(n)
        }
        ("PUT", p) if p.ends_with("/notes/{note_id}") => {
            let id = num("note_id");
            match st
                .notes
                .get_mut(&item(p))
                .and_then(|ns| ns.iter_mut().find(|n| n["id"] == id))
            {
                Some(n) => {
                    n["body"] = req.body["body"].clone();
                    ok(n.clone())
                }
                None => not_found,
            }
        }
        ("POST", "/projects/{id}/merge_requests") => {
            let iid = 100 + st.mrs.len() as u64;
            ok(
                json!({"id": 900 + iid, "iid": iid, "source_branch": req.body["source_branch"],
                      "web_url": format!("{web}/-/merge_requests/{iid}")}),
            )
        }
        ("POST", "/projects/{id}/merge_requests/{merge_request_iid}/discussions") => {
            let id = st.next_id;
            st.next_id += 1;
            ok(
                json!({"id": format!("{id:040x}"), "notes": [{"id": id, "body": req.body["body"],
                      "position": req.body["position"]}]}),
            )
        }
        _ => not_found,
    }
}
