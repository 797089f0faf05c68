//! Batches one turn's tool calls (SPEC §5): a maximal run of consecutive
//! concurrency-safe calls is one batch run in parallel; every other call is a batch of
//! its own, run alone, in order. Results come back in the model's order.

use std::ops::Range;
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use crate::dispatch::{CallOutcome, Dispatcher};
use crate::turn::PendingCall;

/// Threads for parallel batches. Tool calls wait on I/O, so this is not the core count:
/// on a 2-core CI runner, five reads should still all be in flight at once.
const MAX_PARALLEL_TOOLS: usize = 10;

/// A call's outcome with the batch it ran in (numbered across the whole run, from 1).
#[derive(Debug, Clone)]
pub struct Scheduled {
    pub outcome: CallOutcome,
    pub batch: u32,
}

/// Splits `n` calls into batches: `safe(i)` calls that are adjacent share a batch.
pub fn partition(n: usize, safe: impl Fn(usize) -> bool) -> Vec<Range<usize>> {
    let mut batches: Vec<Range<usize>> = Vec::new();
    let mut prev_safe = false;
    for i in 0..n {
        let s = safe(i);
        match batches.last_mut() {
            Some(b) if s && prev_safe => b.end = i + 1,
            _ => batches.push(i..i + 1),
        }
        prev_safe = s;
    }
    batches
}

