//! Unit tests of `parse.rs`: each operation, the envelope's lenient edges, the errors.

use super::*;

fn hunk(context: Option<&str>, old: &[&str], new: &[&str], eof: bool, line: usize) -> Hunk {
    Hunk {
        context: context.map(str::to_string),
        old: old.iter().map(|s| s.to_string()).collect(),
        new: new.iter().map(|s| s.to_string()).collect(),
        end_of_file: eof,
        line,
    }
}

#[test]
fn every_operation_parses_in_order() {
    let patch = [
        "*** Begin Patch",
        "*** Add File: new.txt",
        "+one",
        "+",
        "+two",
        "*** Delete File: old.txt",
        "*** Update File: src/a.rs",
        "*** Move to: src/b.rs",
        "@@ fn main() {",
        " let a = 1;",
        "-let b = 2;",
        "+let b = 3;",
        "@@",
        "-tail",
        "+end",
        "*** End of File",
        "*** End Patch",
        "",
    ]
    .join("\n");
    let patch = patch.as_str();
    assert_eq!(
        parse(patch).unwrap(),
        vec![
            Op::Add {
                path: "new.txt".into(),
                lines: vec!["one".into(), "".into(), "two".into()]
            },
            Op::Delete {
                path: "old.txt".into()
            },
            Op::Update {
                path: "src/a.rs".into(),
                move_to: Some("src/b.rs".into()),
                hunks: vec![
                    hunk(
                        Some("fn main() {"),
                        &["let a = 1;", "let b = 2;"],
                        &["let a = 1;", "let b = 3;"],
                        false,
                        9
                    ),
                    hunk(None, &["tail"], &["end"], true, 13),
                ],
            },
        ]
    );
}

#[test]
fn lenient_edges_no_trailing_newline_crlf_heredoc_blank_lines_and_no_first_at_at() {
    let plain = "*** Begin Patch\n*** Update File: a\n x\n-y\n+z\n*** End Patch";
    let expected = parse(plain).unwrap();
    assert_eq!(
        expected,
        vec![Op::Update {
            path: "a".into(),
            move_to: None,
            hunks: vec![hunk(None, &["x", "y"], &["x", "z"], false, 3)]
        }]
    );
    for variant in [
        plain.replace('\n', "\r\n"),
        format!("\n\n{plain}\n\n"),
        format!("<<'EOF'\n{plain}\nEOF\n"),
        format!("<<EOF\n{plain}\nEOF"),
    ] {
        let got = parse(&variant).unwrap();
        let Op::Update { hunks, .. } = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(hunks[0].old, ["x", "y"], "{variant:?}");
        assert_eq!(hunks[0].new, ["x", "z"], "{variant:?}");
    }
    // An empty line in a hunk is an empty context line.
    let ops = parse("*** Begin Patch\n*** Update File: a\n@@\n x\n\n-y\n*** End Patch\n").unwrap();
    let Op::Update { hunks, .. } = &ops[0] else {
        panic!()
    };
    assert_eq!(hunks[0].old, ["x", "", "y"]);
    assert_eq!(hunks[0].new, ["x", ""]);
    // A unified diff's `@@ -1,2 +1,2 @@` names no context line.
    let ops = parse("*** Begin Patch\n*** Update File: a\n@@ -1,2 +1,2 @@\n-y\n+z\n*** End Patch")
        .unwrap();
    let Op::Update { hunks, .. } = &ops[0] else {
        panic!()
    };
    assert_eq!(hunks[0].context, None);
}

#[test]
fn errors_name_the_line_and_what_was_expected() {
    let cases: &[(&str, &str)] = &[
        ("", "the patch is empty"),
        (
            "*** Update File: a\n-x\n*** End Patch",
            "line 1: the first line must be `*** Begin Patch`",
        ),
        (
            "*** Begin Patch\n*** Delete File: a\n",
            "the last line must be `*** End Patch`",
        ),
        ("*** Begin Patch\n*** End Patch", "no file operation"),
        (
            "*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
            "line 3: in `*** Add File: a` every line starts with `+`",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End Patch",
            "has no hunk",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
            "hunk 1 of `*** Update File: a` has no lines",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n x\n?y\n*** End Patch",
            "line 5: in hunk 1",
        ),
        (
            "*** Begin Patch\n*** Frobnicate: a\n*** End Patch",
            "line 2: expected `*** Add File: PATH`",
        ),
        (
            "*** Begin Patch\n*** Delete File:   \n*** End Patch",
            "line 2: the file path is empty",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n-x\n*** End of File\n-y\n*** End Patch",
            "line 5: expected `@@`",
        ),
    ];
    for (patch, want) in cases {
        let e = parse(patch).unwrap_err();
        assert!(e.contains(want), "{patch:?}: {e}");
    }
}

#[test]
fn paths_of_an_update_include_the_move_target() {
    let ops = parse("*** Begin Patch\n*** Update File: a\n*** Move to: b/c\n-x\n*** Delete File: d\n*** End Patch").unwrap();
    let all: Vec<&str> = ops.iter().flat_map(|o| o.paths()).collect();
    assert_eq!(all, ["a", "b/c", "d"]);
}
