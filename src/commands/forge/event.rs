//! The event of a conversation, forge-neutral: what it needs of a GitHub payload or a
//! GitLab hook (`Event`; GitHub's payload is parsed here, GitLab's hook is mapped onto it
//! by `commands::gitlab::hook`), and whether it calls the agent (`trigger`), with the
//! reason when it does not.

use serde_json::Value;

/// What calls the agent (the flags both `agent github` and `agent gitlab` take).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Triggers {
    pub trigger_phrase: String,
    pub label_trigger: Option<String>,
    pub assignee_trigger: Option<String>,
}

/// Who caused the event (the payload's `sender`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Actor {
    pub login: String,
    pub id: u64,
    pub is_bot: bool,
}

/// Which kind of comment carried the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommentKind {
    /// On the issue or pull request's conversation.
    Issue,
    /// On a line of a pull request's diff.
    ReviewComment,
    /// A submitted review's body.
    Review,
}

/// The comment (or review) that holds the request.
#[derive(Debug, Clone)]
pub(crate) struct Comment {
    pub kind: CommentKind,
    pub id: u64,
    pub body: String,
    pub author: String,
    /// A review comment's file, line and hunk, for the context.
    pub path: Option<String>,
    pub line: Option<u64>,
    pub diff_hunk: Option<String>,
}

/// A pull request's two ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PullRefs {
    pub base_ref: String,
    pub head_ref: String,
    pub head_sha: String,
    /// `OWNER/REPO` of the head; not this repository's for a fork.
    pub head_repo: String,
}

impl PullRefs {
    /// From a `pull_request` object (payload or `GET /pulls/{n}`).
    pub(crate) fn from_json(pr: &Value) -> Option<PullRefs> {
        Some(PullRefs {
            base_ref: pr["base"]["ref"].as_str()?.to_string(),
            head_ref: pr["head"]["ref"].as_str()?.to_string(),
            head_sha: pr["head"]["sha"].as_str()?.to_string(),
            // A deleted fork has `head.repo: null`: never this repository.
            head_repo: pr["head"]["repo"]["full_name"]
                .as_str()
                .unwrap_or("(deleted fork)")
                .to_string(),
        })
    }
}

/// The event, reduced.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub name: String,
    pub action: String,
    pub actor: Actor,
    /// The issue or pull request number (none for workflow_dispatch).
    pub number: Option<u64>,
    pub is_pr: bool,
    pub title: String,
    pub body: String,
    /// The issue's or pull request's author.
    pub author: String,
    pub comment: Option<Comment>,
    /// `labeled`: the label added.
    pub label: Option<String>,
    /// `assigned`: the user assigned.
    pub assignee: Option<String>,
    /// From the payload when it has the pull request (not for issue_comment).
    pub pull: Option<PullRefs>,
    /// The issue's comment count (`issue.comments`), to fetch the last page.
    pub comment_count: u64,
    pub default_branch: Option<String>,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

