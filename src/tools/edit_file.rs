//! The EditFile tool (SPEC §4): replaces one exact, unique occurrence of a string.
//!
//! Works on bytes, so a file with invalid UTF-8 elsewhere is edited without damage.
//! Line-ending rule: the file's dominant style (CRLF when it has more `\r\n` than bare
//! `\n`) is applied to `old_string` and `new_string` first, so a model that writes `\n`
//! edits a CRLF file correctly and never mixes endings into it; only when that finds
//! nothing are the strings tried exactly as given. Reading and writing go through
//! `files` (the disk: `paths`, atomic, mode kept, confined; or `--client-files`).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    EditStyle, Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, files, paths,
};

/// Largest file EditFile loads: it holds the old and the new content in memory.
const MAX_EDIT_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Unchanged lines shown before and after the change.
const SNIPPET_CONTEXT_LINES: usize = 3;
/// Lines of the snippet at most, so a large replacement is not echoed back whole.
const SNIPPET_MAX_LINES: usize = 40;
/// Snippet lines are cut like ReadFile's, to keep a minified line from flooding.
const SNIPPET_LINE_MAX_CHARS: usize = 2_000;

pub(crate) struct EditFile;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    path: String,
    old_string: String,
    new_string: String,
}

const DESCRIPTION: &str = "\
Replace one exact piece of text in an existing file in the workspace.

When to use: for targeted changes to an existing file: fix a line, rewrite a function, add an import. \
Prefer it to WriteFile whenever only part of the file changes.
When not to use: to create a file (use WriteFile); to change many places (make one EditFile call per \
place, each with a unique old_string); for binary files.

- ReadFile the file first and copy `old_string` from it exactly, with its whitespace and indentation, \
but without the `N<TAB>` line-number prefixes ReadFile adds.
- `old_string` must occur exactly once. If it occurs several times the call fails and says how many: \
include more surrounding lines to make it unique. If it is not found, the file may have changed since \
you read it: ReadFile it again.
- `new_string` replaces that one occurrence; an empty `new_string` deletes it. It must differ from \
`old_string`.
- Line endings: write `\\n` in both strings; in a file with CRLF line endings they are converted to \
CRLF, so the file keeps its line endings.
- The write is atomic and the file keeps its mode. Paths outside the workspace (also through a \
symbolic link) are refused.
- Returns the changed lines with a few lines of context, numbered like ReadFile, so you can check the \
result without reading the file again.";

impl TypedTool for EditFile {
    type Input = Input;
    const TRAITS: Traits = Traits {
        edit_style: EditStyle::Replace,
        ..Traits::FILE_WRITE
    };

    fn name(&self) -> &str {
        "EditFile"
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
                    "description": "The file to edit: relative to the workspace root, or absolute inside the workspace. It must exist."
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace, copied from the file (without ReadFile's line-number prefixes). Must occur exactly once: include enough surrounding context to make it unique."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text that replaces old_string. Empty to delete old_string. Must differ from old_string."
                }
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }

