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
