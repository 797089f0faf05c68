//! Unit tests of `edit_file.rs`.

use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

use crate::tools::Category;
use crate::tools::paths::test_util::*;
use crate::tools::test_support::{call, call_err, put};

fn run(ctx: &ToolContext, input: Value) -> Result<ToolResult, ToolError> {
    call(&EditFile, ctx, &input)
}

fn write(ctx: &ToolContext, name: &str, data: impl AsRef<[u8]>) {
    put(&ctx.workspace, name, data);
}

fn read(ctx: &ToolContext, name: &str) -> Vec<u8> {
    std::fs::read(ctx.workspace.join(name)).unwrap()
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"path": path, "old_string": old, "new_string": new})
}

#[test]
fn schema_agrees_with_input_struct() {
    assert_schema_agrees::<Input>(&EditFile.input_schema(), &edit("a.txt", "x", "y"));
}

#[test]
fn tool_properties() {
    assert!(!EditFile.is_read_only());
    assert!(!EditFile.is_destructive());
    assert!(!EditFile.is_concurrency_safe());
    assert_eq!(EditFile.category(), Category::File);
}

#[test]
fn replaces_the_unique_occurrence_and_shows_numbered_lines() {
    let (_g, ctx) = setup();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(&ctx, "f.txt", &body);
    let r = run(&ctx, edit("f.txt", "line 5\n", "line five\nline 5b\n")).unwrap();
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("f.txt")).unwrap(),
        body.replace("line 5\n", "line five\nline 5b\n")
    );
    assert_eq!(
        r.content,
        "Edited f.txt: replaced 1 occurrence at line 5. The file now reads:\n\
             2\tline 2\n3\tline 3\n4\tline 4\n5\tline five\n6\tline 5b\n7\tline 6\n8\tline 7\n9\tline 8"
    );
    assert_eq!(r.metadata["path"], "f.txt");
    assert_eq!(r.metadata["change"], "modified");
    assert_eq!(r.metadata["line"], 5);
}

#[test]
fn snippet_at_the_start_and_end_of_a_file() {
    let (_g, ctx) = setup();
    write(&ctx, "s.txt", "a\nb\n");
    let r = run(&ctx, edit("s.txt", "a", "A")).unwrap();
    assert!(r.content.ends_with("reads:\n1\tA\n2\tb"), "{}", r.content);
    let r = run(&ctx, edit("s.txt", "b\n", "B\n")).unwrap();
    assert!(r.content.ends_with("reads:\n1\tA\n2\tB"), "{}", r.content);
}

#[test]
fn zero_matches_is_an_error_that_changes_nothing() {
    let (_g, ctx) = setup();
    write(&ctx, "f.txt", "hello world\n");
    let e = call_err(&EditFile, &ctx, &edit("f.txt", "goodbye", "x"));
    assert!(
        e.contains("not found") && e.contains("changed since you read it"),
        "{e}"
    );
    assert_eq!(read(&ctx, "f.txt"), b"hello world\n");
    // ReadFile's prefixes copied by mistake get a hint.
    let e = call_err(&EditFile, &ctx, &edit("f.txt", "1\thello world", "x"));
    assert!(e.contains("line-number prefixes"), "{e}");
}

#[test]
fn several_matches_name_the_count_and_change_nothing() {
    let (_g, ctx) = setup();
    write(&ctx, "f.txt", "x = 1\ny = 2\nx = 1\nx = 1\n");
    let e = call_err(&EditFile, &ctx, &edit("f.txt", "x = 1", "x = 3"));
    assert!(
        e.contains("found 3 times, add surrounding context to make it unique"),
        "{e}"
    );
    assert_eq!(read(&ctx, "f.txt"), b"x = 1\ny = 2\nx = 1\nx = 1\n");
    // Overlapping occurrences are ambiguous too.
    write(&ctx, "o.txt", "aaa");
    assert!(call_err(&EditFile, &ctx, &edit("o.txt", "aa", "b")).contains("found 2 times"));
    // With context the edit is unique and succeeds.
    run(&ctx, edit("f.txt", "y = 2\nx = 1", "y = 2\nx = 9")).unwrap();
    assert_eq!(read(&ctx, "f.txt"), b"x = 1\ny = 2\nx = 9\nx = 1\n");
}

#[test]
fn empty_new_string_deletes() {
    let (_g, ctx) = setup();
    write(&ctx, "f.txt", "keep\ndrop me\nkeep too\n");
    let r = run(&ctx, edit("f.txt", "drop me\n", "")).unwrap();
    assert_eq!(read(&ctx, "f.txt"), b"keep\nkeep too\n");
    assert!(
        r.content.contains("deleted the text at line 2"),
        "{}",
        r.content
    );
    write(&ctx, "all.txt", "only\n");
    let r = run(&ctx, edit("all.txt", "only\n", "")).unwrap();
    assert!(r.content.ends_with("(the file is now empty)"));
    assert_eq!(read(&ctx, "all.txt"), b"");
}

#[test]
fn identical_or_empty_old_string_is_an_error() {
    let (_g, ctx) = setup();
    write(&ctx, "f.txt", "abc");
    assert!(call_err(&EditFile, &ctx, &edit("f.txt", "abc", "abc")).contains("identical"));
    assert!(call_err(&EditFile, &ctx, &edit("f.txt", "", "x")).contains("`old_string` is empty"));
    assert!(
        call_err(
            &EditFile,
            &ctx,
            &json!({"path": "f.txt", "old_string": "a"})
        )
        .contains("new_string")
    );
    assert_eq!(read(&ctx, "f.txt"), b"abc");
}

