//! Unit tests of `escape.rs`.

use super::*;

fn os(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

#[test]
fn utf8_names_are_shown_as_they_are() {
    for s in ["café.txt", r"a\b", r"caf\xE9.txt", "日本/語.rs"] {
        assert_eq!(shown(Path::new(s)), s);
    }
}

#[test]
fn other_names_round_trip_through_the_escaped_form() {
    let none = |_: &Path| false;
    for bytes in [
        &b"caf\xe9.txt"[..],
        b"dir/\xff\xfe/x",
        b"back\\slash\xe9",
        b"caf\xc3\xa9-\xe9",
        b"\xe9\\x41",
    ] {
        let text = shown(os(bytes)).into_owned();
        assert!(!text.contains('\u{FFFD}'), "{text}");
        assert_eq!(decode(&text, none).as_os_str().as_bytes(), bytes, "{text}");
    }
    assert_eq!(shown(os(b"caf\xe9.txt")), r"caf\xE9.txt");
    assert_eq!(shown(os(b"a\\b\xe9")), r"a\\b\xE9");
}

#[test]
fn the_literal_wins_when_decoding_is_not_meant() {
    let none = |_: &Path| false;
    // Decodes to valid UTF-8: a name the escaped form is never printed for.
    assert_eq!(decode(r"a\x41", none), Path::new(r"a\x41"));
    // Not an escape sequence.
    assert_eq!(decode(r"a\xZZ\xE9", none), Path::new(r"a\xZZ\xE9"));
    assert_eq!(decode(r"a\q\xE9", none), Path::new(r"a\q\xE9"));
    // A file with the literal name exists.
    assert_eq!(decode(r"caf\xE9", |_| true), Path::new(r"caf\xE9"));
    assert_eq!(decode(r"caf\xE9", none).as_os_str().as_bytes(), b"caf\xe9");
}
