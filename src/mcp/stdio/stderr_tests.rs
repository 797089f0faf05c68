//! Unit tests of `stderr.rs`: the line splitter.

use super::CappedLines;

/// The lines `CappedLines` hands over for `chunks`, as (text, cut).
fn split(cap: usize, chunks: &[&str]) -> Vec<(String, bool)> {
    let mut got = Vec::new();
    let mut lines = CappedLines::new(cap);
    let mut emit = |l: &[u8], cut: bool| got.push((String::from_utf8_lossy(l).into(), cut));
    for c in chunks {
        lines.push(c.as_bytes(), &mut emit);
    }
    lines.finish(&mut emit);
    got
}

#[test]
fn lines_are_split_across_chunks_and_cut_at_the_cap() {
    let line = |s: &str, cut| (s.to_string(), cut);
    assert_eq!(
        split(4, &["ab", "c\nde", "\n\n"]),
        [line("abc", false), line("de", false), line("", false)]
    );
    assert_eq!(
        split(4, &["abcd\n"]),
        [line("abcd", false)],
        "exactly the cap"
    );
    assert_eq!(
        split(4, &["abcdef", "gh", "ij\nk"]),
        [line("abcd", true), line("k", false)],
        "cut once, the rest discarded up to the newline"
    );
    assert_eq!(split(4, &["abcdefgh"]), [line("abcd", true)]);
    assert_eq!(
        split(4, &["ab"]),
        [line("ab", false)],
        "no newline at the end"
    );
}
