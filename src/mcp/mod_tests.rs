//! Unit tests of `mod.rs`.

use super::*;
use crate::util::text::ellipsis as clip;

#[test]
fn annotations_map_onto_tool_flags() {
    let ro = ToolDef::parse(
        "s",
        &json!({"name": "r", "annotations": {"readOnlyHint": true,
                                              "destructiveHint": true}}),
    )
    .unwrap();
    assert!(ro.read_only && !ro.destructive);
    let nd = ToolDef::parse(
        "s",
        &json!({"name": "w", "annotations":
                                              {"destructiveHint": false}}),
    )
    .unwrap();
    assert!(!nd.read_only && !nd.destructive);
    let dflt = ToolDef::parse("s", &json!({"name": "w", "annotations": {"title": "W"}})).unwrap();
    assert!(
        !dflt.read_only && dflt.destructive,
        "destructiveHint defaults to true"
    );
    let bare = ToolDef::parse("s", &json!({"name": "b"})).unwrap();
    assert!(!bare.read_only && bare.destructive);
    assert_eq!(bare.exposed, "mcp__s__b");
    assert_eq!(
        bare.input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert!(bare.description.contains("MCP server s"));
    assert!(ToolDef::parse("s", &json!({"description": "x"})).is_err());
}

#[test]
fn clip_counts_characters() {
    assert_eq!(clip("héllo", 2), "hé…");
    assert_eq!(clip("abc", 3), "abc");
}
