//! Unit tests of `text.rs`.

use super::*;

#[test]
fn cuts_on_characters_not_bytes() {
    assert_eq!(truncate("héllo", 2), ("hé", 3));
    assert_eq!(truncate("abc", 3), ("abc", 0));
    assert_eq!(truncate("", 0), ("", 0));
    assert_eq!(truncate("ab", 0), ("", 2));
}

#[test]
fn markers_only_when_cut() {
    assert_eq!(ellipsis("héllo", 2), "hé…");
    assert_eq!(ellipsis("abc", 3), "abc");
    assert_eq!(marked("abcd", 2, " [cut]"), "ab [cut]");
    assert_eq!(counted("abcdef", 2, "chars"), "ab… (4 more chars)");
    assert_eq!(counted("ab", 2, "chars"), "ab");
}

#[test]
fn a_capped_line_keeps_at_most_the_cap_and_the_next_line_is_whole() {
    use std::io::BufReader;
    // A small buffer: the line arrives in many pieces.
    let input = b"short\nthis line is too long\nnext\nlast-without-newline";
    let mut r = BufReader::with_capacity(3, &input[..]);
    let mut buf = Vec::new();
    let mut got = Vec::new();
    loop {
        match read_line_capped(&mut r, &mut buf, 8).unwrap() {
            LineRead::End => break,
            how => got.push((how, String::from_utf8(buf.clone()).unwrap())),
        }
    }
    assert_eq!(
        got,
        [
            (LineRead::Line, "short".to_string()),
            (LineRead::TooLong, "this lin".to_string()),
            (LineRead::Line, "next".to_string()),
            (LineRead::TooLong, "last-wit".to_string()),
        ]
    );
}
