//! Handing the run's changes back, on either forge: a commit (the `--git-author`
//! identity, a `Co-authored-by` trailer for the person who asked) pushed to a
//! same-repository pull (merge) request's head, or to a new `agent/issue-<n>-<slug>` branch. git runs as an argument
//! vector (no shell), with the token given to the one command that needs it as
//! `http.<server>/.extraheader` through git's `GIT_CONFIG_COUNT` variables: the same as
//! `git -c` for that command, without the token in its argv (which `ps` shows to every
//! user) and never in a remote URL or `.git/config`.

use std::path::Path;
use std::process::{Command, Stdio};

/// A git identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    /// `Name <email>`.
    pub(crate) fn parse(text: &str) -> Result<Identity, String> {
        let bad = || format!("--git-author {text:?}: expected NAME <EMAIL>");
        let (name, rest) = text.split_once('<').ok_or_else(bad)?;
        let email = rest.strip_suffix('>').ok_or_else(bad)?.trim();
        let name = name.trim();
        if name.is_empty() || email.is_empty() || email.contains(['<', '>']) {
            return Err(bad());
        }
        Ok(Identity {
            name: name.to_string(),
            email: email.to_string(),
        })
    }
}

/// The variables that give one git command the token (`AUTHORIZATION: basic user:token`,
/// as actions/checkout sends it with `x-access-token`; GitLab takes `oauth2`), for
/// requests to `server_url` only.
pub(crate) fn auth_env(server_url: &str, user: &str, token: &str) -> Vec<(String, String)> {
    let basic = base64(format!("{user}:{token}").as_bytes());
    vec![
        ("GIT_CONFIG_COUNT".into(), "1".into()),
        (
            "GIT_CONFIG_KEY_0".into(),
            format!("http.{}/.extraheader", server_url.trim_end_matches('/')),
        ),
        (
            "GIT_CONFIG_VALUE_0".into(),
            format!("AUTHORIZATION: basic {basic}"),
        ),
    ]
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// git in the workspace.
pub(crate) struct Git<'a> {
    pub workspace: &'a Path,
    /// The environment git gets (the scrubbed one: no secret).
    pub env: &'a [(String, String)],
    /// Paths of the run's own (`.agent/sessions.json`, an `-o` file inside the
    /// workspace), never committed.
    pub exclude: Vec<String>,
    /// Values taken out of error messages.
    pub secrets: Vec<String>,
}

