//! The apply_patch tool: edits in codex's patch format (`parse.rs`), which GPT and
//! o-series models are trained on, offered to them instead of WriteFile and EditFile
//! (`--edit-tool`). All or nothing: every path is confined like the file tools'
//! (`tools::paths`: the workspace and `--add-dir`, symlinks resolved, no-follow opens and
//! atomic writes), every file is read and every hunk matched (`hunks.rs`) before
//! anything is written; a failure while writing restores what was already written. The
//! permission subject is every path the patch touches, so a deny rule on one of them
//! denies the whole call; each change is reported in `metadata.changes`. With
//! `--client-files` a file's text is read and written through the client (`files`); a
//! deletion (and a move's source) is on disk, as the client has no way to delete.

mod hunks;
mod parse;

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{self, ChangeKind};
use super::{EditStyle, Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, files};
use parse::Op;

/// Largest file a patch loads: it holds the old and the new content in memory.
const MAX_PATCH_FILE_BYTES: u64 = 32 * 1024 * 1024;

pub(crate) struct ApplyPatch;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    input: String,
}

const DESCRIPTION: &str = "\
Edit files with a patch: add, update (with hunks), move and delete files in one call. The patch is \
applied whole or not at all.

The patch format, exactly:
*** Begin Patch
*** Add File: path/to/new.txt
+every line of the new file, each starting with +
*** Update File: path/to/old.rs
*** Move to: path/to/renamed.rs   (optional)
@@ a line just before the change, to find the place (optional)
 context line (starts with a space)
-removed line
+added line
*** End of File   (optional: the hunk ends the file)
*** Delete File: path/to/gone.txt
*** End Patch

- Paths are relative to the workspace root (or absolute inside it). Paths outside it, also through a \
symbolic link, are refused.
- In an Update File, give 3 lines of context above and below each change, copied exactly from the file; \
start another hunk with @@ for each separate place. Hunks are found in order, so list them top to bottom.
- Old lines are matched exactly, then ignoring trailing whitespace, then ignoring indentation. If a hunk \
does not match, nothing is changed and the error names the file, the hunk and the nearest lines: fix the \
hunk and call again.
- A file with CRLF line endings keeps them; write plain lines.
- Returns the files changed (A added, M modified, D deleted).";

impl TypedTool for ApplyPatch {
    type Input = Input;
    const TRAITS: Traits = Traits {
        edit_style: EditStyle::Patch,
        ..Traits::FILE_WRITE
    };

    fn name(&self) -> &str {
        "apply_patch"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "input": {
                    "type": "string",
                    "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`."
                }
            },
            "required": ["input"],
            "additionalProperties": false
        })
    }

    /// Every path the patch touches, move targets included; none for a patch that does
    /// not parse (`validate` refuses it first).
    fn subject(&self, input: &Input) -> Subject {
        let ops = parse::parse(&input.input).unwrap_or_default();
        Subject::Paths(
            ops.iter()
                .flat_map(|op| op.paths())
                .map(str::to_string)
                .collect(),
        )
    }

    fn validate(&self, input: &Input) -> Result<(), ToolError> {
        parse::parse(&input.input)
            .map(drop)
            .map_err(ToolError::failed)
    }

    fn execute(&self, ctx: &ToolContext, input: &Input) -> Result<ToolResult, ToolError> {
        let ops = parse::parse(&input.input).map_err(ToolError::failed)?;
        let plan = plan(ctx, &ops)?;
        let done = write(ctx, &plan)?;
        let mut lines = Vec::with_capacity(done.len());
        let mut changes = Vec::with_capacity(done.len());
        for (shown, change) in &done {
            let letter = match *change {
                ChangeKind::Created => 'A',
                ChangeKind::Deleted => 'D',
                ChangeKind::Modified => 'M',
            };
            lines.push(format!("{letter} {shown}"));
            changes.push(paths::FileChange {
                path: shown.clone(),
                change: *change,
            });
        }
        Ok(ToolResult::ok(format!(
            "Applied the patch ({} file{}):\n{}",
            done.len(),
            if done.len() == 1 { "" } else { "s" },
            lines.join("\n")
        ))
        .with_changes(changes))
    }
}

/// One filesystem step of a patch, with what is needed to undo it.
enum Step {
    Write {
        resolved: PathBuf,
        shown: String,
        content: Vec<u8>,
        /// The file's content before, when it existed.
        before: Option<Vec<u8>>,
    },
    Remove {
        resolved: PathBuf,
        shown: String,
        before: Vec<u8>,
    },
}

