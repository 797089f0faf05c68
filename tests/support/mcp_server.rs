//! The MCP server the integration tests start (`mcp-test-server`): stdio by default,
//! streamable HTTP with `--http` (JSON answers, or SSE streams with `--sse`). Its tools
//! cover what the agent must handle: read-only (`echo`, `env`, `barrier`), destructive
//! (`write_note`), non-destructive but writable (`slow`), `isError` (`fail`), a crash in
//! the middle of a call (`crash`), server-to-client requests with ids 0 and a string
//! (`ask`), non-text content (`picture`), and a name over 64 characters. `tools/list` is
//! paginated (`--page-size`). With `--swap`, the `swap` tool changes the list (`echo` gone,
//! `fresh` added) and says so (`notifications/tools/list_changed`: on the standalone
//! stream when one is open, else inside the call). Every message received is appended to `--log FILE` as a JSON line (and stdin's end as
//! `eof`), so tests can check what the client sent. Misbehaviours on request: a flood of
//! stderr with no newline before answering `initialize` (`--flood-stderr MIB`), stop
//! reading stdin after the handshake (`--stop-reading`), outlive stdin's end
//! (`--on-eof ignore`) and SIGTERM too (`--on-eof ignore-term`). Built as a `[[bin]]`
//! (DESIGN.md says why); it uses only std, serde_json and libc (to ignore SIGTERM).

// A test fixture: a panic is a test failure, reported by the test that started it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "mcp_oauth.rs"]
mod mcp_oauth;
use mcp_oauth::{AuthState, OAuthMode, Req};

/// How long `barrier` waits for its partners: far longer than parallel calls need.
const BARRIER_WAIT: Duration = Duration::from_secs(20);
/// How long `ask` waits for the client's answers.
const ASK_WAIT: Duration = Duration::from_secs(10);
const LONG_TOOL: &str = "a_tool_with_a_name_so_long_that_the_full_mcp_name_exceeds_the_api_limit";

