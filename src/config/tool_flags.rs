//! `--allowed-tools` and `--disallowed-tools`: tool names and the permission rules given
//! among them (`Bash(git status)`), checked against the known tools.

use crate::config::cli::ToolArgs;
use crate::error::Error;
use crate::tools::registry::{Registry, ToolSelection};

/// `--allowed-tools 'Bash(echo a,b)'` comes split at the comma: pieces are joined back
/// while a `(` is open.
fn rejoin_rules(pieces: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for p in pieces {
        if open && let Some(last) = out.last_mut() {
            last.push(',');
            last.push_str(p);
        } else {
            out.push(p.trim().to_string());
        }
        let last = out.last().map(String::as_str).unwrap_or("");
        open = last.contains('(') && !last.trim_end().ends_with(')');
    }
    out
}

/// Validates tool names and builds the selection (SPEC §6). An entry `Tool(specifier)`
/// is a permission rule for `Tool`: in `--allowed-tools` an allow rule that also enables
/// the tool, in `--disallowed-tools` a deny rule (the tool stays enabled).
pub(crate) fn tool_selection(args: &ToolArgs) -> Result<ToolSelection, Error> {
    let builtin = Registry::builtin(&ToolSelection::default());
    let known = builtin.all_names();
    let check = |flag: &str, names: &[String]| -> Result<(), Error> {
        for n in names {
            // MCP tools are known once their servers have started.
            if !known.contains(n) && !crate::mcp::names::is_mcp_pattern(n) {
                return Err(Error::Usage(format!(
                    "{flag}: unknown tool {n:?}; known tools: {}",
                    known.join(", ")
                )));
            }
        }
        Ok(())
    };
    // (plain names, rules, the rules' tools): a rule's tool is checked here, the rule
    // itself where the settings are.
    type Split = (Vec<String>, Vec<String>, Vec<String>);
    let split = |flag: &str, entries: &[String]| -> Result<Split, Error> {
        let (mut names, mut rules, mut tools) = (Vec::new(), Vec::new(), Vec::new());
        for e in rejoin_rules(entries) {
            match e.split_once('(') {
                Some((tool, _)) => {
                    tools.push(tool.trim().to_string());
                    rules.push(e);
                }
                None => names.push(e),
            }
        }
        check(flag, &names)?;
        check(flag, &tools)?;
        Ok((names, rules, tools))
    };
    let (allowed, allow_rules) = match &args.allowed_tools {
        Some(a) => {
            let (mut names, rules, tools) = split("--allowed-tools", a)?;
            names.extend(tools);
            (Some(names), rules)
        }
        None => (None, Vec::new()),
    };
    let (disallowed, deny_rules, _) = split("--disallowed-tools", &args.disallowed_tools)?;
    Ok(ToolSelection {
        allow_write: args.allow_write || args.full_auto,
        allow_bash: args.allow_bash || args.full_auto,
        allowed,
        disallowed,
        allow_rules,
        deny_rules,
        patch_edits: args.edit_tool == Some(crate::config::cli::EditTool::ApplyPatch),
        ..ToolSelection::default()
    })
}
