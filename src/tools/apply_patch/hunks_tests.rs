//! Unit tests of `hunks.rs`: matching tolerance, order, end of file, line endings, and
//! the error of a hunk that matches nowhere.

use super::super::parse::parse;
use super::*;

/// The hunks of a one-file Update patch whose body is `body`.
fn hunks_of(body: &str) -> Vec<Hunk> {
    match parse(&format!(
        "*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"
    ))
    .unwrap()
    .remove(0)
    {
        super::super::parse::Op::Update { hunks, .. } => hunks,
        other => panic!("{other:?}"),
    }
}

#[test]
fn exact_then_trailing_whitespace_then_indentation_then_punctuation() {
    let file = "fn a() {\n    let x = 1;   \n  let y = 2;\n}\n";
    let got = apply(
        file,
        &hunks_of(" fn a() {\n-    let x = 1;\n+    let x = 10;"),
    )
    .unwrap();
    assert_eq!(got, "fn a() {\n    let x = 10;\n  let y = 2;\n}\n");
    let got = apply(file, &hunks_of("-let y = 2;\n+let y = 20;")).unwrap();
    assert_eq!(got, "fn a() {\n    let x = 1;   \nlet y = 20;\n}\n");
    let got = apply(
        "say(\u{201C}hi\u{201D}) \u{2014} ok\n",
        &hunks_of("-say(\"hi\") - ok\n+done"),
    )
    .unwrap();
    assert_eq!(got, "done\n");
}

#[test]
fn hunks_apply_in_order_after_their_context_line() {
    let file = "x = 1\nfn one() {\n  x = 1\n}\nfn two() {\n  x = 1\n}\n";
    let got = apply(file, &hunks_of("@@ fn two() {\n-  x = 1\n+  x = 2")).unwrap();
    assert_eq!(
        got,
        "x = 1\nfn one() {\n  x = 1\n}\nfn two() {\n  x = 2\n}\n"
    );
    let got = apply(
        file,
        &hunks_of("@@ fn one() {\n-  x = 1\n+  x = 9\n@@ fn two() {\n-  x = 1\n+  x = 8"),
    )
    .unwrap();
    assert_eq!(
        got,
        "x = 1\nfn one() {\n  x = 9\n}\nfn two() {\n  x = 8\n}\n"
    );
    // Pure additions after a context line, and at the end without one.
    let got = apply("a\nb\n", &hunks_of("@@ a\n+a2")).unwrap();
    assert_eq!(got, "a\na2\nb\n");
    let got = apply("a\nb\n", &hunks_of("+c")).unwrap();
    assert_eq!(got, "a\nb\nc\n");
}

#[test]
fn end_of_file_matches_the_last_occurrence() {
    let file = "end\nmiddle\nend\n";
    let got = apply(file, &hunks_of("-end\n+END\n*** End of File")).unwrap();
    assert_eq!(got, "end\nmiddle\nEND\n");
    let got = apply(file, &hunks_of("-end\n+END")).unwrap();
    assert_eq!(got, "END\nmiddle\nend\n");
}

#[test]
fn crlf_files_stay_crlf_and_a_missing_final_newline_stays_missing() {
    let got = apply("a\r\nb\r\nc\r\n", &hunks_of(" a\n-b\n+B\n+B2")).unwrap();
    assert_eq!(got, "a\r\nB\r\nB2\r\nc\r\n");
    let got = apply("a\nb", &hunks_of(" a\n-b\n+c")).unwrap();
    assert_eq!(got, "a\nc");
    let got = apply("a\nb", &hunks_of("+z\n*** End of File")).unwrap();
    assert_eq!(got, "a\nb\nz");
    // The hunk's trailing empty line may stand for the final newline.
    let got = apply("a\nb\n", &hunks_of(" a\n-b\n+c\n")).unwrap();
    assert_eq!(got, "a\nc\n");
}

#[test]
fn a_hunk_that_matches_nowhere_names_itself_and_the_nearest_lines() {
    let file = "one\ntwo\nlet total = sum(values);\nfour\nfive\n";
    let e = apply(
        file,
        &hunks_of(" one\n-two\n+2\n@@\n-let total = sum(vals);\n+x"),
    )
    .unwrap_err();
    assert!(e.message.contains("hunk 2 (patch line 6)"), "{}", e.message);
    assert!(
        e.message.contains("nearest lines of the file (line 3)"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("     3\tlet total = sum(values);"),
        "{}",
        e.message
    );
    let e = apply(file, &hunks_of("@@ fn missing()\n-one\n+1")).unwrap_err();
    assert!(
        e.message
            .contains("the context line `@@ fn missing()` is not in the file"),
        "{}",
        e.message
    );
    let e = apply("", &hunks_of("-x\n+y")).unwrap_err();
    assert!(e.message.contains("The file is empty"), "{}", e.message);
}
