//! Tests of `refresh`: what a changed list differs in.

use serde_json::json;

use super::*;

fn def(name: &str, description: &str) -> ToolDef {
    ToolDef::parse(
        "s",
        &json!({"name": name, "description": description,
                "annotations": {"readOnlyHint": true}}),
    )
    .unwrap()
}

#[test]
fn diff_names_added_removed_and_changed_tools_sorted() {
    let old = [
        def("echo", "Echoes."),
        def("keep", "Same."),
        def("redo", "Old."),
    ];
    let new = [
        def("zeta", "New."),
        def("keep", "Same."),
        def("redo", "New."),
        def("alpha", ""),
    ];
    let c = diff(3, &old, &new);
    assert_eq!(c.at_turn, 3);
    assert_eq!(c.added, ["mcp__s__alpha", "mcp__s__zeta"]);
    assert_eq!(c.removed, ["mcp__s__echo"]);
    assert_eq!(c.changed, ["mcp__s__redo"]);
    assert!(!c.is_empty());
}

#[test]
fn the_same_list_again_is_no_change() {
    let old = [def("echo", "Echoes."), def("keep", "Same.")];
    let new = [def("keep", "Same."), def("echo", "Echoes.")];
    assert!(diff(2, &old, &new).is_empty(), "order alone is no change");
}
