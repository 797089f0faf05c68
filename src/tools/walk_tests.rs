//! Unit tests of `walk.rs`.

use super::*;
use std::fs;

fn walk(root: &Path) -> Vec<String> {
    let mut v = collect_files(root, |_, rel| Some(rel.to_string())).items;
    v.sort_by(|a, b| path_order(a.as_bytes(), b.as_bytes()));
    v
}

fn touch(root: &Path, rel: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, "x\n").unwrap();
}

#[test]
fn skips_the_skip_list_and_keeps_hidden_files() {
    let d = tempfile::tempdir().unwrap();
    for dir in SKIP_DIRS {
        touch(d.path(), &format!("{dir}/f.txt"));
        touch(d.path(), &format!("src/{dir}/f.txt"));
    }
    touch(d.path(), "src/target.rs"); // a file named like a skipped dir is kept...
    touch(d.path(), ".github/workflows/ci.yml");
    touch(d.path(), ".env.example");
    fs::write(d.path().join("sub.git"), "").unwrap();
    let got = walk(d.path());
    assert_eq!(
        got,
        vec![
            ".env.example",
            ".github/workflows/ci.yml",
            "src/target.rs",
            "sub.git"
        ]
    );
}

#[test]
fn dot_git_file_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
    touch(d.path(), "a.txt");
    assert_eq!(walk(d.path()), vec!["a.txt"]);
}

#[test]
fn gitignore_honoured_without_a_repository() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(".gitignore"), "*.log\nbuild/\n").unwrap();
    touch(d.path(), "a.log");
    touch(d.path(), "build/out.txt");
    touch(d.path(), "src/keep.rs");
    touch(d.path(), "src/deep.log");
    assert_eq!(walk(d.path()), vec![".gitignore", "src/keep.rs"]);
    // Outside git, ignore files above the searched directory are not read.
    assert_eq!(walk(&d.path().join("src")), vec!["deep.log", "keep.rs"]);
}

#[test]
fn parent_gitignore_applies_within_a_repository_only() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(".gitignore"), "*.rs\n").unwrap();
    touch(d.path(), "ws/src/a.rs");
    touch(d.path(), "ws/src/b.txt");
    // The workspace is not versioned: the stray parent .gitignore does not apply.
    assert_eq!(walk(&d.path().join("ws")), vec!["src/a.rs", "src/b.txt"]);
    // The workspace is its own repository: git would not apply it either.
    fs::create_dir(d.path().join("ws/.git")).unwrap();
    assert_eq!(walk(&d.path().join("ws")), vec!["src/a.rs", "src/b.txt"]);
    // A subdirectory of a repository: the repository's .gitignore applies, as in git.
    fs::write(d.path().join("ws/.gitignore"), "*.txt\n").unwrap();
    assert_eq!(walk(&d.path().join("ws/src")), vec!["a.rs"]);
}

#[test]
fn explicit_root_inside_a_skipped_dir_is_walked() {
    let d = tempfile::tempdir().unwrap();
    touch(d.path(), "target/doc/index.html");
    assert_eq!(walk(&d.path().join("target/doc")), vec!["index.html"]);
}

#[test]
fn symlinks_are_not_listed_or_followed() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    touch(outside.path(), "secret.txt");
    touch(d.path(), "real.txt");
    std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
    std::os::unix::fs::symlink(d.path().join("real.txt"), d.path().join("link.txt")).unwrap();
    assert_eq!(walk(d.path()), vec!["real.txt"]);
}

#[test]
fn path_order_groups_directories() {
    let mut v = vec!["a-c", "a/b", "a.txt", "a/a/z", "B"];
    v.sort_by(|a, b| path_order(a.as_bytes(), b.as_bytes()));
    assert_eq!(v, vec!["B", "a/a/z", "a/b", "a-c", "a.txt"]);
}

#[test]
fn relative_of_root_file_is_its_name() {
    assert_eq!(
        relative(Path::new("/w/src/a.rs"), Path::new("/w/src/a.rs")),
        "a.rs"
    );
    assert_eq!(
        relative(Path::new("/w"), Path::new("/w/src/a.rs")),
        "src/a.rs"
    );
}
