//! GitLab behind the conversation core's `Forge` trait, on REST v4: the access-level gate
//! (`members/all`), notes on issues and merge requests, the merge request with its
//! `diff_refs` and diffs, the base branch's files, a new merge request, and a review as
//! diff discussions with positions plus one summary note. Answers are handed on in the
//! core's form (notes as `{id, body, user.login, created_at}`, diffs as
//! `{filename, status, additions, deletions, patch}`).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::api::Api;
use super::env::GitlabEnv;
use crate::commands::forge::event::{Actor, Event, PullRefs};
use crate::commands::forge::review::{self, Inline};
use crate::commands::forge::{ApiError, Forge, ForgeKind, Note, Opened, Place, Posted};

/// GitLab's Developer access level: the least that may call the agent.
const DEVELOPER: u64 = 30;

/// Notes fetched (the newest; the prompt shows at most `context::MAX_COMMENTS`).
const NOTES_PAGE: &str = "sort=desc&order_by=created_at&per_page=20";

pub(crate) struct GitlabForge {
    api: Api,
    place: Place,
    /// `/projects/7`.
    project: String,
    project_id: u64,
    host: String,
    close_issue: bool,
    /// The event's merge request as `GET /merge_requests/:iid` answered (asked once).
    merge_request: OnceLock<Value>,
    /// The fork's path, when the payload names it (the API gives only its id).
    source_path: Option<String>,
}

impl GitlabForge {
    pub(crate) fn new(api: Api, env: &GitlabEnv, payload: &Value, close_issue: bool) -> Self {
        GitlabForge {
            api,
            place: Place {
                kind: ForgeKind::Gitlab,
                full_name: env.project_path.clone(),
                server_url: env.server_url.clone(),
            },
            project: format!("/projects/{}", env.project_id),
            project_id: env.project_id,
            host: env.host().to_string(),
            close_issue,
            merge_request: OnceLock::new(),
            source_path: payload["merge_request"]["source"]["path_with_namespace"]
                .as_str()
                .map(String::from),
        }
    }

    /// `/projects/7/issues/3` or `/projects/7/merge_requests/5`.
    fn item(&self, n: u64, is_pr: bool) -> String {
        let kind = if is_pr { "merge_requests" } else { "issues" };
        format!("{}/{kind}/{n}", self.project)
    }

    fn merge_request(&self, n: u64) -> Result<&Value, String> {
        if let Some(mr) = self.merge_request.get() {
            return Ok(mr);
        }
        let mr = self.api.get(&self.item(n, true)).map_err(|e| e.message)?;
        Ok(self.merge_request.get_or_init(|| mr))
    }
}

impl Forge for GitlabForge {
    fn place(&self) -> &Place {
        &self.place
    }

    /// Developer (30) or above on the project, inherited from groups included.
    fn may_call(&self, actor: &Actor) -> Result<Result<(), String>, String> {
        let login = &actor.login;
        if actor.id == 0 {
            return Ok(Err(format!("the event gives no user id for {login:?}")));
        }
        let path = format!("{}/members/all/{}", self.project, actor.id);
        let member = match self.api.get(&path) {
            Ok(v) => v,
            Err(e) if e.status == Some(404) => {
                return Ok(Err(format!("{login} is not a member of the project")));
            }
            Err(e) => return Err(e.message),
        };
        let level = member["access_level"].as_u64().unwrap_or(0);
        if member["state"].as_str().is_some_and(|s| s != "active") {
            return Ok(Err(format!("{login}'s membership is {}", member["state"])));
        }
        Ok(if level >= DEVELOPER {
            Ok(())
        } else {
            Err(format!(
                "{login} has access level {level} ({}), not Developer (30) or above",
                level_name(level)
            ))
        })
    }

    fn post_note(&self, n: u64, is_pr: bool, body: &str) -> Result<Note, ApiError> {
        let item = self.item(n, is_pr);
        let note = self
            .api
            .post(&format!("{item}/notes"), &json!({ "body": body }))?;
        let id = note["id"].as_u64().ok_or_else(|| ApiError {
            status: None,
            message: format!("GitLab API POST {item}/notes: the new note has no id"),
        })?;
        Ok(Note {
            path: format!("{item}/notes/{id}"),
            url: format!("{}#note_{id}", self.place.item_url(n, is_pr)),
        })
    }

    fn edit_note(&self, note: &Note, body: &str) -> Result<(), ApiError> {
        self.api
            .put(&note.path, &json!({ "body": body }))
            .map(|_| ())
    }

    fn pull_refs(&self, e: &Event) -> Result<Option<PullRefs>, String> {
        let (true, Some(n)) = (e.is_pr, e.number) else {
            return Ok(None);
        };
        let mr = self.merge_request(n)?;
        let field = |k: &str| {
            mr[k]
                .as_str()
                .map(String::from)
                .ok_or_else(|| format!("the merge request !{n} has no {k}"))
        };
        let source = mr["source_project_id"].as_u64();
        let head_repo = if source == Some(self.project_id) {
            self.place.full_name.clone()
        } else {
            self.source_path
                .clone()
                .unwrap_or_else(|| format!("project {}", source.unwrap_or(0)))
        };
        Ok(Some(PullRefs {
            base_ref: field("target_branch")?,
            head_ref: field("source_branch")?,
            head_sha: mr["diff_refs"]["head_sha"]
                .as_str()
                .map(String::from)
                .map_or_else(|| field("sha"), Ok)?,
            head_repo,
        }))
    }

