//! Helpers for the MCP tests: the `mcp-test-server` binary (stdio, or streamable HTTP on
//! a loopback port), configuration files pointing at it, and its message log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// The test server's executable (a `[[bin]]` of this package).
pub(super) fn server_bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-test-server")
}

/// A stdio server entry as Claude Code writes it.
pub(super) fn stdio_entry(args: &[&str], env: Value) -> Value {
    json!({"type": "stdio", "command": server_bin(), "args": args, "env": env})
}

/// Writes `{"mcpServers": servers}` to `path` and returns it as a string.
pub(super) fn write_config(path: &Path, servers: Value) -> String {
    std::fs::write(path, json!({"mcpServers": servers}).to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

/// Every message the server logged (`--log FILE`), in order. A last line still being
/// written (no newline yet: the server is alive and logging) is not one yet.
pub(super) fn read_log(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The JSON-RPC methods of the logged messages.
pub(super) fn logged_methods(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter_map(|e| {
            let m = if e["what"] == "http" {
                &e["msg"]["body"]
            } else {
                &e["msg"]
            };
            m["method"].as_str().map(str::to_string)
        })
        .collect()
}

/// The test server on a loopback port (streamable HTTP); killed when dropped.
pub(super) struct HttpServer {
    child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl HttpServer {
    pub(super) fn start(log: PathBuf, extra: &[&str]) -> HttpServer {
        let mut child = Command::new(server_bin())
            .args(["--http", "127.0.0.1:0", "--log", log.to_str().unwrap()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        HttpServer { child, url, log }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
