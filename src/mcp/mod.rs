//! MCP (Model Context Protocol) servers as tool sources. `config` reads the server list;
//! `start` connects to every server in parallel (stdio children or streamable HTTP),
//! runs the handshake and lists the tools; each listed tool becomes an `McpTool` in the
//! same registry, so dispatch, scheduler, policy, hooks, limits and the transcript treat
//! it like a built-in tool. A server that fails to start is reported (and its tools are
//! absent) unless `--strict-mcp` makes that fatal. Every way out of a run ends every
//! server the run started (`shutdown_all`, before the process registry's kill-all).

pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod content;
mod http;
pub(crate) mod media;
pub(crate) mod names;
pub(crate) mod oauth;
pub(crate) mod refresh;
mod stdio;
pub(crate) mod tool;

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use client::{CallError, Transport};
use config::{ServerSpec, Transport as Spec};

use crate::util::sync::Locked;

/// The validated MCP part of a run's configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct McpSettings {
    pub(crate) servers: Vec<ServerSpec>,
    pub(crate) call_timeout: Duration,
    pub(crate) startup_timeout: Duration,
    pub(crate) strict: bool,
    /// `--allow-mcp` or `--full-auto`: tools that are not read-only are enabled too.
    pub(crate) allow_all: bool,
    /// `--mcp-token-cache`.
    pub(crate) token_cache: Option<std::path::PathBuf>,
    /// `--mcp-elicitation`.
    pub(crate) elicitation: Option<crate::config::cli::McpElicitation>,
}

impl McpSettings {
    /// From the flags and the configuration files; the error is a usage message.
    pub(crate) fn from_args(
        args: &crate::config::cli::McpArgs,
        workspace: &std::path::Path,
        no_project_settings: bool,
        full_auto: bool,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpSettings, String> {
        if args.mcp_timeout.is_zero() {
            return Err("--mcp-timeout must be longer than 0s".into());
        }
        if args.mcp_startup_timeout.is_zero() {
            return Err("--mcp-startup-timeout must be longer than 0s".into());
        }
        let servers = config::load(
            &config::Sources {
                workspace,
                files: &args.mcp_config,
                no_project_settings,
            },
            var,
        )?;
        Ok(McpSettings {
            servers,
            call_timeout: args.mcp_timeout,
            startup_timeout: args.mcp_startup_timeout,
            strict: args.strict_mcp,
            allow_all: args.allow_mcp || full_auto,
            token_cache: args.mcp_token_cache.clone(),
            elicitation: args.mcp_elicitation,
        })
    }

    /// Values to redact everywhere: the servers' `env` and `headers`, with the tokens in
    /// them (see `ServerSpec::redacted_values`).
    pub(crate) fn secret_values(&self) -> Vec<String> {
        self.servers
            .iter()
            .flat_map(|s| s.redacted_values())
            .collect()
    }
}

/// How servers are started and called.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub call_timeout: Duration,
    pub startup_timeout: Duration,
    /// `--strict-mcp`: a server that fails to start ends the run (exit 2).
    pub strict: bool,
    /// Default working directory of stdio servers, and the base of a relative `cwd`.
    pub workspace: std::path::PathBuf,
    /// The scrubbed child environment; a server's own `env` is added to it.
    pub child_env: Arc<Vec<(String, String)>>,
    /// `--mcp-token-cache`.
    pub token_cache: Option<std::path::PathBuf>,
    /// `--mcp-elicitation`: `None` declares no elicitation.
    pub elicitation: Option<crate::config::cli::McpElicitation>,
}

/// One tool as the server listed it, with the name the model sees.
#[derive(Debug, Clone)]
pub(crate) struct ToolDef {
    /// `mcp__<server>__<tool>`, shortened to the API's limit when needed.
    pub exposed: String,
    /// The server's own name for it (sent in `tools/call`).
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    pub destructive: bool,
    /// A tool of the server, or one of the two `agent` adds for its resources.
    pub kind: ToolKind,
}

/// What calling a `ToolDef` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    /// `tools/call` of the server's tool.
    Call,
    /// `resources/list`, one page (`cursor`).
    ListResources,
    /// `resources/read` of one `uri`.
    ReadResource,
}

/// The names of the resource tools `agent` adds for a server that has resources.
pub(crate) const LIST_RESOURCES: &str = "list_resources";
pub(crate) const READ_RESOURCE: &str = "read_resource";

