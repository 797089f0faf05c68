//! The BashOutput tool: a background command's output since the last read (only the lines
//! a `filter` regex matches, if given) and its status. Read-only and concurrency-safe: it
//! only reads the run's table of background commands (`background::Jobs`).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::tools::{Category, ToolContext, ToolError, ToolResult, Traits, TypedTool};

/// Longest `filter` accepted, in bytes: a line regex, not a program.
const MAX_FILTER_BYTES: usize = 1_000;
/// Compiled size cap for `filter` (regex's own unit, bytes): a pathological pattern is
/// an error result, never a stall.
const FILTER_SIZE_LIMIT: usize = 1 << 20;

const DESCRIPTION: &str = "\
Reads the output of a command started with Bash `run_in_background: true`, and its status.

Returns the output printed since the last BashOutput call on this id (the first call: since it \
started), then its status: running, exited with code N, or killed. Each call reads only new \
output; with `filter` (a regular expression), only the new lines that match it are returned, and \
the others are dropped. Output over 10,000 characters between two reads keeps the first 2,000 and \
the last 8,000 characters.

Use it to check that a server came up (its log), whether a long build finished, or to read a \
watcher's latest lines. It does not wait: if the command is still running and printed nothing \
new, you get empty output.";

/// BashOutput's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashOutputInput {
    bash_id: String,
    #[serde(default)]
    filter: Option<String>,
}

pub(crate) struct BashOutput;

impl TypedTool for BashOutput {
    type Input = BashOutputInput;
    const TRAITS: Traits = Traits {
        read_only: true,
        destructive: false,
        concurrency_safe: true,
        category: Category::Shell,
        subject_kind: crate::tools::SubjectKind::Nothing,
        records_changes: true,
        companion_of: Some("Bash"),
        edit_style: crate::tools::EditStyle::Any,
    };

    fn name(&self) -> &str {
        "BashOutput"
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
                },
                "filter": {
                    "type": "string",
                    "description": "Optional regular expression: only new output lines matching it are returned."
                }
            },
            "required": ["bash_id"],
            "additionalProperties": false
        })
    }

    fn validate(&self, input: &BashOutputInput) -> Result<(), ToolError> {
        if let Some(f) = &input.filter {
            compile(f)?;
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &BashOutputInput) -> Result<ToolResult, ToolError> {
        let filter = input.filter.as_deref().map(compile).transpose()?;
        let (text, job) = ctx
            .background
            .read(&input.bash_id, filter.as_ref())
            .map_err(ToolError::Failed)?;
        let status = job.status();
        let mut content = format!(
            "<output>{}</output>\n<status>{status}</status>",
            text.trim_end_matches('\n')
        );
        if let Some(p) = &job.full_output_path {
            content.push_str(&format!(
                "\n(the command's full output is saved in {}; read it with ReadFile)",
                p.display()
            ));
        }
        Ok(ToolResult::ok(content)
            .with_meta("bash_id", job.id.as_str())
            .with_meta("status", status)
            .with_meta("exit_code", job.exit_code))
    }
}

fn compile(filter: &str) -> Result<regex::Regex, ToolError> {
    if filter.len() > MAX_FILTER_BYTES {
        return Err(ToolError::failed(format!(
            "`filter` is {} bytes; at most {MAX_FILTER_BYTES} are accepted",
            filter.len()
        )));
    }
    regex::RegexBuilder::new(filter)
        .size_limit(FILTER_SIZE_LIMIT)
        .build()
        .map_err(|e| ToolError::failed(format!("`filter` is not a valid regular expression: {e}")))
}
