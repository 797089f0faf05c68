//! The Glob tool (SPEC §4): lists the files under a directory whose path, relative to that
//! directory, matches a glob pattern, newest first.
//!
//! Fast on large trees: the walk is parallel (`walk::collect_files`), the pattern is
//! matched on the relative path string, and only matching files are stat'ed for their
//! modification time. Output is deterministic: newest first, ties broken by path.

use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use super::walk::{self, path_order};
use super::{Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, paths};

/// Paths listed at most: a long list costs context and a narrower pattern serves better.
pub(crate) const GLOB_MAX_RESULTS: usize = 200;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobInput {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

pub(crate) struct Glob;

impl TypedTool for Glob {
    type Input = GlobInput;
    const TRAITS: Traits = Traits::SEARCH;

    fn name(&self) -> &str {
        "Glob"
    }

    fn description(&self) -> &str {
        "Find files by name pattern. Use it to locate files (\"**/*.rs\", \"src/**/test_*.py\", \
\"**/Cargo.toml\") before reading them; to search file contents use Grep instead.\n\
\n\
Pattern syntax: `*` matches within one path component (it does not cross `/`), `**` matches \
any number of directories, `?` one character, `[abc]` a class, `{a,b}` alternatives. The \
pattern is matched against each file's path relative to the search directory, so `*.rs` \
matches only files directly in it while `**/*.rs` matches at any depth.\n\
\n\
`path` is the directory to search (absolute, or relative to the workspace root; default: the \
workspace root). It must be inside the workspace.\n\
\n\
Always skipped: directories named .git, node_modules, vendor, .idea, __pycache__ and target \
(unless `path` itself points inside one), files excluded by .gitignore / .ignore (also outside \
a git repository), and symbolic links. Hidden files such as .github/ or .env.example are \
included. Only files are listed, never directories.\n\
\n\
Returns one path per line, relative to the search directory (a first line says so when it \
is not the workspace root), most recently modified first, at most 200; a note says when the \
list was cut and how many files matched in total."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob pattern matched against paths relative to `path`, e.g. \"**/*.ts\" or \"src/**/mod.rs\". `*` stays within one directory; `**` crosses directories."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search, absolute or relative to the workspace root. Default: the workspace root."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &GlobInput) -> Subject {
        Subject::Paths(vec![input.path.clone().unwrap_or_else(|| ".".into())])
    }

    fn validate(&self, input: &GlobInput) -> Result<(), ToolError> {
        if input.pattern.trim().is_empty() {
            return Err(ToolError::failed(
                "`pattern` is empty; give a glob such as \"**/*.rs\"",
            ));
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &GlobInput) -> Result<ToolResult, ToolError> {
        let root = paths::resolve_for_search(ctx, input.path.as_deref().unwrap_or("."))?;
        let shown_root = input.path.as_deref().unwrap_or("the workspace root");
        if !root.is_dir() {
            return Err(ToolError::failed(format!(
                "path {shown_root} is not a directory; Glob searches a directory (use ReadFile for a file)"
            )));
        }
        let pattern = relative_pattern(&input.pattern, &root)?;
        let matcher = compile(&pattern)?;

        let walked = walk::collect_files(&root, |entry, rel| {
            if !matcher.is_match(rel) {
                return None;
            }
            // Only matching files are stat'ed. A file that vanished meanwhile is dropped.
            let mtime = entry
                .metadata()
                .ok()?
                .modified()
                .unwrap_or(SystemTime::UNIX_EPOCH);
            Some((mtime, rel.to_string()))
        });
        let mut files = walked.items;
        files.sort_unstable_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| path_order(a.1.as_bytes(), b.1.as_bytes()))
        });

        let total = files.len();
        let truncated = total > GLOB_MAX_RESULTS;
        let content = if total == 0 {
            no_match_message(&input.pattern, &pattern, shown_root, &root)
        } else {
            let mut out = walk::root_header(&ctx.workspace, &root);
            out.reserve(files.len().min(GLOB_MAX_RESULTS) * 48);
            for (_, path) in files.iter().take(GLOB_MAX_RESULTS) {
                out.push_str(path);
                out.push('\n');
            }
            if truncated {
                out.push_str(&format!(
                    "\n[Showing the {GLOB_MAX_RESULTS} most recently modified of {total} matching files. \
Narrow the pattern or the path to see the others.]\n"
                ));
            }
            out
        };
        Ok(ToolResult::ok(content)
            .with_meta("root", root.to_string_lossy().into_owned())
            .with_meta("matches", total)
            .with_meta("shown", total.min(GLOB_MAX_RESULTS))
            .with_meta("truncated", truncated)
            .with_meta("walk_errors", walked.errors))
    }
}

/// The pattern as matched against relative paths: a leading `./` is dropped, and an
/// absolute pattern is accepted when it lies under the search root.
fn relative_pattern(pattern: &str, root: &std::path::Path) -> Result<String, ToolError> {
    let mut p = pattern.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    if p.starts_with('/') {
        let root_str = super::paths::shown(root);
        return match p
            .strip_prefix(root_str.as_ref())
            .and_then(|r| r.strip_prefix('/'))
        {
            Some(rest) if !rest.is_empty() => Ok(rest.to_string()),
            _ => Err(ToolError::failed(format!(
                "pattern {pattern} is absolute and not under the search directory {root_str}; \
give a pattern relative to `path` (e.g. \"**/*.rs\") and put the directory in `path`"
            ))),
        };
    }
    if p.is_empty() {
        return Err(ToolError::failed(
            "`pattern` is empty; give a glob such as \"**/*.rs\"",
        ));
    }
    if p.split('/').any(|c| c == "..") {
        return Err(ToolError::failed(format!(
            "pattern {pattern} contains `..`; patterns cannot leave the search directory, set `path` to search elsewhere in the workspace"
        )));
    }
    Ok(p.to_string())
}

fn compile(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::failed(format!("invalid glob pattern {pattern:?}: {}", e.kind())))
}

/// A helpful message when nothing matched: the two usual mistakes are a pattern without
/// `**/` that was meant to recurse, and a directory name (Glob lists files only).
fn no_match_message(
    original: &str,
    pattern: &str,
    shown_root: &str,
    root: &std::path::Path,
) -> String {
    let mut msg = format!("No files match the pattern {original:?} under {shown_root}.");
    if !pattern.contains('/') && !pattern.starts_with("**") {
        msg.push_str(&format!(
            " `{pattern}` matches only files directly in that directory; use \"**/{pattern}\" to search all subdirectories."
        ));
    } else if root.join(pattern).is_dir() {
        msg.push_str(&format!(
            " {pattern} is a directory and Glob lists files only; use \"{}/**\" to list its files.",
            pattern.trim_end_matches('/')
        ));
    }
    msg.push_str(" Skipped directories (.git, node_modules, vendor, .idea, __pycache__, target) and .gitignore'd files are not searched.");
    msg
}

#[cfg(test)]
#[path = "glob_tests.rs"]
mod tests;
