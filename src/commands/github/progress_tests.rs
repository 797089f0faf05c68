//! Unit tests of `progress.rs`: the checklist from events, the bodies, the edit throttle.

use super::*;
use std::sync::mpsc;

#[test]
fn tool_events_become_a_checklist() {
    let mut list = ToolChecklist::default();
    assert!(list.apply(
        r#"{"type":"tool.started","id":"a","name":"Bash","input":{"command":"cargo test\nmore"}}"#
    ));
    assert!(list.apply(
        r#"{"type":"tool.started","id":"b","name":"ReadFile","input":{"path":"src/`x`.rs"}}"#
    ));
    assert!(list.apply(r#"{"type":"tool.finished","id":"a","is_error":false}"#));
    assert!(list.apply(r#"{"type":"tool.finished","id":"b","is_error":true}"#));
    assert!(!list.apply(r#"{"type":"turn.started"}"#));
    assert!(!list.apply(r#"{"type":"tool.finished","id":"zzz"}"#));
    assert!(!list.apply("not json"));
    let body = working_body(Some("https://x/run"), &list.items());
    assert!(body.starts_with(MARKER));
    assert!(body.contains("([the run](https://x/run))"));
    assert!(body.contains("- [x] `Bash` `cargo test`\n"), "{body}");
    assert!(
        body.contains("- [x] ❌ `ReadFile` `src/'x'.rs`\n"),
        "{body}"
    );
}

#[test]
fn once_there_is_a_plan_the_checklist_is_the_plan() {
    let mut list = ToolChecklist::default();
    list.apply(r#"{"type":"tool.started","id":"a","name":"Bash","input":{"command":"ls"}}"#);
    assert!(list.apply(
        r#"{"type":"plan.updated","turn":1,"todos":[
            {"content":"Read the tests","status":"completed"},
            {"content":"Fix mean()","status":"in_progress","activeForm":"Fixing mean()"},
            {"content":"See [x](http://evil) @team","status":"pending"}]}"#
    ));
    let body = working_body(None, &list.items());
    assert!(
        !body.contains("`Bash`"),
        "the plan replaces the calls: {body}"
    );
    assert!(body.contains("- [x] Read the tests\n"), "{body}");
    assert!(body.contains("- [ ] Fixing mean\\(\\)\n"), "{body}");
    assert!(
        body.contains("- [ ] See \\[x\\]\\(http://evil\\) \\@team\n"),
        "the model's words open no link and mention no one: {body}"
    );
    // A later tool call does not bring the calls back.
    list.apply(r#"{"type":"tool.started","id":"b","name":"Bash","input":{"command":"make"}}"#);
    assert_eq!(list.items().len(), 3);
}

#[test]
fn a_long_checklist_shows_the_newest_items() {
    let items: Vec<Item> = (0..40)
        .map(|i| Item {
            label: format!("step {i}"),
            state: ItemState::Running,
        })
        .collect();
    let body = working_body(None, &items);
    assert!(body.contains("- … 10 earlier steps\n"));
    assert!(!body.contains("step 9\n") && body.contains("- [ ] step 39\n"));
}

#[test]
fn the_final_body_has_status_answer_numbers_files_and_the_summary() {
    let t = json!({"status": "success", "result": "Did it.", "num_turns": 3, "cost_usd": 0.0123,
        "files_changed": [{"path": "a.rs", "change": "modified"}], "tool_calls": []});
    let out = Outcome {
        diff_stat: Some(" a.rs | 2 +-\n 1 file changed\n".into()),
        notes: vec!["Pushed.".into()],
        answer: None,
    };
    let b = final_body(&t, Some("https://x/run"), &out);
    assert!(b.starts_with(&format!("{MARKER}\n### agent: ✅ `success`\n\nDid it.\n\n3 turns · $0.0123 · [the run](https://x/run)\n\nPushed.\n")), "{b}");
    assert!(b.contains("**Files changed (1):** `a.rs`"));
    assert!(b.contains("```\n a.rs | 2 +-\n 1 file changed\n```"));
    assert!(
        b.contains("<details><summary>Transcript summary</summary>") && b.ends_with("</details>\n")
    );
    let failed =
        json!({"status": "max_turns", "result": "", "error": {"message": "out of\nturns"}});
    let b = final_body(&failed, None, &Outcome::default());
    assert!(
        b.contains("### agent: ❌ `max_turns`") && b.contains("> out of turns\n"),
        "{b}"
    );
    let huge = json!({"status": "success", "result": "x".repeat(200_000)});
    assert!(final_body(&huge, None, &Outcome::default()).len() <= 65_536);
}

#[test]
fn edits_wait_for_the_interval_and_send_only_the_newest() {
    let (tx, rx) = mpsc::channel();
    let item = |s: &str| {
        vec![Item {
            label: s.into(),
            state: ItemState::Done,
        }]
    };
    // All queued before the loop starts: with a long interval, none is due before Stop.
    tx.send(Msg::Items(item("1"))).unwrap();
    tx.send(Msg::Items(item("2"))).unwrap();
    tx.send(Msg::Stop).unwrap();
    let mut sent = Vec::new();
    edit_loop(&rx, Duration::from_secs(3600), &mut |items| {
        sent.push(items);
        Ok(())
    });
    assert!(sent.is_empty(), "nothing before the interval: {sent:?}");

    let (tx, rx) = mpsc::channel();
    tx.send(Msg::Items(item("1"))).unwrap();
    tx.send(Msg::Items(item("2"))).unwrap();
    drop(tx);
    let mut sent = Vec::new();
    edit_loop(&rx, Duration::ZERO, &mut |items| {
        sent.push(items[0].label.clone());
        Ok(())
    });
    assert_eq!(sent, ["1", "2"], "each due edit sends the newest list");
}