struct Opts {
    page_size: usize,
    http: Option<String>,
    sse: bool,
    protocol: Option<String>,
    log: Option<String>,
    crash_on_start: bool,
    /// Never answer `initialize` (a server that hangs at start-up).
    hang_on_init: bool,
    /// HTTP: end a session after this many requests in it (404, as the spec says).
    expire_session_after: Option<u32>,
    /// HTTP with SSE: close a tools/call stream after its priming event; the answer is
    /// sent on the GET that resumes it (Last-Event-ID).
    sse_drop: bool,
    /// Start a child of our own that just waits (as `npx` starts `node`), logging its pid.
    grandchild: bool,
    /// `DIR N`: before answering `initialize`, leave a file in DIR and wait until N
    /// servers have (servers started one after another never get there).
    start_barrier: Option<(String, usize)>,
    /// `--describe-env NAME`: every tool's description ends with NAME's value.
    describe_env: Option<String>,
    /// stdio: read nothing more from stdin once the last `tools/list` page is asked for
    /// (a server whose input loop is stuck), so the client's writes fill the pipe.
    stop_reading: bool,
    /// stdio: what to do when stdin ends (the spec's shutdown), after logging `eof`.
    on_eof: OnEof,
    /// MiB of stderr written as one line before `initialize` is answered.
    flood_stderr: u64,
    /// HTTP: `--oauth SPEC`, see `mcp_oauth`.
    oauth: Option<OAuthMode>,
    /// HTTP: offer the standalone GET stream, and the `elicit` tool that uses it.
    standalone: bool,
    /// Declare `resources` (two, a page each: a text and a blob) and the `linked` tool,
    /// whose result links to one.
    resources: bool,
    /// Offer `swap`, which changes the tool list and says so.
    swap: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum OnEof {
    /// Exit 0, as a server should.
    Exit,
    /// Keep running (SIGTERM still ends it).
    Ignore,
    /// Keep running and ignore SIGTERM: only SIGKILL ends it.
    IgnoreTerm,
}

/// Where a server-initiated request's answer goes.
type Waiters = Mutex<HashMap<String, Value>>;

struct Server {
    opts: Opts,
    /// stdio: the one writer of stdout.
    out: Mutex<()>,
    barrier: (Mutex<(usize, u64)>, Condvar),
    answers: (Waiters, Condvar),
    /// Serialises appends to the log file.
    log: Mutex<()>,
    /// HTTP: the current session's number and how many requests it has seen.
    session: Mutex<(u32, u32)>,
    /// HTTP: answers of dropped streams, by the id of their last event; and a counter.
    replays: Mutex<(HashMap<String, Value>, u32)>,
    auth: Mutex<AuthState>,
    /// HTTP: the open standalone stream.
    stream: Mutex<Option<TcpStream>>,
    stream_open: Condvar,
    /// `swap` was called: `echo` is gone and `fresh` is listed.
    swapped: std::sync::atomic::AtomicBool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--measure-rss") {
        measure_rss(&args[1..]);
    }
    let mut opts = Opts {
        page_size: 2,
        http: None,
        sse: false,
        protocol: None,
        log: None,
        crash_on_start: false,
        hang_on_init: false,
        expire_session_after: None,
        sse_drop: false,
        grandchild: false,
        start_barrier: None,
        describe_env: None,
        stop_reading: false,
        on_eof: OnEof::Exit,
        flood_stderr: 0,
        oauth: None,
        standalone: false,
        resources: false,
        swap: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--page-size" => opts.page_size = val().parse().unwrap_or(2),
            "--http" => opts.http = Some(val()),
            "--protocol" => opts.protocol = Some(val()),
            "--log" => opts.log = Some(val()),
            "--sse" => opts.sse = true,
            "--crash-on-start" => opts.crash_on_start = true,
            "--hang-on-init" => opts.hang_on_init = true,
            "--expire-session-after" => opts.expire_session_after = val().parse().ok(),
            "--sse-drop" => opts.sse_drop = true,
            "--grandchild" => opts.grandchild = true,
            "--describe-env" => opts.describe_env = Some(val()),
            "--stop-reading" => opts.stop_reading = true,
            "--flood-stderr" => opts.flood_stderr = val().parse().unwrap_or(1),
            "--oauth" => opts.oauth = Some(OAuthMode::parse(&val())),
            "--standalone" => opts.standalone = true,
            "--resources" => opts.resources = true,
            "--swap" => opts.swap = true,
            "--on-eof" => {
                opts.on_eof = match val().as_str() {
                    "ignore" => OnEof::Ignore,
                    "ignore-term" => OnEof::IgnoreTerm,
                    _ => OnEof::Exit,
                }
            }
            "--start-barrier" => {
                let dir = val();
                opts.start_barrier = Some((dir, val().parse().unwrap_or(2)));
            }
            "--idle" => loop {
                std::thread::sleep(Duration::from_secs(60));
            },
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    // A line on stderr with the secret, which the agent's -v log must redact.
    eprintln!(
        "mcp-test-server starting, secret={}",
        std::env::var("MCP_TEST_SECRET").unwrap_or_default()
    );
    if opts.on_eof == OnEof::IgnoreTerm {
        // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    if opts.crash_on_start {
        eprintln!("crashing on start as asked");
        std::process::exit(7);
    }
    let server = Arc::new(Server {
        opts,
        out: Mutex::new(()),
        barrier: (Mutex::new((0, 0)), Condvar::new()),
        answers: (Mutex::new(HashMap::new()), Condvar::new()),
        log: Mutex::new(()),
        session: Mutex::new((0, 0)),
        replays: Mutex::new((HashMap::new(), 0)),
        auth: Mutex::new(AuthState::default()),
        stream: Mutex::new(None),
        stream_open: Condvar::new(),
        swapped: Default::default(),
    });
    server.log("pid", &json!(std::process::id()));
    if server.opts.grandchild {
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--idle")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        server.log("grandchild", &json!(child.id()));
        let mut child = child;
        std::thread::spawn(move || child.wait());
    }
    match server.opts.http.clone() {
        Some(addr) => serve_http(server, &addr),
        None => serve_stdio(server),
    }
}

impl Server {
    fn log(&self, what: &str, msg: &Value) {
        if let Some(path) = &self.opts.log {
            let _g = self.log.lock().unwrap();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            // One write: a test polling the log never reads half a line.
            let line = format!("{}\n", json!({"what": what, "msg": msg}));
            f.write_all(line.as_bytes()).unwrap();
        }
    }

