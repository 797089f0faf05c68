//! The anchor a Markdown heading gets, as mdBook and GitHub make it: shared by the link
//! check (`tests/integration/docs.rs`) and the reference generators
//! (`src/reference_tests.rs`, which includes this file), so a link one writes is one the
//! other accepts.

/// Lower case, whitespace to `-`, only letters, digits, `_` and `-` kept (so backticks and
/// punctuation drop out: "Overload: `--fallback-model`" is `overload---fallback-model`).
pub(crate) fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}
