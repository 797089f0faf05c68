//! Unit tests of `changes.rs`.

use super::*;
use crate::record::RunRecord;
use serde_json::json;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn changes(r: &RunRecord) -> Vec<String> {
    r.files_changed()
        .iter()
        .map(|(p, c)| format!("{p}:{c}"))
        .collect()
}

/// Sets a file's mtime into the past, so a rewrite is visible whatever the
/// filesystem's timestamp granularity.
fn age(root: &Path, rel: &str) {
    let f = std::fs::File::options()
        .write(true)
        .open(root.join(rel))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

#[test]
fn scan_sees_what_bash_did() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    write(&root, "keep.txt", "same");
    write(&root, "gone.txt", "x");
    write(&root, "edited.txt", "abc");
    write(&root, "target/debug/out", "build");
    write(&root, ".gitignore", "ignored/\n");
    write(&root, "ignored/a", "1");
    age(&root, "edited.txt");
    let base = Baseline::take(&root, vec![root.join("transcript.json")]);
    std::fs::remove_file(root.join("gone.txt")).unwrap(); // Bash rm
    write(&root, "edited.txt", "abd"); // sed -i: same size, new mtime
    write(&root, "new/file.rs", "fn x() {}"); // touch / redirect
    write(&root, "target/debug/out2", "build"); // skipped dir
    write(&root, "ignored/b", "2"); // .gitignore'd
    write(&root, "transcript.json", "{}"); // the run's own -o file
    let mut r = RunRecord::new("m", root.clone(), vec![]);
    r.record_workspace_scan(&base);
    assert_eq!(
        changes(&r),
        vec![
            "edited.txt:modified",
            "gone.txt:deleted",
            "new/file.rs:created"
        ]
    );
}

#[test]
fn an_edit_whose_mtime_was_restored_is_seen() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    write(&root, "a.txt", "abc\n");
    write(&root, "ref", "");
    let then = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for f in ["a.txt", "ref"] {
        let f = std::fs::File::options()
            .write(true)
            .open(root.join(f))
            .unwrap();
        f.set_modified(then).unwrap();
    }
    let base = Baseline::take(&root, vec![]);
    // Same size, same mtime afterwards: only ctime and the inode tell.
    let ok = std::process::Command::new("sh")
        .args(["-c", "sed -i s/b/d/ a.txt && touch -r ref a.txt"])
        .current_dir(&root)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "adc\n"
    );
    let mut r = RunRecord::new("m", root.clone(), vec![]);
    r.record_workspace_scan(&base);
    assert_eq!(changes(&r), vec!["a.txt:modified"]);
}

#[test]
fn tools_and_scan_merge() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    write(&root, "a.txt", "a");
    write(&root, "b.txt", "b");
    let base = Baseline::take(&root, vec![]);
    let mut r = RunRecord::new("m", root.clone(), vec![]);
    let note = |r: &mut RunRecord, p: &str, c: &str| {
        r.note_change(p, serde_json::from_value(json!(c)).unwrap())
    };
    // WriteFile created tmp.txt, Bash removed it: no net change.
    note(&mut r, "tmp.txt", "created");
    // EditFile modified a.txt within the same mtime tick, same size: the tool stands.
    note(&mut r, "a.txt", "modified");
    // WriteFile created c.txt, which stays.
    note(&mut r, "c.txt", "created");
    write(&root, "c.txt", "c");
    // The tool reported an ignored file it deleted; the scans never saw it.
    note(&mut r, "ignored.log", "deleted");
    // Bash deleted b.txt.
    std::fs::remove_file(root.join("b.txt")).unwrap();
    r.record_workspace_scan(&base);
    assert_eq!(
        changes(&r),
        vec![
            "a.txt:modified",
            "b.txt:deleted",
            "c.txt:created",
            "ignored.log:deleted"
        ]
    );
}

#[test]
fn an_incomplete_snapshot_changes_nothing() {
    let mut files = BTreeMap::new();
    let before = Snapshot::default();
    let mut after = Snapshot::default();
    after.files.insert(
        "x".into(),
        Stat {
            size: 1,
            ..Stat::default()
        },
    );
    merge(&mut files, &before, &after);
    assert!(files.is_empty());
}

#[test]
fn git_diff_stat_in_and_outside_a_repository() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let ctx = crate::tools::test_support::ctx(&root);
    let git = crate::tools::test_support::git;
    assert_eq!(git_diff_stat(&ctx), None, "not a repository");
    git(&root, &["init", "-q"]);
    write(&root, "f.txt", "one\n");
    git(&root, &["add", "f.txt"]);
    git(&root, &["commit", "-q", "-m", "init"]);
    assert_eq!(git_diff_stat(&ctx).as_deref(), Some(""), "clean tree");
    write(&root, "f.txt", "one\ntwo\n");
    let stat = git_diff_stat(&ctx).unwrap();
    assert!(
        stat.contains("f.txt") && stat.contains("1 insertion"),
        "{stat}"
    );
}
