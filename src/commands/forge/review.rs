//! Review mode: the answer's schema (`{summary, comments: [{path, line, side, body}]}`),
//! the lines a review comment may be on (those of the pull request's diff hunks, per
//! side), and the answer split: comments on diff lines go inline (GitHub's review
//! comments, GitLab's diff discussions), the others into the summary.

use std::collections::HashSet;

use serde_json::{Value, json};

/// The `--output-schema` of a review run.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["summary", "comments"],
        "additionalProperties": false,
        "properties": {
            "summary": {"type": "string", "description": "The review's overall verdict and findings, in Markdown."},
            "comments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "line", "body"],
                    "additionalProperties": false,
                    "properties": {
                        "path": {"type": "string", "description": "The file, relative to the repository root."},
                        "line": {"type": "integer", "minimum": 1},
                        "side": {"enum": ["LEFT", "RIGHT"], "description": "RIGHT: a line of the new file (default); LEFT: a removed line of the old file."},
                        "body": {"type": "string"}
                    }
                }
            }
        }
    })
}

/// `(path, side, line)` of every line in the diff.
pub(crate) type DiffLines = HashSet<(String, &'static str, u64)>;

/// The lines of each file's `patch` (the `GET /pulls/{n}/files` field): context lines
/// on both sides, added lines on the right, removed ones on the left.
pub(crate) fn diff_lines(files: &[Value]) -> DiffLines {
    let mut lines = DiffLines::new();
    for f in files {
        let (Some(path), Some(patch)) = (f["filename"].as_str(), f["patch"].as_str()) else {
            continue;
        };
        let (mut old, mut new) = (0u64, 0u64);
        for l in patch.lines() {
            if let Some(h) = l.strip_prefix("@@ ") {
                let mut parts = h.split_whitespace();
                old = start(parts.next(), '-');
                new = start(parts.next(), '+');
                continue;
            }
            match l.chars().next() {
                Some('+') => {
                    lines.insert((path.to_string(), "RIGHT", new));
                    new += 1;
                }
                Some('-') => {
                    lines.insert((path.to_string(), "LEFT", old));
                    old += 1;
                }
                Some('\\') => {} // "\ No newline at end of file"
                _ => {
                    lines.insert((path.to_string(), "RIGHT", new));
                    lines.insert((path.to_string(), "LEFT", old));
                    old += 1;
                    new += 1;
                }
            }
        }
    }
    lines
}

/// `-12,5` → 12.
fn start(part: Option<&str>, sign: char) -> u64 {
    part.and_then(|p| p.strip_prefix(sign))
        .and_then(|p| p.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A comment of the answer on a line of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inline {
    pub path: String,
    pub line: u64,
    /// `LEFT` (a removed line, numbered in the old file) or `RIGHT`.
    pub side: &'static str,
    pub body: String,
}

/// An answer split: the comments on diff lines, and the summary with the others
/// appended. `None` when the answer is not of the schema's shape.
pub(crate) fn partition(answer: &Value, lines: &DiffLines) -> Option<(String, Vec<Inline>)> {
    let summary = answer["summary"].as_str()?;
    let mut inline = Vec::new();
    let mut elsewhere = Vec::new();
    for c in answer["comments"].as_array()? {
        let (Some(path), Some(line), Some(body)) =
            (c["path"].as_str(), c["line"].as_u64(), c["body"].as_str())
        else {
            continue;
        };
        let side = if c["side"] == "LEFT" { "LEFT" } else { "RIGHT" };
        if lines.contains(&(path.to_string(), side, line)) {
            inline.push(Inline {
                path: path.to_string(),
                line,
                side,
                body: body.to_string(),
            });
        } else {
            elsewhere.push(format!(
                "- {}: {}",
                super::progress::inline_code(&format!("{path}:{line}")),
                body.trim()
            ));
        }
    }
    let mut body = summary.trim().to_string();
    if !elsewhere.is_empty() {
        body.push_str("\n\n**Comments on lines outside the diff:**\n\n");
        body.push_str(&elsewhere.join("\n"));
    }
    Some((body, inline))
}

/// GitHub's review request for `answer` (the structured output), and how many comments
/// went inline (GitHub refuses the whole review for one comment off the diff).
pub(crate) fn request(answer: &Value, lines: &DiffLines, commit: &str) -> Option<(Value, usize)> {
    let (body, inline) = partition(answer, lines)?;
    let n = inline.len();
    let comments: Vec<Value> = inline
        .iter()
        .map(|c| json!({"path": c.path, "line": c.line, "side": c.side, "body": c.body}))
        .collect();
    Some((
        json!({"commit_id": commit, "body": body, "event": "COMMENT", "comments": comments}),
        n,
    ))
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
