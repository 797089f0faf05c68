//! The WriteFile tool (SPEC §4): creates a file or replaces its whole content, atomically.
//!
//! Confinement, parent creation, modes and the temp-file-then-rename write all live in
//! `paths::write_atomic`, shared with EditFile; this file owns the input and the
//! model-facing contract.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Category, Subject, SubjectKind, ToolContext, ToolError, ToolResult, TypedTool, paths};

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

    fn is_read_only(&self) -> bool {
        false
    }

    fn category(&self) -> Category {
        Category::File
    }

    fn subject_kind(&self) -> SubjectKind {
        SubjectKind::Paths
    }

    fn subject(&self, input: &Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }

    /// Every write reports its change (`metadata.change`).
    fn records_changes(&self) -> bool {
        true
    }

    fn validate(&self, input: &Input) -> Result<(), ToolError> {
        if input.path.trim().is_empty() {
            return Err(ToolError::failed("`path` is empty: give the file to write"));
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &Input) -> Result<ToolResult, ToolError> {
        let resolved = paths::resolve_for_write(ctx, &input.path)?;
        let change = paths::write_atomic(ctx, &resolved, &input.path, input.content.as_bytes())?;
        let bytes = input.content.len();
        Ok(
            ToolResult::ok(format!("Wrote {bytes} bytes to {}", input.path))
                .with_meta("path", paths::display_path(ctx, &resolved))
                .with_meta("change", change.as_str())
                .with_meta("bytes", bytes),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;
    use crate::tools::paths::test_util::*;
    use crate::tools::test_support::{check_input, exec};

    fn run(ctx: &ToolContext, input: Value) -> Result<ToolResult, ToolError> {
        check_input(&WriteFile, &input)?;
        exec(&WriteFile, ctx, &input)
    }

    fn mode(p: &std::path::Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn schema_agrees_with_input_struct() {
        assert_schema_agrees::<Input>(
            &WriteFile.input_schema(),
            &json!({"path": "a.txt", "content": "x"}),
        );
    }

    #[test]
    fn tool_properties() {
        assert!(!WriteFile.is_read_only());
        assert!(!WriteFile.is_destructive());
        assert!(!WriteFile.is_concurrency_safe());
        assert_eq!(WriteFile.category(), Category::File);
    }

    #[test]
    fn creates_a_file_with_parents() {
        let (_g, ctx) = setup();
        let r = run(
            &ctx,
            json!({"path": "src/deep/new.rs", "content": "fn main() {}\n"}),
        )
        .unwrap();
        assert_eq!(r.content, "Wrote 13 bytes to src/deep/new.rs");
        assert!(!r.is_error);
        assert_eq!(r.metadata["path"], "src/deep/new.rs");
        assert_eq!(r.metadata["change"], "created");
        assert_eq!(r.metadata["bytes"], 13);
        let p = ctx.workspace.join("src/deep/new.rs");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "fn main() {}\n");
        assert_eq!(mode(&p), 0o644);
        assert_eq!(mode(&ctx.workspace.join("src/deep")), 0o755);
    }

    #[test]
    fn replaces_an_existing_file_keeping_its_mode() {
        let (_g, ctx) = setup();
        let p = ctx.workspace.join("run.sh");
        std::fs::write(&p, "old content that is longer\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let abs = p.to_str().unwrap();
        let r = run(&ctx, json!({"path": abs, "content": "#!/bin/sh\n"})).unwrap();
        assert_eq!(r.metadata["change"], "modified");
        assert_eq!(r.metadata["path"], "run.sh");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "#!/bin/sh\n");
        assert_eq!(mode(&p), 0o755);
    }

    #[test]
    fn empty_content_writes_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = crate::tools::test_support::ctx(dir.path());
        let r = run(&ctx, json!({"path": "e.txt", "content": ""})).unwrap();
        assert_eq!(r.content, "Wrote 0 bytes to e.txt");
        assert_eq!(std::fs::read(ctx.workspace.join("e.txt")).unwrap(), b"");
    }

    #[test]
    fn writes_outside_or_through_symlinks_are_refused_and_change_nothing() {
        let (_g, ctx) = setup();
        let out = outside(&ctx);
        symlink(&out, ctx.workspace.join("linkdir")).unwrap();
        symlink(out.join("secret.txt"), ctx.workspace.join("link.txt")).unwrap();
        let before = snapshot(&out);
        let abs_out = out.join("abs.txt");
        for p in [
            "../outside/new.txt",
            "../outside/secret.txt",
            abs_out.to_str().unwrap(),
            "linkdir/new.txt",
            "linkdir/sub/new.txt",
            "link.txt",
        ] {
            let e = run(&ctx, json!({"path": p, "content": "pwned"})).unwrap_err();
            assert!(e.message().contains("outside the workspace"), "{p}: {e}");
        }
        assert_eq!(snapshot(&out), before);
        assert!(!out.join("sub").exists());
    }

    #[test]
    fn refuses_directories_fifos_and_empty_paths() {
        let (_g, ctx) = setup();
        std::fs::create_dir(ctx.workspace.join("d")).unwrap();
        let e = run(&ctx, json!({"path": "d", "content": "x"})).unwrap_err();
        assert!(e.message().contains("is a directory"), "{e}");
        mkfifo(&ctx.workspace.join("pipe"));
        let c = ctx.clone();
        let e = without_hanging(move || run(&c, json!({"path": "pipe", "content": "x"})));
        assert!(e.unwrap_err().message().contains("FIFO"));
        let e = run(&ctx, json!({"path": " ", "content": "x"})).unwrap_err();
        assert!(e.message().contains("empty"));
        let e = run(&ctx, json!({"path": "a"})).unwrap_err();
        assert!(e.message().contains("content"), "{e}");
    }
}
