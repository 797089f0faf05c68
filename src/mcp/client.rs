//! The MCP client protocol over any transport: the JSON-RPC 2.0 message shapes, what the
//! client answers to a server's own requests, the lifecycle (`initialize`, then
//! `notifications/initialized`) and `tools/list` with pagination. Transports (stdio,
//! streamable HTTP) only move messages; the decisions are made here.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The newest protocol revision implemented, offered in `initialize`.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";
/// Revisions a server may answer with: they differ only in features this client does not
/// use (batching, resources, elicitation), not in initialize, tools/list or tools/call.
pub(crate) const SUPPORTED_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// JSON-RPC "method not found": the answer to sampling, elicitation and roots, which a
/// client that does not declare those capabilities does not offer.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// `tools/list` pages followed at most: a server that keeps returning a cursor is broken.
const MAX_TOOL_PAGES: usize = 100;
/// Characters of a notification shown in the -v log: enough for a progress or log line.
const NOTIFICATION_LOG_CHARS: usize = 500;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallError {
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64, message: String },
    /// No answer within the bound.
    Timeout(Duration),
    /// The request could not even be sent within the bound: the server does not read
    /// what it is sent (stdio). It is stopped, as a half-written message breaks framing.
    Stalled(Duration),
    /// The server is gone (exited, closed its output, refused the connection).
    Dead(String),
    /// Anything else on the way (HTTP status, malformed answer).
    Transport(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Rpc { code, message } => write!(f, "error {code}: {message}"),
            CallError::Timeout(d) => {
                write!(f, "no answer within {}", crate::util::duration::human(*d))
            }
            CallError::Stalled(d) => write!(
                f,
                "it does not read its input: the request could not be written within {}; \
                 the server is stopped",
                humantime::format_duration(*d)
            ),
            CallError::Dead(why) => write!(f, "the server is not running: {why}"),
            CallError::Transport(why) => f.write_str(why),
        }
    }
}

/// Moves JSON-RPC messages to one server and back.
pub(crate) trait Transport: Send + Sync {
    /// Sends a request and waits up to `timeout` for its response's `result`.
    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, CallError>;
    /// Sends a notification (no answer expected).
    fn notify(&self, method: &str, params: Value) -> Result<(), CallError>;
    /// The revision agreed in `initialize` (HTTP sends it on every later request).
    fn set_protocol_version(&self, _version: &str) {}
    /// Ends the connection once, bounded: requests still in flight are cancelled with
    /// `why`, then HTTP deletes the session and stdio closes stdin, then SIGTERM, then
    /// SIGKILL (the spec's shutdown). Later calls do nothing.
    fn close(&self, _why: &str) {}
    /// What the server sent outside the answers.
    fn inbox(&self) -> Option<&Inbox> {
        None
    }
    /// After the handshake: opens what the server offers for messages outside calls
    /// (HTTP's standalone GET stream).
    fn listen(self: std::sync::Arc<Self>) {}
}

/// A message from the server, classified.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// An answer to one of our requests (ids are numbers we chose).
    Response {
        id: Option<u64>,
        outcome: Result<Value, CallError>,
    },
    /// The server asks something of us; `reply` is the full message to send back.
    Request { method: String, reply: Value },
    /// Progress, logging, list changes: logged with -v.
    Notification { method: String, params: Value },
    /// Not JSON-RPC.
    Invalid(String),
}

/// Classifies one decoded message, for a client that declares no elicitation.
#[cfg(test)]
pub(crate) fn classify(msg: Value) -> Incoming {
    classify_with(msg, None)
}

