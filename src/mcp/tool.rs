//! `McpTool`: one tool of a connected MCP server as a `Tool` like any other, so dispatch,
//! the scheduler, policy, hooks, the size limit and the transcript apply unchanged; and
//! `register`, which adds a run's MCP tools to the registry, enabled by the built-in rule
//! (read-only tools on; the others with `--allow-mcp`/`--full-auto` or by name), through
//! `entries`, which a changed tool list goes through too.

use std::sync::Arc;

use serde_json::Value;

use super::{Server, Started, ToolDef, ToolKind, content, names};
use crate::tools::registry::{Registry, ToolSelection};
use crate::tools::{
    Category, DEFAULT_MAX_RESULT_CHARS, PreparedCall, Subject, SubjectKind, Tool, ToolContext,
    ToolError, ToolResult,
};

pub(crate) struct McpTool {
    server: Arc<Server>,
    def: ToolDef,
    /// The server's `read_resource` tool, named in the note of a resource link.
    read_tool: Option<String>,
}

impl McpTool {
    pub(crate) fn new(server: Arc<Server>, def: ToolDef, read_tool: Option<String>) -> Self {
        McpTool {
            server,
            def,
            read_tool,
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.def.exposed
    }

    fn description(&self) -> &str {
        &self.def.description
    }

    fn input_schema(&self) -> Value {
        self.def.input_schema.clone()
    }

    fn is_read_only(&self) -> bool {
        self.def.read_only
    }

    fn is_destructive(&self) -> bool {
        self.def.destructive
    }

    /// `readOnlyHint` is the server's promise that a call changes nothing.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        self.def.read_only
    }

    fn category(&self) -> Category {
        Category::Mcp
    }

    /// Rules name the tool (or its server), never a part of its input: the agent cannot
    /// know which of a server's fields is a path or a command.
    fn subject_kind(&self) -> SubjectKind {
        SubjectKind::Nothing
    }

    /// A server's changes are not reported: a writable MCP tool makes the run scan the
    /// workspace for `files_changed`, as Bash does.
    fn records_changes(&self) -> bool {
        false
    }

    fn max_result_chars(&self) -> Option<usize> {
        Some(DEFAULT_MAX_RESULT_CHARS)
    }

    /// The schema was checked by dispatch; the server validates the rest itself.
    fn prepare<'t>(&'t self, input: &Value) -> Result<Box<dyn PreparedCall + 't>, ToolError> {
        Ok(Box::new(McpCall {
            tool: self,
            input: input.clone(),
        }))
    }
}

/// One call of an MCP tool.
struct McpCall<'t> {
    tool: &'t McpTool,
    input: Value,
}

impl PreparedCall for McpCall<'_> {
    fn subject(&self) -> Subject {
        Subject::Nothing
    }

    fn execute(&self, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let (server, def) = (&self.tool.server, &self.tool.def);
        let text = |content: String| ToolResult::ok(content);
        let arg = |k: &str| self.input.get(k).and_then(Value::as_str);
        let result = match def.kind {
            ToolKind::Call => match server.call_tool(&def.tool, &self.input) {
                Ok(mut r) => {
                    let taken = super::media::take_from_result(&mut r);
                    let (text, is_error) =
                        content::to_text_linked(&r, self.tool.read_tool.as_deref());
                    ToolResult {
                        content: taken.annotate(text),
                        is_error,
                        media: taken.blocks,
                        ..ToolResult::default()
                    }
                }
                Err(e) => ToolResult::error(e),
            },
            ToolKind::ListResources => {
                let params = match arg("cursor") {
                    Some(c) => serde_json::json!({"cursor": c}),
                    None => serde_json::json!({}),
                };
                match server.request("resources/list", params) {
                    Ok(page) => text(content::resource_list(&page)),
                    Err(e) => ToolResult::error(e),
                }
            }
            ToolKind::ReadResource => match arg("uri") {
                None => ToolResult::error("read_resource needs \"uri\""),
                Some(uri) => {
                    match server.request("resources/read", serde_json::json!({"uri": uri})) {
                        Ok(mut r) => {
                            let media = super::media::take_from_contents(&mut r);
                            let mut result = text(content::resource_contents(&r));
                            result.media = media;
                            result.with_meta("uri", uri)
                        }
                        Err(e) => ToolResult::error(e),
                    }
                }
            },
        };
        // What the server asked while the call ran, and the decided answers.
        let elicitations = server.take_elicitations();
        let result = if elicitations.is_empty() {
            result
        } else {
            result.with_meta("elicitations", Value::Array(elicitations))
        };
        Ok(result
            .with_meta("server", server.name.as_str())
            .with_meta("mcp_tool", def.tool.as_str()))
    }
}

/// Adds every tool of the connected servers to `registry`, enabled as the selection and
/// `allow_all` (`--allow-mcp`, `--full-auto`) say. `--allowed-tools` names a tool, its
/// server (`mcp__server`, `mcp__server__*`); `--disallowed-tools` wins.
pub(crate) fn register(
    registry: &mut Registry,
    started: &Started,
    selection: &ToolSelection,
    allow_all: bool,
) {
    let mut unmatched: Vec<&String> = selection
        .allowed
        .iter()
        .flatten()
        .chain(&selection.disallowed)
        .filter(|p| names::is_mcp_pattern(p))
        .collect();
    for (server, defs) in &started.servers {
        for def in defs {
            unmatched.retain(|p| !names::pattern_names(p, &server.name, &def.exposed));
        }
        for (tool, on) in entries(server, defs, selection, allow_all) {
            let name = tool.name().to_string();
            registry.register(tool);
            registry.set_enabled(&name, on);
        }
    }
    for p in unmatched {
        crate::util::output::warn(&format!(
            "{p:?} in --allowed-tools/--disallowed-tools names no tool of a connected MCP server"
        ));
    }
}

/// A server's tools as registry entries, each with whether it is enabled: at start-up
/// and after its list changed alike. `--allowed-tools` names a tool or its server;
/// otherwise read-only tools are on, the others with `allow_all`; `--disallowed-tools`
/// wins.
pub(crate) fn entries(
    server: &Arc<Server>,
    defs: &[ToolDef],
    selection: &ToolSelection,
    allow_all: bool,
) -> Vec<(Arc<dyn Tool>, bool)> {
    let read_tool = defs
        .iter()
        .find(|d| d.kind == ToolKind::ReadResource)
        .map(|d| d.exposed.clone());
    defs.iter()
        .map(|def| {
            let named = |p: &String| names::pattern_names(p, &server.name, &def.exposed);
            let on = match &selection.allowed {
                Some(list) => list.iter().any(named),
                None => def.read_only || allow_all,
            };
            let off = selection.disallowed.iter().any(named);
            let tool: Arc<dyn Tool> =
                Arc::new(McpTool::new(server.clone(), def.clone(), read_tool.clone()));
            (tool, on && !off)
        })
        .collect()
}
