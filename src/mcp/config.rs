//! MCP server configuration: `--mcp-config FILE` (repeatable) and the workspace's
//! `.mcp.json`, in the shape Claude Code writes (`{"mcpServers": {NAME: {...}}}`), with
//! `${VAR}` / `${VAR:-default}` expanded. Pure apart from reading the files: the
//! environment comes in as a lookup function, so tests need not touch the process env.
//! Every mistake is an error message naming the file and the server (exit 2 upstream).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

/// The workspace file read unless `--no-project-settings` (Claude Code's project scope).
pub(crate) const PROJECT_FILE: &str = ".mcp.json";
/// A configuration file larger than this is refused: real ones are a few KiB.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Longest server name: `mcp__<server>__` must survive the shortening of a long tool name
/// (to 55 characters plus a hash), so that rules on `mcp__<server>` still match it.
const MAX_SERVER_NAME_CHARS: usize = 40;

/// How the agent reaches one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the scrubbed child environment (sorted by name).
        env: Vec<(String, String)>,
        /// Relative to the workspace; `None`: the workspace.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP: JSON-RPC POSTed to one endpoint.
    Http {
        url: String,
        headers: Vec<(String, String)>,
        /// The `"oauth"` block (the default: OAuth on a 401, with dynamic registration);
        /// boxed, being large and rare.
        oauth: Box<super::oauth::config::OAuthSpec>,
    },
}

impl Transport {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerSpec {
    pub name: String,
    /// The file it was defined in, for messages.
    pub file: PathBuf,
    pub transport: Transport,
    /// The values of the variables expanded into `headers` (`Bearer ${TOKEN}`: the
    /// token), redacted as the whole values are. Not `env`'s: `${HOME}/x` would hide
    /// every path under HOME.
    pub expanded: Vec<String>,
}

impl ServerSpec {
    /// Values that must never appear in output: everything in `env` and `headers` (a
    /// token the server needs is passed there explicitly).
    pub(crate) fn secret_values(&self) -> Vec<String> {
        match &self.transport {
            Transport::Stdio { env, .. } => env.iter().map(|(_, v)| v.clone()).collect(),
            Transport::Http { headers, oauth, .. } => headers
                .iter()
                .map(|(_, v)| v.clone())
                .chain(oauth.secret_values())
                .collect(),
        }
    }

    /// Everything to redact: `secret_values`, the last word of each header value (the
    /// token of `Bearer xyz`, as `--header` does), and the expanded variables' values.
    pub(crate) fn redacted_values(&self) -> Vec<String> {
        let mut out = self.secret_values();
        if let Transport::Http { headers, .. } = &self.transport {
            out.extend(
                headers
                    .iter()
                    .filter_map(|(_, v)| v.rsplit(' ').next())
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
        out.extend(self.expanded.iter().cloned());
        out.sort();
        out.dedup();
        out
    }
}

/// One entry as written, before expansion. Unknown keys are mistakes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Map<String, Value>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: Map<String, Value>,
    oauth: Option<Value>,
}

/// Which files to read, in order; a later definition of a name replaces an earlier one.
pub(crate) struct Sources<'a> {
    pub workspace: &'a Path,
    /// `--mcp-config` files, in command-line order (after the project file).
    pub files: &'a [PathBuf],
    pub no_project_settings: bool,
}

/// Reads every configuration file and returns the servers, sorted by name.
pub(crate) fn load(
    sources: &Sources<'_>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerSpec>, String> {
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let project = sources.workspace.join(PROJECT_FILE);
    if !sources.no_project_settings && project.is_file() {
        files.push((project, false));
    }
    files.extend(sources.files.iter().map(|f| (f.clone(), true)));
    let mut servers: Vec<ServerSpec> = Vec::new();
    for (file, from_flag) in files {
        let text = read_capped(&file).map_err(|e| {
            let flag = if from_flag { "--mcp-config " } else { "" };
            format!("{flag}{}: {e}", file.display())
        })?;
        for spec in parse(&text, &file, var)? {
            servers.retain(|s| s.name != spec.name);
            servers.push(spec);
        }
    }
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(servers)
}

fn read_capped(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "{} bytes; an MCP configuration may have at most {MAX_CONFIG_BYTES}",
            meta.len()
        ));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Parses one file's text. `file` is only used in messages.
pub(crate) fn parse(
    text: &str,
    file: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerSpec>, String> {
    let shown = file.display();
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| format!("MCP configuration {shown}: invalid JSON: {e}"))?;
    let Value::Object(top) = doc else {
        return Err(format!(
            "MCP configuration {shown}: expected an object {{\"mcpServers\": {{...}}}}"
        ));
    };
    if let Some(k) = top.keys().find(|k| *k != "mcpServers") {
        return Err(format!(
            "MCP configuration {shown}: unknown key {k:?} (expected only \"mcpServers\")"
        ));
    }
    let Some(servers) = top.get("mcpServers") else {
        return Err(format!(
            "MCP configuration {shown}: no \"mcpServers\" object"
        ));
    };
    let Value::Object(servers) = servers else {
        return Err(format!(
            "MCP configuration {shown}: \"mcpServers\" must be an object of servers by name"
        ));
    };
    let mut out = Vec::new();
    for (name, raw) in servers {
        let at = |msg: String| format!("MCP configuration {shown}, server {name:?}: {msg}");
        check_name(name).map_err(at)?;
        let raw: RawServer = serde_json::from_value(raw.clone()).map_err(|e| at(e.to_string()))?;
        let (transport, expanded) = transport(raw, var).map_err(at)?;
        out.push(ServerSpec {
            name: name.clone(),
            file: file.to_path_buf(),
            transport,
            expanded,
        });
    }
    Ok(out)
}

