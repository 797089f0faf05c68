//! The conversation core that `agent github` and `agent gitlab` share: the event and its
//! triggers (`event`), the fenced context (`context`), the base branch's instructions
//! (`instructions`), the progress note (`progress`), the push (`push`), the review's
//! partition of comments (`review`), and the run itself with what follows it
//! (`conversation`). A forge differs only in its API client, behind the `Forge` trait:
//! the calls it makes and the shapes of their answers, which it hands the core in one
//! neutral form (a pull request's refs, comments as `{id, body, user.login, created_at}`,
//! files as `{filename, status, additions, deletions, patch}`).

pub(crate) mod context;
pub(crate) mod conversation;
pub(crate) mod event;
pub(crate) mod instructions;
pub(crate) mod progress;
pub(crate) mod push;
pub(crate) mod review;

use std::time::Duration;

use serde_json::Value;

use crate::model::provider::retry;
use crate::util::output;
use event::{Actor, Event, PullRefs};

/// A failed API call, named (`POST /projects/7/issues/3/notes: HTTP 404: Not Found`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// The HTTP status (none: no response).
    pub status: Option<u16>,
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A call's name in messages: `POST /projects/7/issues/3/notes` (no query).
pub(crate) fn call_name(method: &str, path: &str) -> String {
    format!("{method} {}", path.split('?').next().unwrap_or(path))
}

/// One attempt's failure: its HTTP status (none: no response), what went wrong, and
/// whether another attempt may help (`Some(wait)`: retry, after what the server asked for
/// when it said; `None`: final).
pub(crate) struct Failure {
    pub status: Option<u16>,
    pub message: String,
    pub retry: Option<Option<Duration>>,
}

/// How a forge client retries: its label in messages (`GitHub API`), its retry budget
/// and backoff base, and the token every message is redacted of.
pub(crate) struct RetryPolicy<'a> {
    pub label: &'a str,
    pub max_retries: u32,
    pub backoff_base: Duration,
    pub token: &'a str,
}

/// Runs `attempt` until it succeeds, fails for good, or has been retried `max_retries`
/// times, waiting what the server asked (capped as the model's retries are) or the model
/// client's backoff, with a warning on stderr per retry. The error names the call
/// (`GitHub API POST /repos/o/r/issues/1/comments: HTTP 404: …`) and never holds the token.
pub(crate) fn call_with_retries<T>(
    policy: &RetryPolicy<'_>,
    name: &str,
    mut attempt: impl FnMut() -> Result<T, Failure>,
) -> Result<T, ApiError> {
    let mut retries = 0;
    loop {
        let failure = match attempt() {
            Ok(v) => return Ok(v),
            Err(f) => f,
        };
        let message = crate::util::secrets::redact(
            &format!("{} {name}: {}", policy.label, failure.message),
            &[policy.token.to_string()],
        );
        let Some(wait) = failure.retry else {
            return Err(ApiError {
                status: failure.status,
                message,
            });
        };
        if retries >= policy.max_retries {
            let message = if retries > 0 {
                format!("{message} (gave up after {retries} retries)")
            } else {
                message
            };
            return Err(ApiError {
                status: failure.status,
                message,
            });
        }
        retries += 1;
        let delay = wait
            .map(|d| d.min(retry::MAX_RETRY_AFTER))
            .unwrap_or_else(|| retry::backoff(policy.backoff_base, retries));
        output::warn(&format!(
            "retrying in {:.1}s (attempt {retries}/{}): {message}",
            delay.as_secs_f64(),
            policy.max_retries
        ));
        std::thread::sleep(delay);
    }
}

/// Which forge: its words and its links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ForgeKind {
    Github,
    Gitlab,
}

impl ForgeKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ForgeKind::Github => "GitHub",
            ForgeKind::Gitlab => "GitLab",
        }
    }

    /// The markup its notes are written in.
    pub(crate) fn markdown(self) -> &'static str {
        match self {
            ForgeKind::Github => "GitHub Markdown",
            ForgeKind::Gitlab => "GitLab Flavored Markdown",
        }
    }

    /// "pull request" / "merge request".
    pub(crate) fn change_noun(self) -> &'static str {
        match self {
            ForgeKind::Github => "pull request",
            ForgeKind::Gitlab => "merge request",
        }
    }

    /// "issue", or the change's noun.
    pub(crate) fn noun(self, is_pr: bool) -> &'static str {
        if is_pr { self.change_noun() } else { "issue" }
    }

    /// "repository" / "project".
    pub(crate) fn repo_noun(self) -> &'static str {
        match self {
            ForgeKind::Github => "repository",
            ForgeKind::Gitlab => "project",
        }
    }

    /// `#3`; GitLab's merge requests are `!3`.
    pub(crate) fn reference(self, n: u64, is_pr: bool) -> String {
        match (self, is_pr) {
            (ForgeKind::Gitlab, true) => format!("!{n}"),
            _ => format!("#{n}"),
        }
    }
}

