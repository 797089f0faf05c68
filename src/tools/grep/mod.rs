//! The Grep tool (SPEC §4): searches file contents with a Rust regex and reports matching
//! lines as `path:line: text`, with optional context lines.
//!
//! Fast the way ripgrep is fast: a parallel walk collects the candidate files, rayon
//! searches them in parallel, each file is read whole and the regex runs once over the
//! buffer (the regex crate's literal prefilters do the skipping), and line numbers are
//! counted only up to each match. Output is deterministic: the first `GREP_MAX_MATCHES`
//! matches in path-then-line order. Files after the point where that prefix is known to be
//! full are not searched at all (early stop), which cannot change the output.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

mod render;
mod search;

use render::{Report, render};
use search::{Matcher, Outcome, search_all};

use super::walk::{self, path_order};
use super::{Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, paths};

/// Matching lines reported at most: beyond this a narrower search serves the model better.
pub(crate) const GREP_MAX_MATCHES: usize = 100;
/// Context lines allowed before/after each match: more is a ReadFile job.
pub(crate) const GREP_MAX_CONTEXT: usize = 10;
/// Larger files are not searched: each is read whole into memory, once per worker thread.
pub(crate) const GREP_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepInput {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    context: Option<usize>,
}

pub(crate) struct Grep;

impl TypedTool for Grep {
    type Input = GrepInput;
    const TRAITS: Traits = Traits::SEARCH;

    fn name(&self) -> &str {
        "Grep"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression. Use it to find where something is \
defined or used (a function, an error message, a config key) across many files; use Glob to \
find files by name, and ReadFile to read a file you already know.\n\
\n\
`pattern` is a Rust regex (RE2-like: no look-around, no backreferences). Prefix `(?i)` for \
case-insensitive search; escape regex characters for a literal (`fn foo\\(`). Matching is \
per line: `^` and `$` match at line starts and ends, `.` does not cross lines.\n\
`path` is a file or a directory (absolute, or relative to the workspace root; default: the \
workspace root), inside the workspace. `glob` keeps only files whose name matches (\"*.rs\", \
\"*.{ts,tsx}\"); a glob containing `/` is matched against the path relative to `path` \
(\"src/**/*.rs\"). `context` (0-10) adds that many lines before and after each match.\n\
\n\
Skipped: binary files (a NUL byte in the first 8 KiB), files over 64 MiB, directories named \
.git, node_modules, vendor, .idea, __pycache__ and target (unless `path` itself points inside \
one), files excluded by .gitignore / .ignore (also outside a git repository), and symbolic \
links. Hidden files such as .github/ are searched.\n\
\n\
Returns one line per match, `path:line: text`, sorted by path then line number, paths relative \
to `path` (a first line says so when that is not the workspace root; just the file name when \
`path` is a file). Context lines read `path-line- text` and \
separate groups are divided by `--`. Lines over 500 characters are cut around the match. At \
most 100 matches are shown (the first 100 in that order), with a note when there are more; \
then narrow the pattern, the path or the glob."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Rust regex searched in each line, e.g. \"fn\\\\s+parse_\\\\w+\" or \"(?i)todo\"."
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search, absolute or relative to the workspace root. Default: the workspace root."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose name matches this glob, e.g. \"*.py\" or \"*.{c,h}\"; with a `/` it matches the path relative to `path`."
                },
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": GREP_MAX_CONTEXT,
                    "description": "Lines of context to show before and after each match (0-10). Default 0."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &GrepInput) -> Subject {
        Subject::Paths(vec![input.path.clone().unwrap_or_else(|| ".".into())])
    }

    fn validate(&self, input: &GrepInput) -> Result<(), ToolError> {
        check(input)
    }

