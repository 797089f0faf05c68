//! A task's workspace: a detached `git worktree` of HEAD when its source is in a git
//! repository with a commit (cheap, and the result can be diffed and committed;
//! uncommitted changes of the source are not in it; git failing is the task's error,
//! never a silent copy), else a directory copy; and the task's `setup` command, run
//! there before the agent.
//!
//! The runner's own commands (git) are argument vectors run with `std::process::Command`,
//! not shell lines: paths never go through a shell. `setup` is the task author's shell
//! line, run by `process::run` exactly as `--verify` runs its command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::describe_exit;
use crate::process::{self, CommandSpec};
use crate::util::sync::Locked;

/// How long a task's `setup` may run (installing dependencies takes a while; a hung
/// one must not hold a worker forever). The same as `--verify-timeout`'s default.
pub(crate) const SETUP_TIMEOUT: Duration = Duration::from_secs(600);

/// Held around every `git worktree` change: git keeps worktrees in files under the
/// repository's `.git/worktrees`, and concurrent `worktree add`s there race (`failed to
/// read .git/worktrees/…/commondir`), so a batch makes them one at a time.
static WORKTREE_LOCK: Mutex<()> = Mutex::new(());
/// Tries of `git worktree add` (with a `worktree prune` between them): another process
/// (a second shard on the same machine) may still race with this one.
const WORKTREE_ATTEMPTS: usize = 3;

/// Makes `dest` a fresh copy of `source`: a git worktree of HEAD when `source` is in a
/// repository with a commit, else a directory copy. Returns the directory to run in
/// (the same subdirectory of the worktree as `source` is of its repository). A source
/// in a repository never falls back to a copy: a copy would lack `.git` and carry the
/// source's uncommitted files, so when git cannot make the worktree the task fails.
pub(crate) fn prepare_workspace(
    source: &Path,
    dest: &Path,
    out: &Path,
) -> Result<(PathBuf, &'static str), String> {
    let serial = WORKTREE_LOCK.locked();
    if dest.exists() {
        // An earlier batch's copy: unregister it if it was a worktree, then remove it.
        let _ = git(
            source,
            &["worktree", "remove", "--force", &dest.to_string_lossy()],
        );
        match std::fs::remove_dir_all(dest) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot remove the old {}: {e}", dest.display()));
            }
            _ => {}
        }
        let _ = git(source, &["worktree", "prune"]);
    }
    if let (Ok(top), Ok(prefix)) = (
        git(source, &["rev-parse", "--show-toplevel"]),
        git(source, &["rev-parse", "--show-prefix"]),
    ) && git(source, &["rev-parse", "--verify", "-q", "HEAD"]).is_ok()
    {
        let top = PathBuf::from(top.trim_end_matches('\n'));
        let mut last = String::new();
        for _ in 0..WORKTREE_ATTEMPTS {
            let dest_arg = dest.to_string_lossy();
            match git(
                &top,
                &["worktree", "add", "--detach", "-q", &dest_arg, "HEAD"],
            ) {
                Ok(_) => return Ok((dest.join(prefix.trim_end_matches('\n')), "git-worktree")),
                Err(e) => last = e,
            }
            // A half-made worktree must not block the next try.
            let _ = std::fs::remove_dir_all(dest);
            let _ = git(&top, &["worktree", "prune"]);
        }
        return Err(format!(
            "git worktree add {} failed {WORKTREE_ATTEMPTS} times (the source {} is in a git \
             repository, so it is not copied instead): {last}",
            dest.display(),
            source.display()
        ));
    }
    drop(serial); // copies of different tasks need no order
    copy_dir(source, dest, out).map_err(|e| e.to_string())?;
    Ok((dest.to_path_buf(), "copy"))
}

/// `git -C dir ARGS`: stdout when it succeeds, else what went wrong (its stderr).
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "{}: {}",
            describe_exit(
                out.status.code(),
                std::os::unix::process::ExitStatusExt::signal(&out.status)
            ),
            err.trim()
        ))
    }
}

/// Copies a tree: files with their permissions, symlinks as symlinks, nothing else.
/// `skip` (the batch's output directory) is left out when it lies inside `from`.
fn copy_dir(from: &Path, to: &Path, skip: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let src = entry.path();
        if src == skip {
            continue;
        }
        let dst = to.join(entry.file_name());
        let ft = entry.file_type()?;
        if ft.is_dir() {
            copy_dir(&src, &dst, skip)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// How a `setup` command went: `Ok` with its output when it passed, else why not
/// (with the tail of its output).
pub(crate) fn run_setup(command: &str, cwd: &Path, spill_dir: &Path) -> Result<String, String> {
    // Secrets stay out of setup commands, as they stay out of Bash and `--verify`.
    let env = crate::util::secrets::scrubbed_env(std::env::vars(), &[]);
    let spec = CommandSpec::new(command, cwd, Arc::new(env), SETUP_TIMEOUT, spill_dir);
    let out = process::run(&spec).map_err(|e| format!("setup could not start: {e}"))?;
    let text = out.output.text.clone();
    let why = if out.timed_out {
        format!(
            "timed out after {}",
            crate::util::duration::human(SETUP_TIMEOUT)
        )
    } else if out.interrupted {
        "was stopped because the batch is ending".to_string()
    } else if out.exit_code == Some(0) {
        return Ok(text);
    } else {
        describe_exit(out.exit_code, out.signal)
    };
    Err(format!(
        "setup {command:?} failed ({why}): {}",
        crate::run::verify::tail(text.trim_end(), SETUP_TAIL_CHARS)
    ))
}

/// The end of a failed setup's output kept in the task's error (the log has it all).
const SETUP_TAIL_CHARS: usize = 500;

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
