//! Batches one turn's tool calls (SPEC §5): a maximal run of consecutive
//! concurrency-safe calls is one batch run in parallel; every other call is a batch of
//! its own, run alone, in order. Results come back in the model's order.

use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, mpsc};
use std::thread::Scope;

use rayon::prelude::*;

use crate::model::turn::PendingCall;
use crate::tools::dispatch::{CallOutcome, Dispatcher};
use crate::util::sync::{Locked, Unpoisoned};

/// Threads for parallel batches. Tool calls wait on I/O, so this is not the core count:
/// on a 2-core CI runner, five reads should still all be in flight at once.
const MAX_PARALLEL_TOOLS: usize = 10;

/// A call's outcome with the batch it ran in (numbered across the whole run, from 1).
#[derive(Debug, Clone)]
pub(crate) struct Scheduled {
    pub outcome: CallOutcome,
    pub batch: u32,
}

/// Splits `n` calls into batches: `safe(i)` calls that are adjacent share a batch.
pub(crate) fn partition(n: usize, safe: impl Fn(usize) -> bool) -> Vec<Range<usize>> {
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
pub(crate) fn run_calls(
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
pub(crate) struct EarlyStart<'w, 'scope, 'env> {
    enabled: bool,
    accepting: bool,
    /// This attempt's number (run-wide); results of older attempts are ignored.
    attempt: u32,
    /// Ids started early in the current attempt, in order.
    started: Vec<String>,
    workers: &'w EarlyWorkers<'scope, 'env>,
}

impl<'w, 'scope, 'env> EarlyStart<'w, 'scope, 'env> {
    /// `enabled: false` runs nothing early (the last allowed turn runs no tools at all).
    pub(crate) fn new(enabled: bool, workers: &'w EarlyWorkers<'scope, 'env>) -> Self {
        EarlyStart {
            enabled,
            accepting: enabled,
            attempt: workers.results.next_attempt(),
            started: Vec::new(),
            workers,
        }
    }

    /// A new attempt's response begins: forget the previous attempt's calls.
    pub(crate) fn restart(&mut self) {
        self.attempt = self.workers.results.next_attempt();
        self.accepting = self.enabled;
        self.started.clear();
    }

    /// A tool_use block completed: start it now if it continues the leading safe run,
    /// on one of the run's early workers. When no thread can be had, the call, and the
    /// rest of the turn, run after the response.
    pub(crate) fn offer(&mut self, call: &PendingCall, dispatcher: &'env Dispatcher<'env>) {
        if !self.accepting {
            return;
        }
        if !dispatcher.is_concurrency_safe(call) {
            self.accepting = false;
            return;
        }
        let (attempt, owned) = (self.attempt, call.clone());
        let running = Running::new(&self.workers.results);
        let job = Box::new(move || {
            let outcome = dispatcher.dispatch(&owned);
            running.0.lock().outcomes.push((attempt, owned.id, outcome));
            running
        });
        if self.workers.run(job) {
            self.started.push(call.id.clone());
        } else {
            self.accepting = false;
        }
    }

    /// After the response: waits for every early call still running, then returns the
    /// outcomes of the turn's leading calls that were started early, in order. Anything
    /// else that ran is dropped.
    pub(crate) fn take(self, calls: &[PendingCall]) -> Vec<CallOutcome> {
        let results = &self.workers.results;
        let mut state = results.lock();
        while state.running > 0 {
            state = results.finished.wait(state).unpoisoned();
        }
        let mut outcomes = std::mem::take(&mut state.outcomes);
        drop(state);
        outcomes.retain(|(a, _, _)| *a == self.attempt);
        let mut out = Vec::new();
        for (call, id) in calls.iter().zip(&self.started) {
            if &call.id != id {
                break;
            }
            match outcomes.iter().position(|(_, rid, _)| rid == id) {
                Some(i) => out.push(outcomes.swap_remove(i).2),
                None => break,
            }
        }
        out
    }
}

/// The threads early calls run on, kept for the whole run (they belong to a scope
/// around the turn loop). An idle worker blocks on its channel, and a new one is spawned
/// only when none is idle, so a turn's early calls still all run at once. A thread
/// spawned per call cost as much as a small call itself; a rayon pool's idle workers
/// spin after every job (strace counted ~90 `sched_yield` per turn of one early read).
pub(crate) struct EarlyWorkers<'scope, 'env> {
    scope: &'scope Scope<'scope, 'env>,
    idle: Arc<Mutex<Idle<'env>>>,
    results: Arc<EarlyResults>,
}

/// A call to run on a worker. It returns its `Running`, which the worker drops once it
/// is idle again: a turn that saw its calls finish then finds their workers free.
type Job<'env> = Box<dyn FnOnce() -> Running + Send + 'env>;

/// A worker's inbox: a job, or `None` when the run ends.
type Inbox<'env> = mpsc::Sender<Option<Job<'env>>>;

/// The workers waiting for a call, and whether the run is over.
struct Idle<'env> {
    ready: Vec<Inbox<'env>>,
    closed: bool,
}

