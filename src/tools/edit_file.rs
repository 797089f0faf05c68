//! The EditFile tool (SPEC §4): replaces one exact, unique occurrence of a string.
//!
//! Works on bytes, so a file with invalid UTF-8 elsewhere is edited without damage.
//! Line-ending rule: the file's dominant style (CRLF when it has more `\r\n` than bare
//! `\n`) is applied to `old_string` and `new_string` first, so a model that writes `\n`
//! edits a CRLF file correctly and never mixes endings into it; only when that finds
//! nothing are the strings tried exactly as given. Writing goes through
//! `paths::write_atomic` (atomic, mode kept, confined).

use std::borrow::Cow;
use std::io::Read;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, paths};

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
    const TRAITS: Traits = Traits::FILE_WRITE;

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
        let (file, md) = paths::open_for_read(ctx, &resolved, path).map_err(|e| {
            if e.message().starts_with("file not found") {
                ToolError::failed(format!(
                    "file not found: {path} does not exist. EditFile changes existing files; use WriteFile to create one."
                ))
            } else {
                e
            }
        })?;
        if md.len() > MAX_EDIT_FILE_BYTES {
            return Err(too_big(path));
        }
        let mut content = Vec::new();
        file.take(MAX_EDIT_FILE_BYTES + 1)
            .read_to_end(&mut content)
            .map_err(|e| ToolError::failed(format!("cannot read {path}: {e}")))?;
        if content.len() as u64 > MAX_EDIT_FILE_BYTES {
            return Err(too_big(path));
        }

        let style = LineStyle::of(&content);
        let edit = find_edit(&content, &input.old_string, &input.new_string, style, path)?;
        let mut updated = Vec::with_capacity(content.len() + edit.new.len());
        updated.extend_from_slice(&content[..edit.at]);
        updated.extend_from_slice(edit.new.as_bytes());
        updated.extend_from_slice(&content[edit.at + edit.old.len()..]);
        drop(content);

        let change = paths::write_atomic(ctx, &resolved, path, &updated)?;
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
            .with_meta("path", paths::display_path(ctx, &resolved))
            .with_meta("change", change.as_str())
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
        let line: String = match line.char_indices().nth(SNIPPET_LINE_MAX_CHARS) {
            Some((cut, _)) => format!("{}… [line cut]", &line[..cut]),
            None => line.into_owned(),
        };
        out.push_str(&format!("{n}\t{line}\n"));
        shown += 1;
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    use crate::tools::Category;
    use crate::tools::paths::test_util::*;
    use crate::tools::test_support::{call, call_err, put};

    fn run(ctx: &ToolContext, input: Value) -> Result<ToolResult, ToolError> {
        call(&EditFile, ctx, &input)
    }

    fn write(ctx: &ToolContext, name: &str, data: impl AsRef<[u8]>) {
        put(&ctx.workspace, name, data);
    }

    fn read(ctx: &ToolContext, name: &str) -> Vec<u8> {
        std::fs::read(ctx.workspace.join(name)).unwrap()
    }

    fn edit(path: &str, old: &str, new: &str) -> Value {
        json!({"path": path, "old_string": old, "new_string": new})
    }

    #[test]
    fn schema_agrees_with_input_struct() {
        assert_schema_agrees::<Input>(&EditFile.input_schema(), &edit("a.txt", "x", "y"));
    }

    #[test]
    fn tool_properties() {
        assert!(!EditFile.is_read_only());
        assert!(!EditFile.is_destructive());
        assert!(!EditFile.is_concurrency_safe());
        assert_eq!(EditFile.category(), Category::File);
    }

    #[test]
    fn replaces_the_unique_occurrence_and_shows_numbered_lines() {
        let (_g, ctx) = setup();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        write(&ctx, "f.txt", &body);
        let r = run(&ctx, edit("f.txt", "line 5\n", "line five\nline 5b\n")).unwrap();
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.join("f.txt")).unwrap(),
            body.replace("line 5\n", "line five\nline 5b\n")
        );
        assert_eq!(
            r.content,
            "Edited f.txt: replaced 1 occurrence at line 5. The file now reads:\n\
             2\tline 2\n3\tline 3\n4\tline 4\n5\tline five\n6\tline 5b\n7\tline 6\n8\tline 7\n9\tline 8"
        );
        assert_eq!(r.metadata["path"], "f.txt");
        assert_eq!(r.metadata["change"], "modified");
        assert_eq!(r.metadata["line"], 5);
    }

    #[test]
    fn snippet_at_the_start_and_end_of_a_file() {
        let (_g, ctx) = setup();
        write(&ctx, "s.txt", "a\nb\n");
        let r = run(&ctx, edit("s.txt", "a", "A")).unwrap();
        assert!(r.content.ends_with("reads:\n1\tA\n2\tb"), "{}", r.content);
        let r = run(&ctx, edit("s.txt", "b\n", "B\n")).unwrap();
        assert!(r.content.ends_with("reads:\n1\tA\n2\tB"), "{}", r.content);
    }

    #[test]
    fn zero_matches_is_an_error_that_changes_nothing() {
        let (_g, ctx) = setup();
        write(&ctx, "f.txt", "hello world\n");
        let e = call_err(&EditFile, &ctx, &edit("f.txt", "goodbye", "x"));
        assert!(
            e.contains("not found") && e.contains("changed since you read it"),
            "{e}"
        );
        assert_eq!(read(&ctx, "f.txt"), b"hello world\n");
        // ReadFile's prefixes copied by mistake get a hint.
        let e = call_err(&EditFile, &ctx, &edit("f.txt", "1\thello world", "x"));
        assert!(e.contains("line-number prefixes"), "{e}");
    }

    #[test]
    fn several_matches_name_the_count_and_change_nothing() {
        let (_g, ctx) = setup();
        write(&ctx, "f.txt", "x = 1\ny = 2\nx = 1\nx = 1\n");
        let e = call_err(&EditFile, &ctx, &edit("f.txt", "x = 1", "x = 3"));
        assert!(
            e.contains("found 3 times, add surrounding context to make it unique"),
            "{e}"
        );
        assert_eq!(read(&ctx, "f.txt"), b"x = 1\ny = 2\nx = 1\nx = 1\n");
        // Overlapping occurrences are ambiguous too.
        write(&ctx, "o.txt", "aaa");
        assert!(call_err(&EditFile, &ctx, &edit("o.txt", "aa", "b")).contains("found 2 times"));
        // With context the edit is unique and succeeds.
        run(&ctx, edit("f.txt", "y = 2\nx = 1", "y = 2\nx = 9")).unwrap();
        assert_eq!(read(&ctx, "f.txt"), b"x = 1\ny = 2\nx = 9\nx = 1\n");
    }

    #[test]
    fn empty_new_string_deletes() {
        let (_g, ctx) = setup();
        write(&ctx, "f.txt", "keep\ndrop me\nkeep too\n");
        let r = run(&ctx, edit("f.txt", "drop me\n", "")).unwrap();
        assert_eq!(read(&ctx, "f.txt"), b"keep\nkeep too\n");
        assert!(
            r.content.contains("deleted the text at line 2"),
            "{}",
            r.content
        );
        write(&ctx, "all.txt", "only\n");
        let r = run(&ctx, edit("all.txt", "only\n", "")).unwrap();
        assert!(r.content.ends_with("(the file is now empty)"));
        assert_eq!(read(&ctx, "all.txt"), b"");
    }

    #[test]
    fn identical_or_empty_old_string_is_an_error() {
        let (_g, ctx) = setup();
        write(&ctx, "f.txt", "abc");
        assert!(call_err(&EditFile, &ctx, &edit("f.txt", "abc", "abc")).contains("identical"));
        assert!(
            call_err(&EditFile, &ctx, &edit("f.txt", "", "x")).contains("`old_string` is empty")
        );
        assert!(
            call_err(
                &EditFile,
                &ctx,
                &json!({"path": "f.txt", "old_string": "a"})
            )
            .contains("new_string")
        );
        assert_eq!(read(&ctx, "f.txt"), b"abc");
    }

    #[test]
    fn crlf_file_keeps_crlf_when_the_model_sends_lf() {
        let (_g, ctx) = setup();
        write(&ctx, "w.txt", "one\r\ntwo\r\nthree\r\n");
        let r = run(&ctx, edit("w.txt", "one\ntwo\n", "uno\ndos\ntres\n")).unwrap();
        assert_eq!(read(&ctx, "w.txt"), b"uno\r\ndos\r\ntres\r\nthree\r\n");
        assert_eq!(r.metadata["line_endings"], "crlf");
        assert!(r.content.contains("1\tuno\n2\tdos"), "{}", r.content);
        // A single-line old_string whose replacement adds lines gets CRLF too.
        run(&ctx, edit("w.txt", "three", "3\n4")).unwrap();
        assert_eq!(read(&ctx, "w.txt"), b"uno\r\ndos\r\ntres\r\n3\r\n4\r\n");
        // Strings sent with CRLF work as well.
        run(&ctx, edit("w.txt", "3\r\n4", "34")).unwrap();
        assert_eq!(read(&ctx, "w.txt"), b"uno\r\ndos\r\ntres\r\n34\r\n");
    }

    #[test]
    fn lf_file_stays_lf_when_the_model_sends_crlf() {
        let (_g, ctx) = setup();
        write(&ctx, "u.txt", "a\nb\n");
        run(&ctx, edit("u.txt", "a\r\nb", "x\r\ny")).unwrap();
        assert_eq!(read(&ctx, "u.txt"), b"x\ny\n");
        // Only a line-ending difference is no change at all.
        write(&ctx, "v.txt", "a\nb\n");
        let e = call_err(&EditFile, &ctx, &edit("v.txt", "a\nb", "a\r\nb"));
        assert!(e.contains("only in line endings"), "{e}");
    }

    #[test]
    fn mixed_file_falls_back_to_the_exact_strings() {
        let (_g, ctx) = setup();
        // Mostly CRLF, with one LF line the model quotes exactly.
        write(&ctx, "m.txt", "a\r\nb\r\nc\nd\r\n");
        run(&ctx, edit("m.txt", "c\nd", "C\nD")).unwrap();
        assert_eq!(read(&ctx, "m.txt"), b"a\r\nb\r\nC\nD\r\n");
    }

    #[test]
    fn invalid_utf8_elsewhere_is_preserved() {
        let (_g, ctx) = setup();
        write(&ctx, "l.txt", b"caf\xe9\nname = old\n\xff\n");
        run(&ctx, edit("l.txt", "old", "new")).unwrap();
        assert_eq!(read(&ctx, "l.txt"), b"caf\xe9\nname = new\n\xff\n");
    }

    #[test]
    fn keeps_the_file_mode() {
        let (_g, ctx) = setup();
        let p = ctx.workspace.join("x.sh");
        std::fs::write(&p, "echo a\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
        run(&ctx, edit("x.sh", "a", "b")).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o700
        );
        assert_eq!(read(&ctx, "x.sh"), b"echo b\n");
    }

    #[test]
    fn missing_file_directory_and_fifo_are_errors() {
        let (_g, ctx) = setup();
        let e = call_err(&EditFile, &ctx, &edit("nope.txt", "a", "b"));
        assert!(
            e.starts_with("file not found") && e.contains("WriteFile"),
            "{e}"
        );
        assert!(!ctx.workspace.join("nope.txt").exists());
        std::fs::create_dir(ctx.workspace.join("d")).unwrap();
        assert!(call_err(&EditFile, &ctx, &edit("d", "a", "b")).contains("is a directory"));
        mkfifo(&ctx.workspace.join("pipe"));
        let c = ctx.clone();
        let e = without_hanging(move || run(&c, edit("pipe", "a", "b")));
        assert!(e.unwrap_err().message().contains("FIFO"));
    }

    #[test]
    fn edits_outside_or_through_symlinks_are_refused() {
        let (_g, ctx) = setup();
        let out = outside(&ctx);
        symlink(out.join("secret.txt"), ctx.workspace.join("link.txt")).unwrap();
        symlink(&out, ctx.workspace.join("linkdir")).unwrap();
        for p in ["../outside/secret.txt", "link.txt", "linkdir/secret.txt"] {
            let e = call_err(&EditFile, &ctx, &edit(p, "secret", "pwned"));
            assert!(e.contains("outside the workspace"), "{p}: {e}");
        }
        assert_eq!(
            std::fs::read_to_string(out.join("secret.txt")).unwrap(),
            "secret\n"
        );
    }

    #[test]
    fn occurrences_counts_overlaps_in_text_and_bytes() {
        assert_eq!(occurrences(b"abcabc", b"abc"), (2, Some(0)));
        assert_eq!(occurrences("ééé".as_bytes(), "éé".as_bytes()), (2, Some(0)));
        assert_eq!(occurrences(b"\xffaa\xffaa", b"aa"), (2, Some(1)));
        assert_eq!(occurrences(b"ab", b"abc"), (0, None));
    }
}