impl Git<'_> {
    /// Runs `git args`; its stdout, or an error naming the command with its stderr.
    pub(crate) fn run(&self, args: &[&str], extra: &[(String, String)]) -> Result<String, String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.workspace)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(extra.iter().map(|(k, v)| (k, v)))
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(crate::util::secrets::redact(
            &format!(
                "git {} failed ({}): {}",
                args.join(" "),
                out.status,
                stderr.trim()
            ),
            &self.secrets,
        ))
    }

    /// `-- . :(exclude)…` for the paths of the run's own.
    fn pathspec(&self) -> Vec<String> {
        let mut p = vec!["--".to_string(), ".".to_string()];
        p.extend(self.exclude.iter().map(|e| format!(":(exclude){e}")));
        p
    }

    /// Whether the workspace has changes to commit.
    pub(crate) fn has_changes(&self) -> Result<bool, String> {
        let mut args = vec!["status", "--porcelain", "--untracked-files=all"];
        let spec = self.pathspec();
        args.extend(spec.iter().map(String::as_str));
        Ok(!self.run(&args, &[])?.trim().is_empty())
    }

    /// The current commit.
    pub(crate) fn head(&self) -> Result<String, String> {
        Ok(self.run(&["rev-parse", "HEAD"], &[])?.trim().to_string())
    }

    /// Stages everything (but the run's own files) and commits it; returns the
    /// commit's `--stat`.
    pub(crate) fn commit(&self, author: &Identity, message: &str) -> Result<String, String> {
        let mut add = vec!["add", "-A"];
        let spec = self.pathspec();
        add.extend(spec.iter().map(String::as_str));
        self.run(&add, &[])?;
        let stat = self.run(&["diff", "--cached", "--stat"], &[])?;
        let who = [
            ("GIT_AUTHOR_NAME".to_string(), author.name.clone()),
            ("GIT_AUTHOR_EMAIL".to_string(), author.email.clone()),
            ("GIT_COMMITTER_NAME".to_string(), author.name.clone()),
            ("GIT_COMMITTER_EMAIL".to_string(), author.email.clone()),
        ];
        self.run(
            &[
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "--no-verify",
                "-m",
                message,
            ],
            &who,
        )?;
        Ok(stat)
    }

    /// Pushes HEAD to `branch` of `origin`, with the token for this command only.
    pub(crate) fn push(&self, branch: &str, auth: &[(String, String)]) -> Result<(), String> {
        let refspec = format!("HEAD:refs/heads/{branch}");
        self.run(&["push", "--quiet", "origin", &refspec], auth)
            .map(|_| ())
    }

    /// Whether `origin` has the branch (with the token for this command only).
    pub(crate) fn remote_has(
        &self,
        branch: &str,
        auth: &[(String, String)],
    ) -> Result<bool, String> {
        let r = format!("refs/heads/{branch}");
        Ok(!self
            .run(&["ls-remote", "--heads", "origin", &r], auth)?
            .trim()
            .is_empty())
    }

    /// `base`, or `base-2`, `base-3` … when `origin` has it already (an earlier run on the
    /// same issue): a new run never pushes over another's branch.
    pub(crate) fn free_branch(
        &self,
        base: &str,
        auth: &[(String, String)],
    ) -> Result<String, String> {
        if !self.remote_has(base, auth)? {
            return Ok(base.to_string());
        }
        for n in 2..=MAX_BRANCH_SUFFIX {
            let name = format!("{base}-{n}");
            if !self.remote_has(&name, auth)? {
                return Ok(name);
            }
        }
        Err(format!(
            "origin has {base} and {base}-2 … {base}-{MAX_BRANCH_SUFFIX} already"
        ))
    }

    /// Checks out a change's head (`refspec` of `origin`: `refs/pull/{n}/head`,
    /// `refs/merge-requests/{iid}/head`) unless the workspace is at `sha` already (a
    /// job that checked it out).
    pub(crate) fn ensure_at(
        &self,
        sha: &str,
        refspec: &str,
        auth: &[(String, String)],
    ) -> Result<(), String> {
        if self.head().is_ok_and(|h| h == sha) {
            return Ok(());
        }
        self.run(&["fetch", "--quiet", "--no-tags", "origin", refspec], auth)?;
        self.run(&["checkout", "--quiet", "--detach", "FETCH_HEAD"], &[])?;
        let at = self.head()?;
        if at != sha {
            return Err(format!(
                "{refspec} is {at}, not the head {sha} (pushed to since?)"
            ));
        }
        Ok(())
    }
}

/// The most branches of one issue tried before giving up.
const MAX_BRANCH_SUFFIX: u32 = 20;

/// `agent/issue-<n>-<slug>`: the title's words, lowercase ASCII, at most 40 characters.
pub(crate) fn issue_branch(number: u64, title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("agent/issue-{number}")
    } else {
        format!("agent/issue-{number}-{slug}")
    }
}

/// The commit message: a subject from the request, where it was asked, and the trailer.
pub(crate) fn commit_message(subject: &str, asked_in: &str, co_author: Option<&str>) -> String {
    let first = subject
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("changes");
    let mut m = format!(
        "agent: {}\n\nRequested in {asked_in}.\n",
        crate::util::text::ellipsis(first, 60)
    );
    if let Some(who) = co_author {
        m.push_str(&format!("\nCo-authored-by: {who}\n"));
    }
    m
}

#[cfg(test)]
#[path = "push_tests.rs"]
mod tests;