    fn validate(&self, input: &Input) -> Result<(), ToolError> {
        if input.path.trim().is_empty() {
            return Err(ToolError::failed("`path` is empty: give the file to edit"));
        }
        if input.old_string.is_empty() {
            return Err(ToolError::failed(
                "`old_string` is empty: give the exact text to replace (to create a file, use WriteFile)",
            ));
        }
        if input.old_string == input.new_string {
            return Err(ToolError::failed(
                "`old_string` and `new_string` are identical: there is nothing to change",
            ));
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &Input) -> Result<ToolResult, ToolError> {
        let path = input.path.as_str();
        let resolved = paths::resolve_for_write(ctx, path)?;
        let content = files::read_whole(ctx, &resolved, path, MAX_EDIT_FILE_BYTES, || {
            too_big(path)
        })
        .map_err(|e| match e {
            ToolError::NotFound(_) => ToolError::NotFound(format!(
                "file not found: {path} does not exist. EditFile changes existing files; use WriteFile to create one."
            )),
            other => other,
        })?;

        let style = LineStyle::of(&content);
        let edit = find_edit(&content, &input.old_string, &input.new_string, style, path)?;
        let mut updated = Vec::with_capacity(content.len() + edit.new.len());
        updated.extend_from_slice(&content[..edit.at]);
        updated.extend_from_slice(edit.new.as_bytes());
        updated.extend_from_slice(&content[edit.at + edit.old.len()..]);
        drop(content);

        let change = files::write_whole(ctx, &resolved, path, &updated)?;
        let first = 1 + count_newlines(&updated[..edit.at]);
        // A replacement ending in '\n' ends on the line before the next one starts.
        let last =
            first + count_newlines(edit.new.strip_suffix('\n').unwrap_or(&edit.new).as_bytes());
        let what = if edit.new.is_empty() {
            "deleted the text"
        } else {
            "replaced 1 occurrence"
        };
        let text = format!(
            "Edited {path}: {what} at line {first}. The file now reads:\n{}",
            snippet(&updated, first, last)
        );
        Ok(ToolResult::ok(text)
            .with_change(paths::display_path(ctx, &resolved), change)
            .with_meta("bytes", updated.len())
            .with_meta("line", first)
            .with_meta("line_endings", style.as_str()))
    }
}

fn too_big(path: &str) -> ToolError {
    ToolError::failed(format!(
        "{path} is larger than {} MiB; EditFile refuses it. Use Bash (e.g. sed) to change a file this large.",
        MAX_EDIT_FILE_BYTES / (1024 * 1024)
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineStyle {
    Lf,
    Crlf,
}

impl LineStyle {
    /// CRLF when the file has more `\r\n` than bare `\n` endings.
    fn of(content: &[u8]) -> Self {
        let newlines = count_newlines(content);
        let crlf = content.windows(2).filter(|w| w == b"\r\n").count();
        if crlf > newlines - crlf {
            LineStyle::Crlf
        } else {
            LineStyle::Lf
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            LineStyle::Lf => "lf",
            LineStyle::Crlf => "crlf",
        }
    }

    /// `s` with every line ending written in this style.
    fn apply(self, s: &str) -> Cow<'_, str> {
        match self {
            LineStyle::Lf if s.contains("\r\n") => Cow::Owned(s.replace("\r\n", "\n")),
            LineStyle::Crlf if s.contains('\n') => {
                Cow::Owned(s.replace("\r\n", "\n").replace('\n', "\r\n"))
            }
            _ => Cow::Borrowed(s),
        }
    }
}

/// The one occurrence to replace: where, and the strings as they apply to this file.
struct Edit<'a> {
    at: usize,
    old: Cow<'a, str>,
    new: Cow<'a, str>,
}

/// Finds the unique occurrence, first with the file's line endings, then as given.
fn find_edit<'a>(
    content: &[u8],
    old: &'a str,
    new: &'a str,
    style: LineStyle,
    path: &str,
) -> Result<Edit<'a>, ToolError> {
    let styled = (style.apply(old), style.apply(new));
    let mut candidates = vec![styled];
    if candidates[0].0 != old {
        candidates.push((Cow::Borrowed(old), Cow::Borrowed(new)));
    }
    for (old, new) in candidates {
        let (count, first) = occurrences(content, old.as_bytes());
        match (count, first) {
            (0, _) | (_, None) => continue,
            (1, Some(at)) => {
                if old == new {
                    return Err(ToolError::failed(
                        "`old_string` and `new_string` differ only in line endings, which follow the file's: there is nothing to change",
                    ));
                }
                return Ok(Edit { at, old, new });
            }
            (n, _) => {
                return Err(ToolError::failed(format!(
                    "old_string was found {n} times, add surrounding context to make it unique ({path} was not changed)."
                )));
            }
        }
    }
    let numbered = old.lines().next().is_some_and(|l| {
        let digits = l
            .trim_start()
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        digits > 0 && l.trim_start().as_bytes().get(digits) == Some(&b'\t')
    });
    let hint = if numbered {
        " It looks like it includes ReadFile's `N<TAB>` line-number prefixes: leave them out."
    } else {
        ""
    };
    Err(ToolError::failed(format!(
        "old_string was not found in {path}. The file may have changed since you read it, or the text \
         differs (whitespace, indentation). ReadFile it again and copy the exact text.{hint}"
    )))
}

/// How often `needle` (non-empty) occurs in `hay`, overlapping occurrences included (they
/// make the place ambiguous too), and where the first one starts.
fn occurrences(hay: &[u8], needle: &[u8]) -> (usize, Option<usize>) {
    if needle.is_empty() || needle.len() > hay.len() {
        return (0, None);
    }
    let (mut count, mut first) = (0, None);
    let mut record = |at: usize| {
        count += 1;
        first.get_or_insert(at);
    };
    match (std::str::from_utf8(hay), std::str::from_utf8(needle)) {
        // The usual case: std's substring search is linear.
        (Ok(h), Ok(n)) => {
            let step = n.chars().next().map_or(1, char::len_utf8);
            let mut pos = 0;
            while let Some(i) = h[pos..].find(n) {
                record(pos + i);
                pos += i + step;
            }
        }
        _ => {
            for (i, w) in hay.windows(needle.len()).enumerate() {
                if w == needle {
                    record(i);
                }
            }
        }
    }
    (count, first)
}

fn count_newlines(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

/// Lines `first..=last` of `content` with context, numbered `N<TAB>line` like ReadFile.
fn snippet(content: &[u8], first: usize, last: usize) -> String {
    let from = first.saturating_sub(SNIPPET_CONTEXT_LINES).max(1);
    let to = last + SNIPPET_CONTEXT_LINES;
    let mut out = String::new();
    let mut shown = 0;
    // A final '\n' ends the last line; it does not start an empty one (as in ReadFile).
    let body = content.strip_suffix(b"\n").unwrap_or(content);
    if body.is_empty() {
        return "(the file is now empty)".to_string();
    }
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        if n < from {
            continue;
        }
        if n > to {
            break;
        }
        if shown == SNIPPET_MAX_LINES {
            out.push_str("… (the rest of the change is not shown)\n");
            break;
        }
        let line = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line));
        let line = crate::util::text::marked(&line, SNIPPET_LINE_MAX_CHARS, "… [line cut]");
        out.push_str(&format!("{n}\t{line}\n"));
        shown += 1;
    }
    out.pop();
    out
}

#[cfg(test)]
#[path = "edit_file_tests.rs"]
mod tests;