impl ToolDef {
    /// The two read-only tools that reach a server's resources (MCP resources are read by
    /// the client, not called; codex offers one pair for all servers, one pair per
    /// server keeps rules and names per server: `mcp__<server>__*`).
    fn resource_tools(server: &str) -> [ToolDef; 2] {
        let def = |tool: &str, kind, description: String, input_schema| ToolDef {
            exposed: names::tool_name(server, tool),
            tool: tool.to_string(),
            description,
            input_schema,
            read_only: true,
            destructive: false,
            kind,
        };
        [
            def(
                LIST_RESOURCES,
                ToolKind::ListResources,
                format!(
                    "Lists the resources (files, records, documents) of the MCP server                      {server}: uri, name, type, description, one page at a time (pass the                      nextCursor it returns as cursor for the next page)."
                ),
                json!({"type": "object", "properties": {
                    "cursor": {"type": "string", "description": "nextCursor of the previous page"}}}),
            ),
            def(
                READ_RESOURCE,
                ToolKind::ReadResource,
                format!(
                    "Reads one resource of the MCP server {server} by its uri (from                      {} or a resource link in a tool result).",
                    names::tool_name(server, LIST_RESOURCES)
                ),
                json!({"type": "object", "properties": {"uri": {"type": "string"}},
                       "required": ["uri"]}),
            ),
        ]
    }
}

impl ToolDef {
    /// From a `tools/list` entry. Annotations are hints: `readOnlyHint` makes a tool
    /// read-only (and safe to run in parallel); otherwise `destructiveHint` decides, true
    /// by default as the spec says, and a tool with no annotations is destructive.
    fn parse(server: &str, def: &Value) -> Result<ToolDef, String> {
        let tool = def
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or("a listed tool has no name")?
            .to_string();
        let ann = def.get("annotations").filter(|a| a.is_object());
        let hint = |k: &str| ann.and_then(|a| a.get(k)).and_then(Value::as_bool);
        let read_only = hint("readOnlyHint") == Some(true);
        let destructive = !read_only && hint("destructiveHint").unwrap_or(true);
        let input_schema = match def.get("inputSchema") {
            Some(s @ Value::Object(_)) => s.clone(),
            _ => json!({"type": "object", "properties": {}}),
        };
        let description = def
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("The tool {tool} of the MCP server {server}."));
        Ok(ToolDef {
            exposed: names::tool_name(server, &tool),
            tool,
            description,
            input_schema,
            read_only,
            destructive,
            kind: ToolKind::Call,
        })
    }
}

/// A connected server.
pub(crate) struct Server {
    pub name: String,
    transport: Arc<dyn Transport>,
    call_timeout: Duration,
}

impl Server {
    /// `tools/call`; the error names the server.
    pub(crate) fn call_tool(&self, tool: &str, arguments: &Value) -> Result<Value, String> {
        let args = if arguments.is_object() {
            arguments.clone()
        } else {
            json!({})
        };
        self.transport
            .request(
                "tools/call",
                json!({"name": tool, "arguments": args}),
                self.call_timeout,
            )
            .map_err(|e| match e {
                CallError::Rpc { .. } => format!("MCP server {:?} answered with {e}", self.name),
                CallError::Timeout(_) | CallError::Stalled(_) => {
                    format!("MCP server {:?}: {e} (--mcp-timeout)", self.name)
                }
                _ => format!("MCP server {:?}: {e}", self.name),
            })
    }
}

impl Server {
    /// Any request of the server (`resources/list`, `resources/read`); errors as
    /// `call_tool`'s.
    pub(crate) fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        self.transport
            .request(method, params, self.call_timeout)
            .map_err(|e| match e {
                CallError::Rpc { .. } => format!("MCP server {:?} answered with {e}", self.name),
                CallError::Timeout(_) | CallError::Stalled(_) => {
                    format!("MCP server {:?}: {e} (--mcp-timeout)", self.name)
                }
                _ => format!("MCP server {:?}: {e}", self.name),
            })
    }

    /// The elicitations the server asked for since the last call, as answered.
    pub(crate) fn take_elicitations(&self) -> Vec<Value> {
        self.transport
            .inbox()
            .map(client::Inbox::take_elicitations)
            .unwrap_or_default()
    }

    /// `tools/list` again (every page), within `--mcp-timeout`.
    pub(crate) fn list_tools(&self) -> Result<Vec<Value>, String> {
        let deadline = Instant::now() + self.call_timeout;
        client::list_tools(self.transport.as_ref(), deadline, "--mcp-timeout")
            .map_err(|e| format!("MCP server {:?}: {e}", self.name))
    }

    /// Whether the server said its tool list changed since this was last asked.
    pub(crate) fn take_tools_changed(&self) -> bool {
        self.transport
            .inbox()
            .is_some_and(client::Inbox::take_tools_changed)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.transport.close("the client is done with the server");
    }
}

