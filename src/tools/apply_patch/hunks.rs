//! An Update File's hunks applied to a file's text, in memory: each hunk's old lines are
//! found with codex's tolerance (exactly, then ignoring trailing whitespace, then ignoring
//! surrounding whitespace, then with typographic punctuation read as ASCII), after the
//! `@@` context line when there is one and after the previous hunk, at the end of the
//! file for `*** End of File`. Line endings are kept per line: lines the patch adds get
//! the file's dominant ending (CRLF when most lines have it), so a CRLF file stays CRLF,
//! and a file without a final newline stays without one. A hunk that matches nowhere is
//! an error naming the hunk and showing the file's nearest lines.

use super::parse::Hunk;

/// Lines of the file shown around the nearest match of a hunk that failed.
const NEAREST_CONTEXT_LINES: usize = 2;
/// Chars of one shown line at most.
const SHOWN_LINE_MAX_CHARS: usize = 200;

/// A file's text as lines, each with the ending it had.
struct Lines<'a> {
    text: Vec<&'a str>,
    /// `\r\n`, `\n`, or `""` for a last line without one.
    endings: Vec<&'a str>,
}

fn split(content: &str) -> Lines<'_> {
    let mut text = Vec::new();
    let mut endings = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let line = &rest[..i];
                match line.strip_suffix('\r') {
                    Some(l) => {
                        text.push(l);
                        endings.push("\r\n");
                    }
                    None => {
                        text.push(line);
                        endings.push("\n");
                    }
                }
                rest = &rest[i + 1..];
            }
            None => {
                text.push(rest);
                endings.push("");
                rest = "";
            }
        }
    }
    Lines { text, endings }
}

/// Typographic punctuation a model may have written as ASCII (or the reverse).
fn normalise(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2007}' | '\u{2009}' | '\u{202F}' => ' ',
            other => other,
        })
        .collect()
}

/// Whether a file line and a patch line are the same, at one tolerance.
type LineMatch = dyn Fn(&str, &str) -> bool;

/// Where `pattern` occurs in `lines` at or after `start`, trying each tolerance in turn;
/// with `at_end`, where it ends the file first.
fn seek(lines: &[&str], pattern: &[String], start: usize, at_end: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start.min(lines.len()));
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let passes: [&LineMatch; 4] = [
        &|a, b| a == b,
        &|a, b| a.trim_end() == b.trim_end(),
        &|a, b| a.trim() == b.trim(),
        &|a, b| normalise(a) == normalise(b),
    ];
    for same in passes {
        let at = |i: usize| {
            pattern
                .iter()
                .enumerate()
                .all(|(k, p)| same(lines[i + k], p))
        };
        if at_end && last >= start && at(last) {
            return Some(last);
        }
        if let Some(i) = (start..=last).find(|&i| at(i)) {
            return Some(i);
        }
    }
    None
}

/// Why a hunk did not apply (the caller adds the file's name).
#[derive(Debug)]
pub(crate) struct Mismatch {
    pub message: String,
}

