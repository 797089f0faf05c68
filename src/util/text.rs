//! Cutting text for people and models: the one truncation the crate uses, on character
//! boundaries, with a marker saying that (or how much) was left out.

/// At most `max` characters of `text` (never splitting a character), and how many
/// characters were left out (0 when nothing was).
pub(crate) fn truncate(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        Some((cut, _)) => (&text[..cut], text[cut..].chars().count()),
        None => (text, 0),
    }
}

/// At most `max` characters of `text`, then `marker` when cut.
pub(crate) fn marked(text: &str, max: usize, marker: &str) -> String {
    match truncate(text, max) {
        (kept, 0) => kept.to_string(),
        (kept, _) => format!("{kept}{marker}"),
    }
}

/// At most `max` characters of `text`, then `…` when cut.
pub(crate) fn ellipsis(text: &str, max: usize) -> String {
    marked(text, max, "…")
}

/// At most `max` characters of `text`, then `… (N more WHAT)` when cut.
pub(crate) fn counted(text: &str, max: usize, what: &str) -> String {
    match truncate(text, max) {
        (kept, 0) => kept.to_string(),
        (kept, left) => format!("{kept}… ({left} more {what})"),
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;

/// How reading one capped line ended (`read_line_capped`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// The input ended before any byte of a line.
    End,
    /// A whole line (its `\n` dropped) is in the buffer.
    Line,
    /// The line was longer than the cap: the buffer holds its first bytes, the rest was
    /// read and dropped, so memory stays bounded whatever a peer sends.
    TooLong,
}

/// Reads one `\n`-ended line into `buf` (cleared first), keeping at most `max` bytes.
pub(crate) fn read_line_capped(
    input: &mut impl std::io::BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => LineRead::End,
                (true, true) => LineRead::TooLong,
                (true, false) => LineRead::Line,
            });
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = max.saturating_sub(buf.len());
        if part.len() > room {
            too_long = true;
        }
        buf.extend_from_slice(&part[..part.len().min(room)]);
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}
