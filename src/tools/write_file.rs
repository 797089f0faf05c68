//! The WriteFile tool (SPEC §4): creates a file or replaces its whole content, atomically.
//!
//! Confinement, parent creation, modes and the temp-file-then-rename write all live in
//! `paths::write_atomic`, shared with EditFile (`files::write_whole`: or the client's
//! write, with `--client-files`); this file owns the input and the model-facing contract.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    EditStyle, Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, files, paths,
};

pub(crate) struct WriteFile;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    path: String,
    content: String,
}

const DESCRIPTION: &str = "\
Create a file, or replace the whole content of an existing file, in the workspace.

When to use: to create a new file, or to rewrite a file when most of it changes.
When not to use: for a targeted change in an existing file use EditFile instead (you send only the \
changed part, and nothing else in the file can be lost); to run commands, move or delete files use Bash.

- `path` is relative to the workspace root, or absolute inside the workspace. Missing parent \
directories are created.
- `content` becomes the entire file, byte for byte: include the final newline if the file should end \
with one. Before replacing an existing file, ReadFile it so that you do not drop content you meant to keep.
- The write is atomic: the file is never left half-written. A new file gets mode 0644; an existing \
file keeps its mode (an executable script stays executable).
- Refused: paths outside the workspace (also through a symbolic link), directories, and files that are \
not regular files (FIFO, socket, device).
- Returns `Wrote N bytes to PATH`.";

impl TypedTool for WriteFile {
    type Input = Input;
    const TRAITS: Traits = Traits {
        edit_style: EditStyle::Replace,
        ..Traits::FILE_WRITE
    };

    fn name(&self) -> &str {
        "WriteFile"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file to write: relative to the workspace root, or absolute inside the workspace. Created if missing, with its parent directories."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file, exactly as it should be on disk."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }

    fn validate(&self, input: &Input) -> Result<(), ToolError> {
        if input.path.trim().is_empty() {
            return Err(ToolError::failed("`path` is empty: give the file to write"));
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &Input) -> Result<ToolResult, ToolError> {
        let resolved = paths::resolve_for_write(ctx, &input.path)?;
        let change = files::write_whole(ctx, &resolved, &input.path, input.content.as_bytes())?;
        let bytes = input.content.len();
        Ok(
            ToolResult::ok(format!("Wrote {bytes} bytes to {}", input.path))
                .with_change(paths::display_path(ctx, &resolved), change)
                .with_meta("bytes", bytes),
        )
    }
}

#[cfg(test)]
#[path = "write_file_tests.rs"]
mod tests;
