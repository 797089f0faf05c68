//! Unit tests of the Glob tool.

use super::*;

use crate::tools::Category;
use crate::tools::parse_input;
use crate::tools::schema;
use crate::tools::test_support::{check_input, exec};
use crate::tools::test_support::{ctx, put};
use std::fs;
use std::path::Path;
use std::time::Duration;

fn touch(root: &Path, rel: &str) {
    put(root, rel, "x\n");
}

/// Sets a file's mtime to `secs` after the epoch, so that "newest first" is testable.
fn set_mtime(root: &Path, rel: &str, secs: u64) {
    let f = fs::File::options()
        .write(true)
        .open(root.join(rel))
        .unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

fn run(dir: &Path, input: Value) -> Result<ToolResult, ToolError> {
    exec(&Glob, &ctx(dir), &input)
}

fn lines(r: &ToolResult) -> Vec<&str> {
    r.content.lines().collect()
}

#[test]
fn schema_agrees_with_struct() {
    let s = Glob.input_schema();
    let full = json!({"pattern": "**/*.rs", "path": "src"});
    assert_eq!(schema::validate(&s, &full), Ok(()));
    parse_input::<GlobInput>(&full).unwrap();
    // Required set equals the non-optional fields.
    assert_eq!(s["required"], json!(["pattern"]));
    parse_input::<GlobInput>(&json!({"pattern": "x"})).unwrap();
    let e = parse_input::<GlobInput>(&json!({"path": "x"})).unwrap_err();
    assert!(e.message().contains("pattern"), "{e}");
    // Both reject unknown fields; every schema property has a description.
    assert!(schema::validate(&s, &json!({"pattern": "x", "bogus": 1})).is_err());
    assert!(parse_input::<GlobInput>(&json!({"pattern": "x", "bogus": 1})).is_err());
    assert_eq!(s["additionalProperties"], json!(false));
    for (_, p) in s["properties"].as_object().unwrap() {
        assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
    assert_eq!(s["properties"].as_object().unwrap().len(), 2);
}

#[test]
fn description_states_the_limits() {
    let d = Glob.description();
    assert!(d.contains(&GLOB_MAX_RESULTS.to_string()));
    for dir in crate::tools::walk::SKIP_DIRS {
        assert!(d.contains(dir), "{dir}");
    }
    assert!(d.contains(".gitignore") && d.contains("Grep"));
}

#[test]
fn metadata_flags() {
    assert!(Glob.is_read_only());
    assert!(!Glob.is_destructive());
    assert!(Glob.is_concurrency_safe());
    assert_eq!(Glob.category(), Category::Search);
}

#[test]
fn star_does_not_cross_slash_but_double_star_does() {
    let d = tempfile::tempdir().unwrap();
    touch(d.path(), "top.rs");
    touch(d.path(), "src/a.rs");
    touch(d.path(), "src/deep/b.rs");
    touch(d.path(), "src/c.txt");
    let mut top = lines(&run(d.path(), json!({"pattern": "*.rs"})).unwrap())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    top.sort();
    assert_eq!(top, vec!["top.rs"]);
    let r = run(d.path(), json!({"pattern": "**/*.rs"})).unwrap();
    let mut all = lines(&r);
    all.sort();
    assert_eq!(all, vec!["src/a.rs", "src/deep/b.rs", "top.rs"]);
    let r = run(d.path(), json!({"pattern": "src/*.rs"})).unwrap();
    assert_eq!(lines(&r), vec!["src/a.rs"]);
    let r = run(d.path(), json!({"pattern": "src/**/*.{rs,txt}"})).unwrap();
    let mut v = lines(&r);
    v.sort();
    assert_eq!(v, vec!["src/a.rs", "src/c.txt", "src/deep/b.rs"]);
    assert_eq!(r.metadata["matches"], json!(3));
    assert_eq!(r.metadata["truncated"], json!(false));
}

#[test]
fn skip_list_and_gitignore_in_a_non_git_dir() {
    let d = tempfile::tempdir().unwrap();
    for dir in crate::tools::walk::SKIP_DIRS {
        touch(d.path(), &format!("{dir}/x.rs"));
        touch(d.path(), &format!("sub/{dir}/x.rs"));
    }
    fs::write(d.path().join(".gitignore"), "ignored/\n*.gen.rs\n").unwrap();
    touch(d.path(), "ignored/x.rs");
    touch(d.path(), "a.gen.rs");
    touch(d.path(), "keep.rs");
    touch(d.path(), ".hidden/h.rs");
    let r = run(d.path(), json!({"pattern": "**/*.rs"})).unwrap();
    let mut v = lines(&r);
    v.sort();
    assert_eq!(v, vec![".hidden/h.rs", "keep.rs"]);
}

#[test]
fn files_only() {
    let d = tempfile::tempdir().unwrap();
    touch(d.path(), "src/a.rs");
    fs::create_dir_all(d.path().join("dir.rs")).unwrap();
    let r = run(d.path(), json!({"pattern": "**/*.rs"})).unwrap();
    assert_eq!(lines(&r), vec!["src/a.rs"]);
    let r = run(d.path(), json!({"pattern": "src"})).unwrap();
    assert!(r.content.starts_with("No files match"), "{}", r.content);
    let r = run(d.path(), json!({"pattern": "src/"})).unwrap();
    assert!(
        r.content.contains("is a directory") && r.content.contains("\"src/**\""),
        "{}",
        r.content
    );
}

#[test]
fn newest_first_with_path_tie_break() {
    let d = tempfile::tempdir().unwrap();
    for f in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        touch(d.path(), f);
    }
    set_mtime(d.path(), "a.txt", 1_000);
    set_mtime(d.path(), "b.txt", 3_000);
    set_mtime(d.path(), "c.txt", 2_000);
    set_mtime(d.path(), "d.txt", 3_000);
    let r = run(d.path(), json!({"pattern": "*.txt"})).unwrap();
    assert_eq!(lines(&r), vec!["b.txt", "d.txt", "c.txt", "a.txt"]);
}

#[test]
fn cap_with_note_keeps_the_newest() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..250 {
        let f = format!("f/{i:03}.txt");
        touch(d.path(), &f);
        set_mtime(d.path(), &f, 10_000 + i);
    }
    let r = run(d.path(), json!({"pattern": "**/*.txt"})).unwrap();
    let v = lines(&r);
    assert_eq!(
        v.len(),
        GLOB_MAX_RESULTS + 2,
        "200 paths, a blank line, the note"
    );
    assert_eq!(v[0], "f/249.txt");
    assert_eq!(v[199], "f/050.txt");
    assert!(
        v[201].contains("200 most recently modified of 250"),
        "{}",
        v[201]
    );
    assert_eq!(r.metadata["matches"], json!(250));
    assert_eq!(r.metadata["truncated"], json!(true));
    // Exactly at the cap: no note.
    let r = run(d.path(), json!({"pattern": "f/[0-1]*.txt"})).unwrap();
    assert_eq!(lines(&r).len(), 200);
    assert_eq!(r.metadata["truncated"], json!(false));
}

