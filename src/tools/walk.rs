//! The directory walk shared by Glob and Grep: one place that decides which files a search
//! sees (the skip list, `.gitignore`, hidden files, symlinks) and walks them in parallel
//! with the `ignore` crate (ripgrep's walker), plus the one path order both tools sort by.
//!
//! Decisions, repeated in the tools' descriptions:
//! - Directories named in `SKIP_DIRS` are never entered below the search root (a search
//!   rooted inside one, e.g. `path: "target/doc"`, is an explicit request and is walked).
//! - `.gitignore`, `.ignore` and `.git/info/exclude` are honoured also outside a git
//!   repository. Inside one, ignore files of parent directories apply up to the
//!   repository's root, as in git; outside one, only those inside the searched directory
//!   (a stray `.gitignore` above an unversioned workspace, e.g. a home directory's, must
//!   not hide the workspace's files).
//! - Hidden files and directories (`.github/`, `.env.example`) are included: a coding
//!   agent needs CI configs and dotfiles, and the skip list already removes `.git`.
//! - Symbolic links are not followed and not listed: a link may point outside the
//!   workspace, and every file the tools report must be readable by ReadFile.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Mutex;

use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use super::paths::shown;

/// Directory names never searched: VCS metadata, dependencies, build output, caches.
pub(crate) const SKIP_DIRS: [&str; 6] = [
    ".git",
    "node_modules",
    "vendor",
    ".idea",
    "__pycache__",
    "target",
];

/// Whether the walk must not enter (or report) this entry. `.git` is skipped also as a
/// file (a worktree's `.git` is a file pointing at the real repository).
fn is_skipped(entry: &DirEntry) -> bool {
    let name = entry.file_name();
    if name == ".git" {
        return true;
    }
    entry.file_type().is_some_and(|t| t.is_dir()) && SKIP_DIRS.iter().any(|d| name == *d)
}

/// The walker configuration both tools use (see the module comment for the decisions).
fn builder(root: &Path) -> WalkBuilder {
    let in_git = root.ancestors().any(|d| d.join(".git").exists());
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        // In a repository the walker stops applying parents' ignore files at its root
        // (`require_git`); outside one it has no such bound, so parents are not read.
        .parents(in_git)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(in_git)
        .follow_links(false)
        .filter_entry(|e| !is_skipped(e));
    b
}

/// What a walk collected, in no particular order.
pub(crate) struct Walked<T> {
    pub(crate) items: Vec<T>,
    /// Entries that could not be read (permission denied, vanished during the walk).
    pub(crate) errors: usize,
}

/// Walks `root` in parallel and keeps `keep(entry, relative_path)` for every regular file
/// where it returns `Some`. `relative_path` is relative to `root`, `/`-separated. Each
/// walker thread collects into its own vector; they are merged once at the end.
pub(crate) fn collect_files<T, F>(root: &Path, keep: F) -> Walked<T>
where
    T: Send,
    F: Fn(&DirEntry, &str) -> Option<T> + Sync,
{
    let sink = Mutex::new(Walked {
        items: Vec::new(),
        errors: 0,
    });
    let mut visitors = Builder {
        root,
        keep: &keep,
        sink: &sink,
    };
    builder(root).build_parallel().visit(&mut visitors);
    sink.into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Builder<'a, T, F> {
    root: &'a Path,
    keep: &'a F,
    sink: &'a Mutex<Walked<T>>,
}

impl<'s, T, F> ParallelVisitorBuilder<'s> for Builder<'s, T, F>
where
    T: Send,
    F: Fn(&DirEntry, &str) -> Option<T> + Sync,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            keep: self.keep,
            sink: self.sink,
            local: Walked {
                items: Vec::new(),
                errors: 0,
            },
        })
    }
}

/// One walker thread's visitor; hands its results to the shared sink when dropped (the
/// walker drops every visitor before `visit` returns).
struct Visitor<'a, T, F> {
    root: &'a Path,
    keep: &'a F,
    sink: &'a Mutex<Walked<T>>,
    local: Walked<T>,
}

impl<T, F> ParallelVisitor for Visitor<'_, T, F>
where
    T: Send,
    F: Fn(&DirEntry, &str) -> Option<T> + Sync,
{
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let entry = match entry {
            Ok(e) => e,
            Err(_) => {
                self.local.errors += 1;
                return WalkState::Continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let rel = relative(self.root, entry.path());
        if let Some(item) = (self.keep)(&entry, &rel) {
            self.local.items.push(item);
        }
        WalkState::Continue
    }
}

impl<T, F> Drop for Visitor<'_, T, F> {
    fn drop(&mut self) {
        let mut sink = self
            .sink
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        sink.items.append(&mut self.local.items);
        sink.errors += self.local.errors;
    }
}

/// `path` relative to `root`, `/`-separated; a non-UTF-8 name in the escaped form the
/// file tools accept back (`paths::shown`). The root itself (a single-file search) is
/// shown by its file name.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    let rel = match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel,
        _ => Path::new(path.file_name().unwrap_or(path.as_os_str())),
    };
    shown(rel).into_owned()
}

/// `(paths relative to DIR)\n` when the search root is a directory other than the
/// workspace root (empty otherwise), so the model joins the paths correctly before
/// reading them.
pub(crate) fn root_header(workspace: &Path, root: &Path) -> String {
    if root == workspace {
        return String::new();
    }
    let shown = root.strip_prefix(workspace).unwrap_or(root);
    format!("(paths relative to {})\n", super::paths::shown(shown))
}

/// The order paths are listed in: component by component (`a/b` before `a-c`, so a
/// directory's files stay together), computed bytewise with `/` as the lowest byte.
/// Paths sharing one root compare the same whether given absolute or relative.
pub(crate) fn path_order(a: &[u8], b: &[u8]) -> Ordering {
    let key = |c: &u8| if *c == b'/' { 0 } else { *c };
    a.iter().map(key).cmp(b.iter().map(key))
}

#[cfg(test)]
mod tests {
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
}