    /// Notes a client's answer to one of our requests.
    fn answered(&self, msg: &Value) {
        let id = msg["id"].to_string();
        self.answers.0.lock().unwrap().insert(id, msg.clone());
        self.answers.1.notify_all();
    }

    fn wait_answer(&self, id: &Value) -> Option<Value> {
        let key = id.to_string();
        let deadline = Instant::now() + ASK_WAIT;
        let mut map = self.answers.0.lock().unwrap();
        loop {
            if let Some(v) = map.remove(&key) {
                return Some(v);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            map = self.answers.1.wait_timeout(map, left).unwrap().0;
        }
    }

    /// The result of one request. `send` delivers messages sent before the answer
    /// (notifications, our own requests); `None`: the request is a notification.
    fn handle(&self, msg: &Value, send: &dyn Fn(Value)) -> Result<Value, (i64, String)> {
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        match msg["method"].as_str().unwrap_or("") {
            "initialize" if self.opts.hang_on_init => loop {
                std::thread::sleep(Duration::from_secs(60));
            },
            "initialize" if self.opts.start_barrier.is_some() && !start_barrier(&self.opts) => {
                Err((
                    -32603,
                    "the other servers did not start at the same time".into(),
                ))
            }
            "initialize" if self.opts.flood_stderr > 0 && !flood_stderr(self.opts.flood_stderr) => {
                Err((-32603, "stderr could not be written".into()))
            }
            "initialize" => {
                let mut caps = json!({"tools": {"listChanged": true}, "logging": {}});
                if self.opts.resources {
                    caps["resources"] = json!({});
                }
                Ok(json!({
                    "protocolVersion": self.opts.protocol.clone()
                        .unwrap_or_else(|| params["protocolVersion"].as_str().unwrap_or("").into()),
                    "capabilities": caps,
                    "serverInfo": {"name": "mcp-test-server", "version": "1.2.3"},
                }))
            }
            "resources/list" if self.opts.resources => Ok(match params["cursor"].as_str() {
                None => json!({"resources": [{"uri": "file:///notes.txt", "name": "notes",
                                              "mimeType": "text/plain", "description": "The notes."}],
                               "nextCursor": "res-2"}),
                Some("res-2") => json!({"resources": [{"uri": "file:///logo.png", "name": "logo",
                                                       "mimeType": "image/png"}]}),
                Some(_) => return Err((-32602, "bad cursor".into())),
            }),
            "resources/read" if self.opts.resources => match params["uri"].as_str() {
                Some("file:///notes.txt") => Ok(json!({"contents": [{"uri": "file:///notes.txt",
                    "mimeType": "text/plain", "text": "The launch code is 4242."}]})),
                Some("file:///logo.png") => Ok(json!({"contents": [{"uri": "file:///logo.png",
                    "mimeType": "image/png", "blob": "aGVsbG8gd29ybGQ="}]})),
                _ => Err((-32002, "Resource not found".into())),
            },
            "ping" => Ok(json!({})),
            "tools/list" => {
                let mut all = tools();
                if self.opts.resources {
                    all.push(
                        json!({"name": "linked", "description": "Links to a resource.",
                                    "annotations": {"readOnlyHint": true},
                                    "inputSchema": {"type": "object", "properties": {}}}),
                    );
                }
                if self.opts.standalone {
                    all.push(json!({"name": "elicit", "description": "Asks the client on the standalone stream.",
                                    "annotations": {"readOnlyHint": true},
                                    "inputSchema": {"type": "object", "properties": {}}}));
                }
                if self.opts.swap {
                    all.push(
                        json!({"name": "swap", "description": "Changes the tool list.",
                                    "annotations": {"readOnlyHint": true},
                                    "inputSchema": {"type": "object", "properties": {}}}),
                    );
                }
                if self.swapped.load(std::sync::atomic::Ordering::SeqCst) {
                    all.retain(|t| t["name"] != "echo");
                    all.push(
                        json!({"name": "fresh", "description": "Listed after the swap.",
                                    "annotations": {"readOnlyHint": true},
                                    "inputSchema": {"type": "object", "properties": {
                                        "text": {"type": "string"}}, "required": ["text"]}}),
                    );
                }
                if let Some(name) = &self.opts.describe_env {
                    // A server that puts what it was given into its descriptions.
                    let value = std::env::var(name).unwrap_or_default();
                    for t in &mut all {
                        let d = t["description"].as_str().unwrap_or_default();
                        let d = format!("{d} Uses {name}={value}.");
                        t["description"] = json!(d);
                    }
                }
                let start: usize = params["cursor"]
                    .as_str()
                    .and_then(|c| c.strip_prefix("page-"))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                let end = (start + self.opts.page_size).min(all.len());
                let mut r = json!({"tools": all[start..end]});
                if end < all.len() {
                    r["nextCursor"] = json!(format!("page-{end}"));
                }
                Ok(r)
            }
            "tools/call" => self.call(&params, send),
            m => Err((-32601, format!("Method not found: {m}"))),
        }
    }

    fn call(&self, params: &Value, send: &dyn Fn(Value)) -> Result<Value, (i64, String)> {
        let args = &params["arguments"];
        let text = |t: String| json!({"content": [{"type": "text", "text": t}]});
        match params["name"].as_str().unwrap_or("") {
            "echo" => Ok(text(format!(
                "echo: {}",
                args["text"].as_str().unwrap_or("")
            ))),
            "env" => {
                let name = args["name"].as_str().unwrap_or("");
                Ok(text(format!(
                    "{name}={}",
                    std::env::var(name).unwrap_or_else(|_| "<unset>".into())
                )))
            }
            "barrier" => {
                let parties = args["parties"].as_u64().unwrap_or(2) as usize;
                let (lock, cv) = &self.barrier;
                let mut st = lock.lock().unwrap();
                let generation = st.1;
                st.0 += 1;
                if st.0 >= parties {
                    st.0 = 0;
                    st.1 += 1;
                    cv.notify_all();
                    return Ok(text(format!("all {parties} calls arrived together")));
                }
                let deadline = Instant::now() + BARRIER_WAIT;
                while st.1 == generation {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                        st.0 -= 1;
                        return Ok(json!({"isError": true, "content": [{"type": "text",
                            "text": format!("barrier of {parties} not reached: the calls \
                                             did not overlap")}]}));
                    };
                    st = cv.wait_timeout(st, left).unwrap().0;
                }
                Ok(text(format!("all {parties} calls arrived together")))
            }
            "write_note" => {
                let path = args["path"].as_str().unwrap_or("note.txt");
                std::fs::write(path, args["text"].as_str().unwrap_or(""))
                    .map_err(|e| (-32603, e.to_string()))?;
                Ok(text(format!("wrote {path}")))
            }
            "slow" => {
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(1000)));
                Ok(text("slept".into()))
            }
            "fail" => Ok(json!({"isError": true,
                                "content": [{"type": "text", "text": "it failed on purpose"}]})),
            "crash" => {
                eprintln!("crashing in the middle of a call");
                std::process::exit(3);
            }
            "ask" => {
                send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": "asking the client"}}));
                let mut codes = Vec::new();
                for (id, method) in [
                    (json!(0), "sampling/createMessage"),
                    (json!("r-1"), "roots/list"),
                    (json!(5), "ping"),
                ] {
                    send(json!({"jsonrpc": "2.0", "id": id, "method": method,
                                "params": {"messages": [], "maxTokens": 1}}));
                    let a = self.wait_answer(&id);
                    codes.push(match a {
                        Some(a) if a.get("error").is_some() => {
                            format!("{method}={}", a["error"]["code"])
                        }
                        Some(a) if a.get("result").is_some() => format!("{method}=ok"),
                        _ => format!("{method}=no answer"),
                    });
                }
                Ok(text(codes.join(" ")))
            }
            // A real 3×2 PNG, then base64 of "hello" that claims to be one.
            "picture" => Ok(json!({"content": [
                {"type": "image", "mimeType": "image/png", "data":
                 "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGM8ISfHwMDAwMDAxAADABMuAQhqwGVhAAAAAElFTkSuQmCC"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}],
                "structuredContent": {"width": 1, "height": 2}})),
            LONG_TOOL => Ok(text("long name reached".into())),
            "elicit" => self.elicit(args),
            "swap" => self.swap(send),
            "fresh" if self.swapped.load(std::sync::atomic::Ordering::SeqCst) => Ok(text(format!(
                "fresh: {}",
                args["text"].as_str().unwrap_or("")
            ))),
            "linked" => Ok(
                json!({"content": [{"type": "text", "text": "see the notes"},
                {"type": "resource_link", "uri": "file:///notes.txt", "name": "notes"}]}),
            ),
            other => Err((-32602, format!("Unknown tool: {other}"))),
        }
    }
}