/// Classifies one decoded message; `elicitation` is how `elicitation/create` is answered
/// (`None`: not offered). A request's `id` may be any JSON value, 0 included: the presence
/// of the key decides, never its truthiness.
pub(crate) fn classify_with(msg: Value, elicitation: Option<Elicitation>) -> Incoming {
    let Value::Object(mut m) = msg else {
        return Incoming::Invalid("not a JSON object".into());
    };
    let method = m.get("method").and_then(Value::as_str).map(str::to_string);
    match (method, m.remove("id")) {
        (Some(method), Some(id)) => {
            let params = m.get("params").cloned().unwrap_or(Value::Null);
            let reply = reply_to(id, &method, &params, elicitation);
            Incoming::Request { method, reply }
        }
        (Some(method), None) => Incoming::Notification {
            method,
            params: m.remove("params").unwrap_or(Value::Null),
        },
        (None, Some(id)) => {
            let outcome = if let Some(err) = m.get("error") {
                Err(CallError::Rpc {
                    code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("(no message)")
                        .to_string(),
                })
            } else if let Some(result) = m.remove("result") {
                Ok(result)
            } else {
                return Incoming::Invalid("a response with neither result nor error".into());
            };
            Incoming::Response {
                id: id.as_u64(),
                outcome,
            }
        }
        (None, None) => {
            Incoming::Invalid("neither a request, a notification nor a response".into())
        }
    }
}

/// The answer to a server's request: `ping` is answered, `elicitation/create` when
/// `--mcp-elicitation` declared it, everything else (sampling, roots: capabilities this
/// client does not declare) is "method not found".
fn reply_to(id: Value, method: &str, params: &Value, elicitation: Option<Elicitation>) -> Value {
    if method == "ping" {
        return json!({"jsonrpc": "2.0", "id": id, "result": {}});
    }
    if method == "elicitation/create"
        && let Some(mode) = elicitation
    {
        return json!({"jsonrpc": "2.0", "id": id, "result": elicit(params, mode)});
    }
    json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": METHOD_NOT_FOUND,
        "message": format!("Method not found: {method} (agent runs unattended and offers \
                            no sampling, elicitation or roots)"),
    }})
}

pub(crate) use crate::config::cli::McpElicitation as Elicitation;