/// Every transport the run created, connected or still starting, for `shutdown_all`.
static LIVE: Mutex<Vec<Weak<dyn Transport>>> = Mutex::new(Vec::new());

/// Longest wait for all servers to end together (each bounds its own steps, about a
/// second; see `stdio` and `http`): one stuck past it is left to the process registry's
/// kill-all, which follows on every way out.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(2);

/// Ends every server of the run, in parallel, bounded by `SHUTDOWN_LIMIT`: calls in
/// flight are cancelled (`why` is the reason sent), HTTP sessions are deleted, stdio
/// servers get the spec's shutdown (stdin closed, then SIGTERM, then SIGKILL). For every
/// way out of `agent run` and for `agent tools`, before `process::kill_all_running`.
pub(crate) fn shutdown_all(why: &str) {
    let live: Vec<Arc<dyn Transport>> = std::mem::take(&mut *LIVE.locked())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    if live.is_empty() {
        return;
    }
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let mut started = 0;
    for t in live {
        let (done, why) = (done_tx.clone(), why.to_string());
        let spawned = std::thread::Builder::new()
            .name("mcp-shutdown".into())
            .spawn(move || {
                t.close(&why);
                let _ = done.send(());
            });
        started += usize::from(spawned.is_ok());
    }
    let deadline = Instant::now() + SHUTDOWN_LIMIT;
    for _ in 0..started {
        let left = deadline.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            crate::util::output::debug("mcp: a server did not end in time; it is killed");
            return;
        }
    }
}

/// What the transcript says about one server (`mcp_servers`).
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq)]
pub(crate) struct ServerReport {
    pub name: String,
    pub transport: std::borrow::Cow<'static, str>,
    /// "connected" or "failed"; "starting" while its start-up goes on (a way out taken
    /// then lists it so).
    pub status: std::borrow::Cow<'static, str>,
    pub protocol_version: Option<String>,
    pub server_info: Value,
    /// The names the model sees.
    pub tools: Vec<String>,
    pub error: Option<String>,
    /// Each time its tool list changed during the run (`notifications/tools/list_changed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_changed: Vec<refresh::ToolsChange>,
}

impl ServerReport {
    /// A server whose start-up has not ended.
    pub(crate) fn starting(spec: &ServerSpec) -> ServerReport {
        ServerReport {
            name: spec.name.clone(),
            transport: spec.transport.kind().into(),
            status: "starting".into(),
            protocol_version: None,
            server_info: Value::Null,
            tools: Vec::new(),
            error: None,
            tools_changed: Vec::new(),
        }
    }

    /// A server whose start-up ended in `outcome`, its tools not yet filled in.
    fn ended(spec: &ServerSpec, outcome: &Result<(Server, client::Handshake), String>) -> Self {
        let mut report = ServerReport::starting(spec);
        match outcome {
            Ok((_, hs)) => {
                report.status = "connected".into();
                report.protocol_version = Some(hs.protocol_version.clone());
                report.server_info = hs.server_info.clone();
            }
            Err(e) => {
                report.status = "failed".into();
                report.error = Some(e.clone());
            }
        }
        report
    }

    /// As soon as a server's start-up ended, on its own thread: its tools as it listed
    /// them (a clash with another server's tool is settled once all have ended).
    fn interim(spec: &ServerSpec, outcome: &Result<(Server, client::Handshake), String>) -> Self {
        let mut report = ServerReport::ended(spec, outcome);
        if let Ok((_, hs)) = outcome {
            report.tools = hs
                .tools
                .iter()
                .filter_map(|raw| ToolDef::parse(&spec.name, raw).ok())
                .map(|d| d.exposed)
                .collect();
        }
        report
    }
}

/// The servers of a run, connected or not.
#[derive(Default)]
pub(crate) struct Started {
    pub servers: Vec<(Arc<Server>, Vec<ToolDef>)>,
    pub reports: Vec<ServerReport>,
}