impl Server {
    /// Sends `notifications/tools/list_changed` and an `elicitation/create` on the
    /// standalone stream (waiting, bounded, for the client to open it) and returns the
    /// client's answer.
    fn elicit(&self, args: &Value) -> Result<Value, (i64, String)> {
        let deadline = Instant::now() + ASK_WAIT;
        let mut stream = self.stream.lock().unwrap();
        while stream.is_none() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Err((-32603, "the client opened no standalone stream".into()));
            };
            stream = self.stream_open.wait_timeout(stream, left).unwrap().0;
        }
        let required = args.get("required").cloned().unwrap_or(json!([]));
        let c = stream.as_mut().unwrap();
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let ask = json!({"jsonrpc": "2.0", "id": "el-1", "method": "elicitation/create", "params": {
            "message": "Which branch?",
            "requestedSchema": {"type": "object", "properties": {
                "branch": {"type": "string", "default": "main"},
                "reason": {"type": "string"}}, "required": required}}});
        write!(c, "id: s-1\ndata: {changed}\n\nid: s-2\ndata: {ask}\n\n").unwrap();
        c.flush().unwrap();
        drop(stream);
        let answer = self.wait_answer(&json!("el-1"));
        Ok(
            json!({"content": [{"type": "text", "text": format!("answer: {}",
            answer.map(|a| a["result"].to_string()).unwrap_or_else(|| "none".into()))}]}),
        )
    }
}

