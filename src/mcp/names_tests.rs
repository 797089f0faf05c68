//! Unit tests of `names.rs`.

use super::*;

#[test]
fn short_names_are_kept() {
    assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
    assert_eq!(tool_name("my-srv", "a-b"), "mcp__my-srv__a-b");
}

#[test]
fn long_or_odd_names_are_shortened_deterministically() {
    let long = "a_really_long_tool_name_that_goes_on_and_on_beyond_the_limit";
    let n = tool_name("github", long);
    assert_eq!(n.len(), MAX_TOOL_NAME_CHARS);
    assert!(n.starts_with("mcp__github__a_really_long"), "{n}");
    assert_eq!(n, tool_name("github", long), "deterministic");
    assert_ne!(n, tool_name("github", &format!("{long}2")), "hash differs");
    let dotted = tool_name("s", "files.read");
    assert!(dotted.starts_with("mcp__s__files_read_"), "{dotted}");
    assert!(dotted.len() <= MAX_TOOL_NAME_CHARS);
    assert!(
        dotted
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    // Pinned: a cassette recorded today must replay tomorrow.
    assert_eq!(fnv1a(b"hello"), 0x4f9f_2cab);
}

#[test]
fn patterns() {
    let exposed = tool_name("gh", "add_comment");
    assert!(!pattern_matches("mcp__g", &tool_name("gh_x", "t")));
    for (p, want) in [
        ("mcp__gh", true),
        ("mcp__gh__*", true),
        ("mcp__gh__add_comment", true),
        ("mcp__gh__other", false),
        ("mcp__ghx", false),
        ("mcp__g", false),
        ("gh", false),
        ("Bash", false),
    ] {
        assert_eq!(pattern_matches(p, &exposed), want, "{p}");
    }
    let long = "x".repeat(80);
    let exposed = tool_name("gh", &long);
    assert!(pattern_matches(&exposed, &exposed));
    assert!(pattern_matches(&format!("mcp__gh__{long}"), &exposed));
    assert!(pattern_matches("mcp__gh", &exposed));
    assert!(!pattern_matches(&format!("mcp__gh__{long}x"), &exposed));
    assert!(is_mcp_pattern("mcp__gh__*") && is_mcp_pattern("mcp__gh"));
}

#[test]
fn a_server_name_is_matched_exactly_not_as_a_prefix() {
    // `mcp__s___w` reads as `s` + `_w` or `s_` + `w`: only the server decides.
    let w = tool_name("s_", "w");
    assert_eq!(w, tool_name("s", "_w"));
    for p in ["mcp__s", "mcp__s__*", "mcp__s__w"] {
        assert!(!pattern_names(p, "s_", &w), "{p} names no tool of s_");
    }
    for p in ["mcp__s_", "mcp__s___*", "mcp__s___w"] {
        assert!(pattern_names(p, "s_", &w), "{p} names s_'s w");
    }
    let own = tool_name("s", "w");
    assert!(pattern_names("mcp__s", "s", &own) && pattern_names("mcp__s__*", "s", &own));
    assert!(!pattern_names("mcp__s_", "s", &own));
    assert!(pattern_names("mcp__s__w", "s", &own) && !pattern_names("mcp__s__x", "s", &own));
    // Policy sees only the name: the recorded server decides there.
    let recorded = tool_name("rec_", "w");
    assert!(
        pattern_matches("mcp__rec", &recorded),
        "unrecorded: read as rec + _w"
    );
    record_server(&recorded, "rec_", "w");
    assert_eq!(origin(&recorded), Some(("rec_".into(), "w".into())));
    assert!(!pattern_matches("mcp__rec", &recorded));
    assert!(!pattern_matches("mcp__rec__*", &recorded));
    assert!(pattern_matches("mcp__rec_", &recorded));
    assert!(!is_mcp_pattern("mcp__") && !is_mcp_pattern("Bash"));
}