/// Starts every server in parallel and lists its tools. `ended` hears of each server
/// as soon as its start-up ends (connected or failed), so that a way out taken while
/// others still start can say which did. `Err` only with `--strict-mcp`, naming the
/// server that failed.
pub(crate) fn start(
    specs: &[ServerSpec],
    opts: &Options,
    ended: &(dyn Fn(ServerReport) + Sync),
) -> Result<Started, String> {
    if !specs.is_empty() {
        crate::util::output::progress(&format!("starting {} MCP server(s)", specs.len()));
    }
    let outcomes: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = specs
            .iter()
            .map(|spec| {
                let handle = scope.spawn(move || {
                    let outcome = connect(spec, opts);
                    ended(ServerReport::interim(spec, &outcome));
                    outcome
                });
                (spec, handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(spec, h)| {
                let outcome = h
                    .join()
                    .unwrap_or_else(|_| Err("the start-up failed unexpectedly (a panic)".into()));
                (spec, outcome)
            })
            .collect()
    });
    let mut started = Started::default();
    let mut taken: Vec<String> = Vec::new();
    for (spec, outcome) in outcomes {
        let mut report = ServerReport::ended(spec, &outcome);
        match outcome {
            Ok((server, hs)) => {
                let resources = hs
                    .capabilities
                    .get("resources")
                    .is_some_and(Value::is_object);
                let defs = tool_defs(&spec.name, &hs.tools, resources, &|n| {
                    taken.iter().any(|t| t == n)
                });
                taken.extend(defs.iter().map(|d| d.exposed.clone()));
                report.tools = defs.iter().map(|d| d.exposed.clone()).collect();
                crate::util::output::debug(&format!(
                    "mcp {}: connected ({}, protocol {}), {} tool(s)",
                    spec.name,
                    spec.transport.kind(),
                    hs.protocol_version,
                    defs.len()
                ));
                started.servers.push((Arc::new(server), defs));
            }
            Err(e) => {
                let msg = format!("MCP server {:?} ({}): {e}", spec.name, spec.file.display());
                if opts.strict {
                    return Err(format!("{msg} (--strict-mcp)"));
                }
                crate::util::output::warn(&format!("{msg}; its tools are not available"));
            }
        }
        started.reports.push(report);
    }
    Ok(started)
}

/// A server's tools as it listed them (`raw`), and its resource tools when it has
/// resources. A name `taken` says another server has, or one it listed twice, is left
/// out with a warning; every name kept is recorded (`names::origin`).
fn tool_defs(
    server: &str,
    raw: &[Value],
    resources: bool,
    taken: &dyn Fn(&str) -> bool,
) -> Vec<ToolDef> {
    let mut defs: Vec<ToolDef> = Vec::new();
    let parsed = raw.iter().map(|raw| ToolDef::parse(server, raw));
    let extra = resources
        .then(|| ToolDef::resource_tools(server).map(Ok))
        .into_iter()
        .flatten();
    for parsed in parsed.chain(extra) {
        match parsed {
            Ok(d) if taken(&d.exposed) || defs.iter().any(|k| k.exposed == d.exposed) => {
                crate::util::output::warn(&format!(
                    "MCP server {server:?}: the tool {:?} has the same name as another \
                     ({}); it is left out",
                    d.tool, d.exposed
                ))
            }
            Ok(d) => {
                names::record_server(&d.exposed, server, &d.tool);
                defs.push(d);
            }
            Err(e) => {
                crate::util::output::warn(&format!("MCP server {server:?}: {e}; it is left out"))
            }
        }
    }
    defs
}

/// Connects to one server and runs the handshake within the start-up bound.
fn connect(spec: &ServerSpec, opts: &Options) -> Result<(Server, client::Handshake), String> {
    let deadline = Instant::now() + opts.startup_timeout;
    let transport: Arc<dyn Transport> = match &spec.transport {
        Spec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut full: Vec<(String, String)> = opts
                .child_env
                .iter()
                .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
                .cloned()
                .collect();
            full.extend(env.iter().cloned());
            let cwd = match cwd {
                Some(c) => opts.workspace.join(c),
                None => opts.workspace.clone(),
            };
            if !cwd.is_dir() {
                return Err(format!("\"cwd\" {}: not a directory", cwd.display()));
            }
            Arc::new(stdio::StdioTransport::spawn(stdio::Launch {
                name: spec.name.clone(),
                command: command.clone(),
                args: args.clone(),
                env: full,
                cwd,
                elicitation: opts.elicitation,
            })?)
        }
        Spec::Http {
            url,
            headers,
            oauth,
        } => {
            // A configured Authorization header is the credential: no OAuth then.
            let has_auth = headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
            let authorizer = (!oauth.disabled && !has_auth).then(|| {
                oauth::Authorizer::new(&spec.name, url, (**oauth).clone(), opts.token_cache.clone())
            });
            Arc::new(http::HttpTransport::new(
                &spec.name,
                url,
                headers.clone(),
                authorizer,
                opts.elicitation,
            ))
        }
    };
    LIVE.locked().push(Arc::downgrade(&transport));
    let hs = client::handshake(transport.as_ref(), deadline, opts.elicitation)
        .inspect_err(|_| transport.close("the start-up failed"))?;
    transport.clone().listen();
    Ok((
        Server {
            name: spec.name.clone(),
            transport,
            call_timeout: opts.call_timeout,
        },
        hs,
    ))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