impl Server {
    /// Changes the tool list and says so: on the standalone stream with `--standalone`,
    /// followed by a `ping` whose answer is awaited (the client handles the stream in
    /// order, so the change is noted before the call returns); else inside the call.
    fn swap(&self, send: &dyn Fn(Value)) -> Result<Value, (i64, String)> {
        self.swapped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let mut stream = self.stream.lock().unwrap();
        let deadline = Instant::now() + ASK_WAIT;
        while self.opts.standalone && stream.is_none() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Err((-32603, "the client opened no standalone stream".into()));
            };
            stream = self.stream_open.wait_timeout(stream, left).unwrap().0;
        }
        let on_stream = match stream.as_mut() {
            Some(c) => {
                let ping = json!({"jsonrpc": "2.0", "id": "sw-1", "method": "ping"});
                write!(c, "id: w-1\ndata: {changed}\n\nid: w-2\ndata: {ping}\n\n").unwrap();
                c.flush().unwrap();
                true
            }
            None => false,
        };
        drop(stream);
        let how = if on_stream {
            self.wait_answer(&json!("sw-1"))
                .ok_or((-32603, "the ping on the stream got no answer".into()))?;
            "on the standalone stream"
        } else {
            send(changed);
            "inside the call"
        };
        Ok(json!({"content": [{"type": "text", "text": format!("swapped ({how})")}]}))
    }
}

