//! The KillBash tool: kills a background command and every process it started (its
//! group, and through its supervisor whatever left the group), then reports its status.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::{Category, SubjectKind, ToolContext, ToolError, ToolResult, Traits, TypedTool};

const DESCRIPTION: &str = "\
Kills a command started with Bash `run_in_background: true`, with every process it started.

Use it when you are done with a server or watcher, or to stop one that hangs. Background \
commands still running when the run ends are killed anyway, but stopping them yourself frees a \
slot (only a few may run at once). Returns the command's final status.";

/// KillBash's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KillBashInput {
    bash_id: String,
}

pub(crate) struct KillBash;

impl TypedTool for KillBash {
    type Input = KillBashInput;
    /// Kills only what the run itself started in the background, and changes no file.
    const TRAITS: Traits = Traits {
        read_only: false,
        destructive: false,
        concurrency_safe: false,
        category: Category::Shell,
        subject_kind: SubjectKind::Nothing,
        records_changes: true,
        companion_of: Some("Bash"),
        edit_style: crate::tools::EditStyle::Any,
    };

    fn name(&self) -> &str {
        "KillBash"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "bash_id": {
                    "type": "string",
                    "description": "The id Bash returned for the background command (bash_1, bash_2, ...)."
                }
            },
            "required": ["bash_id"],
            "additionalProperties": false
        })
    }

    fn execute(&self, ctx: &ToolContext, input: &KillBashInput) -> Result<ToolResult, ToolError> {
        let job = ctx
            .background
            .kill(&input.bash_id)
            .map_err(ToolError::Failed)?;
        let status = job.status();
        Ok(ToolResult::ok(format!(
            "Killed {} (pid {}) and every process it started; status: {status}.",
            job.id, job.pid
        ))
        .with_meta("bash_id", job.id.as_str())
        .with_meta("pid", job.pid)
        .with_meta("status", status))
    }
}
