//! A small hand-written ACP client for the integration tests: it runs `agent acp` against
//! the mock model, writes requests, collects everything the agent sends in order, and
//! checks each message against the published ACP schema (`tests/fixtures/acp/`): the
//! `Agent` branch of the root for every message, and each response's result against the
//! response type of the method it answers. A message the schema refuses fails the test.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::TestEnv;

/// Longer than any wait a correct agent needs; a hung agent fails the test instead of CI.
const HANG_LIMIT: Duration = Duration::from_secs(60);

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/acp/schema.v1.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

/// A validator for `#/$defs/{name}` (or the root's `Agent` branch for `"Agent"`).
fn validator(name: &str) -> &'static jsonschema::Validator {
    static CACHE: OnceLock<std::sync::Mutex<HashMap<String, &'static jsonschema::Validator>>> =
        OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some(v) = cache.get(name) {
        return v;
    }
    let s = schema();
    let root = if name == "Agent" {
        let agent = s["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["title"] == "Agent")
            .unwrap()
            .clone();
        let mut a = agent;
        a["$defs"] = s["$defs"].clone();
        a["$schema"] = s["$schema"].clone();
        a
    } else {
        json!({"$schema": s["$schema"], "$ref": format!("#/$defs/{name}"), "$defs": s["$defs"]})
    };
    let v: &'static jsonschema::Validator =
        Box::leak(Box::new(jsonschema::validator_for(&root).unwrap()));
    cache.insert(name.to_string(), v);
    v
}

/// Panics naming every violation of `schema_name` by `msg`.
pub(crate) fn assert_valid(schema_name: &str, msg: &Value) {
    let errors: Vec<String> = validator(schema_name)
        .iter_errors(msg)
        .take(5)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "agent sent a message the ACP schema ({schema_name}) refuses:\n{}\n{}",
        errors.join("\n"),
        msg.to_string().chars().take(2000).collect::<String>()
    );
}

/// The response type of a method's result.
fn response_type(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResponse",
        "session/new" => "NewSessionResponse",
        "session/load" => "LoadSessionResponse",
        "session/resume" => "ResumeSessionResponse",
        "session/list" => "ListSessionsResponse",
        "session/close" => "CloseSessionResponse",
        "session/prompt" => "PromptResponse",
        "session/set_config_option" => "SetSessionConfigOptionResponse",
        "session/set_mode" => "SetSessionModeResponse",
        _ => return None,
    })
}

/// `agent acp` under test, and what it sent so far.
pub(crate) struct AcpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    /// Every message the agent sent, in order.
    pub(crate) log: Vec<Value>,
    next_id: u64,
    methods: HashMap<u64, String>,
}

impl AcpClient {
    /// `agent acp` with `args` (its flags, then `--` and run flags) in the env's workspace,
    /// sessions kept under the env's root.
    pub(crate) fn start(env: &TestEnv, args: &[&str]) -> AcpClient {
        let sessions = env.out("acp-sessions");
        let mut all = vec!["acp", "--sessions-dir", sessions.to_str().unwrap()];
        all.extend_from_slice(args);
        let mut c = env.command(&all);
        c.stdin(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = c.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("agent sent a line that is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        AcpClient {
            stdin: child.stdin.take(),
            child,
            rx,
            log: Vec::new(),
            next_id: 1,
            methods: HashMap::new(),
        }
    }

    /// Writes one raw line (hostile clients).
    pub(crate) fn send_raw(&mut self, line: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    /// Sends a request; returns its id.
    pub(crate) fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.methods.insert(id, method.to_string());
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(msg.to_string().as_bytes());
        id
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(msg.to_string().as_bytes());
    }

    /// Answers a request of the agent's.
    pub(crate) fn reply(&mut self, id: &Value, result: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send_raw(msg.to_string().as_bytes());
    }

    /// The next message the agent sends (validated and logged).
    pub(crate) fn next(&mut self) -> Value {
        match self.rx.recv_timeout(HANG_LIMIT) {
            Ok(v) => {
                self.check(&v);
                self.log.push(v.clone());
                v
            }
            Err(RecvTimeoutError::Timeout) => panic!("agent acp sent nothing for {HANG_LIMIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("agent acp closed stdout"),
        }
    }

    fn check(&self, v: &Value) {
        assert_valid("Agent", v);
        if let (Some(id), Some(result)) = (v["id"].as_u64(), v.get("result"))
            && let Some(ty) = self.methods.get(&id).and_then(|m| response_type(m))
        {
            assert_valid(ty, result);
        }
        if v["method"] == "session/request_permission" {
            assert_valid("RequestPermissionRequest", &v["params"]);
        }
        if v["method"] == "fs/read_text_file" {
            assert_valid("ReadTextFileRequest", &v["params"]);
        }
        if v["method"] == "fs/write_text_file" {
            assert_valid("WriteTextFileRequest", &v["params"]);
        }
        if v["method"] == "session/update" {
            assert_valid("SessionNotification", &v["params"]);
        }
    }

    /// Reads until the response to `id`, handing each agent request to `on_request`
    /// (which answers it or not); returns the response and the notifications before it.
    pub(crate) fn until_response(
        &mut self,
        id: u64,
        mut on_request: impl FnMut(&mut AcpClient, &Value),
    ) -> (Value, Vec<Value>) {
        let mut seen = Vec::new();
        loop {
            let v = self.next();
            if v["id"] == id && v.get("method").is_none() {
                return (v, seen);
            }
            if v.get("method").is_some() && v.get("id").is_some() {
                on_request(self, &v);
            }
            seen.push(v);
        }
    }

    /// A request's response, every agent request answered by allowing once.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.send(method, params);
        self.until_response(id, |_, _| panic!("unexpected request from agent"))
    }

    /// Closes stdin and waits for the agent to exit; its exit code.
    pub(crate) fn finish(mut self) -> (Option<i32>, Vec<Value>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Ok(v) = self.rx.recv_timeout(HANG_LIMIT) {
            self.check(&v);
            rest.push(v);
        }
        use wait_timeout::ChildExt;
        let status = self
            .child
            .wait_timeout(HANG_LIMIT)
            .unwrap()
            .unwrap_or_else(|| {
                let _ = self.child.kill();
                panic!("agent acp did not exit after stdin closed")
            });
        (status.code(), rest)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for AcpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `initialize`, then `session/new` in `cwd`: the session id.
pub(crate) fn open_session(c: &mut AcpClient, cwd: &std::path::Path) -> String {
    let (r, _) = c.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    let (r, _) = c.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    r["result"]["sessionId"].as_str().unwrap().to_string()
}

/// The `sessionUpdate` kinds of the notifications, in order.
pub(crate) fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["method"] == "session/update")
        .map(|u| {
            u["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

/// A prompt of one text block.
pub(crate) fn text_prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}
