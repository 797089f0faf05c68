//! Unit tests of the Grep tool: input, search, rendering, limits.

use super::search::*;
use super::*;
use crate::tools::Category;
use crate::tools::parse_input;
use crate::tools::schema;
use crate::tools::test_support::{check_input, exec};
use crate::tools::test_support::{ctx, put};
use regex::bytes::Regex;
use std::fs;
use std::io::Read;
use std::path::PathBuf;

fn write(root: &Path, rel: &str, content: &str) {
    put(root, rel, content);
}

fn run(dir: &Path, input: Value) -> Result<ToolResult, ToolError> {
    exec(&Grep, &ctx(dir), &input)
}

fn ok(dir: &Path, input: Value) -> String {
    let r = run(dir, input).unwrap();
    assert!(!r.is_error);
    r.content
}

fn re(p: &str) -> Regex {
    Matcher::new(p).unwrap().re
}

fn required(p: &str) -> Option<Vec<u8>> {
    Matcher::new(p)
        .unwrap()
        .required
        .map(|f| f.needle().to_vec())
}

#[test]
fn required_literal_extraction() {
    assert_eq!(required(r"\w+_NOTFOUND_\d+"), Some(b"_NOTFOUND_".to_vec()));
    assert_eq!(
        required(r"(fn (parse|lex))_all(x+)"),
        Some(b"_all".to_vec())
    );
    assert_eq!(required(r"(?:ab|cd)+long_one"), Some(b"long_one".to_vec()));
    assert_eq!(required(r"(?:abcdef)+"), Some(b"abcdef".to_vec()));
    assert_eq!(
        required("foo|barbaz"),
        None,
        "alternation: neither side is required"
    );
    assert_eq!(required("(?:needle)?x"), None, "optional: not required");
    assert_eq!(required("ab"), None, "too short to pay off");
    assert_eq!(required("(?i)needle"), None, "case-folded: not one literal");
}

#[test]
fn prefilter_never_hides_a_match() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.txt", "x_NOTFOUND_1\n");
    write(d.path(), "b.txt", "no such thing\n");
    assert_eq!(
        ok(d.path(), json!({"pattern": r"\w+_NOTFOUND_\d+"})),
        "a.txt:1: x_NOTFOUND_1\n"
    );
}

fn line_nos(hits: &[Hit]) -> Vec<usize> {
    hits.iter().map(|h| h.line_no).collect()
}