/// `--measure-rss FILE CMD ARGS…`: runs CMD (stdio, environment and directory inherited),
/// writes its peak resident set in KiB (`wait4`'s `ru_maxrss`) to FILE and exits as it
/// did. A test measures the agent through this small process because a child forked
/// from the large test process starts with that process's resident set as its peak
/// (Linux keeps the pre-exec high-water mark).
fn measure_rss(args: &[String]) -> ! {
    let (file, cmd) = (&args[0], &args[1..]);
    let child = std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own unreaped child, with valid out-pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid);
    std::fs::write(file, usage.ru_maxrss.to_string()).unwrap();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    std::process::exit(code)
}

/// Writes `mib` MiB of `x` to stderr, a MiB at a time and with no newline, then a
/// newline and a line the client must log whole. Returns once the client read it (the
/// pipe holds 64 KiB).
fn flood_stderr(mib: u64) -> bool {
    let chunk = vec![b'x'; 1 << 20];
    let mut err = std::io::stderr().lock();
    (0..mib).all(|_| err.write_all(&chunk).is_ok())
        && writeln!(err, "\nafter the flood").is_ok()
        && err.flush().is_ok()
}

/// Leaves this server's mark and waits (bounded) until `n` servers have left theirs.
fn start_barrier(opts: &Opts) -> bool {
    let Some((dir, n)) = &opts.start_barrier else {
        return true;
    };
    std::fs::write(format!("{dir}/{}", std::process::id()), "").unwrap();
    let deadline = Instant::now() + BARRIER_WAIT;
    while Instant::now() < deadline {
        if std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0) >= *n {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn tools() -> Vec<Value> {
    let obj = |props: Value, req: Value| {
        json!({"type": "object", "properties": props,
                                                  "required": req})
    };
    let ro = json!({"readOnlyHint": true});
    vec![
        json!({"name": "echo", "description": "Echoes text.", "annotations": ro,
               "inputSchema": obj(json!({"text": {"type": "string"}}), json!(["text"]))}),
        json!({"name": "env", "description": "Shows an environment variable.",
               "annotations": ro,
               "inputSchema": obj(json!({"name": {"type": "string"}}), json!(["name"]))}),
        json!({"name": "barrier", "description": "Returns once `parties` calls overlap.",
               "annotations": ro,
               "inputSchema": obj(json!({"parties": {"type": "integer"}}), json!([]))}),
        json!({"name": "write_note", "description": "Writes a file.",
               "inputSchema": obj(json!({"path": {"type": "string"}, "text": {"type": "string"}}),
                                  json!(["path"]))}),
        json!({"name": "slow", "description": "Sleeps `ms` milliseconds.",
               "annotations": {"readOnlyHint": false, "destructiveHint": false},
               "inputSchema": obj(json!({"ms": {"type": "integer"}}), json!([]))}),
        json!({"name": "fail", "description": "Always fails.", "annotations": ro,
               "inputSchema": obj(json!({}), json!([]))}),
        json!({"name": "crash", "description": "Kills the server.", "annotations": ro,
               "inputSchema": obj(json!({}), json!([]))}),
        json!({"name": "ask", "description": "Asks the client things.", "annotations": ro,
               "inputSchema": obj(json!({}), json!([]))}),
        json!({"name": "picture", "description": "Returns an image.", "annotations": ro,
               "inputSchema": obj(json!({}), json!([]))}),
        json!({"name": LONG_TOOL, "description": "Has a long name.", "annotations": ro,
               "inputSchema": obj(json!({}), json!([]))}),
    ]
}

// ---------------------------------------------------------------------------------------
// stdio

fn serve_stdio(server: Arc<Server>) {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        server.log("stdio", &msg);
        let page_start = msg["params"]["cursor"]
            .as_str()
            .and_then(|c| c.strip_prefix("page-"))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        let last_page =
            msg["method"] == "tools/list" && page_start + server.opts.page_size >= tools().len();
        if msg.get("method").is_none() {
            server.answered(&msg);
            continue;
        }
        if msg.get("id").is_none() {
            continue; // a notification
        }
        let s = server.clone();
        // One thread per request: calls overlap, as the barrier tool needs.
        std::thread::spawn(move || {
            let send = |m: Value| write_stdout(&s, &m);
            let reply = answer(&msg, s.handle(&msg, &send));
            write_stdout(&s, &reply);
        });
        if last_page && server.opts.stop_reading {
            loop {
                std::thread::park(); // stdin is never read again
            }
        }
    }
    server.log("eof", &Value::Null);
    if server.opts.on_eof != OnEof::Exit {
        loop {
            std::thread::park(); // outlives stdin's end; only a signal ends it
        }
    }
}

fn write_stdout(server: &Server, msg: &Value) {
    let _g = server.out.lock().unwrap();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{msg}");
    let _ = out.flush();
}

fn answer(msg: &Value, r: Result<Value, (i64, String)>) -> Value {
    match r {
        Ok(result) => json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}),
        Err((code, message)) => json!({"jsonrpc": "2.0", "id": msg["id"],
                                        "error": {"code": code, "message": message}}),
    }
}

