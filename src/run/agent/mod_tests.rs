//! Unit tests of `mod.rs`.

use super::*;
use crate::model::protocol::Usage;
use crate::model::protocol::{ContentBlock, Role};
use crate::model::provider::ProviderError;
use crate::model::turn::PendingCall;
use crate::record::outcome::Status;
use crate::tools::ToolResult;
use crate::tools::gate::OpenGate;
use crate::tools::registry::ToolSelection;
use crate::tools::test_support::FnTool;
use serde_json::{Value, json};
use std::sync::atomic::AtomicU32;
use std::sync::mpsc;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

/// Hang guard only: a broken early start would otherwise block the test forever.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn call(id: &str) -> PendingCall {
    PendingCall {
        id: id.into(),
        name: "Probe".into(),
        input: Ok(json!({})),
    }
}

fn turn(calls: Vec<PendingCall>, stop: StopReason) -> Turn {
    let mut content = vec![ContentBlock::Text { text: "t".into() }];
    for c in &calls {
        content.push(ContentBlock::ToolUse {
            id: c.id.clone(),
            name: c.name.clone(),
            input: json!({}),
        });
    }
    Turn {
        id: "msg".into(),
        model: "m".into(),
        message: Message {
            role: Role::Assistant,
            content,
        },
        calls,
        stop_reason: stop,
        usage: Usage::default(),
    }
}

/// First turn: announces a call, then (optionally) waits until the tool has started
/// before finishing the response — which only happens if the call started early.
struct Scripted {
    turns: u32,
    started: mpsc::Receiver<u32>,
    retry_first: bool,
}
impl Provider for Scripted {
    fn stream_turn(
        &mut self,
        _request: &TurnRequest<'_>,
        on_notice: &mut dyn FnMut(StreamNotice<'_>),
    ) -> Result<Turn, ProviderError> {
        self.turns += 1;
        if self.turns > 1 {
            return Ok(turn(vec![], StopReason::EndTurn));
        }
        on_notice(StreamNotice::TurnStarted);
        let a = call("toolu_a");
        on_notice(StreamNotice::ToolReady(&a));
        // The rest of the response streams only after the tool is running.
        assert_eq!(
            self.started.recv_timeout(HANG_GUARD),
            Ok(1),
            "call did not start early"
        );
        if self.retry_first {
            on_notice(StreamNotice::Retry {
                attempt: 1,
                reason: "dropped",
                delay: Duration::ZERO,
            });
            on_notice(StreamNotice::TurnStarted);
            on_notice(StreamNotice::ToolReady(&a));
            assert_eq!(self.started.recv_timeout(HANG_GUARD), Ok(2));
        }
        on_notice(StreamNotice::TextDelta("more text after the call"));
        Ok(turn(vec![a], StopReason::ToolUse))
    }
}

fn run_scripted(retry_first: bool) -> (Outcome, RunRecord, u32) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::for_test(dir.path());
    let (tx, rx) = mpsc::channel();
    // A read-only tool that reports each execution on a channel.
    let runs = Arc::new(AtomicU32::new(0));
    let (counted, started) = (runs.clone(), StdMutex::new(tx));
    let mut registry = Registry::builtin(&ToolSelection::default());
    registry.register(FnTool::safe("Probe", move |_: &Value| {
        let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = started.lock().unwrap().send(n);
        ToolResult::ok(format!("run {n}"))
    }));
    let ctx = ToolContext::for_workspace(dir.path().to_path_buf());
    let record = Mutex::new(RunRecord::new("m", dir.path().to_path_buf(), vec![]));
    let (ci, cancelled, in_flight) = (CiRun::off(), AtomicBool::new(false), InFlight::default());
    let agent = Agent::new(RunHandle {
        config: &cfg,
        registry: &registry,
        ctx: &ctx,
        gate: &OpenGate,
        record: &record,
        checkpoint: &|| {},
        ci: &ci,
        cancelled: &cancelled,
        in_flight: &in_flight,
    });
    let mut provider = Scripted {
        turns: 0,
        started: rx,
        retry_first,
    };
    let outcome = agent.run(&mut provider);
    let runs = runs.load(Ordering::SeqCst);
    (outcome, record.into_inner().unwrap(), runs)
}

#[test]
fn safe_call_starts_while_the_response_streams() {
    let (outcome, record, runs) = run_scripted(false);
    assert_eq!(outcome.status, Status::Success);
    assert_eq!(
        runs, 1,
        "the early call is not run again after message_stop"
    );
    assert_eq!(record.tool_calls().len(), 1);
    assert_eq!(record.tool_calls()[0].batch, 1);
    let results: Vec<_> = record.messages()[2]
        .message()
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolResult { content, .. } => content.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(results, vec!["run 1"]);
}

#[test]
fn early_results_of_a_retried_attempt_are_discarded() {
    let (outcome, record, runs) = run_scripted(true);
    assert_eq!(outcome.status, Status::Success);
    assert_eq!(runs, 2);
    match &record.messages()[2].message().content[0] {
        ContentBlock::ToolResult { content, .. } => assert_eq!(content, "run 2"),
        other => panic!("{other:?}"),
    }
}
