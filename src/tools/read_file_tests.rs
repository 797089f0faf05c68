//! Unit tests of `read_file.rs`.

use super::*;
use crate::tools::Category;
use crate::tools::paths::test_util::*;
use crate::tools::test_support::{call, call_err, put};

fn run(ctx: &ToolContext, input: Value) -> Result<ToolResult, ToolError> {
    call(&ReadFile, ctx, &input)
}

fn err(ctx: &ToolContext, input: Value) -> String {
    call_err(&ReadFile, ctx, &input)
}

fn write(ctx: &ToolContext, name: &str, data: impl AsRef<[u8]>) {
    put(&ctx.workspace, name, data);
}

fn numbered(range: std::ops::RangeInclusive<u64>) -> String {
    range.map(|i| format!("line {i}\n")).collect()
}

#[test]
fn schema_agrees_with_input_struct() {
    assert_schema_agrees::<Input>(
        &ReadFile.input_schema(),
        &json!({"path": "a.txt", "offset": 2, "limit": 10}),
    );
}

#[test]
fn tool_properties() {
    assert!(ReadFile.is_read_only());
    assert!(!ReadFile.is_destructive());
    assert!(ReadFile.is_concurrency_safe());
    assert_eq!(ReadFile.category(), Category::File);
    assert_eq!(ReadFile.max_result_chars(), None);
}

#[test]
fn numbers_lines_from_one_and_reports_metadata() {
    let (_g, ctx) = setup();
    write(&ctx, "src/a.txt", "alpha\nbeta\n\ngamma");
    let r = run(&ctx, json!({"path": "src/a.txt"})).unwrap();
    assert_eq!(r.content, "1\talpha\n2\tbeta\n3\t\n4\tgamma");
    assert!(!r.is_error);
    assert_eq!(r.metadata["path"], "src/a.txt");
    assert_eq!(r.metadata["lines_returned"], 4);
    assert_eq!(r.metadata["total_lines"], 4);
    assert_eq!(r.metadata["bytes"], 17);
}

#[test]
fn absolute_path_inside_and_crlf_shown_without_cr() {
    let (_g, ctx) = setup();
    write(&ctx, "w.txt", "a\r\nb\r\n");
    let abs = ctx.workspace.join("w.txt");
    let r = run(&ctx, json!({"path": abs.to_str().unwrap()})).unwrap();
    assert_eq!(r.content, "1\ta\n2\tb");
}

#[test]
fn offset_and_limit_window_with_a_continue_note() {
    let (_g, ctx) = setup();
    write(&ctx, "n.txt", numbered(1..=10));
    let r = run(&ctx, json!({"path": "n.txt", "offset": 3, "limit": 2})).unwrap();
    assert_eq!(
        r.content,
        "3\tline 3\n4\tline 4\n\n[Showing lines 3-4 of 10. More lines remain: call ReadFile with offset=5 to continue.]"
    );
    assert_eq!(r.metadata["total_lines"], 10);
    // The last window has no note.
    let r = run(&ctx, json!({"path": "n.txt", "offset": 9, "limit": 5})).unwrap();
    assert_eq!(r.content, "9\tline 9\n10\tline 10");
    // Exactly at the end: no note either.
    let r = run(&ctx, json!({"path": "n.txt", "offset": 9, "limit": 2})).unwrap();
    assert!(!r.content.contains("More lines"));
}

#[test]
fn default_limit_is_2000_lines() {
    let (_g, ctx) = setup();
    write(&ctx, "big.txt", numbered(1..=2500));
    let r = run(&ctx, json!({"path": "big.txt"})).unwrap();
    assert_eq!(r.metadata["lines_returned"], 2000);
    assert!(
        r.content
            .contains("2000\tline 2000\n\n[Showing lines 1-2000 of 2500.")
    );
    assert!(r.content.ends_with("offset=2001 to continue.]"));
    assert!(!r.content.contains("line 2001"));
}

#[test]
fn long_lines_are_cut_with_a_marker() {
    let (_g, ctx) = setup();
    let long = "é".repeat(5000); // multi-byte, so the byte cap is exercised too
    write(&ctx, "long.txt", format!("{long}\nshort\n"));
    let r = run(&ctx, json!({"path": "long.txt"})).unwrap();
    let first = r.content.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("1\t{}…", "é".repeat(2000))),
        "{}",
        &first[..20]
    );
    assert!(first.contains("line cut at 2000 characters; it has 10000 bytes"));
    assert!(r.content.ends_with("2\tshort"));
    assert_eq!(r.metadata["lines_cut"], 1);
    // Exactly 2000 characters is not cut.
    write(&ctx, "exact.txt", "x".repeat(2000));
    let r = run(&ctx, json!({"path": "exact.txt"})).unwrap();
    assert_eq!(r.content, format!("1\t{}", "x".repeat(2000)));
}

#[test]
fn a_huge_line_is_read_with_bounded_memory() {
    let (_g, ctx) = setup();
    write(&ctx, "min.js", format!("{}\nend\n", "a".repeat(3_000_000)));
    let r = run(&ctx, json!({"path": "min.js"})).unwrap();
    assert!(r.content.len() < 3_000);
    assert!(r.content.ends_with("2\tend"));
}

#[test]
fn output_budget_cuts_a_window_with_the_next_offset() {
    let (_g, ctx) = setup();
    // 600 lines of 1500 chars is ~900 KB, over the 512 KB budget.
    let line = "y".repeat(1500);
    write(&ctx, "wide.txt", format!("{line}\n").repeat(600));
    let r = run(&ctx, json!({"path": "wide.txt"})).unwrap();
    assert!(r.content.len() <= MAX_OUTPUT_BYTES + 200);
    let shown = r.metadata["lines_returned"].as_u64().unwrap();
    assert!(shown > 100 && shown < 600, "{shown}");
    assert!(r.content.contains("output size limit reached"));
    assert!(r.content.contains(&format!("offset={}", shown + 1)));
    assert_eq!(r.metadata["total_lines"], 600);
}

