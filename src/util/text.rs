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