/// `[A-Za-z0-9_-]+` without `__`, so that `mcp__server__tool` splits one way only.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("a server name may only contain letters, digits, `_` and `-`".into());
    }
    if name.len() > MAX_SERVER_NAME_CHARS {
        return Err(format!(
            "a server name may have at most {MAX_SERVER_NAME_CHARS} characters"
        ));
    }
    if name.contains("__") {
        return Err(
            "a server name may not contain `__` (it separates the parts of \
                    mcp__server__tool)"
                .into(),
        );
    }
    Ok(())
}

/// The transport, and the values of the variables expanded into `headers`.
fn transport(
    raw: RawServer,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(Transport, Vec<String>), String> {
    let mut expanded = Vec::new();
    let kind = raw.kind.as_deref().unwrap_or(match raw.url {
        Some(_) if raw.command.is_none() => "http",
        _ => "stdio",
    });
    let mut strings = |what: &str,
                       map: &Map<String, Value>|
     -> Result<Vec<(String, String)>, String> {
        let mut v = Vec::new();
        for (k, val) in map {
            let Value::String(s) = val else {
                return Err(format!("{what} {k:?} must be a string"));
            };
            let s = expand_into(s, var, &mut expanded).map_err(|e| format!("{what} {k:?}: {e}"))?;
            v.push((k.clone(), s));
        }
        Ok(v)
    };
    match kind {
        "stdio" => {
            if raw.url.is_some() || !raw.headers.is_empty() || raw.oauth.is_some() {
                return Err(
                    "\"url\", \"headers\" and \"oauth\" belong to \"type\": \"http\"".into(),
                );
            }
            let command = raw
                .command
                .ok_or("\"command\" is missing (the program that runs the server)")?;
            let command = expand(&command, var).map_err(|e| format!("\"command\": {e}"))?;
            if command.trim().is_empty() {
                return Err("\"command\" is empty".into());
            }
            let args = raw
                .args
                .iter()
                .map(|a| expand(a, var))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("\"args\": {e}"))?;
            let mut env = strings("\"env\"", &raw.env)?;
            env.sort();
            let stdio = Transport::Stdio {
                command,
                args,
                env,
                cwd: raw.cwd.map(PathBuf::from),
            };
            Ok((stdio, Vec::new()))
        }
        "http" | "streamable-http" | "streamableHttp" => {
            if raw.command.is_some() || !raw.args.is_empty() || !raw.env.is_empty() {
                return Err(
                    "\"command\", \"args\" and \"env\" belong to \"type\": \"stdio\"".into(),
                );
            }
            if raw.cwd.is_some() {
                return Err("\"cwd\" belongs to \"type\": \"stdio\"".into());
            }
            let url = raw
                .url
                .ok_or("\"url\" is missing (the server's MCP endpoint)")?;
            let url = expand(&url, var).map_err(|e| format!("\"url\": {e}"))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "\"url\" must start with http:// or https://, got {url:?}"
                ));
            }
            let headers = strings("header", &raw.headers)?;
            let oauth = Box::new(match &raw.oauth {
                Some(v) => {
                    let mut x = |t: &str| expand_into(t, var, &mut expanded);
                    super::oauth::config::parse(v, &mut x)?
                }
                None => super::oauth::config::OAuthSpec::default(),
            });
            Ok((
                Transport::Http {
                    url,
                    headers,
                    oauth,
                },
                expanded,
            ))
        }
        "sse" => Err(
            "\"type\": \"sse\" (the HTTP+SSE transport of 2024-11-05, deprecated) is \
                      not supported: use \"type\": \"http\" with the server's streamable-HTTP \
                      endpoint"
                .into(),
        ),
        other => Err(format!(
            "unknown \"type\" {other:?} (expected \"stdio\" or \"http\")"
        )),
    }
}

/// Expands `${VAR}` and `${VAR:-default}` (the default is used when VAR is unset or
/// empty) as Claude Code does. A `$` not followed by `{` is kept as it is.
pub(crate) fn expand(text: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    expand_into(text, var, &mut Vec::new())
}

/// `expand`, adding the value of every variable it expands to `values`.
fn expand_into(
    text: &str,
    var: &dyn Fn(&str) -> Option<String>,
    values: &mut Vec<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unterminated \"${{\" in {text:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("\"${{{inner}}}\" does not name a variable"));
        }
        match (var(name).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => {
                out.push_str(&v);
                values.push(v);
            }
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "the environment variable {name} is not set (write ${{{name}:-default}} \
                     for a default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
