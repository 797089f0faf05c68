//! Unit tests of `progress.rs`: the checklist from events, the bodies, the edit throttle.

use super::*;
use crate::run::event as ev;
use serde_json::json;
use std::sync::{Arc, mpsc};

fn started(id: &str, name: &str, input: Value) -> RunEvent {
    RunEvent::ToolStarted(ev::ToolStarted {
        turn: 1,
        id: id.into(),
        name: name.into(),
        input: Some(input),
    })
}

fn finished(id: &str, is_error: bool) -> RunEvent {
    RunEvent::ToolFinished(ev::ToolFinished {
        turn: 1,
        id: id.into(),
        name: "x".into(),
        is_error,
        denied: false,
        duration_ms: 1,
        content: String::new(),
        content_truncated: false,
    })
}

#[test]
fn tool_events_become_a_checklist() {
    let mut list = ToolChecklist::default();
    assert!(list.apply(&started(
        "a",
        "Bash",
        json!({"command": "cargo test\nmore"})
    )));
    assert!(list.apply(&started("b", "ReadFile", json!({"path": "src/`x`.rs"}))));
    assert!(list.apply(&finished("a", false)));
    assert!(list.apply(&finished("b", true)));
    assert!(!list.apply(&RunEvent::TurnStarted(ev::TurnStarted { turn: 1 })));
    assert!(!list.apply(&finished("zzz", false)));
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
    list.apply(&started("a", "Bash", json!({"command": "ls"})));
    let plan: RunEvent = serde_json::from_str(
        r#"{"type":"plan.updated","turn":1,"todos":[
            {"content":"Read the tests","status":"completed"},
            {"content":"Fix mean()","status":"in_progress","activeForm":"Fixing mean()"},
            {"content":"See [x](http://evil) @team","status":"pending"}]}"#,
    )
    .unwrap();
    assert!(list.apply(&plan));
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
    list.apply(&started("b", "Bash", json!({"command": "make"})));
    assert_eq!(list.items().len(), 3);
}

#[test]
fn the_follower_queues_checklists_and_hands_over_the_end() {
    let (tx, rx) = mpsc::sync_channel(1);
    let ended = Arc::new(std::sync::Mutex::new(None));
    let e2 = ended.clone();
    let mut f = Follower::new(
        Some(tx),
        Box::new(move |f: &RunFinished| *e2.lock().unwrap() = Some(f.status.clone())),
    );
    fn emitted(event: &RunEvent) -> Emitted<'_> {
        Emitted {
            seq: 1,
            elapsed_ms: 0,
            subagent_id: None,
            event,
        }
    }
    f.event(&emitted(&started("a", "Bash", json!({"command": "ls"}))));
    // The queue (1) is full: the next list is dropped, not waited for.
    f.event(&emitted(&finished("a", false)));
    f.event(&emitted(&RunEvent::RunFinished(ev::RunFinished {
        status: "success".into(),
        exit_code: 0,
        transcript: ev::Verbatim("{}".into()),
    })));
    assert!(matches!(rx.try_recv(), Ok(Msg::Items(items)) if items[0].state == ItemState::Running));
    assert!(rx.try_recv().is_err());
    assert_eq!(ended.lock().unwrap().as_deref(), Some("success"));
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

fn transcript(v: Value) -> Transcript {
    Transcript::from_value(&v).unwrap()
}

#[test]
fn the_final_body_has_status_answer_numbers_files_and_the_summary() {
    let t = transcript(
        json!({"status": "success", "result": "Did it.", "num_turns": 3, "cost_usd": 0.0123,
        "files_changed": [{"path": "a.rs", "change": "modified"}], "tool_calls": []}),
    );
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
    let failed = transcript(json!({"status": "max_turns", "result": "",
        "error": {"kind": "max_turns", "message": "out of\nturns"}}));
    let b = final_body(&failed, None, &Outcome::default());
    assert!(
        b.contains("### agent: ❌ `max_turns`") && b.contains("> out of turns\n"),
        "{b}"
    );
    let huge = transcript(json!({"status": "success", "result": "x".repeat(200_000)}));
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
