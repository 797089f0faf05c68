//! `agent acp`: the Agent Client Protocol (JSON-RPC 2.0, one message a line) on
//! stdin/stdout, stdout owned by the protocol and logs on stderr. One thread reads the
//! client, one writes to it from a bounded queue (`wire`), and each running prompt has a
//! worker (`session`) that runs it as `agent run` in a child process, the same loop,
//! tools, policy and transcript as any run, and turns its typed event stream into
//! `session/update` notifications (`updates`). Sessions are kept on disk (`store`) so that
//! `session/load`, `agent summary` and `--resume` read them. docs/guide/acp.md is the
//! user's page; decision 0101 says why a prompt is a child process.

mod session;
mod store;
pub(crate) mod updates;
pub(crate) mod wire;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::cli::{AcpArgs, AcpPermissions};
use crate::error::{Error, ExitStatus};
use crate::util::output;
use crate::util::text::{LineRead, read_line_capped};
use session::Session;
use wire::{Out, RpcError};

/// What every session of this process shares.
pub(crate) struct Options {
    /// This binary, run as `agent run` for each prompt.
    pub exe: PathBuf,
    /// The `agent run` flags after `--`.
    pub run_flags: Vec<String>,
    pub permissions: AcpPermissions,
    pub permission_timeout: std::time::Duration,
    /// `--acp-fs-timeout`: the wait for the client's answer to an fs request.
    pub fs_timeout: std::time::Duration,
    /// `--events FILE`, appended by every prompt.
    pub events: Option<Arc<std::sync::Mutex<std::fs::File>>>,
    /// Where sessions are kept.
    pub store: PathBuf,
}

pub(crate) fn acp_command(args: &AcpArgs) -> ExitStatus {
    let verbosity = match verbosity(&args.run_flags) {
        Ok(v) => v,
        Err(e) => return output::usage_failure(&e),
    };
    output::init(verbosity, crate::util::secrets::secret_values());
    let opts = match options(args) {
        Ok(o) => Arc::new(o),
        Err(e) => return output::usage_failure(&e),
    };
    output::debug(&format!(
        "acp: protocol version {}, sessions in {}",
        wire::PROTOCOL_VERSION,
        opts.store.display()
    ));
    let (out, writer) = match Out::start(Box::new(std::io::stdout())) {
        Ok(w) => w,
        Err(e) => {
            output::error(&format!("acp: cannot start the writer thread: {e}"));
            return ExitStatus::Failure;
        }
    };
    let mut server = Server {
        out: out.clone(),
        opts,
        initialized: false,
        client_fs: session::ClientFs::default(),
        sessions: HashMap::new(),
        closed: Vec::new(),
    };
    server.serve(std::io::stdin().lock());
    // stdin ended: what was started ends (each running prompt is cancelled and answered),
    // then the queue drains and the process exits.
    for s in server.sessions.values() {
        s.cancel();
    }
    for s in server.sessions.values().chain(&server.closed) {
        s.wait_idle();
    }
    drop(server);
    drop(out);
    let _ = writer.join();
    ExitStatus::Success
}

/// The run flags parsed as `agent run` would (a bad one is exit 2 now, not at the first
/// prompt), and the flags `agent acp` sets itself refused.
fn verbosity(flags: &[String]) -> Result<output::Verbosity, Error> {
    let run = parse_run_flags(flags)?;
    Ok(if run.quiet {
        output::Verbosity::Quiet
    } else if run.verbose {
        output::Verbosity::Verbose
    } else {
        output::Verbosity::Normal
    })
}

/// `agent run`'s arguments from the flags after `--`.
pub(crate) fn parse_run_flags(flags: &[String]) -> Result<crate::config::cli::RunArgs, Error> {
    use clap::Parser;
    let argv = ["agent", "run"]
        .into_iter()
        .map(String::from)
        .chain(flags.iter().cloned());
    let cli = crate::config::cli::Cli::try_parse_from(argv).map_err(|e| {
        Error::Usage(
            format!("agent acp -- RUN FLAGS: {}", e.render())
                .trim_end()
                .to_string(),
        )
    })?;
    let crate::config::cli::Command::Run(run) = cli.command else {
        return Err(Error::Usage("agent acp -- RUN FLAGS: not run flags".into()));
    };
    let set_by_acp = [
        (run.prompt.is_some(), "PROMPT"),
        (run.prompt_file.is_some(), "--prompt-file"),
        (run.stdin_context, "--stdin-context"),
        (
            run.cwd.is_some(),
            "--cwd (the session's cwd is the workspace)",
        ),
        (run.json, "--json"),
        (run.ci.jsonl, "--jsonl"),
        (run.output.is_some(), "--output"),
        (run.session.resume.is_some(), "--resume"),
        (run.session.continue_, "--continue"),
        (
            run.security.permission_prompt != crate::config::cli::PermissionPrompt::Deny,
            "--permission-prompt (see --acp-permissions)",
        ),
        (
            run.security.ask_by_default,
            "--ask-by-default (see --acp-permissions)",
        ),
        (
            !run.security.client_files.is_empty(),
            "--client-files (the client's fs capability sets it)",
        ),
    ];
    if let Some((_, flag)) = set_by_acp.iter().find(|(set, _)| *set) {
        return Err(Error::Usage(format!(
            "agent acp -- RUN FLAGS: {flag} is set by agent acp for each prompt; leave it out"
        )));
    }
    Ok(*run)
}

