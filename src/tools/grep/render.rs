//! The output: the first `GREP_MAX_MATCHES` hits in file order as `path:line: text`,
//! context lines shared by neighbours printed once, `--` between groups.

use std::path::{Path, PathBuf};

use super::GREP_MAX_MATCHES;
use super::search::{Hit, Outcome};
use crate::tools::walk;

/// The assembled output and its counts.
#[derive(Debug, Default)]
pub(super) struct Report {
    pub(super) text: String,
    pub(super) shown: usize,
    pub(super) files_with_matches: usize,
    pub(super) truncated: bool,
    pub(super) binary: usize,
    pub(super) too_large: usize,
    pub(super) unreadable: usize,
}

/// Renders the first `GREP_MAX_MATCHES` hits in file order. Context lines shared by
/// neighbouring matches are printed once; with context, `--` separates groups that are
/// not adjacent (as grep does).
pub(super) fn render(
    root: &Path,
    files: &[PathBuf],
    outcomes: &[Outcome],
    context: usize,
) -> Report {
    let mut r = Report::default();
    let mut found = 0;
    for (path, outcome) in files.iter().zip(outcomes) {
        let hits = match outcome {
            Outcome::Hits(h) if !h.is_empty() => h,
            Outcome::Hits(_) | Outcome::Skipped => continue,
            Outcome::Binary => {
                r.binary += 1;
                continue;
            }
            Outcome::TooLarge => {
                r.too_large += 1;
                continue;
            }
            Outcome::Unreadable => {
                r.unreadable += 1;
                continue;
            }
        };
        found += hits.len();
        if r.shown == GREP_MAX_MATCHES {
            continue;
        }
        let take = hits.len().min(GREP_MAX_MATCHES - r.shown);
        let rel = walk::relative(root, path);
        render_file(&mut r.text, &rel, &hits[..take], context);
        r.shown += take;
        r.files_with_matches += 1;
    }
    r.truncated = found > GREP_MAX_MATCHES;
    r
}

pub(super) fn render_file(out: &mut String, rel: &str, hits: &[Hit], context: usize) {
    use std::fmt::Write;
    let mut last: usize = 0; // last line number printed in this file (0: none yet)
    let separate = |out: &mut String, line: usize, last: usize| {
        // `out` non-empty: something was printed before (this file or an earlier one).
        if context > 0 && !out.is_empty() && (last == 0 || line > last + 1) {
            out.push_str("--\n");
        }
    };
    for (i, hit) in hits.iter().enumerate() {
        let first_before = hit.line_no - hit.before.len();
        for (j, text) in hit.before.iter().enumerate() {
            let ln = first_before + j;
            if ln > last {
                separate(out, ln, last);
                let _ = writeln!(out, "{rel}-{ln}- {text}");
                last = ln;
            }
        }
        separate(out, hit.line_no, last);
        let _ = writeln!(out, "{rel}:{}: {}", hit.line_no, hit.text);
        last = hit.line_no;
        let next = hits.get(i + 1).map(|h| h.line_no);
        for (j, text) in hit.after.iter().enumerate() {
            let ln = hit.line_no + 1 + j;
            if next.is_some_and(|n| ln >= n) {
                break;
            }
            let _ = writeln!(out, "{rel}-{ln}- {text}");
            last = ln;
        }
    }
}