#[test]
fn invalid_utf8_is_shown_lossily() {
    let (_g, ctx) = setup();
    write(&ctx, "latin1.txt", b"caf\xe9\nok\n");
    let r = run(&ctx, json!({"path": "latin1.txt"})).unwrap();
    assert_eq!(r.content, "1\tcaf\u{fffd}\n2\tok");
}

#[test]
fn empty_file_says_so() {
    let (_g, ctx) = setup();
    write(&ctx, "empty.txt", "");
    let r = run(&ctx, json!({"path": "empty.txt"})).unwrap();
    assert!(!r.is_error);
    assert_eq!(r.content, "empty.txt is empty (0 bytes).");
    assert_eq!(r.metadata["total_lines"], 0);
}

#[test]
fn binary_file_is_refused_suggesting_bash() {
    let (_g, ctx) = setup();
    write(&ctx, "bin.dat", b"\x7fELF\x00\x01rest");
    let e = err(&ctx, json!({"path": "bin.dat"}));
    assert!(e.contains("binary") && e.contains("Bash"), "{e}");
    // A NUL after the first 512 bytes does not make it binary.
    let mut late = vec![b'a'; 600];
    late.push(0);
    write(&ctx, "late.txt", late);
    assert!(run(&ctx, json!({"path": "late.txt"})).is_ok());
}

#[test]
fn offset_past_the_end_says_how_many_lines() {
    let (_g, ctx) = setup();
    write(&ctx, "three.txt", "a\nb\nc\n");
    let e = err(&ctx, json!({"path": "three.txt", "offset": 4}));
    assert!(
        e.contains("past the end") && e.contains("has 3 lines"),
        "{e}"
    );
    let e = err(&ctx, json!({"path": "three.txt", "offset": 100}));
    assert!(e.contains("has 3 lines"), "{e}");
    assert!(run(&ctx, json!({"path": "three.txt", "offset": 3})).is_ok());
}

#[test]
fn distinct_errors_for_each_failure() {
    let (_g, ctx) = setup();
    std::fs::create_dir(ctx.workspace.join("dir")).unwrap();
    assert!(err(&ctx, json!({"path": "missing.txt"})).starts_with("file not found"));
    assert!(err(&ctx, json!({"path": "dir"})).contains("is a directory"));
    assert!(err(&ctx, json!({"path": "../outside/secret.txt"})).contains("outside the workspace"));
    assert!(err(&ctx, json!({"path": ""})).contains("empty"));
    assert!(err(&ctx, json!({"path": "a", "offset": 0})).contains("1-based"));
    assert!(err(&ctx, json!({"path": "a", "limit": 0})).contains("at least 1"));
    assert!(err(&ctx, json!({"path": "a", "bogus": 1})).contains("bogus"));
}

#[test]
fn symlinks_pointing_out_are_refused() {
    let (_g, ctx) = setup();
    let out = outside(&ctx);
    std::os::unix::fs::symlink(out.join("secret.txt"), ctx.workspace.join("s.txt")).unwrap();
    std::os::unix::fs::symlink(&out, ctx.workspace.join("d")).unwrap();
    for p in ["s.txt", "d/secret.txt"] {
        let e = err(&ctx, json!({"path": p}));
        assert!(
            e.contains("outside the workspace") && !e.contains("secret\n"),
            "{e}"
        );
    }
}

#[test]
fn reads_a_spilled_result_outside_the_workspace() {
    let (_g, ctx) = setup();
    let spilled = ctx.spill_dir.join("result-x.txt");
    std::fs::write(&spilled, "full output\n").unwrap();
    let r = run(&ctx, json!({"path": spilled.to_str().unwrap()})).unwrap();
    assert_eq!(r.content, "1\tfull output");
}

#[test]
fn a_fifo_is_refused_without_hanging() {
    let (_g, ctx) = setup();
    mkfifo(&ctx.workspace.join("pipe"));
    let c = ctx.clone();
    let e = without_hanging(move || run(&c, json!({"path": "pipe"})));
    assert!(e.unwrap_err().message().contains("FIFO"));
}

/// A reader that counts the reads made of it (each is a `read` syscall on a file).
struct Counted<'a> {
    data: &'a [u8],
    reads: usize,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        let n = buf.len().min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn window(size: u64) -> Window {
    Window {
        offset: 1,
        limit: 100,
        count_rest: true,
        size,
    }
}

#[test]
fn a_small_file_is_read_in_one_read_and_one_more_that_finds_its_end() {
    let text = b"one\ntwo\nthree\n";
    let mut r = Counted {
        data: text,
        reads: 0,
    };
    let Outcome::Lines(shown) = read_window(&mut r, &window(text.len() as u64)).unwrap() else {
        panic!("not shown");
    };
    assert_eq!(shown.returned, 3);
    assert_eq!(r.reads, 2, "the sniff, then the read that returns 0");
    // Size unknown (0, as some filesystems report): the sniff reads to its own end first.
    let mut r = Counted {
        data: text,
        reads: 0,
    };
    let Outcome::Lines(shown) = read_window(&mut r, &window(0)).unwrap() else {
        panic!("not shown");
    };
    assert_eq!(shown.returned, 3);
    assert_eq!(r.reads, 3);
    // A file that grew after it was opened is still read to its end.
    let mut r = Counted {
        data: text,
        reads: 0,
    };
    let Outcome::Lines(shown) = read_window(&mut r, &window(4)).unwrap() else {
        panic!("not shown");
    };
    assert_eq!(shown.returned, 3);
}
