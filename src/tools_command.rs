//! `agent tools`: the enabled tools with their metadata, and the exact `tools` array the
//! API is sent.

use std::process::ExitCode;

use serde_json::json;

use crate::cli::ToolsArgs;
use crate::tools::registry::Registry;
use crate::{config, output, provider, usage_failure};

pub(crate) fn tools_command(args: &ToolsArgs) -> ExitCode {
    let selection = match config::tool_selection(&args.tools) {
        Ok(s) => s,
        Err(e) => return usage_failure(&e),
    };
    let registry = Registry::builtin(&selection);
    let empty = json!({});
    let tools: Vec<_> = registry
        .enabled()
        .iter()
        .map(|t| {
            json!({"name": t.name(), "description": t.description(),
                   "input_schema": t.input_schema(), "read_only": t.is_read_only(),
                   "destructive": t.is_destructive(),
                   "concurrency_safe": t.is_concurrency_safe(&empty),
                   "category": t.category().as_str()})
        })
        .collect();
    let api = provider::anthropic::api_tools(&registry.to_api_format());
    if args.json {
        let doc = json!({"tools": tools, "api_tools": api});
        output::print_stdout(&serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        let mut s = String::from("Enabled tools:\n");
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
                "  {:<10} {:<7} {}\n",
                t.name(),
                t.category().as_str(),
                flags.join(", ")
            ));
        }
        s.push_str("\nThe `tools` array sent to the API:\n");
        s.push_str(&serde_json::to_string_pretty(&api).unwrap_or_default());
        output::print_stdout(&s);
    }
    ExitCode::SUCCESS
}