#[test]
fn schema_agrees_with_struct() {
    let s = Grep.input_schema();
    let full = json!({"pattern": "a+", "path": "src", "glob": "*.rs", "context": 2});
    assert_eq!(schema::validate(&s, &full), Ok(()));
    parse_input::<GrepInput>(&full).unwrap();
    assert_eq!(s["required"], json!(["pattern"]));
    parse_input::<GrepInput>(&json!({"pattern": "x"})).unwrap();
    let e = parse_input::<GrepInput>(&json!({"path": "x"})).unwrap_err();
    assert!(e.message().contains("pattern"), "{e}");
    assert!(schema::validate(&s, &json!({"pattern": "x", "bogus": 1})).is_err());
    assert!(parse_input::<GrepInput>(&json!({"pattern": "x", "bogus": 1})).is_err());
    assert!(schema::validate(&s, &json!({"pattern": "x", "context": 11})).is_err());
    assert_eq!(s["additionalProperties"], json!(false));
    let props = s["properties"].as_object().unwrap();
    assert_eq!(props.len(), 4);
    for (_, p) in props {
        assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
}

#[test]
fn description_states_the_limits() {
    let d = Grep.description();
    assert!(d.contains(&format!("{GREP_MAX_MATCHES} matches")));
    assert!(d.contains(&format!("0-{GREP_MAX_CONTEXT}")));
    assert!(d.contains(&format!("{GREP_MAX_LINE_CHARS} characters")));
    assert!(d.contains(&format!("{} KiB", BINARY_PROBE_BYTES / 1024)));
    assert!(d.contains(&format!("{} MiB", GREP_MAX_FILE_BYTES >> 20)));
    for dir in crate::tools::walk::SKIP_DIRS {
        assert!(d.contains(dir), "{dir}");
    }
}

#[test]
fn metadata_flags() {
    assert!(Grep.is_read_only());
    assert!(!Grep.is_destructive());
    assert!(Grep.is_concurrency_safe());
    assert_eq!(Grep.category(), Category::Search);
}

#[test]
fn buffer_search_line_numbers_and_one_hit_per_line() {
    let buf = b"alpha\nbeta beta\n\ngamma\nbeta\n";
    assert_eq!(
        line_nos(&search_buffer(&re("beta"), buf, 0, 10)),
        vec![2, 5]
    );
    assert_eq!(
        line_nos(&search_buffer(&re("^"), buf, 0, 10)),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(line_nos(&search_buffer(&re("^$"), buf, 0, 10)), vec![3]);
    assert_eq!(
        line_nos(&search_buffer(&re("a$"), buf, 0, 10)),
        vec![1, 2, 4, 5]
    );
    assert_eq!(line_nos(&search_buffer(&re("^ga"), buf, 0, 10)), vec![4]);
    // No trailing newline: the last line still counts; empty buffer has no lines.
    assert_eq!(
        line_nos(&search_buffer(&re("z*"), b"a\nb", 0, 10)),
        vec![1, 2]
    );
    assert!(search_buffer(&re("^"), b"", 0, 10).is_empty());
    // The limit stops the search.
    assert_eq!(line_nos(&search_buffer(&re("^"), buf, 0, 2)), vec![1, 2]);
}

#[test]
fn buffer_search_crlf_and_multiline_spans() {
    let buf = b"foo\r\nbar\r\nfoo bar\r\n";
    let hits = search_buffer(&re("bar$"), buf, 0, 10);
    assert_eq!(line_nos(&hits), vec![2, 3]);
    assert_eq!(hits[0].text, "bar", "trailing \\r is not shown");
    // `\s+` crosses the newline: reported once, on the first line; search resumes after.
    let hits = search_buffer(&re(r"one\s+two"), b"one\ntwo two\none two\n", 0, 10);
    assert_eq!(line_nos(&hits), vec![1, 3]);
    assert_eq!(hits[0].text, "one");
}

#[test]
fn buffer_search_context() {
    let buf = b"1\n2\n3\nX\n5\n6\n";
    let h = &search_buffer(&re("X"), buf, 2, 10)[0];
    assert_eq!(
        (h.line_no, h.before.clone(), h.after.clone()),
        (
            4,
            vec!["2".into(), "3".into()],
            vec!["5".into(), "6".into()]
        )
    );
    let h = &search_buffer(&re("^1"), buf, 3, 10)[0];
    assert!(h.before.is_empty());
    let h = &search_buffer(&re("6"), buf, 3, 10)[0];
    assert!(
        h.after.is_empty(),
        "no phantom line after the final newline: {:?}",
        h.after
    );
}

#[test]
fn long_lines_cut_around_the_match() {
    let line = format!("{}NEEDLE{}", "a".repeat(2_000), "b".repeat(2_000));
    let buf = format!("{line}\n");
    let h = &search_buffer(&re("NEEDLE"), buf.as_bytes(), 0, 10)[0];
    assert!(h.text.contains("NEEDLE"));
    assert!(
        h.text.starts_with(CUT_MARK) && h.text.ends_with(CUT_MARK),
        "{}",
        h.text
    );
    assert_eq!(
        h.text.chars().count(),
        GREP_MAX_LINE_CHARS + 2 * CUT_MARK.chars().count()
    );
    // Multi-byte text is cut on char boundaries; short lines are untouched.
    let s = "é".repeat(GREP_MAX_LINE_CHARS + 10);
    assert_eq!(
        display(s.as_bytes(), None).chars().count(),
        GREP_MAX_LINE_CHARS + CUT_MARK.chars().count()
    );
    assert_eq!(
        display("é".repeat(300).as_bytes(), Some(0)),
        "é".repeat(300)
    );
}

#[test]
fn directory_search_format_and_order() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "src/b.rs", "fn b() {}\nlet x = 1;\nfn bb() {}\n");
    write(d.path(), "src/a.rs", "// nothing\nfn a() {}\n");
    write(d.path(), "README.md", "no functions here\n");
    let out = ok(d.path(), json!({"pattern": r"fn \w+"}));
    assert_eq!(
        out,
        "src/a.rs:2: fn a() {}\nsrc/b.rs:1: fn b() {}\nsrc/b.rs:3: fn bb() {}\n"
    );
    // path: a directory (paths relative to it, with a header) and a single file.
    let out = ok(d.path(), json!({"pattern": r"fn \w+", "path": "src"}));
    assert_eq!(
        out,
        "(paths relative to src)\na.rs:2: fn a() {}\nb.rs:1: fn b() {}\nb.rs:3: fn bb() {}\n"
    );
    let out = ok(d.path(), json!({"pattern": "let", "path": "src/b.rs"}));
    assert_eq!(out, "b.rs:2: let x = 1;\n");
    let abs = d.path().canonicalize().unwrap().join("src/b.rs");
    let r = run(
        d.path(),
        json!({"pattern": "let", "path": abs.to_str().unwrap()}),
    )
    .unwrap();
    assert_eq!(r.content, "b.rs:2: let x = 1;\n");
    assert_eq!(r.metadata["matches"], json!(1));
    assert_eq!(r.metadata["files_with_matches"], json!(1));
    assert_eq!(r.metadata["truncated"], json!(false));
    // Case-insensitive via (?i).
    assert_eq!(
        ok(d.path(), json!({"pattern": "(?i)NO FUNCTIONS"})),
        "README.md:1: no functions here\n"
    );
}

