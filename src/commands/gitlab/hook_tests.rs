//! Unit tests of `hook.rs`: notes, labels, pipelines and bots mapped onto the core's event.

use super::*;
use crate::commands::forge::event::{Cause, Triggers, trigger};
use serde_json::json;

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/gitlab/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn triggers(label: Option<&str>) -> Triggers {
    Triggers {
        trigger_phrase: "@agent".into(),
        label_trigger: label.map(String::from),
        assignee_trigger: Some("agent-runner".into()),
    }
}

#[test]
fn a_note_on_an_issue_is_a_mention() {
    let e = parse(&fixture("note.issue.json"), &GitlabEnv::default(), None).unwrap();
    assert_eq!((e.name.as_str(), e.action.as_str()), ("note", "create"));
    assert_eq!((e.number, e.is_pr), (Some(3), false));
    assert_eq!(e.actor.login, "maintainer");
    assert_eq!(e.author, "user 2002");
    assert_eq!(e.default_branch.as_deref(), Some("main"));
    let c = e.comment.as_ref().unwrap();
    assert_eq!((c.id, c.kind), (5005, CommentKind::Issue));
    let t = trigger(&e, &triggers(None), None).unwrap();
    assert_eq!(t.cause, Cause::Mention);
}

#[test]
fn a_note_on_a_merge_request_an_edit_and_a_commit_note() {
    let mut p = fixture("note.merge_request.json");
    let e = parse(&p, &GitlabEnv::default(), None).unwrap();
    assert_eq!((e.number, e.is_pr), (Some(5), true));
    p["object_attributes"]["action"] = json!("update");
    let e = parse(&p, &GitlabEnv::default(), None).unwrap();
    assert_eq!(
        trigger(&e, &triggers(None), None).unwrap_err(),
        "note update is not answered"
    );
    p["object_attributes"]["action"] = json!("create");
    p["object_attributes"]["noteable_type"] = json!("Commit");
    let e = parse(&p, &GitlabEnv::default(), None).unwrap();
    assert!(
        trigger(&e, &triggers(None), None)
            .unwrap_err()
            .contains("on a Commit is not answered")
    );
    p["object_attributes"]["noteable_type"] = json!("MergeRequest");
    p["object_attributes"]["note"] = json!("ping @agents and me@agent.dev");
    let e = parse(&p, &GitlabEnv::default(), None).unwrap();
    assert_eq!(
        trigger(&e, &triggers(None), None).unwrap_err(),
        "the note has no @agent"
    );
}

#[test]
fn an_added_label_and_an_added_assignee() {
    let p = fixture("issue.labeled.json");
    let e = parse(&p, &GitlabEnv::default(), Some("agent")).unwrap();
    assert_eq!(
        (e.action.as_str(), e.label.as_deref()),
        ("labeled", Some("agent"))
    );
    assert_eq!(
        trigger(&e, &triggers(Some("agent")), None).unwrap().cause,
        Cause::LabelOrAssignee
    );
    assert!(trigger(&e, &triggers(Some("other")), None).is_err());
    let mut a = p.clone();
    a["changes"] =
        json!({"assignees": {"previous": [], "current": [{"username": "agent-runner"}]}});
    let e = parse(&a, &GitlabEnv::default(), None).unwrap();
    assert_eq!(
        (e.action.as_str(), e.assignee.as_deref()),
        ("assigned", Some("agent-runner"))
    );
    assert!(trigger(&e, &triggers(None), None).is_ok());
    // An update that adds neither is not a call.
    a["changes"] = json!({"title": {"previous": "a", "current": "b"}});
    let e = parse(&a, &GitlabEnv::default(), None).unwrap();
    assert!(trigger(&e, &triggers(None), None).is_err());
}

#[test]
fn a_pipeline_without_a_payload_needs_a_prompt() {
    let env = GitlabEnv {
        pipeline_source: Some("merge_request_event".into()),
        mr_iid: Some(5),
        mr_title: Some("Add notes".into()),
        user_id: Some(1001),
        user_login: Some("maintainer".into()),
        ..GitlabEnv::default()
    };
    let e = pipeline(&env);
    assert_eq!((e.number, e.is_pr, e.actor.id), (Some(5), true, 1001));
    assert_eq!(
        trigger(&e, &triggers(None), None).unwrap_err(),
        "a merge_request_event pipeline without --prompt or --review"
    );
    assert_eq!(
        trigger(&e, &triggers(None), Some("review")).unwrap().cause,
        Cause::Prompt
    );
}

#[test]
fn bots_are_known_by_their_usernames() {
    for bot in [
        "project_7_bot_3f2a",
        "group_12_bot",
        "support-bot",
        "ghost",
        "renovate[bot]",
    ] {
        assert!(is_bot(bot), "{bot}");
    }
    for user in ["maintainer", "project_manager", "robot", "project_7_botany"] {
        assert!(!is_bot(user), "{user}");
    }
    let mut p = fixture("note.issue.json");
    p["user"]["username"] = json!("project_7_bot_3f2a");
    assert!(parse(&p, &GitlabEnv::default(), None).unwrap().actor.is_bot);
    assert!(
        parse(
            &json!({"object_kind": "push", "user": {"username": "x"}}),
            &GitlabEnv::default(),
            None
        )
        .is_err()
    );
}