fn options(args: &AcpArgs) -> Result<Options, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Usage(format!("cannot find the agent binary: {e}")))?;
    let events = match &args.events {
        Some(path) => Some(Arc::new(std::sync::Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| Error::Usage(format!("--events {}: {e}", path.display())))?,
        ))),
        None => None,
    };
    let store = match &args.sessions_dir {
        Some(d) => d.clone(),
        None => store::default_dir().ok_or_else(|| {
            Error::Usage(
                "no place for sessions: set XDG_STATE_HOME or HOME, or give --sessions-dir".into(),
            )
        })?,
    };
    std::fs::create_dir_all(&store)
        .map_err(|e| Error::Usage(format!("--sessions-dir {}: {e}", store.display())))?;
    Ok(Options {
        exe,
        run_flags: args.run_flags.clone(),
        permissions: args.acp_permissions,
        permission_timeout: args.acp_permission_timeout,
        fs_timeout: args.acp_fs_timeout,
        events,
        store,
    })
}

struct Server {
    out: Out,
    opts: Arc<Options>,
    initialized: bool,
    /// What the client's `initialize` offered of `fs`.
    client_fs: session::ClientFs,
    sessions: HashMap<String, Arc<Session>>,
    /// Sessions closed while a prompt ran: waited for before the process exits.
    closed: Vec<Arc<Session>>,
}

impl Server {
    /// Reads the client until stdin ends; every line gets its answer or its error.
    fn serve(&mut self, mut input: impl BufRead) {
        let mut line = Vec::new();
        loop {
            match read_line_capped(&mut input, &mut line, wire::MAX_LINE_BYTES) {
                Ok(LineRead::End) | Err(_) => return,
                Ok(LineRead::TooLong) => {
                    output::warn(&format!(
                        "acp: a message longer than {} bytes was refused",
                        wire::MAX_LINE_BYTES
                    ));
                    self.out.error(
                        &Value::Null,
                        &RpcError::new(
                            wire::INVALID_REQUEST,
                            format!(
                                "message longer than {} bytes: refused unread",
                                wire::MAX_LINE_BYTES
                            ),
                        ),
                    );
                }
                Ok(LineRead::Line) => self.line(&line),
            }
        }
    }