/// Where the conversation is: the forge, the repository (project) and its web address.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub kind: ForgeKind,
    /// `OWNER/REPO`, or GitLab's `group/sub/project`.
    pub full_name: String,
    /// The web server, no trailing `/`.
    pub server_url: String,
}

impl Place {
    /// The web address of issue or change `n`.
    pub(crate) fn item_url(&self, n: u64, is_pr: bool) -> String {
        let (server, name) = (&self.server_url, &self.full_name);
        match (self.kind, is_pr) {
            (ForgeKind::Github, true) => format!("{server}/{name}/pull/{n}"),
            (ForgeKind::Github, false) => format!("{server}/{name}/issues/{n}"),
            (ForgeKind::Gitlab, true) => format!("{server}/{name}/-/merge_requests/{n}"),
            (ForgeKind::Gitlab, false) => format!("{server}/{name}/-/issues/{n}"),
        }
    }
}

/// A note (a comment) the agent posted: how to edit it and where people see it.
#[derive(Debug, Clone)]
pub(crate) struct Note {
    /// The API path that edits it.
    pub path: String,
    pub url: String,
}

/// A change request (a pull or merge request) the agent opened.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub reference: String,
    pub url: String,
}

/// A review as posted: a line for the final note, and the summary to show as the answer.
pub(crate) type Posted = (String, Option<String>);

/// The API client of one forge, bound to its repository (project) and event: what the
/// conversation core asks of it. Every error names the call (`ApiError`, `String`).
pub(crate) trait Forge: Send + Sync {
    fn place(&self) -> &Place;

    /// Whether `actor` may call the agent (bots are decided before, by the core):
    /// `Ok(Err(why))` is a refusal, `Err` a failed call.
    fn may_call(&self, actor: &Actor) -> Result<Result<(), String>, String>;

    /// Posts a note on issue or change `n`.
    fn post_note(&self, n: u64, is_pr: bool, body: &str) -> Result<Note, ApiError>;

    /// Replaces a note's body.
    fn edit_note(&self, note: &Note, body: &str) -> Result<(), ApiError>;

    /// The change's refs when the event is about one (the event's, or asked for).
    fn pull_refs(&self, e: &Event) -> Result<Option<PullRefs>, String>;

    /// The newest notes of the thread, oldest first (the agent's own left in: the core
    /// leaves them out).
    fn comments(&self, e: &Event) -> Result<Vec<Value>, String>;

    /// The change's files (none without one).
    fn files(&self, e: &Event, pull: Option<&PullRefs>) -> Result<Vec<Value>, String>;

    /// The ref a change's head is fetched from (`refs/pull/N/head`).
    fn head_refspec(&self, n: u64) -> String;

    /// The images of the calling comment (or the issue body), saved in `dir` for the run
    /// to attach as `--image` files; failures are warnings. None by default.
    fn images(&self, _e: &Event, _dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    /// A file's text on a branch (`None`: the branch has no such file).
    fn file_on(&self, git_ref: &str, path: &str) -> Result<Option<String>, ApiError>;

    /// The repository's default branch.
    fn default_branch(&self, e: &Event) -> Result<String, String>;

    /// Opens a change request from `branch` into `base` for issue `issue`.
    fn open_change(
        &self,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<Opened, String>;

    /// The body of a change request that answers issue `n` (how it references it).
    fn change_body(&self, n: u64, actor: &Actor, asked_in: &str, answer: &str) -> String;

    /// Posts the review of change `n`: `answer` is the run's structured output.
    fn post_review(
        &self,
        n: u64,
        pull: &PullRefs,
        files: &[Value],
        answer: &Value,
    ) -> Result<Posted, String>;

    /// Where the request was made, as a link (for the commit message).
    fn asked_in(&self, e: &Event) -> String;

    /// The `Co-authored-by` identity of the person who asked (none for a bot).
    fn co_author(&self, actor: &Actor) -> Option<String>;
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
