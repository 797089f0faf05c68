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
use crate::util::sync::{Locked, Unpoisoned};

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
    sink.into_inner().unpoisoned()
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
        let mut sink = self.sink.locked();
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
#[path = "walk_tests.rs"]
mod tests;