impl Event {
    /// The payload of `name`; `Err` when it lacks what that event always has.
    pub(crate) fn parse(name: &str, payload: &Value) -> Result<Event, String> {
        let sender = &payload["sender"];
        let login = sender["login"]
            .as_str()
            .ok_or_else(|| format!("the {name} payload has no sender.login"))?;
        let actor = Actor {
            login: login.to_string(),
            id: sender["id"].as_u64().unwrap_or(0),
            is_bot: sender["type"] == "Bot" || login.ends_with("[bot]"),
        };
        // The issue or pull request the event is about, if any.
        let (item, is_pr) = if payload["pull_request"].is_object() {
            (&payload["pull_request"], true)
        } else if payload["issue"].is_object() {
            let issue = &payload["issue"];
            (
                issue,
                issue.get("pull_request").is_some_and(|p| !p.is_null()),
            )
        } else {
            (&Value::Null, false)
        };
        let comment = match name {
            "issue_comment" | "pull_request_review_comment" => Some(Comment {
                kind: if name == "issue_comment" {
                    CommentKind::Issue
                } else {
                    CommentKind::ReviewComment
                },
                id: payload["comment"]["id"].as_u64().unwrap_or(0),
                body: text(&payload["comment"]["body"]),
                author: text(&payload["comment"]["user"]["login"]),
                path: payload["comment"]["path"].as_str().map(String::from),
                line: payload["comment"]["line"].as_u64(),
                diff_hunk: payload["comment"]["diff_hunk"].as_str().map(String::from),
            }),
            "pull_request_review" => Some(Comment {
                kind: CommentKind::Review,
                id: payload["review"]["id"].as_u64().unwrap_or(0),
                body: text(&payload["review"]["body"]),
                author: text(&payload["review"]["user"]["login"]),
                path: None,
                line: None,
                diff_hunk: None,
            }),
            _ => None,
        };
        let number = item["number"].as_u64();
        if comment.is_some() && number.is_none() {
            return Err(format!("the {name} payload names no issue or pull request"));
        }
        Ok(Event {
            name: name.to_string(),
            action: text(&payload["action"]),
            actor,
            number,
            is_pr,
            title: text(&item["title"]),
            body: text(&item["body"]),
            author: text(&item["user"]["login"]),
            comment,
            label: payload["label"]["name"].as_str().map(String::from),
            assignee: payload["assignee"]["login"].as_str().map(String::from),
            pull: if payload["pull_request"].is_object() {
                PullRefs::from_json(&payload["pull_request"])
            } else {
                None
            },
            comment_count: item["comments"].as_u64().unwrap_or(0),
            default_branch: payload["repository"]["default_branch"]
                .as_str()
                .map(String::from),
        })
    }
}

/// The first line of the agent's own comments (`progress::MARKER`): one never calls it.
pub(crate) const OWN_MARKER: &str = "<!-- agent-github -->";

/// What called the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The phrase in a comment, a review or the issue: the text is the instruction.
    Mention,
    /// `--label-trigger` or `--assignee-trigger`: the issue itself is the task.
    LabelOrAssignee,
    /// `--prompt` (or PROMPT): the given text is the instruction.
    Prompt,
}

/// A call to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Triggered {
    pub cause: Cause,
    /// The instruction as written by the person who called (for `LabelOrAssignee`, none:
    /// the task is the issue, which is fenced as data).
    pub instruction: Option<String>,
    /// The instruction asks for a review (`@agent review …`).
    pub review: bool,
}