    fn execute(&self, ctx: &ToolContext, input: &GrepInput) -> Result<ToolResult, ToolError> {
        let context = input.context.unwrap_or(0);
        let matcher = Matcher::new(&input.pattern)
            .map_err(|e| ToolError::failed(format!("invalid regex {:?}: {e}", input.pattern)))?;
        let filter = input.glob.as_deref().map(NameFilter::new).transpose()?;

        let root = paths::resolve_for_search(ctx, input.path.as_deref().unwrap_or("."))?;
        let shown_root = input.path.as_deref().unwrap_or("the workspace root");
        let single_file = root.is_file();
        let (files, walk_errors) = if single_file {
            let name = walk::relative(&root, &root);
            let keep = filter.as_ref().is_none_or(|f| f.is_match(&name, &name));
            (if keep { vec![root.clone()] } else { Vec::new() }, 0)
        } else {
            let walked = walk::collect_files(&root, |entry, rel| {
                let keep = filter
                    .as_ref()
                    .is_none_or(|f| f.is_match(rel, &entry.file_name().to_string_lossy()));
                keep.then(|| entry.path().to_path_buf())
            });
            let mut files = walked.items;
            files.sort_unstable_by(|a, b| {
                path_order(a.as_os_str().as_bytes(), b.as_os_str().as_bytes())
            });
            (files, walked.errors)
        };

        let outcomes = search_all(&matcher, &files, context);

        if single_file && matches!(outcomes.first(), Some(Outcome::Binary)) {
            return Err(ToolError::failed(format!(
                "{shown_root} is a binary file (it has a NUL byte in its first 8 KiB); Grep skips binary files. Use Bash (e.g. `grep -a` or `strings`) if you really need to search it."
            )));
        }
        if single_file && matches!(outcomes.first(), Some(Outcome::TooLarge)) {
            return Err(ToolError::failed(format!(
                "{shown_root} is larger than {} MiB and is not searched; use Bash (`grep -n`) for it.",
                GREP_MAX_FILE_BYTES >> 20
            )));
        }

        let report = render(&root, &files, &outcomes, context);
        let header = root_header(ctx, &root, single_file);
        let mut content = String::with_capacity(report.text.len() + 256);
        if report.shown == 0 {
            let place = if single_file {
                shown_root.to_string()
            } else {
                format!("{} file(s) under {shown_root}", files.len())
            };
            content.push_str(&no_match_message(input, &place, files.len(), &report));
        } else {
            content.push_str(&header);
            content.push_str(&report.text);
            if report.truncated {
                content.push_str(&format!(
                    "\n[Showing the first {GREP_MAX_MATCHES} matches (sorted by path, then line); there are more. Narrow the pattern, the path or the glob to see the rest.]\n"
                ));
            }
            if report.too_large > 0 {
                content.push_str(&format!(
                    "[{} file(s) over {} MiB were not searched.]\n",
                    report.too_large,
                    GREP_MAX_FILE_BYTES >> 20
                ));
            }
        }
        Ok(ToolResult::ok(content)
            .with_meta("root", root.to_string_lossy().into_owned())
            .with_meta("matches", report.shown)
            .with_meta("files_with_matches", report.files_with_matches)
            .with_meta("files_considered", files.len())
            .with_meta("truncated", report.truncated)
            .with_meta("binary_skipped", report.binary)
            .with_meta("too_large_skipped", report.too_large)
            .with_meta("unreadable", report.unreadable + walk_errors))
    }
}

fn check(input: &GrepInput) -> Result<(), ToolError> {
    if input.pattern.is_empty() {
        return Err(ToolError::failed(
            "`pattern` is empty; give a regex such as \"fn main\"",
        ));
    }
    if input.context.is_some_and(|c| c > GREP_MAX_CONTEXT) {
        return Err(ToolError::failed(format!(
            "`context` must be at most {GREP_MAX_CONTEXT}; use ReadFile with offset/limit to see more of a file"
        )));
    }
    Ok(())
}

/// The `glob` input: on the file name alone, or on the relative path when it has a `/`.
enum NameFilter {
    FileName(GlobMatcher),
    RelPath(GlobMatcher),
}

impl NameFilter {
    fn new(glob: &str) -> Result<Self, ToolError> {
        let g = glob.trim().trim_start_matches("./");
        let m = GlobBuilder::new(g)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::failed(format!("invalid glob {glob:?}: {}", e.kind())))?
            .compile_matcher();
        Ok(if g.contains('/') {
            NameFilter::RelPath(m)
        } else {
            NameFilter::FileName(m)
        })
    }

    fn is_match(&self, rel: &str, name: &str) -> bool {
        match self {
            NameFilter::FileName(m) => m.is_match(name),
            NameFilter::RelPath(m) => m.is_match(rel),
        }
    }
}

/// The `(paths relative to DIR)` line, for directory searches only.
fn root_header(ctx: &ToolContext, root: &Path, single_file: bool) -> String {
    if single_file {
        String::new()
    } else {
        walk::root_header(&ctx.workspace, root)
    }
}

/// `place` is the file searched, or `N file(s) under DIR`.
fn no_match_message(input: &GrepInput, place: &str, considered: usize, r: &Report) -> String {
    let filter = input
        .glob
        .as_deref()
        .map(|g| format!(" matching the glob {g:?}"))
        .unwrap_or_default();
    if considered == 0 {
        let root = input.path.as_deref().unwrap_or("the workspace root");
        return format!(
            "No files{filter} to search under {root} (skipped directories and .gitignore'd files are not searched)."
        );
    }
    let mut msg = format!(
        "No matches for the regex {:?} in {place}{filter}.",
        input.pattern
    );
    let skipped = r.binary + r.too_large + r.unreadable;
    if skipped > 0 {
        msg.push_str(&format!(
            " Not searched: {} binary, {} over {} MiB, {} unreadable.",
            r.binary,
            r.too_large,
            GREP_MAX_FILE_BYTES >> 20,
            r.unreadable
        ));
    }
    msg
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
