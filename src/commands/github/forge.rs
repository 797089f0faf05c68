//! GitHub behind the conversation core's `Forge` trait: the REST calls `agent github`
//! makes (the permission gate, issue comments, the pull request, its files, the base
//! branch's files, a new pull request, one review) and their answers in the core's form.

use base64::Engine;
use serde_json::{Value, json};

use super::api::Api;
use super::env::GithubEnv;
use crate::commands::forge::event::{Actor, CommentKind, Event, PullRefs};
use crate::commands::forge::{ApiError, Forge, ForgeKind, Note, Opened, Place, Posted, review};

/// Permissions that may call the agent.
const WRITE_PERMISSIONS: &[&str] = &["admin", "maintain", "write"];

/// Files of a pull request fetched (the API's page size; the prompt caps the list).
const FILES_PAGE: &str = "per_page=100";

pub(crate) struct GithubForge {
    api: Api,
    place: Place,
    /// `/repos/OWNER/REPO`.
    repo: String,
    /// The issue's comment count (`issue.comments`), to fetch the last page.
    comment_count: u64,
    /// Where the comment's images may be downloaded with the token.
    image_hosts: super::images::Hosts,
}

impl GithubForge {
    pub(crate) fn new(api: Api, env: &GithubEnv, event: &Event) -> GithubForge {
        GithubForge {
            api,
            place: Place {
                kind: ForgeKind::Github,
                full_name: env.full_name(),
                server_url: env.server_url.clone(),
            },
            repo: format!("/repos/{}/{}", env.owner, env.repo),
            comment_count: event.comment_count,
            image_hosts: super::images::Hosts::new(&env.api_url, &env.server_url),
        }
    }
}

impl Forge for GithubForge {
    fn place(&self) -> &Place {
        &self.place
    }

    /// The images of the calling comment, else of the issue or pull request's body.
    fn images(&self, e: &Event, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let body = e.comment.as_ref().map_or(&e.body, |c| &c.body);
        super::images::download(body, self.api.token(), &self.image_hosts, dir)
    }

    /// Write, maintain or admin permission on the repository.
    fn may_call(&self, actor: &Actor) -> Result<Result<(), String>, String> {
        let login = &actor.login;
        let path = format!("{}/collaborators/{login}/permission", self.repo);
        let answer = match self.api.get(&path) {
            Ok(v) => v,
            Err(e) if e.status == Some(404) => {
                return Ok(Err(format!("{login} is not a collaborator")));
            }
            Err(e) => return Err(e.message),
        };
        let has = |k: &str| {
            answer[k]
                .as_str()
                .is_some_and(|p| WRITE_PERMISSIONS.contains(&p))
        };
        Ok(if has("permission") || has("role_name") {
            Ok(())
        } else {
            Err(format!(
                "{login} has {} permission, not write",
                answer["permission"].as_str().unwrap_or("no")
            ))
        })
    }

    fn post_note(&self, n: u64, _is_pr: bool, body: &str) -> Result<Note, ApiError> {
        let c = self.api.post(
            &format!("{}/issues/{n}/comments", self.repo),
            &json!({ "body": body }),
        )?;
        let id = c["id"].as_u64().ok_or_else(|| ApiError {
            status: None,
            message: "the new comment has no id".into(),
        })?;
        Ok(Note {
            path: format!("{}/issues/comments/{id}", self.repo),
            url: c["html_url"].as_str().unwrap_or_default().to_string(),
        })
    }

    fn edit_note(&self, note: &Note, body: &str) -> Result<(), ApiError> {
        self.api
            .patch(&note.path, &json!({ "body": body }))
            .map(|_| ())
    }

    fn pull_refs(&self, e: &Event) -> Result<Option<PullRefs>, String> {
        Ok(match (e.is_pr, &e.pull, e.number) {
            (true, Some(p), _) => Some(p.clone()),
            (true, None, Some(n)) => {
                let pr = self
                    .api
                    .get(&format!("{}/pulls/{n}", self.repo))
                    .map_err(|e| e.message)?;
                Some(PullRefs::from_json(&pr).ok_or("the pull request has no head or base")?)
            }
            _ => None,
        })
    }