pub(crate) fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(MAX_PARALLEL_TOOLS)
            .thread_name(|i| format!("agent-tool-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs the calls batch by batch; `next_batch` is the run-wide batch counter. `early`
/// holds the outcomes of the turn's leading concurrency-safe calls, already run while the
/// response streamed (see `EarlyStart`); they form the turn's first batch.
pub fn run_calls(
    calls: &[PendingCall],
    dispatcher: &Dispatcher<'_>,
    next_batch: &mut u32,
    early: Vec<CallOutcome>,
) -> Vec<Scheduled> {
    let mut out = Vec::with_capacity(calls.len());
    let skip = early.len();
    if skip > 0 {
        *next_batch += 1;
        let batch = *next_batch;
        out.extend(
            early
                .into_iter()
                .map(|outcome| Scheduled { outcome, batch }),
        );
        let stop_on_denial = dispatcher.gate.ends_run_on_denial();
        if out
            .iter()
            .any(|s| s.outcome.fatal.is_some() || (stop_on_denial && s.outcome.denial.is_some()))
        {
            return out;
        }
    }
    let rest = &calls[skip..];
    for range in partition(rest.len(), |i| dispatcher.is_concurrency_safe(&rest[i])) {
        *next_batch += 1;
        let batch = *next_batch;
        let slice = &rest[range];
        let outcomes: Vec<CallOutcome> = if slice.len() == 1 {
            vec![dispatcher.dispatch(&slice[0])]
        } else {
            let par = || slice.par_iter().map(|c| dispatcher.dispatch(c)).collect();
            match pool() {
                Some(p) => p.install(par),
                None => slice.iter().map(|c| dispatcher.dispatch(c)).collect(),
            }
        };
        let fatal = outcomes.iter().any(|o| {
            o.fatal.is_some() || (o.denial.is_some() && dispatcher.gate.ends_run_on_denial())
        });
        out.extend(
            outcomes
                .into_iter()
                .map(|outcome| Scheduled { outcome, batch }),
        );
        if fatal {
            break; // a system failure (or a denial with --on-deny fail) ends the run
        }
    }
    out
}

/// Streaming tool execution (SPEC §8): the turn's leading run of concurrency-safe calls
/// starts as each call's `content_block_stop` arrives, while the response still streams.
/// The first call that is not safe closes the run: it and everything after it wait for
/// the end of the response, so batch semantics hold. When an attempt fails and is
/// retried, what started early is discarded (read-only calls, so nothing to undo).
pub struct EarlyStart<'s> {
    enabled: bool,
    accepting: bool,
    /// Bumped on every new attempt; results of older attempts are ignored.
    attempt: u32,
    /// Ids started early in the current attempt, in order.
    started: Vec<String>,
    results: &'s EarlyResults,
}

/// Where early calls leave their outcomes, tagged with the attempt they belong to.
pub type EarlyResults = Mutex<Vec<(u32, String, CallOutcome)>>;

impl<'s> EarlyStart<'s> {
    /// `enabled: false` runs nothing early (the last allowed turn runs no tools at all).
    pub fn new(enabled: bool, results: &'s EarlyResults) -> Self {
        EarlyStart {
            enabled,
            accepting: enabled,
            attempt: 0,
            started: Vec::new(),
            results,
        }
    }

    /// A new attempt's response begins: forget the previous attempt's calls.
    pub fn restart(&mut self) {
        self.attempt += 1;
        self.accepting = self.enabled;
        self.started.clear();
    }

    /// A tool_use block completed: start it now if it continues the leading safe run.
    /// Each early call gets a thread of `scope` (the turn's): a thread blocks while
    /// idle, where a rayon pool's workers spin after every job (strace counted ~90
    /// `sched_yield` per turn of one early read). A thread that cannot be made leaves
    /// the call, and the rest of the turn, to run after the response.
    pub fn offer<'scope>(
        &mut self,
        scope: &'scope std::thread::Scope<'scope, 's>,
        call: &PendingCall,
        dispatcher: &'s Dispatcher<'s>,
    ) {
        if !self.accepting {
            return;
        }
        if !dispatcher.is_concurrency_safe(call) {
            self.accepting = false;
            return;
        }
        let (attempt, owned, results) = (self.attempt, call.clone(), self.results);
        let spawned = std::thread::Builder::new()
            .name("agent-early-tool".into())
            .spawn_scoped(scope, move || {
                let outcome = dispatcher.dispatch(&owned);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((attempt, owned.id, outcome));
            });
        match spawned {
            Ok(_) => self.started.push(call.id.clone()),
            Err(_) => self.accepting = false,
        }
    }

    /// After the response and the scope completed: the outcomes of the turn's leading
    /// calls that were started early, in order. Anything else that ran is dropped.
    pub fn take(self, calls: &[PendingCall]) -> Vec<CallOutcome> {
        let mut results =
            std::mem::take(&mut *self.results.lock().unwrap_or_else(|p| p.into_inner()));
        results.retain(|(a, _, _)| *a == self.attempt);
        let mut out = Vec::new();
        for (call, id) in calls.iter().zip(&self.started) {
            if &call.id != id {
                break;
            }
            match results.iter().position(|(_, rid, _)| rid == id) {
                Some(i) => out.push(results.swap_remove(i).2),
                None => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::gate::OpenGate;
    use crate::tools::registry::Registry;
    use crate::tools::{Category, ToolContext, ToolError, ToolResult, TypedTool};
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
    struct Meet {
        barrier: Arc<Barrier>,
        log: Arc<Mutex<Vec<String>>>,
    }
    impl TypedTool for Meet {
        type Input = Value;
        fn name(&self) -> &str {
            "Meet"
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> Value {
            json!({"type":"object","properties":{"tag":{"type":"string"}}})
        }
        fn is_read_only(&self) -> bool {
            true
        }
        fn is_concurrency_safe(&self) -> bool {
            true
        }
        fn category(&self) -> Category {
            Category::Search
        }
        fn execute(&self, _: &ToolContext, input: &Value) -> Result<ToolResult, ToolError> {
            let tag = input["tag"].as_str().unwrap_or("").to_string();
            self.log.lock().unwrap().push(format!("start {tag}"));
            self.barrier.wait();
            self.log.lock().unwrap().push(format!("end {tag}"));
            Ok(ToolResult::ok(tag))
        }
    }

    /// An unsafe tool that records when it ran.
    struct Solo {
        log: Arc<Mutex<Vec<String>>>,
    }
    impl TypedTool for Solo {
        type Input = Value;
        fn name(&self) -> &str {
            "Solo"
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> Value {
            json!({"type":"object","properties":{"tag":{"type":"string"}}})
        }
        fn is_read_only(&self) -> bool {
            false
        }
        fn category(&self) -> Category {
            Category::File
        }
        fn execute(&self, _: &ToolContext, input: &Value) -> Result<ToolResult, ToolError> {
            let tag = input["tag"].as_str().unwrap_or("").to_string();
            self.log.lock().unwrap().push(format!("solo {tag}"));
            Ok(ToolResult::ok(tag))
        }
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
        reg.register(Arc::new(Meet {
            barrier: Arc::new(Barrier::new(3)),
            log: log.clone(),
        }));
        reg.register(Arc::new(Solo { log: log.clone() }));
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
}
