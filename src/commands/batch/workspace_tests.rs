//! Tests of worktrees, copies and setup commands.

use super::*;
use crate::tools::test_support::git as setup_git;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn plain_directory_is_copied_without_the_output_dir() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    write(&src, "a.txt", "a");
    write(&src, "sub/b.sh", "b");
    std::os::unix::fs::symlink("a.txt", src.join("link")).unwrap();
    let out = src.join("results");
    std::fs::create_dir_all(out.join("workspaces")).unwrap();
    let dest = out.join("workspaces/t1");
    let (cwd, kind) = prepare_workspace(&src, &dest, &out).unwrap();
    assert_eq!((cwd.as_path(), kind), (dest.as_path(), "copy"));
    assert_eq!(std::fs::read_to_string(dest.join("sub/b.sh")).unwrap(), "b");
    assert_eq!(
        std::fs::read_link(dest.join("link")).unwrap(),
        Path::new("a.txt")
    );
    assert!(
        !dest.join("results").exists(),
        "the output dir is not copied into itself"
    );
    // A second batch in the same DIR starts from a fresh copy.
    write(&dest, "leftover", "x");
    prepare_workspace(&src, &dest, &out).unwrap();
    assert!(!dest.join("leftover").exists());
}

#[test]
fn git_repository_gets_a_worktree_of_head() {
    let d = tempfile::tempdir().unwrap();
    let repo = d.path().join("repo");
    write(&repo, "sub/f.txt", "committed\n");
    setup_git(&repo, &["init", "-q"]);
    setup_git(&repo, &["add", "."]);
    setup_git(&repo, &["commit", "-q", "-m", "init"]);
    write(&repo, "sub/f.txt", "uncommitted\n");
    let out = d.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let dest = out.join("t");
    let (cwd, kind) = prepare_workspace(&repo.join("sub"), &dest, &out).unwrap();
    assert_eq!(kind, "git-worktree");
    assert_eq!(cwd, dest.join("sub/"));
    assert_eq!(
        std::fs::read_to_string(cwd.join("f.txt")).unwrap(),
        "committed\n"
    );
    // Again: the old worktree is removed and a new one added.
    let (_, kind) = prepare_workspace(&repo.join("sub"), &dest, &out).unwrap();
    assert_eq!(kind, "git-worktree");
}

fn git_repo(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    write(&repo, "f.txt", "committed\n");
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &["commit", "-q", "-m", "init"],
    ] {
        setup_git(&repo, args);
    }
    repo
}

/// Eight tasks of one repository prepared at once (released together by a
/// barrier), twice, so that the second round also removes and prunes the first's
/// worktrees while others are being added: every one gets a real worktree.
#[test]
fn concurrent_worktrees_all_succeed() {
    const TASKS: usize = 8;
    let d = tempfile::tempdir().unwrap();
    let repo = git_repo(d.path());
    let out = d.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let barrier = std::sync::Barrier::new(TASKS);
    for _round in 0..2 {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..TASKS)
                .map(|i| {
                    let (repo, out, barrier) = (&repo, &out, &barrier);
                    s.spawn(move || {
                        let dest = out.join(format!("t{i}"));
                        barrier.wait();
                        prepare_workspace(repo, &dest, out)
                    })
                })
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                let (cwd, kind) = h.join().unwrap().unwrap();
                assert_eq!(kind, "git-worktree", "t{i}");
                assert!(cwd.join(".git").is_file(), "t{i} is a worktree");
            }
        });
    }
    let list = git(&repo, &["worktree", "list", "--porcelain"]).unwrap();
    assert_eq!(list.matches("worktree ").count(), TASKS + 1, "{list}");
}

/// When git cannot add the worktree the task fails with git's reason: it never
/// silently runs in a copy without `.git`.
#[test]
fn a_failed_worktree_is_an_error_not_a_copy() {
    let d = tempfile::tempdir().unwrap();
    let repo = git_repo(d.path());
    // A file where git keeps its worktrees: `worktree add` cannot register one.
    std::fs::write(repo.join(".git/worktrees"), "in the way").unwrap();
    let out = d.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let e = prepare_workspace(&repo, &out.join("t"), &out).unwrap_err();
    assert!(e.contains("git worktree add"), "{e}");
    assert!(e.contains("not copied"), "{e}");
    assert!(e.contains("exit "), "git's status and reason: {e}");
    assert!(!out.join("t/f.txt").exists(), "no copy was made");
}

#[test]
fn setup_runs_in_the_workspace_and_reports_failure() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "in-ws", "here\n");
    let out = run_setup(
        "cat in-ws; echo made > made.txt",
        d.path(),
        &d.path().join("spill"),
    )
    .unwrap();
    assert!(out.contains("here"), "{out}");
    assert_eq!(
        std::fs::read_to_string(d.path().join("made.txt")).unwrap(),
        "made\n"
    );
    let e = run_setup(
        "echo DEPS-MISSING; exit 3",
        d.path(),
        &d.path().join("spill"),
    )
    .unwrap_err();
    assert!(e.contains("(exit 3)") && e.contains("DEPS-MISSING"), "{e}");
    let e = run_setup("kill -9 $$", d.path(), &d.path().join("spill")).unwrap_err();
    assert!(e.contains("signal 9 (SIGKILL)"), "{e}");
}