    fn line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let msg: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                return self.out.error(
                    &Value::Null,
                    &RpcError::new(wire::PARSE_ERROR, format!("parse error: {e}")),
                );
            }
        };
        let id = msg.get("id").cloned();
        let valid_id = matches!(&id, None | Some(Value::String(_) | Value::Number(_)));
        if !msg.is_object() || msg["jsonrpc"] != "2.0" || !valid_id {
            return self.out.error(
                &id.filter(|_| valid_id).unwrap_or(Value::Null),
                &RpcError::new(
                    wire::INVALID_REQUEST,
                    "not a JSON-RPC 2.0 message (an object with \"jsonrpc\": \"2.0\")",
                ),
            );
        }
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            if id.is_some() && (msg.get("result").is_some() || msg.get("error").is_some()) {
                if !self.out.route(&msg) {
                    output::debug("acp: a response to no request of ours; ignored");
                }
                return;
            }
            return self.out.error(
                &id.unwrap_or(Value::Null),
                &RpcError::new(wire::INVALID_REQUEST, "a request needs a \"method\" string"),
            );
        };
        let params = msg.get("params").cloned().unwrap_or(json!({}));
        match id {
            Some(id) => {
                let answer = self.request(method, &params, &id);
                if let Some(answer) = answer {
                    match answer {
                        Ok(result) => self.out.result(&id, result),
                        Err(e) => self.out.error(&id, &e),
                    }
                }
            }
            None => self.notification(method, &params),
        }
    }

    /// A request's answer; `None` when a worker answers it later (`session/prompt`).
    fn request(
        &mut self,
        method: &str,
        params: &Value,
        id: &Value,
    ) -> Option<Result<Value, RpcError>> {
        if method == "initialize" {
            return Some(self.initialize(params));
        }
        if !self.initialized {
            return Some(Err(RpcError::new(
                wire::INVALID_REQUEST,
                format!("{method} before initialize: send initialize first"),
            )));
        }
        Some(match method {
            "authenticate" => Err(RpcError::params(
                "agent advertises no authentication methods: the provider's key comes from \
                 the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY …)",
            )),
            "session/new" => {
                // The answer first: the client knows the session id from it, and only
                // then can take the session's updates.
                let s = match self.new_session(params) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
                self.out.result(id, s.describe(json!({"sessionId": s.id})));
                if let Ok(run) = parse_run_flags(&self.opts.run_flags) {
                    s.updates()
                        .announce_commands(&updates::available_commands(&run, s.cwd()));
                }
                return None;
            }
            "session/load" => self.load_session(params, true),
            "session/resume" => self.load_session(params, false),
            "session/list" => self.list_sessions(params),
            "session/close" => self.close_session(params),
            "session/prompt" => {
                return match self.session(params) {
                    Ok(s) => s.prompt(params, id.clone()).err().map(Err),
                    Err(e) => Some(Err(e)),
                };
            }
            "session/set_config_option" => self
                .session(params)
                .and_then(|s| s.set_config_option(params)),
            "session/set_mode" => self.session(params).and_then(|s| s.set_mode(params)),
            _ => Err(RpcError::new(
                wire::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
        })
    }

    fn notification(&mut self, method: &str, params: &Value) {
        match method {
            "session/cancel" if self.initialized => match self.session(params) {
                Ok(s) => s.cancel(),
                Err(e) => output::warn(&format!("acp: session/cancel: {}", e.message)),
            },
            // Notifications get no answer, whatever they are.
            _ => output::debug(&format!("acp: notification {method} ignored")),
        }
    }

    fn initialize(&mut self, params: &Value) -> Result<Value, RpcError> {
        let Some(version) = params.get("protocolVersion").and_then(Value::as_u64) else {
            return Err(RpcError::params(
                "initialize: protocolVersion must be a non-negative integer",
            ));
        };
        if version != wire::PROTOCOL_VERSION {
            // The specification: answer with the version agent speaks; the client
            // disconnects if it cannot speak it.
            output::warn(&format!(
                "acp: the client asked for protocol version {version}; agent speaks {}",
                wire::PROTOCOL_VERSION
            ));
        }
        self.initialized = true;
        let fs = &params["clientCapabilities"]["fs"];
        self.client_fs = session::ClientFs {
            read: fs["readTextFile"] == true,
            write: fs["writeTextFile"] == true,
        };
        Ok(json!({
            "protocolVersion": wire::PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": false},
                "sessionCapabilities": {"list": {}, "close": {}, "resume": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": "agent", "title": "agent", "version": env!("CARGO_PKG_VERSION")},
        }))
    }

    fn session(&self, params: &Value) -> Result<Arc<Session>, RpcError> {
        let id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::params("sessionId (a string) is required"))?;
        self.sessions.get(id).cloned().ok_or_else(|| {
            RpcError::new(
                wire::RESOURCE_NOT_FOUND,
                format!("unknown session {id:?} (session/new or session/load first)"),
            )
        })
    }

    fn new_session(&mut self, params: &Value) -> Result<Arc<Session>, RpcError> {
        let spec = store::SessionSpec::from_params(params)?;
        let s = Session::create(self.opts.clone(), self.out.clone(), self.client_fs, spec)?;
        self.sessions.insert(s.id.clone(), s.clone());
        Ok(s)
    }

    /// `session/list`: the saved sessions (all of them in one page), in `cwd` if given.
    fn list_sessions(&self, params: &Value) -> Result<Value, RpcError> {
        if params.get("cursor").is_some_and(|c| !c.is_null()) {
            return Err(RpcError::params(
                "cursor: agent lists every session in one page and gives no cursor",
            ));
        }
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(c) if !std::path::Path::new(c).is_absolute() => {
                return Err(RpcError::params(format!(
                    "cwd {c:?} is not an absolute path"
                )));
            }
            // Compared as stored: canonical.
            Some(c) => Some(std::fs::canonicalize(c).unwrap_or_else(|_| c.into())),
            None => None,
        };
        let sessions: Vec<Value> = store::list(&self.opts.store, cwd.as_deref())
            .into_iter()
            .map(|(meta, updated)| {
                json!({
                    "sessionId": meta.session_id,
                    "cwd": meta.cwd,
                    "updatedAt": humantime::format_rfc3339_seconds(updated).to_string(),
                })
            })
            .collect();
        Ok(json!({ "sessions": sessions }))
    }

    /// `session/close`: its prompt, if one runs, is cancelled (and answers `cancelled`);
    /// the session is forgotten by this process (its files stay for `session/load`).
    fn close_session(&mut self, params: &Value) -> Result<Value, RpcError> {
        let s = self.session(params)?;
        s.cancel();
        self.sessions.remove(&s.id);
        if s.is_running() {
            self.closed.push(s);
        }
        Ok(json!({}))
    }

    /// `session/load` (`replay`: the history as session updates first) or
    /// `session/resume` (none).
    fn load_session(&mut self, params: &Value, replay: bool) -> Result<Value, RpcError> {
        let id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::params("sessionId (a string) is required"))?;
        self.closed.retain(|s| s.is_running());
        let running = self.sessions.get(id).into_iter().chain(&self.closed);
        if running.filter(|s| s.id == id).any(|s| s.is_running()) {
            return Err(RpcError::new(
                wire::INVALID_REQUEST,
                format!("session {id} is running a prompt"),
            ));
        }
        let spec = store::SessionSpec::from_params(params)?;
        let s = Session::load(
            self.opts.clone(),
            self.out.clone(),
            self.client_fs,
            id,
            spec,
        )?;
        if replay {
            s.replay();
        }
        let result = s.describe(json!({}));
        self.sessions.insert(s.id.clone(), s);
        Ok(result)
    }
}