// ---------------------------------------------------------------------------------------
// Streamable HTTP

const SESSION: &str = "test-session-7f3a";

/// The id of session number `n`.
fn session_id(n: u32) -> String {
    if n == 0 {
        SESSION.to_string()
    } else {
        format!("{SESSION}-{n}")
    }
}

fn serve_http(server: Arc<Server>, addr: &str) {
    let listener = TcpListener::bind(addr).expect("bind");
    let local = listener.local_addr().unwrap();
    println!("listening on http://{local}/mcp");
    let _ = std::io::stdout().flush();
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let s = server.clone();
        std::thread::spawn(move || {
            let _ = http_exchange(&s, conn);
        });
    }
}

fn http_exchange(server: &Server, mut conn: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers: HashMap<String, String> = HashMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let method = request_line.split_whitespace().next().unwrap_or("");
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if let Some(mode) = &server.opts.oauth {
        let req = Req {
            method,
            path,
            query,
            headers: &headers,
            body: &body,
            origin: format!(
                "http://{}",
                headers.get("host").cloned().unwrap_or_default()
            ),
        };
        let log = |what: &str, v: &Value| server.log(what, v);
        let answer = match mode.route(&server.auth, &req, &log) {
            Some(a) => Some(a),
            None if path == "/mcp" && method != "DELETE" => {
                let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let r = mode.guard(
                    &server.auth,
                    &req,
                    msg["method"].as_str().unwrap_or(""),
                    msg["params"]["name"].as_str().unwrap_or(""),
                );
                if let Some((status, _, _)) = &r {
                    server.log(
                        "http-refused",
                        &json!({"status": status, "method": method,
                        "authorization": headers.get("authorization"), "body": msg}),
                    );
                }
                r
            }
            None if path != "/mcp" => Some(("404 Not Found".into(), vec![], String::new())),
            None => None,
        };
        if let Some((status, h, b)) = answer {
            let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            return respond(&mut conn, &status, &h, &b);
        }
    }
    let seen = json!({"method": method, "session": headers.get("mcp-session-id"),
                      "protocol": headers.get("mcp-protocol-version"),
                      "accept": headers.get("accept"),
                      "authorization": headers.get("authorization")});
    if method == "DELETE" {
        server.log("http-delete", &seen);
        return respond(&mut conn, "200 OK", &[], "");
    }
    if method == "GET" {
        server.log(
            "http-get",
            &json!({"headers": seen, "last_event_id": headers.get("last-event-id")}),
        );
        let replay = headers
            .get("last-event-id")
            .and_then(|id| server.replays.lock().unwrap().0.remove(id));
        if replay.is_none() && server.opts.standalone {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
            conn.write_all(head.as_bytes())?;
            conn.write_all(b"id: s-0\ndata:\n\n")?;
            conn.flush()?;
            *server.stream.lock().unwrap() = Some(conn);
            server.stream_open.notify_all();
            return Ok(());
        }
        let Some(reply) = replay else {
            return respond(&mut conn, "405 Method Not Allowed", &[], "");
        };
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        conn.write_all(head.as_bytes())?;
        write!(conn, "id: resumed-1\ndata: {reply}\n\n")?;
        return conn.flush();
    }
    if method != "POST" {
        return respond(&mut conn, "405 Method Not Allowed", &[], "");
    }
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    server.log("http", &json!({"headers": seen, "body": msg}));
    let is_init = msg["method"] == "initialize";
    let current = {
        let mut st = server.session.lock().unwrap();
        if is_init && st.1 > 0 {
            *st = (st.0 + 1, 0); // a new session
        }
        st.1 += 1;
        if !is_init
            && headers.get("mcp-session-id") == Some(&session_id(st.0))
            && server.opts.expire_session_after.is_some_and(|n| st.1 > n)
        {
            return respond(&mut conn, "404 Not Found", &[], "session expired");
        }
        session_id(st.0)
    };
    if !is_init
        && (headers.get("mcp-session-id") != Some(&current)
            || !headers.contains_key("mcp-protocol-version"))
    {
        return respond(
            &mut conn,
            "400 Bad Request",
            &[],
            "missing session or protocol header",
        );
    }
    if msg.get("method").is_none() {
        server.answered(&msg);
        return respond(&mut conn, "202 Accepted", &[], "");
    }
    if msg.get("id").is_none() {
        return respond(&mut conn, "202 Accepted", &[], "");
    }
    let session: &[(&str, &str)] = if is_init {
        &[("Mcp-Session-Id", current.as_str())]
    } else {
        &[]
    };
    if !server.opts.sse {
        let reply = answer(&msg, server.handle(&msg, &|_m| {}));
        let mut h = vec![("Content-Type", "application/json")];
        h.extend_from_slice(session);
        return respond(&mut conn, "200 OK", &h, &reply.to_string());
    }
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
         Connection: close\r\n",
    );
    for (k, v) in session {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes())?;
    if server.opts.sse_drop && msg["method"] == "tools/call" {
        // Prime with an id and a short retry, keep the answer for the GET, hang up.
        let reply = answer(&msg, server.handle(&msg, &|_m| {}));
        let mut r = server.replays.lock().unwrap();
        r.1 += 1;
        let id = format!("drop-{}", r.1);
        r.0.insert(id.clone(), reply);
        drop(r);
        write!(conn, "id: {id}\nretry: 50\ndata:\n\n")?;
        return conn.flush();
    }
    // The priming event: an id and empty data.
    conn.write_all(b"id: ev-0\ndata:\n\n")?;
    conn.flush()?;
    let out = Mutex::new(conn.try_clone()?);
    let seq = Mutex::new(0u32);
    let send = |m: Value| {
        let mut n = seq.lock().unwrap();
        *n += 1;
        let mut c = out.lock().unwrap();
        let _ = write!(c, "id: ev-{n}\nevent: message\ndata: {m}\n\n");
        let _ = c.flush();
    };
    let reply = answer(&msg, server.handle(&msg, &send));
    // Pretty-printed: one `data:` line per line of JSON, as SSE allows.
    let text = serde_json::to_string_pretty(&reply).unwrap();
    let mut c = out.lock().unwrap();
    writeln!(c, "id: ev-last")?;
    for line in text.lines() {
        writeln!(c, "data: {line}")?;
    }
    writeln!(c)?;
    c.flush()
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<()> {
    let mut s = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.push_str(body);
    conn.write_all(s.as_bytes())?;
    conn.flush()
}
