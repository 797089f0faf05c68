//! The Grep tool (SPEC §4): searches file contents with a Rust regex and reports matching
//! lines as `path:line: text`, with optional context lines.
//!
//! Fast the way ripgrep is fast: a parallel walk collects the candidate files, rayon
//! searches them in parallel, each file is read whole and the regex runs once over the
//! buffer (the regex crate's literal prefilters do the skipping), and line numbers are
//! counted only up to each match. Output is deterministic: the first `GREP_MAX_MATCHES`
//! matches in path-then-line order. Files after the point where that prefix is known to be
//! full are not searched at all (early stop), which cannot change the output.

use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use memchr::memmem::Finder;
use memchr::{memchr, memchr_iter, memrchr};
use rayon::prelude::*;
use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::hir::{Hir, HirKind};
use serde::Deserialize;
use serde_json::{Value, json};

use super::walk::{self, path_order};
use super::{
    Category, Subject, SubjectKind, ToolContext, ToolError, ToolResult, TypedTool, sandbox,
};

/// Matching lines reported at most: beyond this a narrower search serves the model better.
pub(crate) const GREP_MAX_MATCHES: usize = 100;
/// Context lines allowed before/after each match: more is a ReadFile job.
pub(crate) const GREP_MAX_CONTEXT: usize = 10;
/// Characters kept of a long line (minified code); the cut is marked.
pub(crate) const GREP_MAX_LINE_CHARS: usize = 500;
/// Characters kept before the match when a long match line is cut, so the match shows.
const GREP_MATCH_LEAD_CHARS: usize = 100;
/// A NUL byte in this many leading bytes marks a file as binary (ripgrep's heuristic).
const BINARY_PROBE_BYTES: usize = 8 * 1024;
/// Larger files are not searched: each is read whole into memory, once per worker thread.
pub(crate) const GREP_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Initial read buffer per worker job; it grows to the largest file read and is reused.
const READ_BUFFER_BYTES: usize = 256 * 1024;
/// A read buffer grown beyond this by a big file is released after it.
const RETAINED_BUFFER_BYTES: usize = 4 * 1024 * 1024;
/// A required literal shorter than this is too common to be worth a file prefilter.
const MIN_PREFILTER_LITERAL_BYTES: usize = 3;
/// The cut marker of a long line.
const CUT_MARK: &str = "[…]";

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

    fn is_read_only(&self) -> bool {
        true
    }

    fn is_concurrency_safe(&self) -> bool {
        true
    }

    fn category(&self) -> Category {
        Category::Search
    }

    fn subject_kind(&self) -> SubjectKind {
        SubjectKind::Paths
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

        let root = sandbox::resolve_for_search(ctx, input.path.as_deref().unwrap_or("."))?;
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

/// One matching line, already rendered for display; context lines are its neighbours.
#[derive(Debug, Clone, PartialEq)]
struct Hit {
    /// 1-based line number.
    line_no: usize,
    text: String,
    /// Up to `context` lines before, oldest first (line numbers `line_no - before.len()`..).
    before: Vec<String>,
    /// Up to `context` lines after (line numbers `line_no + 1`..).
    after: Vec<String>,
}

/// The compiled pattern, cloned per worker job (a clone has its own regex cache).
#[derive(Clone)]
struct Matcher {
    /// Multi-line (`^`/`$` at line bounds) and CRLF-aware, run over whole files.
    re: Regex,
    /// A literal every match contains: a file without it is skipped at memchr speed,
    /// also where the regex crate's own prefilter cannot help (`\w+_name`).
    required: Option<Finder<'static>>,
}

impl Matcher {
    fn new(pattern: &str) -> Result<Self, regex::Error> {
        let re = RegexBuilder::new(pattern)
            .multi_line(true)
            .crlf(true)
            .build()?;
        let required = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .ok()
            .and_then(|hir| {
                let mut best = None;
                required_literal(&hir, &mut best);
                best
            })
            .filter(|lit| lit.len() >= MIN_PREFILTER_LITERAL_BYTES)
            .map(|lit| Finder::new(&lit).into_owned());
        Ok(Matcher { re, required })
    }
}

/// The longest literal that every match of `hir` must contain: literals reached through
/// concatenations, groups and repetitions of at least one (never alternations).
fn required_literal(hir: &Hir, best: &mut Option<Vec<u8>>) {
    match hir.kind() {
        HirKind::Literal(lit) if best.as_ref().is_none_or(|b| lit.0.len() > b.len()) => {
            *best = Some(lit.0.to_vec());
        }
        HirKind::Capture(c) => required_literal(&c.sub, best),
        HirKind::Repetition(r) if r.min >= 1 => required_literal(&r.sub, best),
        HirKind::Concat(parts) => parts.iter().for_each(|p| required_literal(p, best)),
        _ => {}
    }
}

/// What searching one file gave.
#[derive(Debug)]
enum Outcome {
    /// Up to `GREP_MAX_MATCHES + 1` hits (one more than shown, to know whether more exist).
    Hits(Vec<Hit>),
    Binary,
    TooLarge,
    Unreadable,
    /// Not searched: the output was already decided by earlier files.
    Skipped,
}

/// Searches `files` (sorted) in parallel. Tracks the completed prefix of files: once the
/// matches in that prefix exceed the cap, later files are skipped, because the output is
/// the first `GREP_MAX_MATCHES` matches in file order and they are then all known.
fn search_all(matcher: &Matcher, files: &[PathBuf], context: usize) -> Vec<Outcome> {
    struct Prefix {
        counts: Vec<Option<usize>>,
        next: usize,
        found: usize,
    }
    let n = files.len();
    let prefix = Mutex::new(Prefix {
        counts: vec![None; n],
        next: 0,
        found: 0,
    });
    let last_needed = AtomicUsize::new(usize::MAX);
    files
        .par_iter()
        .enumerate()
        // Each rayon job gets its own read buffer and regex clone (no shared cache pool).
        .map_init(
            || (Vec::with_capacity(READ_BUFFER_BYTES), matcher.clone()),
            |(buf, matcher), (i, path)| {
                if i > last_needed.load(Ordering::Relaxed) {
                    return Outcome::Skipped;
                }
                let outcome = search_file(matcher, path, buf, context);
                let count = match &outcome {
                    Outcome::Hits(h) => h.len(),
                    _ => 0,
                };
                let mut p = prefix
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                p.counts[i] = Some(count);
                while p.next < n && p.found <= GREP_MAX_MATCHES {
                    let Some(c) = p.counts[p.next] else { break };
                    p.found += c;
                    p.next += 1;
                    if p.found > GREP_MAX_MATCHES {
                        last_needed.store(p.next - 1, Ordering::Relaxed);
                    }
                }
                outcome
            },
        )
        .collect()
}

/// Opens a listed file without following a symlink or blocking on a FIFO that was
/// swapped in after the walk listed a regular file (SPEC §6).
fn open_listed(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

fn search_file(m: &Matcher, path: &Path, buf: &mut Vec<u8>, context: usize) -> Outcome {
    let Ok(mut file) = open_listed(path) else {
        return Outcome::Unreadable;
    };
    buf.clear();
    // The probe window first, so that a large binary (a `.so`, an archive) is never read
    // whole. No stat: `take` bounds memory (one byte over the limit says "too large").
    if (&mut file)
        .take(BINARY_PROBE_BYTES as u64)
        .read_to_end(buf)
        .is_err()
    {
        return Outcome::Unreadable;
    }
    if memchr(0, buf).is_some() {
        return Outcome::Binary;
    }
    if buf.len() == BINARY_PROBE_BYTES {
        let rest = GREP_MAX_FILE_BYTES + 1 - BINARY_PROBE_BYTES as u64;
        if file.take(rest).read_to_end(buf).is_err() {
            return Outcome::Unreadable;
        }
    }
    let outcome = if buf.len() as u64 > GREP_MAX_FILE_BYTES {
        Outcome::TooLarge
    } else if m
        .required
        .as_ref()
        .is_some_and(|lit| lit.find(buf).is_none())
    {
        Outcome::Hits(Vec::new())
    } else {
        Outcome::Hits(search_buffer(&m.re, buf, context, GREP_MAX_MATCHES + 1))
    };
    // A buffer grown by one big file is given back rather than held for the whole search.
    if buf.capacity() > RETAINED_BUFFER_BYTES {
        *buf = Vec::with_capacity(READ_BUFFER_BYTES);
    }
    outcome
}

/// Finds up to `limit` matching lines in `buf`. The regex runs over the whole buffer; after
/// a match the search resumes at the next line (one hit per line, as grep reports), and
/// newlines are counted only from the previous match to this one.
fn search_buffer(re: &Regex, buf: &[u8], context: usize, limit: usize) -> Vec<Hit> {
    let mut hits = Vec::new();
    let ends_with_newline = buf.last().is_none_or(|&b| b == b'\n');
    let mut pos = 0; // always a line start
    let mut counted = 0; // a line start whose line number is `line_no`
    let mut line_no = 1;
    while hits.len() < limit && pos <= buf.len() {
        let Some(m) = re.find_at(buf, pos) else { break };
        let start = m.start();
        if start == buf.len() && ends_with_newline {
            break; // an empty match after the final newline is not on a line
        }
        let line_start = memrchr(b'\n', &buf[pos..start]).map_or(pos, |i| pos + i + 1);
        line_no += memchr_iter(b'\n', &buf[counted..line_start]).count();
        counted = line_start;
        let line_end = memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        // A match spanning lines (`\s` matches `\n`) is reported on its first line; the
        // search resumes after its last line.
        let last_byte = m.end().saturating_sub(1).max(start);
        let span_end = if last_byte <= line_end {
            line_end
        } else {
            memchr(b'\n', &buf[last_byte..]).map_or(buf.len(), |i| last_byte + i)
        };
        hits.push(Hit {
            line_no,
            text: display(&buf[line_start..line_end], Some(start - line_start)),
            before: lines_before(buf, line_start, context),
            after: lines_after(buf, line_end, context),
        });
        if span_end >= buf.len() {
            break;
        }
        pos = span_end + 1;
    }
    hits
}

/// Up to `n` lines before the line starting at `line_start`, oldest first.
fn lines_before(buf: &[u8], line_start: usize, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut end = line_start; // the previous line ends at end - 1 (its newline)
    while out.len() < n && end > 0 {
        let prev_end = end - 1;
        let prev_start = memrchr(b'\n', &buf[..prev_end]).map_or(0, |i| i + 1);
        out.push(display(&buf[prev_start..prev_end], None));
        end = prev_start;
    }
    out.reverse();
    out
}

/// Up to `n` lines after the line ending at `line_end` (the index of its newline).
fn lines_after(buf: &[u8], line_end: usize, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = line_end + 1;
    while out.len() < n && start < buf.len() {
        let end = memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        out.push(display(&buf[start..end], None));
        start = end + 1;
    }
    out
}

/// A line as shown: lossy UTF-8, no trailing `\r`, cut to `GREP_MAX_LINE_CHARS` around the
/// match (`match_at` is the match's byte offset in the line) with `CUT_MARK` at each cut.
fn display(line: &[u8], match_at: Option<usize>) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Fast path: short lines cannot need a cut (a char is at least one byte).
    if line.len() <= GREP_MAX_LINE_CHARS {
        return String::from_utf8_lossy(line).into_owned();
    }
    let text = String::from_utf8_lossy(line);
    let total = text.chars().count();
    if total <= GREP_MAX_LINE_CHARS {
        return text.into_owned();
    }
    let match_char = match_at.map_or(0, |b| {
        String::from_utf8_lossy(&line[..b.min(line.len())])
            .chars()
            .count()
    });
    let first = match_char
        .saturating_sub(GREP_MATCH_LEAD_CHARS)
        .min(total - GREP_MAX_LINE_CHARS);
    let mut out = String::with_capacity(GREP_MAX_LINE_CHARS * 2);
    if first > 0 {
        out.push_str(CUT_MARK);
    }
    out.extend(text.chars().skip(first).take(GREP_MAX_LINE_CHARS));
    if first + GREP_MAX_LINE_CHARS < total {
        out.push_str(CUT_MARK);
    }
    out
}

/// The assembled output and its counts.
#[derive(Debug, Default)]
struct Report {
    text: String,
    shown: usize,
    files_with_matches: usize,
    truncated: bool,
    binary: usize,
    too_large: usize,
    unreadable: usize,
}

/// Renders the first `GREP_MAX_MATCHES` hits in file order. Context lines shared by
/// neighbouring matches are printed once; with context, `--` separates groups that are
/// not adjacent (as grep does).
fn render(root: &Path, files: &[PathBuf], outcomes: &[Outcome], context: usize) -> Report {
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

fn render_file(out: &mut String, rel: &str, hits: &[Hit], context: usize) {
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
mod tests {
    use super::*;
    use crate::tools::parse_input;
    use crate::tools::schema;
    use crate::tools::test_support::ctx;
    use crate::tools::test_support::{check_input, exec};
    use std::fs;

    fn write(root: &Path, rel: &str, content: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn run(dir: &Path, input: Value) -> Result<ToolResult, ToolError> {
        exec(&Grep, &ctx(dir), &input)
    }

    fn ok(dir: &Path, input: Value) -> String {
        let r = run(dir, input).unwrap();
        assert!(!r.is_error);
        r.content
    }

    fn re(p: &str) -> Regex {
        Matcher::new(p).unwrap().re
    }

    fn required(p: &str) -> Option<Vec<u8>> {
        Matcher::new(p)
            .unwrap()
            .required
            .map(|f| f.needle().to_vec())
    }

    #[test]
    fn required_literal_extraction() {
        assert_eq!(required(r"\w+_NOTFOUND_\d+"), Some(b"_NOTFOUND_".to_vec()));
        assert_eq!(
            required(r"(fn (parse|lex))_all(x+)"),
            Some(b"_all".to_vec())
        );
        assert_eq!(required(r"(?:ab|cd)+long_one"), Some(b"long_one".to_vec()));
        assert_eq!(required(r"(?:abcdef)+"), Some(b"abcdef".to_vec()));
        assert_eq!(
            required("foo|barbaz"),
            None,
            "alternation: neither side is required"
        );
        assert_eq!(required("(?:needle)?x"), None, "optional: not required");
        assert_eq!(required("ab"), None, "too short to pay off");
        assert_eq!(required("(?i)needle"), None, "case-folded: not one literal");
    }

    #[test]
    fn prefilter_never_hides_a_match() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.txt", "x_NOTFOUND_1\n");
        write(d.path(), "b.txt", "no such thing\n");
        assert_eq!(
            ok(d.path(), json!({"pattern": r"\w+_NOTFOUND_\d+"})),
            "a.txt:1: x_NOTFOUND_1\n"
        );
    }

    fn line_nos(hits: &[Hit]) -> Vec<usize> {
        hits.iter().map(|h| h.line_no).collect()
    }

    #[test]
    fn schema_agrees_with_struct() {
        let s = Grep.input_schema();
        let full = json!({"pattern": "a+", "path": "src", "glob": "*.rs", "context": 2});
        assert_eq!(schema::validate(&s, &full), Ok(()));
        parse_input::<GrepInput>(&full).unwrap();
        assert_eq!(s["required"], json!(["pattern"]));
        parse_input::<GrepInput>(&json!({"pattern": "x"})).unwrap();
        let e = parse_input::<GrepInput>(&json!({"path": "x"})).unwrap_err();
        assert!(e.message().contains("pattern"), "{e}");
        assert!(schema::validate(&s, &json!({"pattern": "x", "bogus": 1})).is_err());
        assert!(parse_input::<GrepInput>(&json!({"pattern": "x", "bogus": 1})).is_err());
        assert!(schema::validate(&s, &json!({"pattern": "x", "context": 11})).is_err());
        assert_eq!(s["additionalProperties"], json!(false));
        let props = s["properties"].as_object().unwrap();
        assert_eq!(props.len(), 4);
        for (_, p) in props {
            assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()));
        }
    }

    #[test]
    fn description_states_the_limits() {
        let d = Grep.description();
        assert!(d.contains(&format!("{GREP_MAX_MATCHES} matches")));
        assert!(d.contains(&format!("0-{GREP_MAX_CONTEXT}")));
        assert!(d.contains(&format!("{GREP_MAX_LINE_CHARS} characters")));
        assert!(d.contains(&format!("{} KiB", BINARY_PROBE_BYTES / 1024)));
        assert!(d.contains(&format!("{} MiB", GREP_MAX_FILE_BYTES >> 20)));
        for dir in crate::tools::walk::SKIP_DIRS {
            assert!(d.contains(dir), "{dir}");
        }
    }

    #[test]
    fn metadata_flags() {
        assert!(Grep.is_read_only());
        assert!(!Grep.is_destructive());
        assert!(Grep.is_concurrency_safe());
        assert_eq!(Grep.category(), Category::Search);
    }

    #[test]
    fn buffer_search_line_numbers_and_one_hit_per_line() {
        let buf = b"alpha\nbeta beta\n\ngamma\nbeta\n";
        assert_eq!(
            line_nos(&search_buffer(&re("beta"), buf, 0, 10)),
            vec![2, 5]
        );
        assert_eq!(
            line_nos(&search_buffer(&re("^"), buf, 0, 10)),
            vec![1, 2, 3, 4, 5]
        );
        assert_eq!(line_nos(&search_buffer(&re("^$"), buf, 0, 10)), vec![3]);
        assert_eq!(
            line_nos(&search_buffer(&re("a$"), buf, 0, 10)),
            vec![1, 2, 4, 5]
        );
        assert_eq!(line_nos(&search_buffer(&re("^ga"), buf, 0, 10)), vec![4]);
        // No trailing newline: the last line still counts; empty buffer has no lines.
        assert_eq!(
            line_nos(&search_buffer(&re("z*"), b"a\nb", 0, 10)),
            vec![1, 2]
        );
        assert!(search_buffer(&re("^"), b"", 0, 10).is_empty());
        // The limit stops the search.
        assert_eq!(line_nos(&search_buffer(&re("^"), buf, 0, 2)), vec![1, 2]);
    }

    #[test]
    fn buffer_search_crlf_and_multiline_spans() {
        let buf = b"foo\r\nbar\r\nfoo bar\r\n";
        let hits = search_buffer(&re("bar$"), buf, 0, 10);
        assert_eq!(line_nos(&hits), vec![2, 3]);
        assert_eq!(hits[0].text, "bar", "trailing \\r is not shown");
        // `\s+` crosses the newline: reported once, on the first line; search resumes after.
        let hits = search_buffer(&re(r"one\s+two"), b"one\ntwo two\none two\n", 0, 10);
        assert_eq!(line_nos(&hits), vec![1, 3]);
        assert_eq!(hits[0].text, "one");
    }

    #[test]
    fn buffer_search_context() {
        let buf = b"1\n2\n3\nX\n5\n6\n";
        let h = &search_buffer(&re("X"), buf, 2, 10)[0];
        assert_eq!(
            (h.line_no, h.before.clone(), h.after.clone()),
            (
                4,
                vec!["2".into(), "3".into()],
                vec!["5".into(), "6".into()]
            )
        );
        let h = &search_buffer(&re("^1"), buf, 3, 10)[0];
        assert!(h.before.is_empty());
        let h = &search_buffer(&re("6"), buf, 3, 10)[0];
        assert!(
            h.after.is_empty(),
            "no phantom line after the final newline: {:?}",
            h.after
        );
    }

    #[test]
    fn long_lines_cut_around_the_match() {
        let line = format!("{}NEEDLE{}", "a".repeat(2_000), "b".repeat(2_000));
        let buf = format!("{line}\n");
        let h = &search_buffer(&re("NEEDLE"), buf.as_bytes(), 0, 10)[0];
        assert!(h.text.contains("NEEDLE"));
        assert!(
            h.text.starts_with(CUT_MARK) && h.text.ends_with(CUT_MARK),
            "{}",
            h.text
        );
        assert_eq!(
            h.text.chars().count(),
            GREP_MAX_LINE_CHARS + 2 * CUT_MARK.chars().count()
        );
        // Multi-byte text is cut on char boundaries; short lines are untouched.
        let s = "é".repeat(GREP_MAX_LINE_CHARS + 10);
        assert_eq!(
            display(s.as_bytes(), None).chars().count(),
            GREP_MAX_LINE_CHARS + CUT_MARK.chars().count()
        );
        assert_eq!(
            display("é".repeat(300).as_bytes(), Some(0)),
            "é".repeat(300)
        );
    }

    #[test]
    fn directory_search_format_and_order() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "src/b.rs", "fn b() {}\nlet x = 1;\nfn bb() {}\n");
        write(d.path(), "src/a.rs", "// nothing\nfn a() {}\n");
        write(d.path(), "README.md", "no functions here\n");
        let out = ok(d.path(), json!({"pattern": r"fn \w+"}));
        assert_eq!(
            out,
            "src/a.rs:2: fn a() {}\nsrc/b.rs:1: fn b() {}\nsrc/b.rs:3: fn bb() {}\n"
        );
        // path: a directory (paths relative to it, with a header) and a single file.
        let out = ok(d.path(), json!({"pattern": r"fn \w+", "path": "src"}));
        assert_eq!(
            out,
            "(paths relative to src)\na.rs:2: fn a() {}\nb.rs:1: fn b() {}\nb.rs:3: fn bb() {}\n"
        );
        let out = ok(d.path(), json!({"pattern": "let", "path": "src/b.rs"}));
        assert_eq!(out, "b.rs:2: let x = 1;\n");
        let abs = d.path().canonicalize().unwrap().join("src/b.rs");
        let r = run(
            d.path(),
            json!({"pattern": "let", "path": abs.to_str().unwrap()}),
        )
        .unwrap();
        assert_eq!(r.content, "b.rs:2: let x = 1;\n");
        assert_eq!(r.metadata["matches"], json!(1));
        assert_eq!(r.metadata["files_with_matches"], json!(1));
        assert_eq!(r.metadata["truncated"], json!(false));
        // Case-insensitive via (?i).
        assert_eq!(
            ok(d.path(), json!({"pattern": "(?i)NO FUNCTIONS"})),
            "README.md:1: no functions here\n"
        );
    }

    #[test]
    fn glob_filter_on_names_and_paths() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.rs", "hit\n");
        write(d.path(), "a.py", "hit\n");
        write(d.path(), "src/deep/b.rs", "hit\n");
        write(d.path(), "lib/c.rs", "hit\n");
        let out = ok(d.path(), json!({"pattern": "hit", "glob": "*.rs"}));
        assert_eq!(out, "a.rs:1: hit\nlib/c.rs:1: hit\nsrc/deep/b.rs:1: hit\n");
        let out = ok(d.path(), json!({"pattern": "hit", "glob": "*.{py,txt}"}));
        assert_eq!(out, "a.py:1: hit\n");
        let out = ok(d.path(), json!({"pattern": "hit", "glob": "src/**/*.rs"}));
        assert_eq!(out, "src/deep/b.rs:1: hit\n");
        let out = ok(d.path(), json!({"pattern": "hit", "glob": "*.java"}));
        assert!(
            out.starts_with("No files matching the glob \"*.java\""),
            "{out}"
        );
        let e = run(d.path(), json!({"pattern": "hit", "glob": "{a"})).unwrap_err();
        assert!(e.message().contains("invalid glob"), "{e}");
    }

    #[test]
    fn context_lines_format_and_groups() {
        let d = tempfile::tempdir().unwrap();
        let body: String = (1..=20)
            .map(|i| {
                if i == 5 || i == 7 || i == 15 {
                    format!("hit {i}\n")
                } else {
                    format!("l{i}\n")
                }
            })
            .collect();
        write(d.path(), "f.txt", &body);
        write(d.path(), "g.txt", "hit g\nl2\n");
        let out = ok(d.path(), json!({"pattern": "hit", "context": 1}));
        assert_eq!(
            out,
            "f.txt-4- l4\nf.txt:5: hit 5\nf.txt-6- l6\nf.txt:7: hit 7\nf.txt-8- l8\n--\n\
f.txt-14- l14\nf.txt:15: hit 15\nf.txt-16- l16\n--\ng.txt:1: hit g\ng.txt-2- l2\n"
        );
        // Adjacent groups merge without a separator.
        let out = ok(
            d.path(),
            json!({"pattern": "hit", "context": 2, "path": "f.txt"}),
        );
        assert!(out.starts_with("f.txt-3- l3\nf.txt-4- l4\nf.txt:5: hit 5\nf.txt-6- l6\nf.txt:7: hit 7\nf.txt-8- l8\nf.txt-9- l9\n--\nf.txt-13- l13\n"), "{out}");
        let e = run(d.path(), json!({"pattern": "hit", "context": 11})).unwrap_err();
        assert!(e.message().contains("at most 10"), "{e}");
        assert!(check_input(&Grep, &json!({"pattern": "x", "context": 11})).is_err());
    }

    #[test]
    fn binary_files_skipped() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "text.txt", "needle\n");
        let mut bin = b"needle\0\x01\x02".to_vec();
        bin.extend_from_slice(b"needle\n");
        fs::write(d.path().join("blob.bin"), &bin).unwrap();
        // A NUL after the probe window does not make a file binary.
        let mut late = vec![b'a'; BINARY_PROBE_BYTES];
        late.extend_from_slice(b"\nneedle\n\0");
        fs::write(d.path().join("late.dat"), &late).unwrap();
        let r = run(d.path(), json!({"pattern": "needle"})).unwrap();
        assert_eq!(r.content, "late.dat:2: needle\ntext.txt:1: needle\n");
        assert_eq!(r.metadata["binary_skipped"], json!(1));
        let e = run(d.path(), json!({"pattern": "needle", "path": "blob.bin"})).unwrap_err();
        assert!(e.message().contains("binary"), "{e}");
        let out = ok(d.path(), json!({"pattern": "zzz"}));
        assert!(out.contains("1 binary"), "{out}");
    }

    #[test]
    fn skip_list_and_gitignore() {
        let d = tempfile::tempdir().unwrap();
        for dir in crate::tools::walk::SKIP_DIRS {
            write(d.path(), &format!("{dir}/x.txt"), "needle\n");
        }
        write(d.path(), ".gitignore", "gen/\n");
        write(d.path(), "gen/x.txt", "needle\n");
        write(d.path(), ".github/ci.yml", "needle\n");
        assert_eq!(
            ok(d.path(), json!({"pattern": "needle"})),
            ".github/ci.yml:1: needle\n"
        );
        // Asked explicitly, a skipped directory is searched.
        assert_eq!(
            ok(
                d.path(),
                json!({"pattern": "needle", "path": "node_modules"})
            ),
            "(paths relative to node_modules)\nx.txt:1: needle\n"
        );
    }

    /// A tree where every file matches many times: the cap, the note and determinism.
    fn many(d: &Path) {
        for i in 0..60 {
            let body: String = (0..7).map(|j| format!("match {i} {j}\n")).collect();
            write(d, &format!("d{}/f{i:02}.txt", i % 3), &body);
        }
    }

    #[test]
    fn cap_with_note_first_in_path_order_and_deterministic() {
        let d = tempfile::tempdir().unwrap();
        many(d.path());
        let r1 = run(d.path(), json!({"pattern": "match"})).unwrap();
        let lines: Vec<&str> = r1.content.lines().collect();
        assert_eq!(
            lines.len(),
            GREP_MAX_MATCHES + 2,
            "100 matches, a blank line, the note"
        );
        // d0 holds f00, f03, ... f57 (20 files x 7 lines = 140): the first 100 are there.
        assert_eq!(lines[0], "d0/f00.txt:1: match 0 0");
        assert_eq!(lines[99], "d0/f42.txt:2: match 42 1");
        assert!(lines[101].contains("first 100 matches"), "{}", lines[101]);
        assert_eq!(r1.metadata["truncated"], json!(true));
        assert_eq!(r1.metadata["matches"], json!(100));
        for _ in 0..5 {
            let r2 = run(d.path(), json!({"pattern": "match"})).unwrap();
            assert_eq!(r1.content, r2.content);
        }
    }

    #[test]
    fn exactly_the_cap_has_no_note() {
        let d = tempfile::tempdir().unwrap();
        let body: String = (0..GREP_MAX_MATCHES).map(|j| format!("m{j}\n")).collect();
        write(d.path(), "a.txt", &body);
        let r = run(d.path(), json!({"pattern": "m"})).unwrap();
        assert_eq!(r.content.lines().count(), GREP_MAX_MATCHES);
        assert_eq!(r.metadata["truncated"], json!(false));
        write(d.path(), "b.txt", "m\n");
        let r = run(d.path(), json!({"pattern": "m"})).unwrap();
        assert_eq!(r.metadata["truncated"], json!(true));
        assert!(!r.content.contains("b.txt"));
    }

    #[test]
    fn early_stop_leaves_later_files_unsearched() {
        let d = tempfile::tempdir().unwrap();
        many(d.path());
        let mut files: Vec<PathBuf> = (0..60)
            .map(|i| d.path().join(format!("d{}/f{i:02}.txt", i % 3)))
            .collect();
        files.sort_unstable_by(|a, b| {
            path_order(a.as_os_str().as_bytes(), b.as_os_str().as_bytes())
        });
        let outcomes = search_all(&Matcher::new("match").unwrap(), &files, 0);
        // 15 files of 7 matches exceed the cap; everything before is always searched.
        assert!(
            outcomes[..15]
                .iter()
                .all(|o| matches!(o, Outcome::Hits(h) if h.len() == 7))
        );
        assert!(
            outcomes.iter().any(|o| matches!(o, Outcome::Skipped)),
            "some later file is skipped"
        );
    }

    #[test]
    fn failure_modes() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.txt", "x\n");
        let e = run(d.path(), json!({"pattern": "fn ("})).unwrap_err();
        assert!(
            e.message().contains("invalid regex") && e.message().contains("unclosed group"),
            "{e}"
        );
        let e = run(d.path(), json!({"pattern": ""})).unwrap_err();
        assert!(e.message().contains("empty"), "{e}");
        let e = run(d.path(), json!({"pattern": "x", "path": "missing.txt"})).unwrap_err();
        assert!(e.message().contains("missing.txt"), "{e}");
        let out = ok(d.path(), json!({"pattern": "nomatch"}));
        assert_eq!(
            out,
            "No matches for the regex \"nomatch\" in 1 file(s) under the workspace root."
        );
        let out = ok(d.path(), json!({"pattern": "nomatch", "path": "a.txt"}));
        assert_eq!(out, "No matches for the regex \"nomatch\" in a.txt.");
    }

    #[test]
    fn path_outside_workspace_refused() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        fs::create_dir(&ws).unwrap();
        write(d.path(), "secret.txt", "needle\n");
        let e = run(&ws, json!({"pattern": "needle", "path": ".."})).unwrap_err();
        assert!(e.message().contains("outside the workspace"), "{e}");
        let e = run(&ws, json!({"pattern": "needle", "path": "../secret.txt"})).unwrap_err();
        assert!(e.message().contains("outside the workspace"), "{e}");
        std::os::unix::fs::symlink(d.path().join("secret.txt"), ws.join("link.txt")).unwrap();
        assert!(run(&ws, json!({"pattern": "needle", "path": "link.txt"})).is_err());
        // The walk does not follow the link either.
        write(&ws, "own.txt", "hay\n");
        assert!(ok(&ws, json!({"pattern": "needle"})).starts_with("No matches"));
    }

    #[test]
    fn a_file_swapped_for_a_fifo_or_symlink_after_the_walk_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        crate::tools::sandbox::test_util::mkfifo(&fifo);
        // Opening returns at once (no writer needed) and reads end of file.
        let mut f =
            crate::tools::sandbox::test_util::without_hanging(move || open_listed(&fifo).unwrap());
        let mut s = String::new();
        let _ = f.read_to_string(&mut s);
        assert!(s.is_empty());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        assert!(open_listed(&link).is_err());
    }
}
