//! File names that are not UTF-8, in text the model reads and writes back. A path is shown
//! as-is when it is UTF-8; otherwise each byte that is not part of valid UTF-8 is written
//! `\xNN` (two uppercase hex digits) and each `\` as `\\`, so `caf\xE9.txt` names the
//! Latin-1 file `café.txt`. The file tools decode that form back, so a path that Glob or
//! Grep printed can be given to ReadFile, EditFile or WriteFile unchanged.
//!
//! Decoding is used only when it yields a name that is not UTF-8 (the only names the
//! escaped form is printed for) and no file has the literal name: `a\x41` stays `a\x41`,
//! and an existing `caf\xE9.txt` (typed with a backslash) is still reachable.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `path` as text the file tools accept back.
pub(crate) fn shown(path: &Path) -> Cow<'_, str> {
    let bytes = path.as_os_str().as_bytes();
    if let Ok(s) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    Cow::Owned(out)
}

/// The path a model-given `text` names: its escaped form decoded when that is what it is
/// (see the module comment); `exists` says whether a literal path exists.
pub(crate) fn decode<'a>(text: &'a str, exists: impl Fn(&Path) -> bool) -> Cow<'a, Path> {
    let literal = Path::new(text);
    if !text.contains("\\x") {
        return Cow::Borrowed(literal);
    }
    match unescape(text) {
        Some(bytes) if std::str::from_utf8(&bytes).is_err() && !exists(literal) => {
            Cow::Owned(OsStr::from_bytes(&bytes).into())
        }
        _ => Cow::Borrowed(literal),
    }
}

/// `\\` → `\`, `\xNN` → the byte; None for any other use of `\`.
fn unescape(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = text.get(i + 2..i + 4)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 4;
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "escape_tests.rs"]
mod tests;
