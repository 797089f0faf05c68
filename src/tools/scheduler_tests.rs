//! Unit tests of `scheduler.rs`.

use super::*;
use crate::tools::gate::OpenGate;
use crate::tools::registry::Registry;
use crate::tools::test_support::FnTool;
use crate::tools::{Tool, ToolContext, ToolResult};
use serde_json::{Value, json};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

#[test]
fn partition_example_from_spec() {
    // [read A, read B, glob, bash, read C] → [A, B, glob], [bash], [C]
    let safe = [true, true, true, false, true];
    assert_eq!(partition(5, |i| safe[i]), vec![0..3, 3..4, 4..5]);
}

#[test]
fn partition_edges() {
    assert_eq!(partition(0, |_| true), Vec::<Range<usize>>::new());
    assert_eq!(partition(3, |_| false), vec![0..1, 1..2, 2..3]);
    assert_eq!(partition(3, |_| true), vec![0..3]);
    let safe = [false, true, true, false, false, true];
    assert_eq!(
        partition(6, |i| safe[i]),
        vec![0..1, 1..3, 3..4, 4..5, 5..6]
    );
}

/// A safe tool that waits on a barrier: the batch completes only if every call of
/// it is running at the same time.
fn meet(barrier: Arc<Barrier>, log: Arc<Mutex<Vec<String>>>) -> Arc<dyn Tool> {
    FnTool::safe("Meet", move |input: &Value| {
        let tag = input["tag"].as_str().unwrap_or("").to_string();
        log.lock().unwrap().push(format!("start {tag}"));
        barrier.wait();
        log.lock().unwrap().push(format!("end {tag}"));
        ToolResult::ok(tag)
    })
}

/// An unsafe tool that records when it ran.
fn solo(log: Arc<Mutex<Vec<String>>>) -> Arc<dyn Tool> {
    FnTool::unsafe_("Solo", move |input: &Value| {
        let tag = input["tag"].as_str().unwrap_or("").to_string();
        log.lock().unwrap().push(format!("solo {tag}"));
        ToolResult::ok(tag)
    })
}

/// Two early calls of a turn meet at a barrier (so they run at once, on two workers),
/// and every later turn's calls run on the same two threads: none is spawned per call.
#[test]
fn early_calls_run_at_once_on_workers_kept_between_turns() {
    // Meets a second call at a barrier and notes the thread it ran on.
    let barrier = Barrier::new(2);
    let threads = Arc::new(Mutex::new(Vec::new()));
    let ran_on = threads.clone();
    let mut reg = Registry::new();
    reg.register(FnTool::safe("Pair", move |input: &Value| {
        barrier.wait();
        ran_on.lock().unwrap().push(std::thread::current().id());
        ToolResult::ok(input["tag"].as_str().unwrap_or(""))
    }));
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::for_workspace(dir.path().to_path_buf());
    let d = Dispatcher::new(&reg, &ctx, &OpenGate, Instant::now(), None);
    let calls = vec![call("1", "Pair", "a"), call("2", "Pair", "b")];
    let mut threads_per_turn = Vec::new();
    std::thread::scope(|scope| {
        let workers = EarlyWorkers::new(scope);
        for _ in 0..3 {
            let mut early = EarlyStart::new(true, &workers);
            early.restart();
            for c in &calls {
                early.offer(c, &d);
            }
            let out: Vec<_> = early
                .take(&calls)
                .into_iter()
                .map(|o| o.result.content)
                .collect();
            assert_eq!(out, vec!["a", "b"]);
            let mut threads = std::mem::take(&mut *threads.lock().unwrap());
            threads.sort_by_key(|t| format!("{t:?}"));
            threads_per_turn.push(threads);
        }
    });
    assert_ne!(threads_per_turn[0][0], threads_per_turn[0][1]);
    assert_eq!(threads_per_turn[1], threads_per_turn[0]);
    assert_eq!(threads_per_turn[2], threads_per_turn[0]);
}

fn call(id: &str, name: &str, tag: &str) -> PendingCall {
    PendingCall {
        id: id.into(),
        name: name.into(),
        input: Ok(json!({"tag": tag})),
    }
}

#[test]
fn safe_calls_run_at_once_and_writes_split_batches() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // Two safe batches of 3 and 2: each barrier only opens when its whole batch runs.
    let mut reg = Registry::new();
    reg.register(meet(Arc::new(Barrier::new(3)), log.clone()));
    reg.register(solo(log.clone()));
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::for_workspace(dir.path().to_path_buf());
    let d = Dispatcher::new(&reg, &ctx, &OpenGate, Instant::now(), None);
    let calls = vec![
        call("1", "Meet", "a"),
        call("2", "Meet", "b"),
        call("3", "Meet", "c"),
        call("4", "Solo", "w"),
        call("5", "Meet", "d"),
        call("6", "Meet", "e"),
        call("7", "Meet", "f"),
    ];
    let mut next = 4; // batches continue across turns
    let out = run_calls(&calls, &d, &mut next, Vec::new());
    let contents: Vec<_> = out
        .iter()
        .map(|s| s.outcome.result.content.as_str())
        .collect();
    assert_eq!(contents, vec!["a", "b", "c", "w", "d", "e", "f"]);
    let batches: Vec<_> = out.iter().map(|s| s.batch).collect();
    assert_eq!(batches, vec![5, 5, 5, 6, 7, 7, 7]);
    assert_eq!(next, 7);
    // The write ran after every call of the first batch ended, before the second began.
    let log = log.lock().unwrap();
    let pos = |s: &str| log.iter().position(|x| x == s).unwrap();
    for t in ["a", "b", "c"] {
        assert!(pos(&format!("end {t}")) < pos("solo w"));
    }
    for t in ["d", "e", "f"] {
        assert!(pos("solo w") < pos(&format!("start {t}")));
    }
}
