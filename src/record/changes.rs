//! `files_changed` and `git_diff_stat` (SPEC §7, §9). The file tools report what they
//! change (`RunRecord::note_change`); a Bash `rm`, `touch` or `sed -i` does not, so
//! the workspace is also scanned when a command can run (Bash enabled, hooks, or
//! `--verify`): a cheap snapshot (relative path → size, mtime, ctime, inode) taken before
//! the first request and again when the run ends, with the same walker as Glob
//! and Grep (`.gitignore` honoured; `.git`, `target`, `node_modules` … skipped).
//!
//! Merge rule: for every path the scans saw, the scans decide (absent → present is
//! `created`, present → absent `deleted`, a different size, mtime, ctime or inode
//! `modified` (a command can restore an mtime, `touch -r`, but not a ctime; `sed -i`
//! also makes a new inode), absent
//! both times: no change); a tool's record stands where the scans saw no difference
//! (a same-size rewrite within one mtime tick) or could not look (ignored paths).
//! Scanning at the end rather than after each Bash call costs two walks per run, and a
//! file created and removed again within the run rightly counts as no change.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use crate::process::{self, CommandSpec};
use crate::tools::ToolContext;
use crate::tools::paths::ChangeKind;
use crate::tools::walk;

/// Beyond this many files the scan gives up (memory and time stay small on huge trees);
/// `files_changed` then comes from the file tools alone.
const MAX_SNAPSHOT_FILES: usize = 200_000;
/// `git diff --stat` on a large repository is quick; a hung git (a lock, a hook) is not.
const GIT_DIFF_TIMEOUT: Duration = Duration::from_secs(30);
/// The exit code the probe script uses for "not a git work tree".
const NOT_A_REPO: i32 = 99;

/// What a scan compares. ctime and the inode catch an edit whose mtime was put back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Stat {
    size: u64,
    mtime: Option<SystemTime>,
    /// Status-change time (seconds, nanoseconds): set by the kernel on every change.
    ctime: (i64, i64),
    inode: u64,
}

impl Stat {
    fn of(meta: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat {
            size: meta.len(),
            mtime: meta.modified().ok(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
        }
    }
}

/// The workspace's files at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    files: HashMap<String, Stat>,
    /// False when the walk hit `MAX_SNAPSHOT_FILES`: such a snapshot is not compared.
    complete: bool,
}

impl Snapshot {
    /// Walks `root`; paths in `exclude` (absolute, e.g. the `-o` file or the spill
    /// directory) and everything under them are left out.
    pub(crate) fn take(root: &Path, exclude: &[PathBuf]) -> Snapshot {
        let count = AtomicUsize::new(0);
        let excluded: Vec<String> = exclude
            .iter()
            .filter_map(|p| p.strip_prefix(root).ok())
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let walked = walk::collect_files(root, |entry, rel| {
            if count.fetch_add(1, Ordering::Relaxed) >= MAX_SNAPSHOT_FILES {
                return None;
            }
            // The run's own files, and everything in its own directories (the spill dir).
            if excluded.iter().any(|x| {
                rel == x
                    || rel
                        .strip_prefix(x.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            }) {
                return None;
            }
            let meta = entry.metadata().ok()?;
            Some((rel.to_string(), Stat::of(&meta)))
        });
        Snapshot {
            complete: count.load(Ordering::Relaxed) <= MAX_SNAPSHOT_FILES,
            files: walked.items.into_iter().collect(),
        }
    }

    /// Path → how it changed between `self` (before) and `after`.
    pub(crate) fn diff(&self, after: &Snapshot) -> BTreeMap<String, ChangeKind> {
        let mut out = BTreeMap::new();
        for (path, stat) in &after.files {
            match self.files.get(path) {
                None => {
                    out.insert(path.clone(), ChangeKind::Created);
                }
                Some(old) if old != stat => {
                    out.insert(path.clone(), ChangeKind::Modified);
                }
                Some(_) => {}
            }
        }
        for path in self.files.keys() {
            if !after.files.contains_key(path) {
                out.insert(path.clone(), ChangeKind::Deleted);
            }
        }
        out
    }
}

/// The start of the run: the first snapshot and what the scans must leave out.
#[derive(Debug, Clone)]
pub(crate) struct Baseline {
    root: PathBuf,
    exclude: Vec<PathBuf>,
    before: Snapshot,
}

impl Baseline {
    pub(crate) fn take(root: &Path, exclude: Vec<PathBuf>) -> Baseline {
        let before = Snapshot::take(root, &exclude);
        Baseline {
            root: root.to_path_buf(),
            exclude,
            before,
        }
    }

    /// Scans again and merges the difference into `files_changed` (path → change).
    pub(crate) fn merge_into(&self, files_changed: &mut BTreeMap<String, ChangeKind>) {
        let after = Snapshot::take(&self.root, &self.exclude);
        merge(files_changed, &self.before, &after);
    }
}

/// The merge rule of the module comment.
fn merge(files_changed: &mut BTreeMap<String, ChangeKind>, before: &Snapshot, after: &Snapshot) {
    if !before.complete || !after.complete {
        return;
    }
    let seen = |p: &str| before.files.contains_key(p) || after.files.contains_key(p);
    let diff = before.diff(after);
    // Paths a tool reported that the scans saw (at either end) but found unchanged in
    // existence: the scans decide unless they saw no difference at all.
    files_changed.retain(|path, change| {
        if diff.contains_key(path) {
            return true; // replaced below
        }
        if !seen(path) {
            // Absent before and after: created then removed is no change; a tool's
            // "deleted" of a file the scans never saw (ignored) stands.
            return *change == ChangeKind::Deleted && !after.files.contains_key(path);
        }
        true
    });
    for (path, change) in diff {
        files_changed.insert(path, change);
    }
}

/// `git diff --stat` in the workspace, or None outside a git work tree (or when git is
/// missing or fails). Runs through the Bash machinery (scrubbed env, timeout,
/// truncation), when the run ends: after the run's own commands were killed.
pub(crate) fn git_diff_stat(ctx: &ToolContext) -> Option<String> {
    // Spawning git costs milliseconds; most workspaces outside git are plain to see.
    if !ctx.workspace.ancestors().any(|d| d.join(".git").exists()) {
        return None;
    }
    let script = format!(
        "git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit {NOT_A_REPO}\n\
         exec git --no-pager diff --stat"
    );
    let spec = CommandSpec::new(
        script,
        &ctx.workspace,
        ctx.child_env.clone(),
        GIT_DIFF_TIMEOUT,
        &ctx.spill_dir,
    );
    let out = process::run_at_exit(&spec).ok()?;
    (out.exit_code == Some(0) && !out.timed_out).then_some(out.output.text)
}

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
