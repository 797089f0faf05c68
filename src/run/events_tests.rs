//! Unit tests of `events.rs`: the bus's numbering and closing, the `--jsonl` line's bytes.

use super::*;
use crate::run::event::{self as ev, RunEvent};
use std::sync::{Arc, Barrier};

/// A sink that keeps each line as `--jsonl` writes it.
fn collecting() -> (Events, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let jsonl = Jsonl::to_writer(Box::new(move |s| l.lock().unwrap().push(s.to_string())));
    (Events::new(Instant::now(), vec![Box::new(jsonl)]), lines)
}

fn turn_started(turn: u32) -> RunEvent {
    RunEvent::TurnStarted(ev::TurnStarted { turn })
}

#[test]
fn common_fields_first_then_the_event_fields() {
    let (events, lines) = collecting();
    events.emit(turn_started(1));
    events.emit(RunEvent::RunFinished(ev::RunFinished {
        status: "success".into(),
        exit_code: 0,
        transcript: ev::Verbatim(r#"{"version":1,"status":"success"}"#.into()),
    }));
    events.emit(turn_started(2)); // after run.finished: dropped
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with(r#"{"version":1,"type":"turn.started","seq":1,"elapsed_ms":"#),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(r#","turn":1}"#), "{}", lines[0]);
    let v: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(
        (v["type"].as_str(), v["seq"].as_u64()),
        (Some("run.finished"), Some(2))
    );
    // The transcript is spliced in as written: its key order survives.
    assert!(lines[1].ends_with(
        r#","exit_code":0,"status":"success","transcript":{"version":1,"status":"success"}}"#
    ));
}

#[test]
fn own_fields_in_key_order_with_the_subagent_id_among_them() {
    let (events, lines) = collecting();
    events
        .tagged("subagent_1")
        .emit(RunEvent::ToolStarted(ev::ToolStarted {
            turn: 2,
            id: "t1".into(),
            name: "Bash".into(),
            input: Some(serde_json::json!({"z": 1, "a": {"y": 2, "b": 3}})),
        }));
    let line = &lines.lock().unwrap()[0];
    let rest = line.split_once(r#""elapsed_ms":"#).unwrap().1;
    let rest = rest.split_once(',').unwrap().1;
    assert_eq!(
        rest,
        r#""id":"t1","input":{"a":{"b":3,"y":2},"z":1},"name":"Bash","subagent_id":"subagent_1","turn":2}"#
    );
}

#[test]
fn the_message_is_written_as_it_is_and_last() {
    let (events, lines) = collecting();
    let usage = crate::model::protocol::Usage {
        input_tokens: 3,
        output_tokens: 4,
        ..Default::default()
    };
    events.emit(RunEvent::AssistantMessage(ev::AssistantMessage {
        turn: 1,
        model: "m".into(),
        stop_reason: "end_turn".into(),
        usage,
        message: ev::Verbatim(
            r#"{"role":"assistant","content":[{"type":"text","text":"1.50"}]}"#.into(),
        ),
    }));
    let line = &lines.lock().unwrap()[0];
    assert!(
        line.ends_with(
            r#","message":{"role":"assistant","content":[{"type":"text","text":"1.50"}]}}"#
        ),
        "{line}"
    );
    assert_eq!(line.matches("\"message\"").count(), 1, "{line}");
    assert!(line.contains(r#""usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":3,"output_tokens":4}"#), "{line}");
}

#[test]
fn no_sinks_is_disabled() {
    let events = Events::new(Instant::now(), Vec::new());
    assert!(!events.enabled());
    events.emit(turn_started(1)); // no sink: a no-op
    assert!(!Events::disabled().enabled());
}

#[test]
fn every_sink_gets_every_event_in_seq_order() {
    struct Seqs(Arc<Mutex<Vec<(u64, &'static str)>>>);
    impl Sink for Seqs {
        fn event(&mut self, e: &Emitted<'_>) {
            self.0.lock().unwrap().push((e.seq, e.event.kind()));
        }
    }
    let (a, b) = (Arc::default(), Arc::default());
    let events = Events::new(
        Instant::now(),
        vec![
            Box::new(Seqs(Arc::clone(&a))),
            Box::new(Seqs(Arc::clone(&b))),
        ],
    );
    events.emit(turn_started(1));
    events.emit(turn_started(2));
    let want = vec![(1, "turn.started"), (2, "turn.started")];
    assert_eq!(*a.lock().unwrap(), want);
    assert_eq!(*b.lock().unwrap(), want);
}

#[test]
fn concurrent_emitters_get_whole_lines_and_consecutive_seq() {
    let (events, lines) = collecting();
    let events = Arc::new(events);
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (events, barrier) = (events.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..50 {
                    events.emit(RunEvent::ToolStarted(ev::ToolStarted {
                        turn: t as u32,
                        id: format!("{t}-{i}"),
                        name: "x".repeat(500),
                        input: None,
                    }));
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
fn every_event_reads_back_as_itself() {
    let (events, lines) = collecting();
    let sent = vec![
        turn_started(1),
        RunEvent::Retry(ev::Retry {
            turn: 1,
            attempt: 2,
            reason: "overloaded \"x\"".into(),
            delay_ms: 500,
        }),
        RunEvent::RunFinished(ev::RunFinished {
            status: "success".into(),
            exit_code: 0,
            transcript: ev::Verbatim(r#"{"a":1}"#.into()),
        }),
    ];
    for e in &sent {
        events.emit(e.clone());
    }
    let got: Vec<RunEvent> = lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got, sent);
}
