//! One ACP session: its workspace, its stored conversation, its options (model, mode) and
//! the prompt running in it, at most one. A prompt is `agent run` in a child process with
//! the session's flags, resuming the session's transcript and writing it again (`-o`), its
//! `--jsonl` events read back as typed `RunEvent`s and handed to the `AcpUpdates` sink.
//! Its permission requests (`--permission-prompt stdin`) become
//! `session/request_permission`, answered on the child's stdin; with the client's `fs`
//! capabilities (`--client-files`) its file requests become `fs/read_text_file` and
//! `fs/write_text_file`, answered the same way. `session/cancel` sends the
//! child SIGINT: its own way out kills its commands and sub-agents and writes the
//! transcript (status `interrupted`), as at a timeout, and the prompt answers `cancelled`.

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{Value, json};

use super::Options;
use super::store::{self, Meta, SessionSpec};
use super::updates::{self, AcpUpdates};
use super::wire::{self, Out, RpcError};
use crate::config::cli::AcpPermissions;
use crate::model::protocol::{ContentBlock, Message, Role};
use crate::run::client_files::{FileAnswer, FileRequest};
use crate::run::event::{PermissionRequested, RunEvent};
use crate::run::events::{Emitted, Sink};
use crate::util::output;
use crate::util::sync::Locked;

/// Lines of a failed run's stderr quoted in the prompt's error.
const STDERR_TAIL: usize = 6;

/// What the client offered of `fs` in `initialize`: the file tools' reads and writes go
/// through it (`agent run --client-files`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClientFs {
    pub read: bool,
    pub write: bool,
}

pub(crate) struct Session {
    pub(crate) id: String,
    fs: ClientFs,
    dir: PathBuf,
    cwd: PathBuf,
    mcp_config: Option<PathBuf>,
    opts: Arc<Options>,
    out: Out,
    state: Mutex<State>,
    idle: Condvar,
}

#[derive(Default)]
struct State {
    model: Option<String>,
    mode: Option<AcpPermissions>,
    running: Option<Running>,
    /// Calls the client chose "always allow" for (`always_key`), for the session's life.
    always: HashSet<String>,
}

struct Running {
    pid: u32,
    cancelled: Arc<AtomicBool>,
}