/// Whether the event calls the agent; `Err` says why not (one log line).
pub(crate) fn trigger(
    event: &Event,
    flags: &Triggers,
    prompt: Option<&str>,
) -> Result<Triggered, String> {
    let phrase = flags.trigger_phrase.as_str();
    if let Some(p) = prompt {
        return Ok(Triggered {
            cause: Cause::Prompt,
            instruction: Some(p.to_string()),
            review: false,
        });
    }
    let mention = |body: &str| {
        find_word(body, phrase).map(|after| Triggered {
            cause: Cause::Mention,
            instruction: Some(body.to_string()),
            review: starts_with_word(body[after..].trim_start(), "review"),
        })
    };
    let action = event.action.as_str();
    match (event.name.as_str(), action) {
        ("workflow_dispatch", _) => Err("workflow_dispatch without --prompt".to_string()),
        // GitLab: a pipeline without a hook's payload (`commands::gitlab::hook`).
        (source, "pipeline") => Err(format!("a {source} pipeline without --prompt or --review")),
        // GitLab's note hook (`create` only: editing a note must not start a second run).
        ("note", "create") => {
            let body = event.comment.as_ref().map_or("", |c| c.body.as_str());
            if body.starts_with(OWN_MARKER) {
                return Err("the note is the agent's own".to_string());
            }
            mention(body).ok_or_else(|| format!("the note has no {phrase}"))
        }
        ("note", _) => Err(format!("note {action} is not answered")),
        ("issue" | "merge_request", "open") => {
            let text = format!("{}\n\n{}", event.title, event.body);
            mention(&text).ok_or_else(|| {
                format!(
                    "the {}'s title and description have no {phrase}",
                    event.name.replace('_', " ")
                )
            })
        }
        // Not `edited`: fixing a typo in a comment must not start a second run.
        ("issue_comment" | "pull_request_review_comment", "created")
        | ("pull_request_review", "submitted") => {
            let body = event.comment.as_ref().map_or("", |c| c.body.as_str());
            if body.starts_with(OWN_MARKER) {
                return Err("the comment is the agent's own".to_string());
            }
            mention(body).ok_or_else(|| format!("the {} has no {phrase}", what(event)))
        }
        ("issue_comment" | "pull_request_review_comment" | "pull_request_review", _) => {
            Err(format!("{} {action} is not answered", event.name))
        }
        (_, "labeled") => match (&flags.label_trigger, &event.label) {
            (Some(want), Some(got)) if want == got => Ok(by_issue()),
            (Some(want), got) => Err(format!(
                "the label added is {:?}, not --label-trigger {want:?}",
                got.as_deref().unwrap_or("")
            )),
            (None, _) => Err("a label was added and there is no --label-trigger".to_string()),
        },
        (_, "assigned") => match (&flags.assignee_trigger, &event.assignee) {
            (Some(want), Some(got)) if want.eq_ignore_ascii_case(got) => Ok(by_issue()),
            (Some(want), got) => Err(format!(
                "the assignee is {:?}, not --assignee-trigger {want:?}",
                got.as_deref().unwrap_or("")
            )),
            (None, _) => {
                Err("an assignee was added and there is no --assignee-trigger".to_string())
            }
        },
        ("issues", "opened" | "edited") => {
            let text = format!("{}\n\n{}", event.title, event.body);
            mention(&text).ok_or_else(|| format!("the issue's title and body have no {phrase}"))
        }
        (name, action) => Err(format!("{name} {action} does not call the agent")),
    }
}

fn by_issue() -> Triggered {
    Triggered {
        cause: Cause::LabelOrAssignee,
        instruction: None,
        review: false,
    }
}

fn what(event: &Event) -> &'static str {
    match event.comment.as_ref().map(|c| c.kind) {
        Some(CommentKind::Review) => "review",
        Some(CommentKind::ReviewComment) => "review comment",
        _ => "comment",
    }
}

/// Whether a character can continue a word (`@agent` is not in `@agents` or `@agent-x`).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Where the first occurrence of `phrase` as a word ends in `text` (case-insensitive):
/// not inside a longer word on either side (`me@agent.dev` is not a mention: a `.`
/// followed by a word character continues it).
pub(crate) fn find_word(text: &str, phrase: &str) -> Option<usize> {
    if phrase.is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    let want = phrase.to_lowercase();
    // Lowercasing can change lengths; the byte offsets are only used in `lower` unless
    // they are the same.
    let same = lower.len() == text.len();
    let mut from = 0;
    while let Some(i) = lower.get(from..).and_then(|t| t.find(&want)) {
        let at = from + i;
        let end = at + want.len();
        let before = lower[..at].chars().next_back();
        let mut rest = lower[end..].chars();
        let after = rest.next();
        let first_is_word = want.chars().next().is_some_and(is_word_char);
        let ok_before = before.is_none_or(|c| !(is_word_char(c) || (first_is_word && c == '@')));
        let ok_after = match after {
            None => true,
            Some('.') => rest.next().is_none_or(|c| !is_word_char(c)),
            Some(c) => !is_word_char(c),
        };
        if ok_before && ok_after {
            return Some(if same { end } else { text.len() });
        }
        from = at + want.len().max(1);
    }
    None
}

fn starts_with_word(text: &str, word: &str) -> bool {
    find_word(text, word).is_some_and(|end| end == word.len())
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
