//! Unit tests of the TodoWrite tool and the run's plan.

use std::sync::Arc;

use super::*;
use crate::tools::test_support::{call, call_err, ctx};

fn todo(content: &str, status: &str) -> Value {
    json!({"content": content, "status": status})
}

#[test]
fn each_call_replaces_the_plan_and_the_observer_hears_only_changes() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let heard = Arc::new(Mutex::new(Vec::<Vec<String>>::new()));
    let h = heard.clone();
    c.plan.observe(Box::new(move |t: &[Todo]| {
        h.locked().push(t.iter().map(Todo::line).collect());
    }));
    let first = json!({"todos": [todo("Read the code", "in_progress"), todo("Fix it", "pending")]});
    let r = call(&TodoWrite, &c, &first).unwrap();
    assert!(
        r.content.contains("0 completed, 1 in progress, 1 pending"),
        "{}",
        r.content
    );
    assert_eq!(r.metadata["changed"], true);
    // The same plan again is no change.
    let r = call(&TodoWrite, &c, &first).unwrap();
    assert_eq!(r.metadata["changed"], false);
    let second = json!({"todos": [
        todo("Read the code", "completed"),
        {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"},
        todo("Run the\ntests", "pending"),
    ]});
    call(&TodoWrite, &c, &second).unwrap();
    assert_eq!(
        *heard.locked(),
        vec![
            vec!["[>] Read the code".to_string(), "[ ] Fix it".to_string()],
            vec![
                "[x] Read the code".to_string(),
                "[>] Fixing it".to_string(),
                // A newline in the model's text cannot make a second log line.
                "[ ] Run the tests".to_string(),
            ],
        ]
    );
    assert_eq!(c.plan.todos().len(), 3);
    assert_eq!(
        serde_json::to_value(&c.plan.todos()[1]).unwrap(),
        json!({"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"})
    );
}

#[test]
fn bad_plans_are_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let e = call_err(&TodoWrite, &c, &json!({"todos": [todo(" ", "pending")]}));
    assert!(e.contains("todos[0].content is empty"), "{e}");
    let e = call_err(&TodoWrite, &c, &json!({"todos": [todo("x", "doing")]}));
    assert!(e.contains("doing"), "{e}");
    let many: Vec<Value> = (0..=MAX_TODOS)
        .map(|i| todo(&format!("s{i}"), "pending"))
        .collect();
    let e = call_err(&TodoWrite, &c, &json!({"todos": many}));
    assert!(e.contains("at most 100"), "{e}");
    let long = "x".repeat(MAX_TODO_CHARS + 1);
    let e = call_err(&TodoWrite, &c, &json!({"todos": [todo(&long, "pending")]}));
    assert!(e.contains("todos[0].content is over"), "{e}");
    let e = call_err(
        &TodoWrite,
        &c,
        &json!({"todos": [{"content": "x", "status": "pending", "priority": "high"}]}),
    );
    assert!(e.contains("unknown field"), "{e}");
    assert!(c.plan.todos().is_empty(), "nothing was kept");
}

#[test]
fn it_is_on_by_default_and_parallel() {
    let r = crate::tools::registry::Registry::builtin(&Default::default());
    let t = r.get("TodoWrite").expect("on by default");
    assert!(t.is_read_only() && t.is_concurrency_safe(&json!({})));
    assert_eq!(t.category().as_str(), "plan");
}
