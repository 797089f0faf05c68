//! Where `agent acp` keeps its sessions: one directory per session id under the sessions
//! directory (`--sessions-dir`, default `$XDG_STATE_HOME/agent/acp` or
//! `~/.local/state/agent/acp`), holding `session.json` (the workspace, the MCP servers, the
//! model and mode chosen), `transcript.json` (the `-o` transcript of the last prompt, which
//! holds the whole conversation: each prompt resumes it; its journal `transcript.json.journal`
//! while a prompt runs) and `mcp.json` (the client's MCP servers in `--mcp-config` form).
//! `session/list` reads them back (`list`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::wire::RpcError;

pub(crate) const META: &str = "session.json";
pub(crate) const TRANSCRIPT: &str = "transcript.json";
pub(crate) const MCP: &str = "mcp.json";

/// `$XDG_STATE_HOME/agent/acp`, else `~/.local/state/agent/acp`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state")
        }
    };
    Some(state.join("agent/acp"))
}

/// What `session/new` and `session/load` give: the workspace and the MCP servers.
#[derive(Debug, Clone)]
pub(crate) struct SessionSpec {
    pub cwd: PathBuf,
    /// In `--mcp-config`'s `{"mcpServers": {…}}` form; empty: none.
    pub mcp: Map<String, Value>,
}

impl SessionSpec {
    pub(crate) fn from_params(params: &Value) -> Result<SessionSpec, RpcError> {
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::params("cwd (an absolute path) is required"))?;
        let path = Path::new(cwd);
        if !path.is_absolute() {
            return Err(RpcError::params(format!(
                "cwd {cwd:?} is not an absolute path"
            )));
        }
        let cwd = path
            .canonicalize()
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| RpcError::params(format!("cwd {cwd:?} is not a directory")))?;
        let servers = match params.get("mcpServers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err(RpcError::params("mcpServers must be an array")),
        };
        let mut mcp = Map::new();
        for s in &servers {
            let (name, server) = mcp_server(s)?;
            mcp.insert(name, server);
        }
        Ok(SessionSpec { cwd, mcp })
    }
}

/// One ACP `McpServer` in Claude Code's `.mcp.json` form.
fn mcp_server(s: &Value) -> Result<(String, Value), RpcError> {
    let name = s["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| RpcError::params("mcpServers: each server needs a name"))?;
    let pairs = |key: &str| -> Result<Map<String, Value>, RpcError> {
        let mut m = Map::new();
        for p in s[key].as_array().into_iter().flatten() {
            match (p["name"].as_str(), p["value"].as_str()) {
                (Some(n), Some(v)) => {
                    m.insert(n.to_string(), Value::String(v.to_string()));
                }
                _ => {
                    return Err(RpcError::params(format!(
                        "mcpServers {name:?}: each of {key} needs a name and a value"
                    )));
                }
            }
        }
        Ok(m)
    };
    let server = match s["type"].as_str() {
        Some("http") => {
            let url = s["url"]
                .as_str()
                .ok_or_else(|| RpcError::params(format!("mcpServers {name:?}: url is required")))?;
            json!({"type": "http", "url": url, "headers": pairs("headers")?})
        }
        Some("sse") => {
            return Err(RpcError::params(format!(
                "mcpServers {name:?}: SSE servers are not supported (mcpCapabilities.sse is false); use HTTP"
            )));
        }
        _ => {
            let command = s["command"].as_str().ok_or_else(|| {
                RpcError::params(format!("mcpServers {name:?}: command is required"))
            })?;
            let args: Vec<Value> = s["args"].as_array().cloned().unwrap_or_default();
            if args.iter().any(|a| !a.is_string()) {
                return Err(RpcError::params(format!(
                    "mcpServers {name:?}: args must be strings"
                )));
            }
            json!({"command": command, "args": args, "env": pairs("env")?})
        }
    };
    Ok((name.to_string(), server))
}

/// `session.json`: what a session is, kept for `session/load`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Meta {
    pub session_id: String,
    pub cwd: PathBuf,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    pub created_ms: u64,
}

/// A new session id: time and process, unique on this machine and safe as a file name.
pub(crate) fn new_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "acp-{nanos:x}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Whether `id` can name a session directory (never a path out of the store).
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub(crate) fn write_meta(dir: &Path, meta: &Meta) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(meta).unwrap_or_default();
    crate::util::output::write_file_atomic(&dir.join(META), text.as_bytes())
}

pub(crate) fn read_meta(dir: &Path) -> Result<Meta, String> {
    let text = std::fs::read_to_string(dir.join(META)).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The saved sessions (`session/list`), those in `cwd` only when given, most recently
/// active first, each with when it was last active (its transcript's time, else its
/// `session.json`'s). A directory that is not a session is skipped.
pub(crate) fn list(store: &Path, cwd: Option<&Path>) -> Vec<(Meta, std::time::SystemTime)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(store).into_iter().flatten().flatten() {
        let dir = entry.path();
        let Ok(meta) = read_meta(&dir) else { continue };
        if !valid_id(&meta.session_id) || cwd.is_some_and(|c| c != meta.cwd) {
            continue;
        }
        let updated = [TRANSCRIPT, META]
            .iter()
            .find_map(|f| {
                std::fs::metadata(dir.join(f))
                    .and_then(|m| m.modified())
                    .ok()
            })
            .unwrap_or(std::time::UNIX_EPOCH);
        out.push((meta, updated));
    }
    out.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.0.session_id.cmp(&b.0.session_id))
    });
    out
}

/// The client's MCP servers as a `--mcp-config` file (none: no file).
pub(crate) fn write_mcp(dir: &Path, mcp: &Map<String, Value>) -> std::io::Result<Option<PathBuf>> {
    let path = dir.join(MCP);
    if mcp.is_empty() {
        let _ = std::fs::remove_file(&path);
        return Ok(None);
    }
    let text = serde_json::to_string_pretty(&json!({"mcpServers": mcp})).unwrap_or_default();
    crate::util::output::write_file_atomic(&path, text.as_bytes())?;
    Ok(Some(path))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