/// The answer to `elicitation/create`, decided ahead of time: `decline` declines;
/// `defaults` accepts a form with each field's schema default when every required field
/// has one, and declines otherwise (and declines URL-mode requests: nobody can open one).
pub(crate) fn elicit(params: &Value, mode: Elicitation) -> Value {
    let decline = json!({"action": "decline"});
    if mode == Elicitation::Decline || params.get("mode").and_then(Value::as_str) == Some("url") {
        return decline;
    }
    let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
    let empty = serde_json::Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut content = serde_json::Map::new();
    for (name, field) in props {
        if let Some(d) = field.get("default") {
            content.insert(name.clone(), d.clone());
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    let all_given = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|r| content.contains_key(r));
    if !all_given {
        return decline;
    }
    json!({"action": "accept", "content": content})
}

/// What the transcript lists of one elicitation: the server's message and the answer.
pub(crate) fn elicitation_entry(params: &Value, reply: &Value) -> Value {
    let result = reply.get("result").unwrap_or(&Value::Null);
    json!({
        "message": params.get("message").cloned().unwrap_or(Value::Null),
        "action": result.get("action").cloned().unwrap_or(Value::Null),
        "content": result.get("content").cloned().unwrap_or(Value::Null),
    })
}

/// What a server sent outside the answers, kept for the run: the elicitations answered
/// (listed in the transcript with the call they came in) and whether its tool list
/// changed (`notifications/tools/list_changed`).
#[derive(Default)]
pub(crate) struct Inbox {
    elicitations: std::sync::Mutex<Vec<Value>>,
    tools_changed: std::sync::atomic::AtomicBool,
}

impl Inbox {
    /// Notes a message the transport did not route to a caller: logs elicitations and
    /// list changes.
    pub(crate) fn note(&self, server: &str, msg: &Incoming, params: &Value) {
        use crate::util::sync::Locked;
        match msg {
            Incoming::Request { method, reply } if method == "elicitation/create" => {
                let entry = elicitation_entry(params, reply);
                crate::util::output::debug(&format!(
                    "mcp {server}: elicitation {} answered {}",
                    entry["message"], entry["action"]
                ));
                self.elicitations.locked().push(entry);
            }
            Incoming::Notification { method, .. }
                if method == "notifications/tools/list_changed" =>
            {
                self.tools_changed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            _ => {}
        }
    }

    /// The elicitations answered since the last call.
    pub(crate) fn take_elicitations(&self) -> Vec<Value> {
        use crate::util::sync::Locked;
        std::mem::take(&mut *self.elicitations.locked())
    }

    /// Whether the tool list changed since the last call (and clears it).
    pub(crate) fn take_tools_changed(&self) -> bool {
        self.tools_changed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }
}

/// A request message.
pub(crate) fn request_message(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification message (no `params` key when there are none).
pub(crate) fn notification_message(method: &str, params: Value) -> Value {
    match params {
        Value::Null => json!({"jsonrpc": "2.0", "method": method}),
        p => json!({"jsonrpc": "2.0", "method": method, "params": p}),
    }
}

/// A one-line description of a notification for the -v log.
pub(crate) fn describe_notification(method: &str, params: &Value) -> String {
    let detail = match method {
        "notifications/message" => format!(
            "[{}] {}",
            params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info"),
            match params.get("data") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            }
        ),
        _ => params.to_string(),
    };
    format!(
        "{method} {}",
        crate::util::text::ellipsis(&detail, NOTIFICATION_LOG_CHARS)
    )
}

/// A failed start-up step; a timeout names the flag that bounds start-up.
fn step_error(step: &str, e: CallError) -> String {
    bounded_error(step, "--mcp-startup-timeout", e)
}

/// A failed step; a timeout names `flag`, the bound it ran into.
fn bounded_error(step: &str, flag: &str, e: CallError) -> String {
    match e {
        CallError::Timeout(_) | CallError::Stalled(_) => format!("{step}: {e} ({flag})"),
        e => format!("{step}: {e}"),
    }
}

/// What `initialize` and `tools/list` returned.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    pub protocol_version: String,
    pub server_info: Value,
    /// The server's `capabilities` (`resources` adds the resource tools).
    pub capabilities: Value,
    /// The tool definitions, as listed (every page).
    pub tools: Vec<Value>,
}

/// `initialize` → `notifications/initialized` → `tools/list` (every page), all before
/// `deadline`.
pub(crate) fn handshake(
    t: &dyn Transport,
    deadline: Instant,
    elicitation: Option<Elicitation>,
) -> Result<Handshake, String> {
    // No roots: the filesystem server would replace the directories on its command line
    // with them. No sampling: nobody answers. Elicitation only when decided ahead of time.
    let capabilities = match elicitation {
        Some(_) => json!({"elicitation": {}}),
        None => json!({}),
    };
    let left = || deadline.saturating_duration_since(Instant::now());
    let init = t
        .request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": "agent", "version": env!("CARGO_PKG_VERSION")},
            }),
            left(),
        )
        .map_err(|e| step_error("initialize", e))?;
    let version = init
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or("initialize: the answer has no protocolVersion")?
        .to_string();
    if !SUPPORTED_VERSIONS.contains(&version.as_str()) {
        return Err(format!(
            "initialize: the server speaks protocol {version:?}; agent supports {}",
            SUPPORTED_VERSIONS.join(", ")
        ));
    }
    t.set_protocol_version(&version);
    t.notify("notifications/initialized", Value::Null)
        .map_err(|e| format!("notifications/initialized: {e}"))?;
    let tools = list_tools(t, deadline, "--mcp-startup-timeout")?;
    Ok(Handshake {
        protocol_version: version,
        server_info: init.get("serverInfo").cloned().unwrap_or(Value::Null),
        capabilities: init.get("capabilities").cloned().unwrap_or(Value::Null),
        tools,
    })
}

/// `tools/list`, every page, before `deadline`: at start-up, and again when the server
/// says its list changed (`flag` names the bound, for a timeout).
pub(crate) fn list_tools(
    t: &dyn Transport,
    deadline: Instant,
    flag: &str,
) -> Result<Vec<Value>, String> {
    let left = || deadline.saturating_duration_since(Instant::now());
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = t
            .request("tools/list", params, left())
            .map_err(|e| bounded_error("tools/list", flag, e))?;
        let Some(list) = page.get("tools").and_then(Value::as_array) else {
            return Err("tools/list: the answer has no \"tools\" array".into());
        };
        tools.extend(list.iter().cloned());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if cursor.as_deref() == Some(next) => {
                return Err(format!(
                    "tools/list: the server repeated the cursor {next:?}"
                ));
            }
            Some(next) => cursor = Some(next.to_string()),
            None => return Ok(tools),
        }
    }
    Err(format!(
        "tools/list: more than {MAX_TOOL_PAGES} pages; the server keeps returning a cursor"
    ))
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