#[test]
fn glob_filter_on_names_and_paths() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.rs", "hit\n");
    write(d.path(), "a.py", "hit\n");
    write(d.path(), "src/deep/b.rs", "hit\n");
    write(d.path(), "lib/c.rs", "hit\n");
    let out = ok(d.path(), json!({"pattern": "hit", "glob": "*.rs"}));
    assert_eq!(out, "a.rs:1: hit\nlib/c.rs:1: hit\nsrc/deep/b.rs:1: hit\n");
    let out = ok(d.path(), json!({"pattern": "hit", "glob": "*.{py,txt}"}));
    assert_eq!(out, "a.py:1: hit\n");
    let out = ok(d.path(), json!({"pattern": "hit", "glob": "src/**/*.rs"}));
    assert_eq!(out, "src/deep/b.rs:1: hit\n");
    let out = ok(d.path(), json!({"pattern": "hit", "glob": "*.java"}));
    assert!(
        out.starts_with("No files matching the glob \"*.java\""),
        "{out}"
    );
    let e = run(d.path(), json!({"pattern": "hit", "glob": "{a"})).unwrap_err();
    assert!(e.message().contains("invalid glob"), "{e}");
}

#[test]
fn context_lines_format_and_groups() {
    let d = tempfile::tempdir().unwrap();
    let body: String = (1..=20)
        .map(|i| {
            if i == 5 || i == 7 || i == 15 {
                format!("hit {i}\n")
            } else {
                format!("l{i}\n")
            }
        })
        .collect();
    write(d.path(), "f.txt", &body);
    write(d.path(), "g.txt", "hit g\nl2\n");
    let out = ok(d.path(), json!({"pattern": "hit", "context": 1}));
    assert_eq!(
        out,
        "f.txt-4- l4\nf.txt:5: hit 5\nf.txt-6- l6\nf.txt:7: hit 7\nf.txt-8- l8\n--\n\
f.txt-14- l14\nf.txt:15: hit 15\nf.txt-16- l16\n--\ng.txt:1: hit g\ng.txt-2- l2\n"
    );
    // Adjacent groups merge without a separator.
    let out = ok(
        d.path(),
        json!({"pattern": "hit", "context": 2, "path": "f.txt"}),
    );
    assert!(out.starts_with("f.txt-3- l3\nf.txt-4- l4\nf.txt:5: hit 5\nf.txt-6- l6\nf.txt:7: hit 7\nf.txt-8- l8\nf.txt-9- l9\n--\nf.txt-13- l13\n"), "{out}");
    let e = run(d.path(), json!({"pattern": "hit", "context": 11})).unwrap_err();
    assert!(e.message().contains("at most 10"), "{e}");
    assert!(check_input(&Grep, &json!({"pattern": "x", "context": 11})).is_err());
}