    fn comments(&self, e: &Event) -> Result<Vec<Value>, String> {
        let Some(n) = e.number else {
            return Ok(Vec::new());
        };
        // Oldest first, 100 a page: the last page has the newest.
        let last_page = self.comment_count.div_ceil(100).max(1);
        Ok(self
            .api
            .get(&format!(
                "{}/issues/{n}/comments?per_page=100&page={last_page}",
                self.repo
            ))
            .map_err(|e| e.message)?
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    fn files(&self, e: &Event, pull: Option<&PullRefs>) -> Result<Vec<Value>, String> {
        match (pull, e.number) {
            (Some(_), Some(n)) => Ok(self
                .api
                .get(&format!("{}/pulls/{n}/files?{FILES_PAGE}", self.repo))
                .map_err(|e| e.message)?
                .as_array()
                .cloned()
                .unwrap_or_default()),
            _ => Ok(Vec::new()),
        }
    }

    fn head_refspec(&self, n: u64) -> String {
        format!("refs/pull/{n}/head")
    }

    fn file_on(&self, git_ref: &str, path: &str) -> Result<Option<String>, ApiError> {
        let call = format!("{}/contents/{path}?ref={}", self.repo, query_value(git_ref));
        match self.api.get(&call) {
            Ok(file) => Ok(decode(&file)),
            Err(e) if e.status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn default_branch(&self, e: &Event) -> Result<String, String> {
        match &e.default_branch {
            Some(b) => Ok(b.clone()),
            None => Ok(
                self.api.get(&self.repo).map_err(|e| e.message)?["default_branch"]
                    .as_str()
                    .ok_or("the repository has no default_branch")?
                    .to_string(),
            ),
        }
    }

    fn open_change(
        &self,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<Opened, String> {
        let pr = self
            .api
            .post(
                &format!("{}/pulls", self.repo),
                &json!({"title": title, "head": branch, "base": base, "body": body}),
            )
            .map_err(|e| e.message)?;
        Ok(Opened {
            reference: format!("#{}", pr["number"].as_u64().unwrap_or(0)),
            url: pr["html_url"].as_str().unwrap_or_default().to_string(),
        })
    }

    fn change_body(&self, n: u64, actor: &Actor, asked_in: &str, answer: &str) -> String {
        format!(
            "Resolves #{n}.\n\nRequested by @{} in {asked_in}.\n\n{answer}\n",
            actor.login
        )
    }

    fn post_review(
        &self,
        n: u64,
        pull: &PullRefs,
        files: &[Value],
        answer: &Value,
    ) -> Result<Posted, String> {
        let lines = review::diff_lines(files);
        let (body, inline) = review::request(answer, &lines, &pull.head_sha)
            .ok_or("the run gave no review (no structured answer)")?;
        let total = answer["comments"].as_array().map_or(0, Vec::len);
        let posted = self
            .api
            .post(&format!("{}/pulls/{n}/reviews", self.repo), &body)
            .map_err(|e| e.message)?;
        let url = posted["html_url"].as_str().unwrap_or_default();
        let note = format!(
            "Posted [a review]({url}) with {} inline ({} on lines outside the diff are in its summary).",
            crate::commands::summary::count(inline as u64, "comment"),
            total - inline
        );
        Ok((note, body["body"].as_str().map(String::from)))
    }

    fn asked_in(&self, e: &Event) -> String {
        let Some(number) = e.number else {
            return self.place.full_name.clone();
        };
        e.comment
            .as_ref()
            .map(|c| {
                format!(
                    "{}#{}",
                    self.place.item_url(number, e.is_pr),
                    match c.kind {
                        CommentKind::Issue => format!("issuecomment-{}", c.id),
                        CommentKind::ReviewComment => format!("discussion_r{}", c.id),
                        CommentKind::Review => format!("pullrequestreview-{}", c.id),
                    }
                )
            })
            .unwrap_or_else(|| format!("{}#{number}", self.place.full_name))
    }

    fn co_author(&self, actor: &Actor) -> Option<String> {
        (!actor.is_bot && actor.id > 0).then(|| {
            format!(
                "{0} <{1}+{0}@users.noreply.github.com>",
                actor.login, actor.id
            )
        })
    }
}

/// A `GET /contents/{path}` answer's text (`encoding: base64`).
fn decode(file: &Value) -> Option<String> {
    if file["type"] != "file" || file["encoding"] != "base64" {
        return None;
    }
    let b64: String = file["content"]
        .as_str()?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A branch name as a query value: `%`, `&`, `#`, `+` and blanks escaped.
pub(crate) fn query_value(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        match b {
            b'%' | b'&' | b'#' | b'+' | b'=' | b'?' | b' ' => out.push_str(&format!("%{b:02X}")),
            _ => out.push(b as char),
        }
    }
    out
}

#[cfg(test)]
#[path = "forge_tests.rs"]
mod tests;
