//! Unit tests of `event.rs`: the variables, the payloads, the triggers.

use super::*;
use serde_json::json;

fn flags() -> Triggers {
    Triggers {
        trigger_phrase: "@agent".into(),
        label_trigger: None,
        assignee_trigger: None,
    }
}

fn comment_event(body: &str, action: &str) -> Event {
    let payload = json!({"action": action,
        "issue": {"number": 3, "title": "T", "body": "B", "user": {"login": "r"}},
        "comment": {"id": 9, "body": body, "user": {"login": "m"}},
        "sender": {"login": "m", "id": 1, "type": "User"}});
    Event::parse("issue_comment", &payload).unwrap()
}

#[test]
fn the_phrase_is_matched_as_a_word() {
    assert_eq!(find_word("@agent fix it", "@agent"), Some(6));
    assert_eq!(find_word("Hey @Agent, fix it", "@agent"), Some(10));
    assert_eq!(find_word("(@agent)", "@agent"), Some(7));
    assert_eq!(find_word("ask @agent.", "@agent"), Some(10));
    assert!(find_word("@agents fix", "@agent").is_none());
    assert!(find_word("@agent-x fix", "@agent").is_none());
    assert!(find_word("@agent_x fix", "@agent").is_none());
    assert!(
        find_word("me@agent.dev", "@agent").is_none(),
        "an e-mail address"
    );
    assert!(find_word("x@agent fix", "@agent").is_none());
    assert_eq!(find_word("@agentsmith then @agent", "@agent"), Some(23));
    assert!(find_word("", "@agent").is_none());
    // A phrase that starts with a word character: `/oc`, `agent`.
    assert!(find_word("the reagent", "agent").is_none());
    assert_eq!(find_word("/oc fix", "/oc"), Some(3));
}

#[test]
fn a_comment_with_the_phrase_triggers_and_review_is_read_after_it() {
    let t = trigger(
        &comment_event("@agent fix the typo", "created"),
        &flags(),
        None,
    )
    .unwrap();
    assert_eq!(t.cause, Cause::Mention);
    assert_eq!(t.instruction.as_deref(), Some("@agent fix the typo"));
    assert!(!t.review);
    let t = trigger(
        &comment_event("Please, @agent review this", "created"),
        &flags(),
        None,
    )
    .unwrap();
    assert!(t.review);
    let t = trigger(
        &comment_event("@agent reviewers are fine", "created"),
        &flags(),
        None,
    )
    .unwrap();
    assert!(!t.review, "review as a word");
    let why = trigger(&comment_event("no mention", "created"), &flags(), None).unwrap_err();
    assert_eq!(why, "the comment has no @agent");
    let why = trigger(&comment_event("@agent x", "deleted"), &flags(), None).unwrap_err();
    assert_eq!(why, "issue_comment deleted is not answered");
    let why = trigger(&comment_event("@agent x", "edited"), &flags(), None).unwrap_err();
    assert_eq!(
        why, "issue_comment edited is not answered",
        "an edit starts no second run"
    );
    let own = format!("{OWN_MARKER}\nI was asked by @agent");
    let why = trigger(&comment_event(&own, "created"), &flags(), None).unwrap_err();
    assert_eq!(why, "the comment is the agent's own");
}

#[test]
fn labels_assignees_prompts_and_dispatch() {
    let labeled = Event::parse(
        "issues",
        &json!({"action": "labeled", "issue": {"number": 1, "title": "T", "body": "", "user": {"login": "r"}},
                "label": {"name": "agent"}, "sender": {"login": "m", "id": 1, "type": "User"}}),
    )
    .unwrap();
    assert!(
        trigger(&labeled, &flags(), None)
            .unwrap_err()
            .contains("no --label-trigger")
    );
    let mut f = flags();
    f.label_trigger = Some("agent".into());
    assert_eq!(
        trigger(&labeled, &f, None).unwrap().cause,
        Cause::LabelOrAssignee
    );
    f.label_trigger = Some("other".into());
    assert!(
        trigger(&labeled, &f, None)
            .unwrap_err()
            .contains("not --label-trigger \"other\"")
    );

    let assigned = Event::parse(
        "issues",
        &json!({"action": "assigned", "issue": {"number": 1, "title": "T", "body": "", "user": {"login": "r"}},
                "assignee": {"login": "Agent-Bot"}, "sender": {"login": "m", "id": 1, "type": "User"}}),
    )
    .unwrap();
    let mut f = flags();
    f.assignee_trigger = Some("agent-bot".into());
    assert_eq!(
        trigger(&assigned, &f, None).unwrap().cause,
        Cause::LabelOrAssignee
    );

    let dispatch = Event::parse(
        "workflow_dispatch",
        &json!({"sender": {"login": "m", "id": 1}}),
    )
    .unwrap();
    assert!(dispatch.number.is_none());
    assert!(
        trigger(&dispatch, &flags(), None)
            .unwrap_err()
            .contains("without --prompt")
    );
    let t = trigger(&dispatch, &flags(), Some("update the docs")).unwrap();
    assert_eq!(
        (t.cause, t.instruction.as_deref()),
        (Cause::Prompt, Some("update the docs"))
    );
}

#[test]
fn payloads_are_reduced_and_bots_and_prs_recognised() {
    let e = comment_event("x", "created");
    assert!(!e.is_pr && !e.actor.is_bot);
    assert_eq!((e.number, e.actor.id), (Some(3), 1));
    let pr_comment = Event::parse(
        "issue_comment",
        &json!({"action": "created",
                "issue": {"number": 7, "title": "T", "body": null, "user": {"login": "r"}, "pull_request": {"url": "u"}},
                "comment": {"id": 9, "body": "@agent", "user": {"login": "renovate[bot]"}},
                "sender": {"login": "renovate[bot]", "id": 2, "type": "Bot"}}),
    )
    .unwrap();
    assert!(pr_comment.is_pr && pr_comment.actor.is_bot);
    assert!(
        pr_comment.pull.is_none(),
        "an issue_comment payload has no head"
    );
    let pr = Event::parse(
        "pull_request",
        &json!({"action": "labeled", "number": 9, "label": {"name": "x"},
                "pull_request": {"number": 9, "title": "T", "body": "B", "user": {"login": "c"},
                    "head": {"ref": "f", "sha": "abc", "repo": null}, "base": {"ref": "main", "sha": "def", "repo": {"full_name": "o/r"}}},
                "sender": {"login": "m", "id": 1, "type": "User"}}),
    )
    .unwrap();
    let refs = pr.pull.unwrap();
    assert_eq!(
        refs.head_repo, "(deleted fork)",
        "a deleted fork is never this repository"
    );
    assert!(
        Event::parse("issue_comment", &json!({"action": "created"}))
            .unwrap_err()
            .contains("sender.login")
    );
    assert!(
        Event::parse(
            "issue_comment",
            &json!({"sender": {"login": "m"}, "comment": {}})
        )
        .is_err()
    );
}
