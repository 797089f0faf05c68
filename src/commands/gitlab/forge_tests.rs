//! Unit tests of `forge.rs`: diffs in the core's form, positions from diff lines, the
//! path encoding.

use super::*;

fn diff() -> Value {
    json!({"old_path": "src/old.rs", "new_path": "src/lib.rs", "renamed_file": true,
           "new_file": false, "deleted_file": false,
           "diff": "@@ -10,3 +10,4 @@ fn a()\n ctx\n-gone\n+added\n+more\n tail\n"})
}

#[test]
fn a_diff_becomes_a_file_with_counts_and_status() {
    let f = file_of(&diff());
    assert_eq!(f["filename"], "src/lib.rs");
    assert_eq!(f["previous_filename"], "src/old.rs");
    assert_eq!(
        (
            f["status"].as_str(),
            f["additions"].as_u64(),
            f["deletions"].as_u64()
        ),
        (Some("renamed"), Some(2), Some(1))
    );
}

#[test]
fn positions_carry_the_numbers_each_kind_of_line_needs() {
    let files = vec![file_of(&diff())];
    let p = Positions::of(&files);
    let shas = ("b", "s", "h");
    let at = |side: &'static str, line: u64| {
        p.position(
            &Inline {
                path: "src/lib.rs".into(),
                line,
                side,
                body: "x".into(),
            },
            shas,
        )
    };
    // An added line: new_line only.
    let added = at("RIGHT", 11);
    assert_eq!(
        (added["new_line"].as_u64(), added.get("old_line")),
        (Some(11), None)
    );
    assert_eq!(added["old_path"], "src/old.rs");
    assert_eq!(
        (
            added["base_sha"].as_str(),
            added["start_sha"].as_str(),
            added["head_sha"].as_str()
        ),
        (Some("b"), Some("s"), Some("h"))
    );
    assert_eq!(added["position_type"], "text");
    // A removed line: old_line only.
    let removed = at("LEFT", 11);
    assert_eq!(
        (removed["old_line"].as_u64(), removed.get("new_line")),
        (Some(11), None)
    );
    // A context line: both (new 13 is old 12).
    let ctx = at("RIGHT", 13);
    assert_eq!(
        (ctx["old_line"].as_u64(), ctx["new_line"].as_u64()),
        (Some(12), Some(13))
    );
}

#[test]
fn paths_and_refs_are_encoded() {
    assert_eq!(encode("docs/AGENTS.md"), "docs%2FAGENTS.md");
    assert_eq!(encode("feature/a&b c"), "feature%2Fa%26b%20c");
    assert_eq!(level_name(20), "Reporter");
}
