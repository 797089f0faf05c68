//! Unit tests of `events.rs`.

use super::*;
use serde_json::json;
use std::sync::{Arc, Barrier};

fn collecting() -> (Events, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let ev = Events::to_writer(
        Instant::now(),
        Box::new(move |s| l.lock().unwrap().push(s.to_string())),
    );
    (ev, lines)
}

#[test]
fn common_fields_first_then_the_event_fields() {
    let (ev, lines) = collecting();
    ev.emit("turn.started", json!({"turn": 1, "type": "ignored"}));
    ev.finish(
        json!({"status": "success"}),
        r#"{"version":1,"status":"success"}"#,
    );
    ev.emit("late", json!({})); // after run.finished: dropped
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with(r#"{"version":1,"type":"turn.started","seq":1,"elapsed_ms":"#),
        "{}",
        lines[0]
    );
    let v: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(v["turn"], 1);
    assert_eq!(v["type"], "turn.started");
    let v: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(
        (v["type"].as_str(), v["seq"].as_u64()),
        (Some("run.finished"), Some(2))
    );
    // The transcript is spliced in as written: its key order survives.
    assert!(lines[1].ends_with(r#","transcript":{"version":1,"status":"success"}}"#));
}

#[test]
fn disabled_writes_nothing() {
    let ev = Events::disabled();
    assert!(!ev.enabled());
    ev.emit("x", json!({})); // no sink: a no-op
}

#[test]
fn concurrent_emitters_get_whole_lines_and_consecutive_seq() {
    let (ev, lines) = collecting();
    let ev = Arc::new(ev);
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (ev, barrier) = (ev.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..50 {
                    ev.emit(
                        "tool.started",
                        json!({"thread": t, "i": i, "pad": "x".repeat(500)}),
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), threads * 50);
    for (n, l) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["seq"], (n + 1) as u64, "seq follows the output order");
    }
}

#[test]
fn kinds_and_keys_are_escaped() {
    let line = render("a\"b", 1, 0, json!({"k\"": "v\n"}));
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["type"], "a\"b");
    assert_eq!(v["k\""], "v\n");
}