impl Session {
    pub(crate) fn create(
        opts: Arc<Options>,
        out: Out,
        fs: ClientFs,
        spec: SessionSpec,
    ) -> Result<Arc<Session>, RpcError> {
        check_run(&opts, &spec)?;
        let id = store::new_id();
        let dir = opts.store.join(&id);
        make_private_dir(&dir).map_err(|e| {
            RpcError::new(
                wire::INTERNAL_ERROR,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        let meta = Meta {
            session_id: id.clone(),
            cwd: spec.cwd.clone(),
            model: None,
            mode: None,
            created_ms: store::now_ms(),
        };
        store::write_meta(&dir, &meta).map_err(internal)?;
        Session::open(opts, out, fs, meta, dir, &spec)
    }

    pub(crate) fn load(
        opts: Arc<Options>,
        out: Out,
        fs: ClientFs,
        id: &str,
        spec: SessionSpec,
    ) -> Result<Arc<Session>, RpcError> {
        let dir = opts.store.join(id);
        let meta = match store::valid_id(id).then(|| store::read_meta(&dir)) {
            Some(Ok(m)) => m,
            _ => {
                return Err(RpcError::new(
                    wire::RESOURCE_NOT_FOUND,
                    format!("no saved session {id:?} in {}", opts.store.display()),
                ));
            }
        };
        if meta.cwd != spec.cwd {
            output::warn(&format!(
                "acp: session {id} was created in {}; it now works in {}",
                meta.cwd.display(),
                spec.cwd.display()
            ));
        }
        check_run(&opts, &spec)?;
        let meta = Meta {
            cwd: spec.cwd.clone(),
            ..meta
        };
        store::write_meta(&dir, &meta).map_err(internal)?;
        Session::open(opts, out, fs, meta, dir, &spec)
    }

    fn open(
        opts: Arc<Options>,
        out: Out,
        fs: ClientFs,
        meta: Meta,
        dir: PathBuf,
        spec: &SessionSpec,
    ) -> Result<Arc<Session>, RpcError> {
        let mcp_config = store::write_mcp(&dir, &spec.mcp).map_err(internal)?;
        let mode = meta.mode.as_deref().and_then(parse_mode);
        Ok(Arc::new(Session {
            id: meta.session_id,
            fs,
            dir,
            cwd: meta.cwd,
            mcp_config,
            opts,
            out,
            state: Mutex::new(State {
                model: meta.model,
                mode,
                ..State::default()
            }),
            idle: Condvar::new(),
        }))
    }

    /// The sink of the session's updates.
    pub(crate) fn updates(&self) -> AcpUpdates {
        AcpUpdates {
            out: self.out.clone(),
            session_id: self.id.clone(),
            cwd: self.cwd.clone(),
            streamed: false,
        }
    }

    pub(crate) fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    fn transcript(&self) -> PathBuf {
        self.dir.join(store::TRANSCRIPT)
    }

    fn mode(&self) -> AcpPermissions {
        self.state.locked().mode.unwrap_or(self.opts.permissions)
    }

    /// The model the session's runs use: the chosen one, else the run flags' or the
    /// environment's (`AGENT_MODEL`), else agent's default.
    fn model(&self) -> String {
        if let Some(m) = &self.state.locked().model {
            return m.clone();
        }
        super::parse_run_flags(&self.opts.run_flags)
            .ok()
            .and_then(|r| r.model)
            .or_else(|| std::env::var("AGENT_MODEL").ok().filter(|m| !m.is_empty()))
            .unwrap_or_else(|| "default".to_string())
    }

    /// `result` with the session's modes and config options added.
    pub(crate) fn describe(&self, mut result: Value) -> Value {
        let mode = self.mode();
        result["modes"] = json!({
            "currentModeId": mode.as_str(),
            "availableModes": MODES.iter().map(|(m, name, description)| json!({
                "id": m.as_str(), "name": name, "description": description
            })).collect::<Vec<_>>(),
        });
        result["configOptions"] = self.config_options();
        result
    }

    fn config_options(&self) -> Value {
        let model = self.model();
        let mode = self.mode();
        json!([
            {
                "id": "model",
                "name": "Model",
                "description": "The model each prompt's run asks (any id the provider knows).",
                "category": "model",
                "type": "select",
                "currentValue": model,
                "options": [{"value": model, "name": model}],
            },
            {
                "id": "mode",
                "name": "Permissions",
                "description": "What is asked before a tool call runs.",
                "category": "mode",
                "type": "select",
                "currentValue": mode.as_str(),
                "options": MODES.iter().map(|(m, name, description)| json!({
                    "value": m.as_str(), "name": name, "description": description
                })).collect::<Vec<_>>(),
            }
        ])
    }

    pub(crate) fn set_config_option(&self, params: &Value) -> Result<Value, RpcError> {
        let value = params
            .get("value")
            .and_then(Value::as_str)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| RpcError::params("value (a non-empty string) is required"))?;
        match params.get("configId").and_then(Value::as_str) {
            Some("model") => self.state.locked().model = Some(value.to_string()),
            Some("mode") => self.set_mode_value(value)?,
            other => {
                return Err(RpcError::params(format!(
                    "unknown config option {other:?}: agent has model and mode"
                )));
            }
        }
        self.save_meta();
        Ok(json!({"configOptions": self.config_options()}))
    }

    pub(crate) fn set_mode(&self, params: &Value) -> Result<Value, RpcError> {
        let value = params
            .get("modeId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::params("modeId (a string) is required"))?;
        self.set_mode_value(value)?;
        self.save_meta();
        Ok(json!({}))
    }

    fn set_mode_value(&self, value: &str) -> Result<(), RpcError> {
        let mode = parse_mode(value).ok_or_else(|| {
            RpcError::params(format!("unknown mode {value:?}: ask, rules or allow-all"))
        })?;
        self.state.locked().mode = Some(mode);
        Ok(())
    }

    fn save_meta(&self) {
        let (model, mode) = {
            let s = self.state.locked();
            (s.model.clone(), s.mode.map(|m| m.as_str().to_string()))
        };
        if let Ok(meta) = store::read_meta(&self.dir) {
            let meta = Meta {
                model,
                mode,
                ..meta
            };
            if let Err(e) = store::write_meta(&self.dir, &meta) {
                output::warn(&format!("acp: cannot save session {}: {e}", self.id));
            }
        }
    }

    pub(crate) fn is_running(&self) -> bool {
        self.state.locked().running.is_some()
    }

    /// `session/cancel`: the running prompt's run gets SIGINT (a no-op when none runs).
    pub(crate) fn cancel(&self) {
        let s = self.state.locked();
        if let Some(r) = &s.running {
            r.cancelled.store(true, Ordering::SeqCst);
            // SAFETY: kill(2) on the child's pid, which is not reaped before `running`
            // is cleared (under this lock).
            unsafe {
                libc::kill(r.pid as libc::pid_t, libc::SIGINT);
            }
        }
    }

    /// Waits until no prompt runs.
    pub(crate) fn wait_idle(&self) {
        let mut s = self.state.locked();
        while s.running.is_some() {
            s = self.idle.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// `session/load`: the stored conversation, replayed as session updates.
    pub(crate) fn replay(&self) {
        if !self.transcript().exists() {
            return; // no prompt yet
        }
        let resumed = match crate::record::resume::load(&self.transcript()) {
            Ok(r) => r,
            Err(e) => {
                output::warn(&format!("acp: session {}: {e}", self.id));
                return;
            }
        };
        for u in replay_updates(&resumed.messages, &self.cwd) {
            self.out
                .notify("session/update", json!({"sessionId": self.id, "update": u}));
        }
    }

    /// `session/prompt`: starts the run; its worker answers the request. `Err`: the
    /// request is answered now.
    pub(crate) fn prompt(self: &Arc<Self>, params: &Value, id: Value) -> Result<(), RpcError> {
        let (text, images) = prompt_text(params.get("prompt"))?;
        let mut state = self.state.locked();
        if state.running.is_some() {
            return Err(RpcError::new(
                wire::INVALID_REQUEST,
                format!(
                    "session {} is already running a prompt: one at a time (session/cancel ends it)",
                    self.id
                ),
            ));
        }
        let prompt_file = self.dir.join("prompt.txt");
        std::fs::write(&prompt_file, text).map_err(internal)?;
        // Kept in the session's folder: the transcript names them, and a later prompt's
        // `--resume` reloads them from there. The run checks each one's type and limits.
        let mut image_files = Vec::new();
        let dir = self.dir.join("images");
        let earlier = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        for (i, bytes) in images.iter().enumerate() {
            std::fs::create_dir_all(&dir).map_err(internal)?;
            let path = dir.join(format!("image-{}", earlier + i + 1));
            std::fs::write(&path, bytes).map_err(internal)?;
            image_files.push(path);
        }
        let before = self.dir.join("transcript.before.json");
        let resume = self.transcript().exists();
        if resume {
            let _ = std::fs::copy(self.transcript(), &before);
        }
        let mut cmd = Command::new(&self.opts.exe);
        // A model chosen with session/set_config_option replaces the run flags' (clap refuses
        // `--model` twice, and Harbor's `-m` arrives that way).
        let run_flags = match &state.model {
            Some(_) => without_model_flag(&self.opts.run_flags),
            None => self.opts.run_flags.clone(),
        };
        cmd.arg("run")
            .args(&run_flags)
            .arg("--jsonl")
            .arg("--include-partial-messages")
            .arg("-o")
            .arg(self.transcript())
            .arg("--prompt-file")
            .arg(&prompt_file)
            .arg("-C")
            .arg(&self.cwd)
            .args(["--permission-prompt", "stdin"]);
        if self.mode_locked(&state) == AcpPermissions::Ask {
            cmd.arg("--ask-by-default");
        }
        let fs: Vec<&str> = [(self.fs.read, "read"), (self.fs.write, "write")]
            .into_iter()
            .filter_map(|(on, op)| on.then_some(op))
            .collect();
        if !fs.is_empty() {
            cmd.arg("--client-files").arg(fs.join(","));
        }
        if resume {
            cmd.arg("--resume").arg(self.transcript());
        }
        for path in &image_files {
            cmd.arg("--image").arg(path);
        }
        if let Some(m) = &self.mcp_config {
            cmd.arg("--mcp-config").arg(m);
        }
        if let Some(m) = &state.model {
            cmd.args(["--model", m]);
        }
        cmd.current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            RpcError::new(wire::INTERNAL_ERROR, format!("cannot start agent run: {e}"))
        })?;
        let cancelled = Arc::new(AtomicBool::new(false));
        state.running = Some(Running {
            pid: child.id(),
            cancelled: cancelled.clone(),
        });
        drop(state);
        let s = self.clone();
        std::thread::Builder::new()
            .name(format!("acp-prompt-{}", self.id))
            .spawn(move || {
                let answer = s.run_prompt(&mut child, &cancelled, resume);
                let mut st = s.state.locked();
                st.running = None;
                s.idle.notify_all();
                drop(st);
                match answer {
                    Ok(result) => s.out.result(&id, result),
                    Err(e) => s.out.error(&id, &e),
                }
            })
            .map_err(internal)?;
        Ok(())
    }

    fn mode_locked(&self, state: &State) -> AcpPermissions {
        state.mode.unwrap_or(self.opts.permissions)
    }

    /// Reads the run's events to the end and gives the prompt's answer.
    fn run_prompt(
        self: &Arc<Self>,
        child: &mut Child,
        cancelled: &AtomicBool,
        resumed: bool,
    ) -> Result<Value, RpcError> {
        let stdin = Arc::new(Mutex::new(child.stdin.take()));
        let stderr = child.stderr.take().map(forward_stderr);
        let mut sink = self.updates();
        let mut finished = None;
        if let Some(stdout) = child.stdout.take() {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // A request for the client's files (`--client-files`), not an event.
                if crate::run::client_files::is_request(&line) {
                    match serde_json::from_str::<FileRequest>(&line) {
                        Ok(req) => self.serve_file(req, stdin.clone()),
                        Err(e) => output::warn(&format!("acp: a bad file request ({e})")),
                    }
                    continue;
                }
                if let Some(f) = &self.opts.events {
                    let _ = writeln!(f.locked(), "{line}");
                }
                let Some((event, seq, elapsed_ms, subagent)) = parse_event(&line) else {
                    output::debug(&format!(
                        "acp: not an event: {}",
                        crate::util::text::ellipsis(&line, 200)
                    ));
                    continue;
                };
                match &event {
                    RunEvent::PermissionRequested(p) => self.ask(p.clone(), stdin.clone()),
                    RunEvent::RunFinished(f) => finished = Some(f.clone()),
                    _ => {}
                }
                sink.event(&Emitted {
                    seq,
                    elapsed_ms,
                    subagent_id: subagent.as_deref(),
                    event: &event,
                });
            }
        }
        drop(stdin.locked().take());
        let status = child.wait();
        let tail = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
        let was_cancelled = cancelled.load(Ordering::SeqCst);
        let before = self.dir.join("transcript.before.json");
        let result = answer(finished.as_ref(), was_cancelled, &tail, status.ok());
        // A refused prompt is not part of the conversation the next prompt continues
        // (the specification's `refusal`): the transcript before it comes back.
        let refused = matches!(&result, Ok(v) if v["stopReason"] == "refusal");
        if refused && resumed {
            let _ = std::fs::rename(&before, self.transcript());
        } else if refused {
            let _ = std::fs::remove_file(self.transcript());
        } else {
            let _ = std::fs::remove_file(&before);
        }
        let _ = std::fs::remove_file(self.dir.join("prompt.txt"));
        result
    }

    /// One permission request of the run, answered on its stdin (own thread: calls of
    /// a parallel batch wait at once, and the events keep flowing meanwhile).
    fn ask(self: &Arc<Self>, p: PermissionRequested, stdin: Arc<Mutex<Option<ChildStdin>>>) {
        let s = self.clone();
        let _ = std::thread::Builder::new()
            .name("acp-permission".into())
            .spawn(move || {
                let (allow, message) = s.decide(&p);
                let line = json!({"id": p.id, "decision": if allow { "allow" } else { "deny" },
                                  "message": message});
                if let Some(w) = stdin.locked().as_mut() {
                    let _ = writeln!(w, "{line}").and_then(|()| w.flush());
                }
            });
    }

    /// One file request of the run, sent to the client as `fs/read_text_file` or
    /// `fs/write_text_file` and its answer written on the run's stdin (own thread, as
    /// `ask`). The client's JSON-RPC error, or no answer within `--acp-fs-timeout`, is a
    /// `file.error` the run gives the model as the tool's error.
    fn serve_file(self: &Arc<Self>, req: FileRequest, stdin: Arc<Mutex<Option<ChildStdin>>>) {
        let s = self.clone();
        let _ = std::thread::Builder::new()
            .name("acp-fs".into())
            .spawn(move || {
                let answer = s.file_answer(req);
                let line = serde_json::to_string(&answer).unwrap_or_default();
                if let Some(w) = stdin.locked().as_mut() {
                    let _ = writeln!(w, "{line}").and_then(|()| w.flush());
                }
            });
    }

    fn file_answer(&self, req: FileRequest) -> FileAnswer {
        let (id, method, rid, rx) = match req {
            FileRequest::Read { id, path } => {
                let (rid, rx) = self.out.request(
                    "fs/read_text_file",
                    json!({"sessionId": self.id, "path": path}),
                );
                (id, "fs/read_text_file", rid, rx)
            }
            FileRequest::Write { id, path, content } => {
                let (rid, rx) = self.out.request_verbatim(
                    "fs/write_text_file",
                    json!({"sessionId": self.id, "path": path, "content": content}),
                );
                (id, "fs/write_text_file", rid, rx)
            }
        };
        let answer = rx.recv_timeout(self.opts.fs_timeout);
        self.out.forget(rid);
        let failed = |message: String| FileAnswer::Failed {
            id: id.clone(),
            message,
        };
        match answer {
            Ok(Ok(r)) if method == "fs/read_text_file" => match r["content"].as_str() {
                Some(text) => FileAnswer::Done {
                    id: id.clone(),
                    content: Some(text.to_string()),
                },
                None => failed(format!("its {method} answer has no text content")),
            },
            Ok(Ok(_)) => FileAnswer::Done {
                id: id.clone(),
                content: None,
            },
            Ok(Err(e)) => failed(format!(
                "{method} failed: {} (JSON-RPC error {})",
                e["message"].as_str().unwrap_or("no message"),
                e["code"]
            )),
            Err(_) => failed(format!(
                "no answer to {method} within --acp-fs-timeout {}",
                crate::util::duration::human(self.opts.fs_timeout)
            )),
        }
    }

    /// Allow or deny one request: the mode, the session's "always", then the client.
    fn decide(&self, p: &PermissionRequested) -> (bool, Option<String>) {
        let key = always_key(&p.name, &p.input);
        {
            let s = self.state.locked();
            if self.mode_locked(&s) == AcpPermissions::AllowAll || s.always.contains(&key) {
                return (true, None);
            }
        }
        let mut tool_call = updates::tool_call(&p.id, &p.name, &p.input, &self.cwd);
        if let Some(m) = tool_call.as_object_mut() {
            m.remove("sessionUpdate");
            m.insert("status".into(), json!("pending"));
        }
        let (rid, rx) = self.out.request(
            "session/request_permission",
            json!({
                "sessionId": self.id,
                "toolCall": tool_call,
                "options": [
                    {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
                ],
            }),
        );
        let answer = rx.recv_timeout(self.opts.permission_timeout);
        self.out.forget(rid);
        match answer {
            Ok(Ok(r)) if r["outcome"]["outcome"] == "selected" => {
                match r["outcome"]["optionId"].as_str() {
                    Some("allow_once") => (true, None),
                    Some("allow_always") => {
                        self.state.locked().always.insert(key);
                        (true, None)
                    }
                    _ => (false, Some("the user rejected the call".into())),
                }
            }
            Ok(Ok(_)) => (false, Some("the request was cancelled".into())),
            Ok(Err(e)) => (false, Some(format!("the client could not ask: {e}"))),
            Err(_) => (
                false,
                Some(format!(
                    "no answer within --acp-permission-timeout {}",
                    crate::util::duration::human(self.opts.permission_timeout)
                )),
            ),
        }
    }
}

/// The modes: `--acp-permissions`' values.
const MODES: &[(AcpPermissions, &str, &str)] = &[
    (
        AcpPermissions::Ask,
        "Ask",
        "Ask before a call that can change something, unless a rule allows it",
    ),
    (
        AcpPermissions::Rules,
        "Rules",
        "Ask only where an ask rule says so; the rules decide the rest",
    ),
    (
        AcpPermissions::AllowAll,
        "Allow all",
        "Ask nothing; deny rules still deny",
    ),
];

fn parse_mode(s: &str) -> Option<AcpPermissions> {
    MODES.iter().map(|m| m.0).find(|m| m.as_str() == s)
}

/// What "always allow" covers: a Bash command line exactly, any other tool wholly.
fn always_key(name: &str, input: &Value) -> String {
    match name {
        "Bash" => format!("Bash\u{0}{}", input["command"].as_str().unwrap_or_default()),
        _ => name.to_string(),
    }
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    RpcError::new(wire::INTERNAL_ERROR, e.to_string())
}

fn make_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Whether a prompt's run can start at all: the run flags with this workspace and these
/// servers are checked as `agent run` checks them (a missing provider key is the
/// specification's "authentication required"), so that `session/new` says what is wrong
/// instead of the first prompt.
fn check_run(opts: &Options, spec: &SessionSpec) -> Result<(), RpcError> {
    let mut run =
        super::parse_run_flags(&opts.run_flags).map_err(|e| RpcError::params(e.to_string()))?;
    run.cwd = Some(spec.cwd.clone());
    run.prompt = Some("check".into());
    match crate::config::Config::from_args(&run, &crate::config::ProcessEnv) {
        Ok(_) => Ok(()),
        Err(crate::error::Error::Credentials(m)) => Err(RpcError::new(wire::AUTH_REQUIRED, m)),
        Err(e) if e.to_string().contains("API key") || e.to_string().contains("_API_KEY") => {
            Err(RpcError::new(wire::AUTH_REQUIRED, e.to_string()))
        }
        Err(e) => Err(RpcError::params(e.to_string())),
    }
}

/// The prompt's content blocks as the task's text: text as it is, a linked resource by
/// its URI, an embedded one in a `<context>` block.
/// A prompt's text, and its image blocks' bytes (given to the run as `--image` files).
fn prompt_text(prompt: Option<&Value>) -> Result<(String, Vec<Vec<u8>>), RpcError> {
    use base64::Engine as _;
    let blocks = prompt
        .and_then(Value::as_array)
        .ok_or_else(|| RpcError::params("prompt (an array of content blocks) is required"))?;
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for b in blocks {
        match b["type"].as_str() {
            Some("image") => {
                let data = b["data"]
                    .as_str()
                    .ok_or_else(|| RpcError::params("prompt: an image block without data"))?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .map_err(|e| {
                        RpcError::params(format!("prompt: an image's data is not base64 ({e})"))
                    })?;
                images.push(bytes);
            }
            Some("text") => parts.push(b["text"].as_str().unwrap_or_default().to_string()),
            Some("resource_link") => parts.push(format!(
                "[{}]({})",
                b["name"].as_str().unwrap_or("file"),
                b["uri"].as_str().unwrap_or_default()
            )),
            Some("resource") => {
                let r = &b["resource"];
                let uri = r["uri"].as_str().unwrap_or_default();
                match r["text"].as_str() {
                    Some(text) => {
                        parts.push(format!("<context uri=\"{uri}\">\n{text}\n</context>"))
                    }
                    None => parts.push(format!("[binary resource]({uri})")),
                }
            }
            Some(other) => {
                return Err(RpcError::params(format!(
                    "prompt: {other} content is not accepted (promptCapabilities)"
                )));
            }
            None => return Err(RpcError::params("prompt: a content block without a type")),
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(RpcError::params(
            "prompt: no text (an image needs words with it)",
        ));
    }
    Ok((text, images))
}

/// One `--jsonl` line: the event and its envelope (`seq`, `elapsed_ms`, `subagent_id`).
fn parse_event(line: &str) -> Option<(RunEvent, u64, u64, Option<String>)> {
    let event: RunEvent = serde_json::from_str(line).ok()?;
    #[derive(serde::Deserialize)]
    struct Envelope {
        seq: u64,
        elapsed_ms: u64,
        subagent_id: Option<String>,
    }
    let env: Envelope = serde_json::from_str(line).ok()?;
    Some((event, env.seq, env.elapsed_ms, env.subagent_id))
}

/// The child's stderr: copied to ours line by line (it is the run's log), the last lines
/// kept for an error.
fn forward_stderr(stderr: std::process::ChildStderr) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut tail = VecDeque::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            output::relay_stderr(&line);
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        tail.into()
    })
}

/// The prompt's answer from how its run ended: the stop reason and the turn's usage, or
/// the run's error.
fn answer(
    finished: Option<&crate::run::event::RunFinished>,
    cancelled: bool,
    stderr_tail: &[String],
    exit: Option<std::process::ExitStatus>,
) -> Result<Value, RpcError> {
    let Some(f) = finished else {
        if cancelled {
            return Ok(json!({"stopReason": "cancelled"}));
        }
        return Err(RpcError::new(
            wire::INTERNAL_ERROR,
            format!(
                "the run ended before it started ({}): {}",
                exit.map(|e| e.to_string()).unwrap_or_default(),
                stderr_tail.join(" | ")
            ),
        ));
    };
    let t = f
        .transcript()
        .map_err(|e| RpcError::new(wire::INTERNAL_ERROR, e))?;
    let stop = match f.status.as_str() {
        _ if cancelled => "cancelled",
        "success" | "verify_failed" | "denied" | "schema_failed" => "end_turn",
        "max_turns" | "budget" => "max_turn_requests",
        "max_tokens" | "context_exceeded" => "max_tokens",
        "refusal" => "refusal",
        _ => {
            let message = t
                .error
                .map(|e| e.message)
                .unwrap_or_else(|| format!("the run ended with status {}", f.status));
            return Err(RpcError::new(
                wire::INTERNAL_ERROR,
                format!("{} ({message})", f.status),
            ));
        }
    };
    let u = &t.usage;
    let input = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    Ok(json!({
        "stopReason": stop,
        "usage": {
            "inputTokens": input,
            "outputTokens": u.output_tokens,
            "totalTokens": input + u.output_tokens,
            "thoughtTokens": u.reasoning_output_tokens,
            "cachedReadTokens": u.cache_read_input_tokens,
            "cachedWriteTokens": u.cache_creation_input_tokens,
        },
        "_meta": {"agent": {
            "status": f.status,
            "exitCode": f.exit_code,
            "numTurns": t.num_turns,
            "costUsd": t.cost_usd,
        }},
    }))
}

/// A stored conversation (read as `--resume` reads it) as session updates: the user's
/// and the agent's text, each tool call and its result.
fn replay_updates(messages: &[Message], cwd: &std::path::Path) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        let who = match m.role {
            Role::Assistant => "agent",
            Role::User => "user",
        };
        // Each block in its place: the text before a call comes before it.
        for b in &m.content {
            match b {
                ContentBlock::Text { .. } | ContentBlock::Thinking { .. } => {
                    out.extend(updates::message_chunks(
                        &Message {
                            role: m.role,
                            content: vec![b.clone()],
                        },
                        who,
                    ));
                }
                ContentBlock::ToolUse {
                    id, name, input, ..
                } => {
                    out.push(updates::tool_call(id, name, input, cwd));
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_use_id,
                    "status": if *is_error { "failed" } else { "completed" },
                    "content": [{"type": "content", "content": {"type": "text", "text": content}}],
                })),
                _ => {}
            }
        }
    }
    out
}

/// `flags` without their `--model X`, `--model=X`, `-m X` or `-mX` (the session's own choice
/// replaces it). A `--` ends the flags: what follows is left alone.
pub(crate) fn without_model_flag(flags: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(flags.len());
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--" => {
                out.push(f.clone());
                out.extend(it.by_ref().cloned());
            }
            "--model" | "-m" => {
                it.next();
            }
            _ if f.starts_with("--model=") => {}
            _ if f.starts_with("-m") && !f.starts_with("--") => {}
            _ => out.push(f.clone()),
        }
    }
    out
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
