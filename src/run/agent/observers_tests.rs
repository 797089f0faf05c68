//! Unit tests of `observers.rs`.

use super::*;

#[test]
fn log_lines_shorten_long_inputs() {
    assert_eq!(shorten("abc", 5), "abc");
    assert_eq!(shorten("abcdefgh", 3), "abc… (5 more chars)");
    assert_eq!(shorten("ééééé", 2), "éé… (3 more chars)");
}
