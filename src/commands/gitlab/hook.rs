//! GitLab's webhook payloads (a note, issue or merge request event, as a pipeline
//! trigger passes it in `TRIGGER_PAYLOAD`), and a pipeline without one, mapped onto the
//! conversation core's `Event`: names `note` (action `create`, …), `issue` and
//! `merge_request` (`open`, or `labeled` / `assigned` when the hook's `changes` add a
//! label or an assignee), and for a payload-less pipeline its `CI_PIPELINE_SOURCE` with
//! the action `pipeline`.

use serde_json::Value;

use super::env::GitlabEnv;
use crate::commands::forge::event::{Actor, Comment, CommentKind, Event};

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Whether a username is one of GitLab's bot users: project and group access tokens'
/// (`project_7_bot_…`, `group_3_bot_…`) and the instance's own (`ghost`, `support-bot`,
/// `alert-bot`, …).
pub(crate) fn is_bot(username: &str) -> bool {
    let access_token_bot = |prefix: &str| {
        username.strip_prefix(prefix).is_some_and(|rest| {
            let (digits, tail) = rest.split_at(
                rest.find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len()),
            );
            !digits.is_empty() && (tail == "_bot" || tail.starts_with("_bot_"))
        })
    };
    access_token_bot("project_")
        || access_token_bot("group_")
        || username.ends_with("-bot")
        || username.ends_with("[bot]")
        || username == "ghost"
}

/// The hook's payload as an `Event`; `label_trigger` picks the label reported when a
/// change adds several.
pub(crate) fn parse(
    payload: &Value,
    env: &GitlabEnv,
    label_trigger: Option<&str>,
) -> Result<Event, String> {
    let kind = payload["object_kind"]
        .as_str()
        .ok_or("the webhook payload has no object_kind (not a GitLab webhook event?)")?;
    let user = &payload["user"];
    let login = user["username"]
        .as_str()
        .ok_or_else(|| format!("the {kind} payload has no user.username"))?;
    let actor = Actor {
        login: login.to_string(),
        id: user["id"].as_u64().unwrap_or(0),
        is_bot: user["bot"] == true || is_bot(login),
    };
    let attrs = &payload["object_attributes"];
    let default_branch = payload["project"]["default_branch"]
        .as_str()
        .map(String::from)
        .or_else(|| env.default_branch.clone());
    let mut e = Event {
        name: kind.to_string(),
        action: String::new(),
        actor,
        number: None,
        is_pr: false,
        title: String::new(),
        body: String::new(),
        author: String::new(),
        comment: None,
        label: None,
        assignee: None,
        pull: None,
        comment_count: 0,
        default_branch,
    };
    match kind {
        "note" => {
            let noteable = attrs["noteable_type"].as_str().unwrap_or_default();
            let item = match noteable {
                "Issue" => &payload["issue"],
                "MergeRequest" => &payload["merge_request"],
                _ => &Value::Null,
            };
            e.is_pr = noteable == "MergeRequest";
            e.number = item["iid"].as_u64();
            e.title = text(&item["title"]);
            e.body = text(&item["description"]);
            // Older GitLab sends no action on a note: it is a new one.
            let action = attrs["action"].as_str().unwrap_or("create");
            e.action = match (e.number, noteable) {
                (Some(_), _) => action.to_string(),
                (None, "Issue" | "MergeRequest") => {
                    return Err(format!("the note payload names no {noteable} iid"));
                }
                (None, other) => format!("{action} on a {other}"),
            };
            let position = &attrs["position"];
            e.comment = Some(Comment {
                kind: if attrs["type"] == "DiffNote" {
                    CommentKind::ReviewComment
                } else {
                    CommentKind::Issue
                },
                id: attrs["id"].as_u64().unwrap_or(0),
                body: text(&attrs["note"]),
                author: login.to_string(),
                path: position["new_path"].as_str().map(String::from),
                line: position["new_line"]
                    .as_u64()
                    .or_else(|| position["old_line"].as_u64()),
                diff_hunk: None,
            });
        }
        "issue" | "merge_request" => {
            e.is_pr = kind == "merge_request";
            e.number = attrs["iid"].as_u64();
            e.title = text(&attrs["title"]);
            e.body = text(&attrs["description"]);
            let added = |field: &str, key: &str| -> Vec<String> {
                let names = |side: &str| -> Vec<String> {
                    payload["changes"][field][side]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v[key].as_str().map(String::from))
                        .collect()
                };
                let before = names("previous");
                names("current")
                    .into_iter()
                    .filter(|n| !before.contains(n))
                    .collect()
            };
            let labels = added("labels", "title");
            let assignees = added("assignees", "username");
            e.action = if !labels.is_empty() {
                e.label = label_trigger
                    .and_then(|want| labels.iter().find(|l| *l == want))
                    .or(labels.first())
                    .cloned();
                "labeled".into()
            } else if !assignees.is_empty() {
                e.assignee = assignees.first().cloned();
                "assigned".into()
            } else {
                text(&attrs["action"])
            };
            if e.number.is_none() {
                return Err(format!("the {kind} payload has no object_attributes.iid"));
            }
        }
        other => {
            return Err(format!(
                "a {other} webhook event is not answered (note, issue and merge_request are)"
            ));
        }
    }
    e.author = author_of(payload, &e);
    Ok(e)
}

/// The issue's or merge request's author, when the payload says (a note's payload has
/// only the id; the user's name stands in for it then).
fn author_of(payload: &Value, e: &Event) -> String {
    let user_name = |id: &Value| {
        (payload["user"]["id"] == *id && !id.is_null()).then(|| text(&payload["user"]["username"]))
    };
    let item = if payload["object_kind"] == "note" {
        if e.is_pr {
            &payload["merge_request"]
        } else {
            &payload["issue"]
        }
    } else {
        &payload["object_attributes"]
    };
    user_name(&item["author_id"]).unwrap_or_else(|| match item["author_id"].as_u64() {
        Some(id) => format!("user {id}"),
        None => "?".into(),
    })
}

/// A pipeline without a payload: a `merge_request_event` one is about its merge request
/// (the variables name it), any other about the project; the user is the pipeline's.
pub(crate) fn pipeline(env: &GitlabEnv) -> Event {
    let source = env
        .pipeline_source
        .clone()
        .unwrap_or_else(|| "pipeline".into());
    let login = env.user_login.clone().unwrap_or_default();
    let is_pr = source == "merge_request_event" && env.mr_iid.is_some();
    Event {
        name: source,
        action: "pipeline".into(),
        actor: Actor {
            is_bot: is_bot(&login),
            login,
            id: env.user_id.unwrap_or(0),
        },
        number: if is_pr { env.mr_iid } else { None },
        is_pr,
        title: env.mr_title.clone().unwrap_or_default(),
        body: env.mr_description.clone().unwrap_or_default(),
        author: String::new(),
        comment: None,
        label: None,
        assignee: None,
        pull: None,
        comment_count: 0,
        default_branch: env.default_branch.clone(),
    }
}

#[cfg(test)]
#[path = "hook_tests.rs"]
mod tests;