impl<'scope, 'env> EarlyWorkers<'scope, 'env> {
    pub(crate) fn new(scope: &'scope Scope<'scope, 'env>) -> Self {
        EarlyWorkers {
            scope,
            idle: Arc::new(Mutex::new(Idle {
                ready: Vec::new(),
                closed: false,
            })),
            results: Arc::default(),
        }
    }

    /// Runs `job` on an idle worker, or on a new one; false (the job dropped unrun) when
    /// no thread can be made.
    fn run(&self, job: Job<'env>) -> bool {
        let idle = self.idle.locked().ready.pop();
        idle.or_else(|| self.spawn())
            .is_some_and(|worker| worker.send(Some(job)).is_ok())
    }

    /// A new worker's inbox, or `None` when the system has no thread to give.
    fn spawn(&self) -> Option<Inbox<'env>> {
        let (inbox, jobs) = mpsc::channel::<Option<Job<'env>>>();
        let (me, idle) = (inbox.clone(), Arc::clone(&self.idle));
        std::thread::Builder::new()
            .name("agent-early-tool".into())
            .spawn_scoped(self.scope, move || {
                while let Ok(Some(job)) = jobs.recv() {
                    let finished = job();
                    let mut idle = idle.locked();
                    if idle.closed {
                        return;
                    }
                    idle.ready.push(me.clone());
                    drop(idle);
                    drop(finished);
                }
            })
            .ok()?;
        Some(inbox)
    }
}

impl Drop for EarlyWorkers<'_, '_> {
    /// Idle workers end now, busy ones after their call; the scope then joins them.
    fn drop(&mut self) {
        let mut idle = self.idle.locked();
        idle.closed = true;
        for worker in idle.ready.drain(..) {
            let _ = worker.send(None);
        }
    }
}

/// Where early calls leave their outcomes, tagged with the attempt they belong to, and
/// how many are still running: one for the run, since a call may outlive the attempt
/// (even the turn) that started it.
#[derive(Default)]
struct EarlyResults {
    state: Mutex<EarlyState>,
    finished: Condvar,
}

#[derive(Default)]
struct EarlyState {
    outcomes: Vec<(u32, String, CallOutcome)>,
    running: usize,
    attempts: u32,
}

impl EarlyResults {
    fn lock(&self) -> MutexGuard<'_, EarlyState> {
        self.state.locked()
    }

    fn next_attempt(&self) -> u32 {
        let mut state = self.lock();
        state.attempts += 1;
        state.attempts
    }
}

/// One early call counted as running until this is dropped (with its job): when it
/// finished, or panicked, or was never run (no thread to run it on).
struct Running(Arc<EarlyResults>);

impl Running {
    fn new(results: &Arc<EarlyResults>) -> Self {
        results.lock().running += 1;
        Running(Arc::clone(results))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.lock().running -= 1;
        self.0.finished.notify_all();
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
