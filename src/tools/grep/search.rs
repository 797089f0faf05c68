//! Searching: the compiled pattern (with a required-literal prefilter), the parallel
//! search over the candidate files with its early stop, and one file's matching lines
//! with their context, cut for display.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use memchr::memmem::Finder;
use memchr::{memchr, memchr_iter, memrchr};
use rayon::prelude::*;
use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::hir::{Hir, HirKind};

use super::{GREP_MAX_FILE_BYTES, GREP_MAX_MATCHES};
use crate::util::sync::Locked;

/// Characters kept of a long line (minified code); the cut is marked.
pub(super) const GREP_MAX_LINE_CHARS: usize = 500;
/// Characters kept before the match when a long match line is cut, so the match shows.
pub(super) const GREP_MATCH_LEAD_CHARS: usize = 100;
/// A NUL byte in this many leading bytes marks a file as binary (ripgrep's heuristic).
pub(super) const BINARY_PROBE_BYTES: usize = 8 * 1024;
/// Initial read buffer per worker job; it grows to the largest file read and is reused.
pub(super) const READ_BUFFER_BYTES: usize = 256 * 1024;
/// A read buffer grown beyond this by a big file is released after it.
pub(super) const RETAINED_BUFFER_BYTES: usize = 4 * 1024 * 1024;
/// A required literal shorter than this is too common to be worth a file prefilter.
pub(super) const MIN_PREFILTER_LITERAL_BYTES: usize = 3;
/// The cut marker of a long line.
pub(super) const CUT_MARK: &str = "[…]";

/// One matching line, already rendered for display; context lines are its neighbours.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hit {
    /// 1-based line number.
    pub(super) line_no: usize,
    pub(super) text: String,
    /// Up to `context` lines before, oldest first (line numbers `line_no - before.len()`..).
    pub(super) before: Vec<String>,
    /// Up to `context` lines after (line numbers `line_no + 1`..).
    pub(super) after: Vec<String>,
}

/// The compiled pattern, cloned per worker job (a clone has its own regex cache).
#[derive(Clone)]
pub(super) struct Matcher {
    /// Multi-line (`^`/`$` at line bounds) and CRLF-aware, run over whole files.
    pub(super) re: Regex,
    /// A literal every match contains: a file without it is skipped at memchr speed,
    /// also where the regex crate's own prefilter cannot help (`\w+_name`).
    pub(super) required: Option<Finder<'static>>,
}

impl Matcher {
    pub(super) fn new(pattern: &str) -> Result<Self, regex::Error> {
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
pub(super) fn required_literal(hir: &Hir, best: &mut Option<Vec<u8>>) {
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
pub(super) enum Outcome {
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
pub(super) fn search_all(matcher: &Matcher, files: &[PathBuf], context: usize) -> Vec<Outcome> {
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
                let mut p = prefix.locked();
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
pub(super) fn open_listed(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

pub(super) fn search_file(m: &Matcher, path: &Path, buf: &mut Vec<u8>, context: usize) -> Outcome {
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
pub(super) fn search_buffer(re: &Regex, buf: &[u8], context: usize, limit: usize) -> Vec<Hit> {
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
pub(super) fn lines_before(buf: &[u8], line_start: usize, n: usize) -> Vec<String> {
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
pub(super) fn lines_after(buf: &[u8], line_end: usize, n: usize) -> Vec<String> {
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
pub(super) fn display(line: &[u8], match_at: Option<usize>) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Fast path: short lines cannot need a cut (a char is at least one byte).
    if line.len() <= GREP_MAX_LINE_CHARS {
        return String::from_utf8_lossy(line).into_owned();
    }
    // Redacted before the cut: a cut through a secret would leave its prefix.
    let text = crate::util::output::redact(&String::from_utf8_lossy(line));
    let total = text.chars().count();
    if total <= GREP_MAX_LINE_CHARS {
        return text;
    }
    let match_char = match_at.map_or(0, |b| {
        crate::util::output::redact(&String::from_utf8_lossy(&line[..b.min(line.len())]))
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