#[test]
fn paths_relative_to_the_search_root() {
    let d = tempfile::tempdir().unwrap();
    touch(d.path(), "src/x/a.rs");
    let r = run(d.path(), json!({"pattern": "**/*.rs", "path": "src"})).unwrap();
    assert_eq!(lines(&r), vec!["(paths relative to src)", "x/a.rs"]);
    let abs = d.path().canonicalize().unwrap().join("src");
    let r = run(
        d.path(),
        json!({"pattern": "x/*.rs", "path": abs.to_str().unwrap()}),
    )
    .unwrap();
    assert_eq!(lines(&r), vec!["(paths relative to src)", "x/a.rs"]);
    // An absolute pattern under the root and a leading ./ are accepted.
    let pat = format!("{}/**/*.rs", abs.display());
    let r = run(d.path(), json!({"pattern": pat, "path": "src"})).unwrap();
    assert_eq!(lines(&r), vec!["(paths relative to src)", "x/a.rs"]);
    let r = run(d.path(), json!({"pattern": "./src/**/*.rs"})).unwrap();
    assert_eq!(lines(&r), vec!["src/x/a.rs"]);
}

#[test]
fn path_outside_workspace_refused() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    touch(outside.path(), "secret.rs");
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    assert!(run(&ws, json!({"pattern": "**/*", "path": ".."})).is_err());
    let e = run(
        &ws,
        json!({"pattern": "**/*", "path": outside.path().to_str().unwrap()}),
    )
    .unwrap_err();
    assert!(e.message().contains("outside the workspace"), "{e}");
    // An absolute pattern elsewhere is refused too, not silently matched.
    let pat = format!("{}/*.rs", outside.path().display());
    let e = run(&ws, json!({"pattern": pat})).unwrap_err();
    assert!(e.message().contains("absolute"), "{e}");
}

#[test]
fn failure_modes() {
    let d = tempfile::tempdir().unwrap();
    touch(d.path(), "a.rs");
    let e = run(d.path(), json!({"pattern": "src/[a"})).unwrap_err();
    assert!(
        e.message().contains("invalid glob pattern") && e.message().contains("unclosed"),
        "{e}"
    );
    let e = run(d.path(), json!({"pattern": "../*.rs"})).unwrap_err();
    assert!(e.message().contains("`..`"), "{e}");
    let e = run(d.path(), json!({"pattern": "*", "path": "a.rs"})).unwrap_err();
    assert!(e.message().contains("not a directory"), "{e}");
    let e = run(d.path(), json!({"pattern": "*", "path": "missing"})).unwrap_err();
    assert!(e.message().contains("missing"), "{e}");
    assert!(check_input(&Glob, &json!({"pattern": "  "})).is_err());
    assert!(check_input(&Glob, &json!({"pattern": "*"})).is_ok());
}

#[test]
fn no_match_message_hints_recursion() {
    let d = tempfile::tempdir().unwrap();
    touch(d.path(), "src/a.py");
    let r = run(d.path(), json!({"pattern": "*.py"})).unwrap();
    assert!(!r.is_error);
    assert!(
        r.content.contains("No files match") && r.content.contains("\"**/*.py\""),
        "{}",
        r.content
    );
    assert_eq!(r.metadata["matches"], json!(0));
}
