//! Unit tests of session.rs's pure helpers: the run flags a session's model replaces.

use super::*;

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_chosen_model_replaces_every_spelling_of_the_run_flags_model() {
    let flags = strs(&[
        "--max-turns",
        "10",
        "--model",
        "a",
        "-m",
        "b",
        "--model=c",
        "-md",
        "-v",
    ]);
    assert_eq!(
        without_model_flag(&flags),
        strs(&["--max-turns", "10", "-v"])
    );
}

#[test]
fn flags_without_a_model_and_words_after_the_end_of_flags_are_kept() {
    let flags = strs(&["--max-turns", "3", "--", "--model", "x"]);
    assert_eq!(without_model_flag(&flags), flags);
    assert!(without_model_flag(&[]).is_empty());
}