    fn comments(&self, e: &Event) -> Result<Vec<Value>, String> {
        let Some(n) = e.number else {
            return Ok(Vec::new());
        };
        let notes = self
            .api
            .get(&format!("{}/notes?{NOTES_PAGE}", self.item(n, e.is_pr)))
            .map_err(|e| e.message)?;
        // Newest first from the API; system notes ("changed the description") left out.
        let mut out: Vec<Value> = notes
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| n["system"] != true)
            .map(|n| {
                json!({"id": n["id"], "body": n["body"], "created_at": n["created_at"],
                       "user": {"login": n["author"]["username"]}})
            })
            .collect();
        out.reverse();
        Ok(out)
    }

    fn files(&self, e: &Event, pull: Option<&PullRefs>) -> Result<Vec<Value>, String> {
        let (Some(_), Some(n)) = (pull, e.number) else {
            return Ok(Vec::new());
        };
        let diffs = self
            .api
            .get(&format!("{}/diffs?per_page=100", self.item(n, true)))
            .map_err(|e| e.message)?;
        Ok(diffs
            .as_array()
            .into_iter()
            .flatten()
            .map(file_of)
            .collect())
    }

    fn head_refspec(&self, n: u64) -> String {
        format!("refs/merge-requests/{n}/head")
    }

    fn file_on(&self, git_ref: &str, path: &str) -> Result<Option<String>, ApiError> {
        let call = format!(
            "{}/repository/files/{}/raw?ref={}",
            self.project,
            encode(path),
            encode(git_ref)
        );
        match self.api.get_text(&call) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn default_branch(&self, e: &Event) -> Result<String, String> {
        match &e.default_branch {
            Some(b) => Ok(b.clone()),
            None => Ok(
                self.api.get(&self.project).map_err(|e| e.message)?["default_branch"]
                    .as_str()
                    .ok_or("the project has no default_branch")?
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
        let mr = self
            .api
            .post(
                &format!("{}/merge_requests", self.project),
                &json!({"source_branch": branch, "target_branch": base,
                        "title": title, "description": body}),
            )
            .map_err(|e| e.message)?;
        Ok(Opened {
            reference: format!("!{}", mr["iid"].as_u64().unwrap_or(0)),
            url: mr["web_url"].as_str().unwrap_or_default().to_string(),
        })
    }

    fn change_body(&self, n: u64, actor: &Actor, asked_in: &str, answer: &str) -> String {
        let reference = if self.close_issue {
            format!("Closes #{n}.")
        } else {
            format!("For #{n}.")
        };
        format!(
            "{reference}\n\nRequested by @{} in {asked_in}.\n\n{answer}\n",
            actor.login
        )
    }

    fn post_review(
        &self,
        n: u64,
        _pull: &PullRefs,
        files: &[Value],
        answer: &Value,
    ) -> Result<Posted, String> {
        let mr = self.merge_request(n)?;
        let refs = &mr["diff_refs"];
        let sha = |k: &str| {
            refs[k]
                .as_str()
                .ok_or_else(|| format!("the merge request !{n} has no diff_refs.{k}"))
        };
        let (base, start, head) = (sha("base_sha")?, sha("start_sha")?, sha("head_sha")?);
        let lines = review::diff_lines(files);
        let (mut summary, inline) = review::partition(answer, &lines)
            .ok_or("the run gave no review (no structured answer)")?;
        let positions = Positions::of(files);
        let total = answer["comments"].as_array().map_or(0, Vec::len);
        let path = format!("{}/discussions", self.item(n, true));
        let mut posted = 0;
        let mut refused = Vec::new();
        for c in &inline {
            let position = positions.position(c, (base, start, head));
            match self
                .api
                .post(&path, &json!({"body": c.body, "position": position}))
            {
                Ok(_) => posted += 1,
                Err(e) => refused.push((c, e.message)),
            }
        }
        if !refused.is_empty() {
            summary.push_str("\n\n**Comments GitLab did not take on their lines:**\n\n");
            for (c, why) in &refused {
                summary.push_str(&format!(
                    "- `{}:{}`: {} ({why})\n",
                    c.path,
                    c.line,
                    c.body.trim()
                ));
            }
        }
        let note = self
            .api
            .post(
                &format!("{}/notes", self.item(n, true)),
                &json!({ "body": format!("{}\n**agent review**\n\n{summary}", crate::commands::forge::progress::MARKER) }),
            )
            .map_err(|e| e.message)?;
        let url = format!(
            "{}#note_{}",
            self.place.item_url(n, true),
            note["id"].as_u64().unwrap_or(0)
        );
        let line = format!(
            "Posted {} and [a summary]({url}) ({} on lines outside the diff are in the summary).",
            crate::commands::summary::count(posted as u64, "diff discussion"),
            total - inline.len() + refused.len()
        );
        Ok((line, Some(summary)))
    }

    fn asked_in(&self, e: &Event) -> String {
        let Some(n) = e.number else {
            return self.place.full_name.clone();
        };
        let url = self.place.item_url(n, e.is_pr);
        match &e.comment {
            Some(c) => format!("{url}#note_{}", c.id),
            None => url,
        }
    }

    /// GitLab's noreply address of the user (`ID-USERNAME@users.noreply.HOST`).
    fn co_author(&self, actor: &Actor) -> Option<String> {
        (!actor.is_bot && actor.id > 0).then(|| {
            format!(
                "{0} <{1}-{0}@users.noreply.{2}>",
                actor.login, actor.id, self.host
            )
        })
    }
}

/// GitLab's name of an access level.
fn level_name(level: u64) -> &'static str {
    match level {
        0 => "No access",
        5 => "Minimal access",
        10 => "Guest",
        15 => "Planner",
        20 => "Reporter",
        30 => "Developer",
        40 => "Maintainer",
        50 => "Owner",
        _ => "unknown",
    }
}

/// One `GET /merge_requests/:iid/diffs` entry in the core's file form.
pub(crate) fn file_of(d: &Value) -> Value {
    let patch = d["diff"].as_str().unwrap_or_default();
    let (mut additions, mut deletions) = (0u64, 0u64);
    for l in patch.lines() {
        if l.starts_with('+') {
            additions += 1;
        } else if l.starts_with('-') {
            deletions += 1;
        }
    }
    let status = if d["new_file"] == true {
        "added"
    } else if d["deleted_file"] == true {
        "removed"
    } else if d["renamed_file"] == true {
        "renamed"
    } else {
        "modified"
    };
    json!({"filename": d["new_path"], "previous_filename": d["old_path"], "status": status,
           "additions": additions, "deletions": deletions, "patch": patch})
}

/// A line's numbers on both sides (`old_line`, `new_line`).
type LineNumbers = (Option<u64>, Option<u64>);

/// Each diff line's numbers on both sides (a context line has both), per file, and the
/// file's old path: what a GitLab position needs.
pub(crate) struct Positions {
    /// `(path, side, line)` → `(old_line, new_line)`.
    lines: HashMap<(String, &'static str, u64), LineNumbers>,
    old_paths: HashMap<String, String>,
}

impl Positions {
    pub(crate) fn of(files: &[Value]) -> Positions {
        let mut p = Positions {
            lines: HashMap::new(),
            old_paths: HashMap::new(),
        };
        for f in files {
            let (Some(path), Some(patch)) = (f["filename"].as_str(), f["patch"].as_str()) else {
                continue;
            };
            if let Some(old) = f["previous_filename"].as_str() {
                p.old_paths.insert(path.to_string(), old.to_string());
            }
            let (mut old, mut new) = (0u64, 0u64);
            for l in patch.lines() {
                if let Some(h) = l.strip_prefix("@@ ") {
                    let mut parts = h.split_whitespace();
                    old = hunk_start(parts.next(), '-');
                    new = hunk_start(parts.next(), '+');
                    continue;
                }
                let path = path.to_string();
                match l.chars().next() {
                    Some('+') => {
                        p.lines.insert((path, "RIGHT", new), (None, Some(new)));
                        new += 1;
                    }
                    Some('-') => {
                        p.lines.insert((path, "LEFT", old), (Some(old), None));
                        old += 1;
                    }
                    Some('\\') => {}
                    _ => {
                        let both = (Some(old), Some(new));
                        p.lines.insert((path.clone(), "RIGHT", new), both);
                        p.lines.insert((path, "LEFT", old), both);
                        old += 1;
                        new += 1;
                    }
                }
            }
        }
        p
    }

    /// The `position` of a comment on a diff line (`text`, both paths, the line's
    /// numbers: `new_line` for an added line, `old_line` for a removed one, both for a
    /// context line).
    pub(crate) fn position(&self, c: &Inline, (base, start, head): (&str, &str, &str)) -> Value {
        let (old_line, new_line) = self
            .lines
            .get(&(c.path.clone(), c.side, c.line))
            .copied()
            .unwrap_or(if c.side == "LEFT" {
                (Some(c.line), None)
            } else {
                (None, Some(c.line))
            });
        let old_path = self.old_paths.get(&c.path).unwrap_or(&c.path);
        let mut p = json!({"position_type": "text", "base_sha": base, "start_sha": start,
                           "head_sha": head, "old_path": old_path, "new_path": c.path});
        if let Some(o) = old_line {
            p["old_line"] = json!(o);
        }
        if let Some(n) = new_line {
            p["new_line"] = json!(n);
        }
        p
    }
}

/// `-12,5` → 12.
fn hunk_start(part: Option<&str>, sign: char) -> u64 {
    part.and_then(|p| p.strip_prefix(sign))
        .and_then(|p| p.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A path segment or query value, percent-encoded (GitLab wants a file path's `/` as
/// `%2F`).
pub(crate) fn encode(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[path = "forge_tests.rs"]
mod tests;