#[test]
fn binary_files_skipped() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "text.txt", "needle\n");
    let mut bin = b"needle\0\x01\x02".to_vec();
    bin.extend_from_slice(b"needle\n");
    fs::write(d.path().join("blob.bin"), &bin).unwrap();
    // A NUL after the probe window does not make a file binary.
    let mut late = vec![b'a'; BINARY_PROBE_BYTES];
    late.extend_from_slice(b"\nneedle\n\0");
    fs::write(d.path().join("late.dat"), &late).unwrap();
    let r = run(d.path(), json!({"pattern": "needle"})).unwrap();
    assert_eq!(r.content, "late.dat:2: needle\ntext.txt:1: needle\n");
    assert_eq!(r.metadata["binary_skipped"], json!(1));
    let e = run(d.path(), json!({"pattern": "needle", "path": "blob.bin"})).unwrap_err();
    assert!(e.message().contains("binary"), "{e}");
    let out = ok(d.path(), json!({"pattern": "zzz"}));
    assert!(out.contains("1 binary"), "{out}");
}

#[test]
fn skip_list_and_gitignore() {
    let d = tempfile::tempdir().unwrap();
    for dir in crate::tools::walk::SKIP_DIRS {
        write(d.path(), &format!("{dir}/x.txt"), "needle\n");
    }
    write(d.path(), ".gitignore", "gen/\n");
    write(d.path(), "gen/x.txt", "needle\n");
    write(d.path(), ".github/ci.yml", "needle\n");
    assert_eq!(
        ok(d.path(), json!({"pattern": "needle"})),
        ".github/ci.yml:1: needle\n"
    );
    // Asked explicitly, a skipped directory is searched.
    assert_eq!(
        ok(
            d.path(),
            json!({"pattern": "needle", "path": "node_modules"})
        ),
        "(paths relative to node_modules)\nx.txt:1: needle\n"
    );
}

/// A tree where every file matches many times: the cap, the note and determinism.
fn many(d: &Path) {
    for i in 0..60 {
        let body: String = (0..7).map(|j| format!("match {i} {j}\n")).collect();
        write(d, &format!("d{}/f{i:02}.txt", i % 3), &body);
    }
}

#[test]
fn cap_with_note_first_in_path_order_and_deterministic() {
    let d = tempfile::tempdir().unwrap();
    many(d.path());
    let r1 = run(d.path(), json!({"pattern": "match"})).unwrap();
    let lines: Vec<&str> = r1.content.lines().collect();
    assert_eq!(
        lines.len(),
        GREP_MAX_MATCHES + 2,
        "100 matches, a blank line, the note"
    );
    // d0 holds f00, f03, ... f57 (20 files x 7 lines = 140): the first 100 are there.
    assert_eq!(lines[0], "d0/f00.txt:1: match 0 0");
    assert_eq!(lines[99], "d0/f42.txt:2: match 42 1");
    assert!(lines[101].contains("first 100 matches"), "{}", lines[101]);
    assert_eq!(r1.metadata["truncated"], json!(true));
    assert_eq!(r1.metadata["matches"], json!(100));
    for _ in 0..5 {
        let r2 = run(d.path(), json!({"pattern": "match"})).unwrap();
        assert_eq!(r1.content, r2.content);
    }
}