#[test]
fn crlf_file_keeps_crlf_when_the_model_sends_lf() {
    let (_g, ctx) = setup();
    write(&ctx, "w.txt", "one\r\ntwo\r\nthree\r\n");
    let r = run(&ctx, edit("w.txt", "one\ntwo\n", "uno\ndos\ntres\n")).unwrap();
    assert_eq!(read(&ctx, "w.txt"), b"uno\r\ndos\r\ntres\r\nthree\r\n");
    assert_eq!(r.metadata["line_endings"], "crlf");
    assert!(r.content.contains("1\tuno\n2\tdos"), "{}", r.content);
    // A single-line old_string whose replacement adds lines gets CRLF too.
    run(&ctx, edit("w.txt", "three", "3\n4")).unwrap();
    assert_eq!(read(&ctx, "w.txt"), b"uno\r\ndos\r\ntres\r\n3\r\n4\r\n");
    // Strings sent with CRLF work as well.
    run(&ctx, edit("w.txt", "3\r\n4", "34")).unwrap();
    assert_eq!(read(&ctx, "w.txt"), b"uno\r\ndos\r\ntres\r\n34\r\n");
}

#[test]
fn lf_file_stays_lf_when_the_model_sends_crlf() {
    let (_g, ctx) = setup();
    write(&ctx, "u.txt", "a\nb\n");
    run(&ctx, edit("u.txt", "a\r\nb", "x\r\ny")).unwrap();
    assert_eq!(read(&ctx, "u.txt"), b"x\ny\n");
    // Only a line-ending difference is no change at all.
    write(&ctx, "v.txt", "a\nb\n");
    let e = call_err(&EditFile, &ctx, &edit("v.txt", "a\nb", "a\r\nb"));
    assert!(e.contains("only in line endings"), "{e}");
}

#[test]
fn mixed_file_falls_back_to_the_exact_strings() {
    let (_g, ctx) = setup();
    // Mostly CRLF, with one LF line the model quotes exactly.
    write(&ctx, "m.txt", "a\r\nb\r\nc\nd\r\n");
    run(&ctx, edit("m.txt", "c\nd", "C\nD")).unwrap();
    assert_eq!(read(&ctx, "m.txt"), b"a\r\nb\r\nC\nD\r\n");
}

#[test]
fn invalid_utf8_elsewhere_is_preserved() {
    let (_g, ctx) = setup();
    write(&ctx, "l.txt", b"caf\xe9\nname = old\n\xff\n");
    run(&ctx, edit("l.txt", "old", "new")).unwrap();
    assert_eq!(read(&ctx, "l.txt"), b"caf\xe9\nname = new\n\xff\n");
}

#[test]
fn keeps_the_file_mode() {
    let (_g, ctx) = setup();
    let p = ctx.workspace.join("x.sh");
    std::fs::write(&p, "echo a\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    run(&ctx, edit("x.sh", "a", "b")).unwrap();
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
        0o700
    );
    assert_eq!(read(&ctx, "x.sh"), b"echo b\n");
}

#[test]
fn missing_file_directory_and_fifo_are_errors() {
    let (_g, ctx) = setup();
    let e = call_err(&EditFile, &ctx, &edit("nope.txt", "a", "b"));
    assert!(
        e.starts_with("file not found") && e.contains("WriteFile"),
        "{e}"
    );
    assert!(!ctx.workspace.join("nope.txt").exists());
    // A missing directory on the way is the same typed not-found, with the same hint.
    let e = call_err(&EditFile, &ctx, &edit("no/such/file.txt", "a", "b"));
    assert!(
        e.starts_with("file not found") && e.contains("WriteFile"),
        "{e}"
    );
    std::fs::create_dir(ctx.workspace.join("d")).unwrap();
    assert!(call_err(&EditFile, &ctx, &edit("d", "a", "b")).contains("is a directory"));
    mkfifo(&ctx.workspace.join("pipe"));
    let c = ctx.clone();
    let e = without_hanging(move || run(&c, edit("pipe", "a", "b")));
    assert!(e.unwrap_err().message().contains("FIFO"));
}

#[test]
fn edits_outside_or_through_symlinks_are_refused() {
    let (_g, ctx) = setup();
    let out = outside(&ctx);
    symlink(out.join("secret.txt"), ctx.workspace.join("link.txt")).unwrap();
    symlink(&out, ctx.workspace.join("linkdir")).unwrap();
    for p in ["../outside/secret.txt", "link.txt", "linkdir/secret.txt"] {
        let e = call_err(&EditFile, &ctx, &edit(p, "secret", "pwned"));
        assert!(e.contains("outside the workspace"), "{p}: {e}");
    }
    assert_eq!(
        std::fs::read_to_string(out.join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[test]
fn occurrences_counts_overlaps_in_text_and_bytes() {
    assert_eq!(occurrences(b"abcabc", b"abc"), (2, Some(0)));
    assert_eq!(occurrences("ééé".as_bytes(), "éé".as_bytes()), (2, Some(0)));
    assert_eq!(occurrences(b"\xffaa\xffaa", b"aa"), (2, Some(1)));
    assert_eq!(occurrences(b"ab", b"abc"), (0, None));
}