/// `content` with `hunks` applied, or why one of them does not apply.
pub(crate) fn apply(content: &str, hunks: &[Hunk]) -> Result<String, Mismatch> {
    let lines = split(content);
    let crlf = lines.endings.iter().filter(|e| **e == "\r\n").count();
    let lf = lines.endings.iter().filter(|e| **e == "\n").count();
    let style = if crlf > lf { "\r\n" } else { "\n" };
    let final_newline = lines.endings.last().is_none_or(|e| !e.is_empty());
    // (start, how many old lines, the new lines), in file order.
    let mut edits: Vec<(usize, usize, &[String])> = Vec::new();
    let mut at = 0;
    for (k, hunk) in hunks.iter().enumerate() {
        let number = k + 1;
        if let Some(context) = &hunk.context {
            match seek(&lines.text, std::slice::from_ref(context), at, false) {
                Some(i) => at = i + 1,
                None => {
                    return Err(Mismatch {
                        message: format!(
                            "hunk {number} (patch line {}): the context line `@@ {context}` is \
                             not in the file{}{}",
                            hunk.line,
                            if at > 0 {
                                " after the previous hunk"
                            } else {
                                ""
                            },
                            nearest(&lines.text, context)
                        ),
                    });
                }
            }
        }
        if hunk.old.is_empty() {
            // Only additions: after the context line, else at the end of the file.
            let place = if hunk.context.is_some() && !hunk.end_of_file {
                at
            } else {
                lines.text.len()
            };
            edits.push((place, 0, &hunk.new));
            continue;
        }
        let mut old: &[String] = &hunk.old;
        let mut new: &[String] = &hunk.new;
        let mut found = seek(&lines.text, old, at, hunk.end_of_file);
        // A trailing empty line in the hunk may be the file's final newline.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines.text, old, at, hunk.end_of_file);
        }
        let Some(start) = found else {
            let first = hunk
                .old
                .iter()
                .find(|l| !l.trim().is_empty())
                .map_or("", String::as_str);
            return Err(Mismatch {
                message: format!(
                    "hunk {number} (patch line {}): its {} old line(s) (context and `-` \
                     lines) are not in the file{}{}{}",
                    hunk.line,
                    hunk.old.len(),
                    if hunk.end_of_file {
                        " at its end (`*** End of File`)"
                    } else {
                        ""
                    },
                    if at > 0 {
                        " after the previous hunk or `@@` line"
                    } else {
                        ""
                    },
                    nearest(&lines.text, first)
                ),
            });
        };
        edits.push((start, old.len(), new));
        at = start + old.len();
    }
    edits.sort_by_key(|e| e.0);
    for pair in edits.windows(2) {
        if pair[0].0 + pair[0].1 > pair[1].0 {
            return Err(Mismatch {
                message: "two hunks change the same lines: merge them into one".to_string(),
            });
        }
    }
    // Rebuild: unchanged lines keep their endings; added lines get the dominant one.
    let mut out: Vec<(&str, Option<&str>)> = Vec::with_capacity(lines.text.len());
    let mut next = 0;
    for (start, len, new) in &edits {
        for i in next..*start {
            out.push((lines.text[i], Some(lines.endings[i])));
        }
        out.extend(new.iter().map(|l| (l.as_str(), None)));
        next = start + len;
    }
    for i in next..lines.text.len() {
        out.push((lines.text[i], Some(lines.endings[i])));
    }
    let mut text = String::with_capacity(content.len() + 64);
    let n = out.len();
    for (i, (line, ending)) in out.into_iter().enumerate() {
        text.push_str(line);
        let ending = match ending {
            Some(e) if !e.is_empty() => e,
            _ => style,
        };
        if i + 1 < n || final_newline {
            text.push_str(ending);
        }
    }
    Ok(text)
}

/// The file's lines nearest to `wanted`, numbered, as the end of an error message.
fn nearest(lines: &[&str], wanted: &str) -> String {
    let wanted_words: Vec<&str> = wanted.split_whitespace().collect();
    let score = |line: &str| {
        let common = line
            .split_whitespace()
            .filter(|w| wanted_words.contains(w))
            .count();
        let prefix = line
            .trim()
            .chars()
            .zip(wanted.trim().chars())
            .take_while(|(a, b)| a == b)
            .count();
        (common, prefix)
    };
    let best = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .max_by_key(|(i, l)| (score(l), std::cmp::Reverse(*i)));
    let Some((at, line)) = best else {
        return ". The file is empty.".to_string();
    };
    if score(line) == (0, 0) {
        return format!(
            ". No line of the file resembles {:?}: ReadFile it to see its content.",
            crate::util::text::ellipsis(wanted, SHOWN_LINE_MAX_CHARS)
        );
    }
    let from = at.saturating_sub(NEAREST_CONTEXT_LINES);
    let to = (at + NEAREST_CONTEXT_LINES + 1).min(lines.len());
    let shown: Vec<String> = (from..to)
        .map(|i| {
            format!(
                "{:>6}\t{}",
                i + 1,
                crate::util::text::ellipsis(lines[i], SHOWN_LINE_MAX_CHARS)
            )
        })
        .collect();
    format!(
        ". The nearest lines of the file (line {}):\n{}\nCopy the old lines exactly from the \
         file (ReadFile it again if it may have changed).",
        at + 1,
        shown.join("\n")
    )
}

#[cfg(test)]
#[path = "hunks_tests.rs"]
mod tests;