#[test]
fn exactly_the_cap_has_no_note() {
    let d = tempfile::tempdir().unwrap();
    let body: String = (0..GREP_MAX_MATCHES).map(|j| format!("m{j}\n")).collect();
    write(d.path(), "a.txt", &body);
    let r = run(d.path(), json!({"pattern": "m"})).unwrap();
    assert_eq!(r.content.lines().count(), GREP_MAX_MATCHES);
    assert_eq!(r.metadata["truncated"], json!(false));
    write(d.path(), "b.txt", "m\n");
    let r = run(d.path(), json!({"pattern": "m"})).unwrap();
    assert_eq!(r.metadata["truncated"], json!(true));
    assert!(!r.content.contains("b.txt"));
}

#[test]
fn early_stop_leaves_later_files_unsearched() {
    let d = tempfile::tempdir().unwrap();
    many(d.path());
    let mut files: Vec<PathBuf> = (0..60)
        .map(|i| d.path().join(format!("d{}/f{i:02}.txt", i % 3)))
        .collect();
    files.sort_unstable_by(|a, b| path_order(a.as_os_str().as_bytes(), b.as_os_str().as_bytes()));
    // One worker, so the order is fixed: with more, a second worker may finish the later
    // half before the first completes the prefix, and nothing is left to skip.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let outcomes = one.install(|| search_all(&Matcher::new("match").unwrap(), &files, 0));
    // 15 files of 7 matches exceed the cap; everything before is always searched.
    assert!(
        outcomes[..15]
            .iter()
            .all(|o| matches!(o, Outcome::Hits(h) if h.len() == 7))
    );
    assert!(
        outcomes.iter().any(|o| matches!(o, Outcome::Skipped)),
        "some later file is skipped"
    );
}

#[test]
fn failure_modes() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.txt", "x\n");
    let e = run(d.path(), json!({"pattern": "fn ("})).unwrap_err();
    assert!(
        e.message().contains("invalid regex") && e.message().contains("unclosed group"),
        "{e}"
    );
    let e = run(d.path(), json!({"pattern": ""})).unwrap_err();
    assert!(e.message().contains("empty"), "{e}");
    let e = run(d.path(), json!({"pattern": "x", "path": "missing.txt"})).unwrap_err();
    assert!(e.message().contains("missing.txt"), "{e}");
    let out = ok(d.path(), json!({"pattern": "nomatch"}));
    assert_eq!(
        out,
        "No matches for the regex \"nomatch\" in 1 file(s) under the workspace root."
    );
    let out = ok(d.path(), json!({"pattern": "nomatch", "path": "a.txt"}));
    assert_eq!(out, "No matches for the regex \"nomatch\" in a.txt.");
}

#[test]
fn path_outside_workspace_refused() {
    let d = tempfile::tempdir().unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    write(d.path(), "secret.txt", "needle\n");
    let e = run(&ws, json!({"pattern": "needle", "path": ".."})).unwrap_err();
    assert!(e.message().contains("outside the workspace"), "{e}");
    let e = run(&ws, json!({"pattern": "needle", "path": "../secret.txt"})).unwrap_err();
    assert!(e.message().contains("outside the workspace"), "{e}");
    std::os::unix::fs::symlink(d.path().join("secret.txt"), ws.join("link.txt")).unwrap();
    assert!(run(&ws, json!({"pattern": "needle", "path": "link.txt"})).is_err());
    // The walk does not follow the link either.
    write(&ws, "own.txt", "hay\n");
    assert!(ok(&ws, json!({"pattern": "needle"})).starts_with("No matches"));
}

#[test]
fn a_file_swapped_for_a_fifo_or_symlink_after_the_walk_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    crate::tools::paths::test_util::mkfifo(&fifo);
    // Opening returns at once (no writer needed) and reads end of file.
    let mut f =
        crate::tools::paths::test_util::without_hanging(move || open_listed(&fifo).unwrap());
    let mut s = String::new();
    let _ = f.read_to_string(&mut s);
    assert!(s.is_empty());
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
    assert!(open_listed(&link).is_err());
}
