//! `agent tools`: the enabled tools with their metadata, and the exact `tools` array the
//! API is sent. The MCP servers of the configuration are started, so their tools are
//! listed too (with their server and their own names). What a server says (a tool's
//! description) is redacted as everywhere: it may echo a secret it was given.

use std::sync::Arc;

use serde_json::json;

use crate::config::cli::ToolsArgs;
use crate::error::{Error, ExitStatus};
use crate::tools::Tool;
use crate::tools::registry::Registry;
use crate::{config, mcp, model::provider, process, util::output};

pub(crate) fn tools_command(args: &ToolsArgs) -> ExitStatus {
    if args.split_commands {
        return split_commands(args);
    }
    let selection = match config::tool_selection(&args.tools) {
        Ok(s) => s,
        Err(e) => return output::usage_failure(&e),
    };
    let mut registry = Registry::builtin(&selection);
    let mcp_origin = match tools_mcp(args, &mut registry) {
        Ok(o) => o,
        Err(e) => return output::usage_failure(&e),
    };
    let empty = json!({});
    let tools: Vec<_> = registry
        .enabled()
        .iter()
        .map(|t| {
            let mut v = tool_entry(t.as_ref());
            if let Some((server, tool)) = mcp_origin.get(t.name()) {
                v["server"] = json!(server);
                v["mcp_tool"] = json!(tool);
            }
            v
        })
        .collect();
    let api = provider::anthropic::api_tools(&registry.to_api_format());
    if args.json {
        let doc = json!({"tools": tools, "api_tools": api});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        output::print_stdout(&output::redact(&text));
    } else {
        let mut s = String::from("Enabled tools:\n");
        let width = registry
            .enabled()
            .iter()
            .map(|t| t.name().len())
            .max()
            .unwrap_or(0)
            .max(10);
        for t in registry.enabled() {
            let flags = [
                (t.is_read_only(), "read-only"),
                (t.is_destructive(), "destructive"),
                (t.is_concurrency_safe(&empty), "concurrency-safe"),
            ];
            let flags: Vec<_> = flags
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, n)| *n)
                .collect();
            s.push_str(&format!(
                "  {:<width$} {:<7} {}\n",
                t.name(),
                t.category().as_str(),
                flags.join(", ")
            ));
            if let Some((server, tool)) = mcp_origin.get(t.name()) {
                s.push_str(&format!(
                    "  {:<width$} the tool {tool:?} of the MCP server {server:?}\n",
                    ""
                ));
            }
        }
        s.push_str("\nThe `tools` array sent to the API:\n");
        s.push_str(&serde_json::to_string_pretty(&api).unwrap_or_default());
        output::print_stdout(&output::redact(&s));
    }
    mcp::shutdown_all("agent tools is done"); // HTTP sessions end, stdio servers exit
    process::kill_all_running(); // the backstop
    ExitStatus::Success
}

/// One tool as `agent tools --json` lists it (the generated docs/reference/tools.md
/// renders the same object).
pub(crate) fn tool_entry(t: &dyn Tool) -> serde_json::Value {
    json!({"name": t.name(), "description": t.description(),
           "input_schema": t.input_schema(), "read_only": t.is_read_only(),
           "destructive": t.is_destructive(),
           "concurrency_safe": t.is_concurrency_safe(&json!({})),
           "category": t.category().as_str()})
}

/// `agent tools`: starts the MCP servers of the configuration (the current directory's
/// `.mcp.json` and `--mcp-config`) and registers their tools. Returns each MCP tool's
/// server and own name, by the name the model sees.
fn tools_mcp(
    args: &ToolsArgs,
    registry: &mut Registry,
) -> Result<std::collections::HashMap<String, (String, String)>, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Usage(format!("cannot read the current directory: {e}")))?;
    let settings = mcp::McpSettings::from_args(
        &args.mcp,
        &cwd,
        args.no_project_settings,
        args.tools.full_auto,
        &|name| std::env::var(name).ok(),
    )
    .map_err(Error::Usage)?;
    if settings.servers.is_empty() {
        return Ok(Default::default());
    }
    let mut secrets = crate::util::secrets::secret_values();
    secrets.extend(settings.secret_values());
    output::init(output::Verbosity::Normal, secrets);
    let opts = mcp::Options {
        call_timeout: settings.call_timeout,
        startup_timeout: settings.startup_timeout,
        strict: settings.strict,
        workspace: cwd,
        child_env: Arc::new(crate::util::secrets::scrubbed_env(std::env::vars(), &[])),
        token_cache: settings.token_cache.clone(),
        elicitation: settings.elicitation,
    };
    let started = mcp::start(&settings.servers, &opts, &|_| {}).map_err(Error::McpStartup)?;
    output::progress_done();
    let selection = config::tool_selection(&args.tools)?;
    mcp::tool::register(registry, &started, &selection, settings.allow_all);
    Ok(started
        .servers
        .iter()
        .flat_map(|(server, defs)| {
            defs.iter()
                .map(|d| (d.exposed.clone(), (server.name.clone(), d.tool.clone())))
        })
        .collect())
}

/// `agent tools --split-commands`: for each line of stdin, a JSON string holding a Bash
/// command, one JSON line: `{"commands": [[word…]…], "opaque": [command…], "defines":
/// […]}` as the permission rules see it, or `{"error": why}` when it cannot be parsed
/// (which the rules deny). A line that is not a JSON string is a usage error. Each line
/// also says whether the rules of `--allowed-tools`/`--disallowed-tools` let the Bash
/// call run: `"denied"`, the policy's reason, or null.
fn split_commands(args: &ToolsArgs) -> ExitStatus {
    use std::io::BufRead;
    let settings = match split_commands_rules(args) {
        Ok(s) => s,
        Err(e) => return output::usage_failure(&e),
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut out = String::new();
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => return output::usage_failure(&Error::Usage(format!("stdin: {e}"))),
        };
        let command: String = match serde_json::from_str(&line) {
            Ok(c) => c,
            Err(e) => {
                return output::usage_failure(&Error::Usage(format!(
                    "--split-commands: line {} is not a JSON string: {e}",
                    n + 1
                )));
            }
        };
        let mut v = match crate::policy::shell_words::parse(&command) {
            Ok(s) => json!({
                "commands": s.commands,
                "opaque": s.opaque.iter().map(|o| &o.command).collect::<Vec<_>>(),
                "defines": s.defines,
            }),
            Err(e) => json!({"error": e}),
        };
        let subject = crate::tools::Subject::Command(command);
        v["denied"] = json!(crate::policy::check_rules(
            &settings, "Bash", &subject, &cwd
        ));
        out.push_str(&v.to_string());
        out.push('\n');
        if out.len() > 1 << 16 && !output::print_stdout(&std::mem::take(&mut out)) {
            return ExitStatus::Failure;
        }
    }
    if !out.is_empty() && !output::print_stdout(&out) {
        return ExitStatus::Failure;
    }
    ExitStatus::Success
}

/// The permission rules `--split-commands` judges each line by: the tool flags' rules
/// only (no settings file), as a run would read them.
fn split_commands_rules(args: &ToolsArgs) -> Result<crate::policy::Settings, Error> {
    let selection = config::tool_selection(&args.tools)?;
    let known = Registry::builtin(&Default::default()).known();
    let mut settings = crate::policy::Settings::default();
    settings.add_rules("--allowed-tools", true, &selection.allow_rules, &known)?;
    settings.add_rules("--disallowed-tools", false, &selection.deny_rules, &known)?;
    Ok(settings)
}