/// Reads every file and applies every hunk in memory: the steps to write, or the first
/// error (nothing written yet).
fn plan(ctx: &ToolContext, ops: &[Op]) -> Result<Vec<Step>, ToolError> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut claim = |raw: &str| -> Result<PathBuf, ToolError> {
        let resolved = paths::resolve_for_write(ctx, raw)?;
        if seen.contains(&resolved) {
            return Err(ToolError::failed(format!(
                "the patch touches {raw} twice: give each file one operation (merge its hunks)"
            )));
        }
        seen.push(resolved.clone());
        Ok(resolved)
    };
    let mut steps = Vec::new();
    for op in ops {
        match op {
            Op::Add { path, lines } => {
                let resolved = claim(path)?;
                let before = read_existing(ctx, &resolved, path)?;
                let mut content = lines.join("\n");
                content.push('\n');
                steps.push(Step::Write {
                    shown: paths::display_path(ctx, &resolved),
                    resolved,
                    content: content.into_bytes(),
                    before,
                });
            }
            Op::Delete { path } => {
                let resolved = claim(path)?;
                let before = read_file(ctx, &resolved, path, "Delete File")?;
                steps.push(Step::Remove {
                    shown: paths::display_path(ctx, &resolved),
                    resolved,
                    before,
                });
            }
            Op::Update {
                path,
                move_to,
                hunks,
            } => {
                let resolved = claim(path)?;
                let before = read_file(ctx, &resolved, path, "Update File")?;
                let text = std::str::from_utf8(&before).map_err(|_| {
                    ToolError::failed(format!(
                        "{path} is not UTF-8 text: apply_patch edits text files (use Bash for \
                         this one)"
                    ))
                })?;
                let updated = hunks::apply(text, hunks).map_err(|m| {
                    ToolError::failed(format!(
                        "the patch was not applied (no file changed): *** Update File: {path}: {}",
                        m.message
                    ))
                })?;
                match move_to {
                    None => steps.push(Step::Write {
                        shown: paths::display_path(ctx, &resolved),
                        resolved,
                        content: updated.into_bytes(),
                        before: Some(before),
                    }),
                    Some(to) => {
                        let target = claim(to)?;
                        let target_before = read_existing(ctx, &target, to)?;
                        steps.push(Step::Write {
                            shown: paths::display_path(ctx, &target),
                            resolved: target,
                            content: updated.into_bytes(),
                            before: target_before,
                        });
                        steps.push(Step::Remove {
                            shown: paths::display_path(ctx, &resolved),
                            resolved,
                            before,
                        });
                    }
                }
            }
        }
    }
    Ok(steps)
}

/// A file's content, which must exist (`op` names the operation in the error).
fn read_file(
    ctx: &ToolContext,
    resolved: &std::path::Path,
    path: &str,
    op: &str,
) -> Result<Vec<u8>, ToolError> {
    match read_existing(ctx, resolved, path)? {
        Some(content) => Ok(content),
        None => Err(ToolError::failed(format!(
            "the patch was not applied (no file changed): *** {op}: {path}: the file does not \
             exist{}",
            if op == "Update File" {
                " (use *** Add File: to create it)"
            } else {
                ""
            }
        ))),
    }
}

/// A file's content, or `None` when there is no file (a directory or a device is an
/// error, as for the other file tools).
fn read_existing(
    ctx: &ToolContext,
    resolved: &std::path::Path,
    path: &str,
) -> Result<Option<Vec<u8>>, ToolError> {
    if !resolved.exists() && resolved.symlink_metadata().is_err() {
        return Ok(None);
    }
    files::read_whole(ctx, resolved, path, MAX_PATCH_FILE_BYTES, || too_big(path)).map(Some)
}

fn too_big(path: &str) -> ToolError {
    ToolError::failed(format!(
        "{path} is larger than {} MiB; apply_patch refuses it. Use Bash to change a file this large.",
        MAX_PATCH_FILE_BYTES / (1024 * 1024)
    ))
}

/// Runs the steps in order; on a failure, undoes the ones done (newest first) and
/// returns the error. Returns (shown path, change) per step.
fn write(ctx: &ToolContext, steps: &[Step]) -> Result<Vec<(String, ChangeKind)>, ToolError> {
    let mut done: Vec<(String, ChangeKind)> = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let result = match step {
            Step::Write {
                resolved,
                shown,
                content,
                ..
            } => files::write_whole(ctx, resolved, shown, content),
            Step::Remove {
                resolved, shown, ..
            } => paths::remove_file(ctx, resolved, shown).map(|()| ChangeKind::Deleted),
        };
        match result {
            Ok(change) => done.push((shown_of(step).to_string(), change)),
            Err(e) => {
                let restored = undo(ctx, &steps[..i]);
                return Err(ToolError::failed(format!(
                    "{}; {}",
                    e.message(),
                    if restored {
                        "the files already written were restored: no file changed"
                    } else {
                        "restoring the files already written failed too: check them"
                    }
                )));
            }
        }
    }
    Ok(done)
}

fn shown_of(step: &Step) -> &str {
    match step {
        Step::Write { shown, .. } | Step::Remove { shown, .. } => shown,
    }
}

/// Undoes `steps` newest first; false if any could not be undone.
fn undo(ctx: &ToolContext, steps: &[Step]) -> bool {
    let mut ok = true;
    for step in steps.iter().rev() {
        let r = match step {
            Step::Write {
                resolved,
                shown,
                before: Some(before),
                ..
            }
            | Step::Remove {
                resolved,
                shown,
                before,
            } => files::write_whole(ctx, resolved, shown, before).map(drop),
            Step::Write {
                resolved,
                shown,
                before: None,
                ..
            } => paths::remove_file(ctx, resolved, shown),
        };
        ok &= r.is_ok();
    }
    ok
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
