//! The exporter: ended spans wait in a bounded queue and one thread of its own posts them
//! in batches (and the metrics, periodically and once at the end) to the collector, so a
//! slow or dead collector never holds up a turn: when the queue is full a span is
//! dropped and counted. The final flush waits at most a deadline. An export error is
//! one warning line (later ones only under `-v`) and counted, never a failure of the run.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::encode::{self, SpanData};
use super::metrics::Metrics;
use super::settings::{Endpoint, OtelSettings};
use crate::util::output;
use crate::util::sync::{Locked, Unpoisoned};

/// Spans held for export at most (the SDK's `OTEL_BSP_MAX_QUEUE_SIZE` default).
const QUEUE_SPANS: usize = 2_048;
/// Spans in one export request (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`'s default).
const BATCH_SPANS: usize = 512;
/// How long an ended span may wait for a batch to fill (`OTEL_BSP_SCHEDULE_DELAY`).
const SCHEDULE_DELAY: Duration = Duration::from_secs(5);
/// How often the metrics go out during a long run (`OTEL_METRIC_EXPORT_INTERVAL`).
const METRIC_INTERVAL: Duration = Duration::from_secs(60);
/// How much of a collector's error body a `-v` line quotes.
const ERROR_BODY_CHARS: usize = 300;

/// What the queue and the thread share.
#[derive(Default)]
struct State {
    spans: VecDeque<SpanData>,
    /// A flush was asked for (the last one: the run is ending).
    flush: bool,
    /// The flush is done (or gave up): the thread is idle.
    flushed: bool,
    dropped: u64,
    failed: u64,
    exported_spans: u64,
    /// Spans taken for the export under way.
    in_flight: u64,
    /// Whether the first failure was already warned about.
    warned: bool,
}

/// How the export went, for the line at the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) exported_spans: u64,
    pub(crate) dropped_spans: u64,
    pub(crate) failed_exports: u64,
    /// Spans still queued when the deadline passed.
    pub(crate) unsent_spans: u64,
    pub(crate) timed_out: bool,
}

pub(crate) struct Exporter {
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl Exporter {
    /// Starts the export thread.
    pub(crate) fn start(
        settings: &OtelSettings,
        metrics: Arc<Mutex<Metrics>>,
        start_ns: u64,
    ) -> Exporter {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let worker = Worker {
            shared: shared.clone(),
            traces: settings.traces.clone(),
            metrics_to: settings.metrics.clone(),
            resource: settings.resource.clone(),
            metrics,
            start_ns,
            agent: ureq::Agent::new_with_config(
                ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .max_redirects(0)
                    .user_agent(format!("agent/{}", env!("CARGO_PKG_VERSION")))
                    .build(),
            ),
        };
        let spawned = std::thread::Builder::new()
            .name("otel-export".into())
            .spawn(move || worker.run());
        if let Err(e) = spawned {
            output::warn(&format!("telemetry: cannot start the export thread: {e}"));
            shared.0.locked().flushed = true;
        }
        Exporter { shared }
    }

    /// Queues an ended span; a full queue drops it (counted).
    pub(crate) fn push(&self, span: SpanData) {
        let (lock, cv) = &*self.shared;
        let mut s = lock.locked();
        if s.spans.len() >= QUEUE_SPANS || s.flush {
            s.dropped += 1;
            return;
        }
        s.spans.push_back(span);
        if s.spans.len() >= BATCH_SPANS {
            cv.notify_all();
        }
    }

    /// The last flush: everything queued and the metrics, waiting at most `deadline`.
    pub(crate) fn flush(&self, deadline: Duration) -> Report {
        let (lock, cv) = &*self.shared;
        let until = Instant::now() + deadline;
        let mut s = lock.locked();
        s.flush = true;
        cv.notify_all();
        let mut timed_out = false;
        while !s.flushed {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                timed_out = true;
                break;
            }
            s = cv.wait_timeout(s, left).unpoisoned().0;
        }
        Report {
            exported_spans: s.exported_spans,
            dropped_spans: s.dropped,
            failed_exports: s.failed,
            unsent_spans: s.spans.len() as u64 + s.in_flight,
            timed_out,
        }
    }
}

/// The export thread's side.
struct Worker {
    shared: Arc<(Mutex<State>, Condvar)>,
    traces: Option<Endpoint>,
    metrics_to: Option<Endpoint>,
    resource: Vec<(String, String)>,
    metrics: Arc<Mutex<Metrics>>,
    start_ns: u64,
    agent: ureq::Agent,
}

impl Worker {
    fn run(self) {
        let mut last_metrics = Instant::now();
        loop {
            let (batch, flushing) = self.next_batch();
            if !batch.is_empty() {
                let n = batch.len() as u64;
                let sent = self.post_traces(&batch);
                let mut s = self.shared.0.locked();
                s.in_flight = 0;
                if sent {
                    s.exported_spans += n;
                }
            }
            let queue_empty = self.shared.0.locked().spans.is_empty();
            if flushing && queue_empty {
                self.post_metrics();
                let (lock, cv) = &*self.shared;
                lock.locked().flushed = true;
                cv.notify_all();
                return;
            }
            if last_metrics.elapsed() >= METRIC_INTERVAL {
                self.post_metrics();
                last_metrics = Instant::now();
            }
        }
    }

    /// Waits for a full batch, the schedule delay or the flush; takes up to a batch.
    fn next_batch(&self) -> (Vec<SpanData>, bool) {
        let (lock, cv) = &*self.shared;
        let until = Instant::now() + SCHEDULE_DELAY;
        let mut s = lock.locked();
        while s.spans.len() < BATCH_SPANS && !s.flush {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = cv.wait_timeout(s, left).unpoisoned().0;
        }
        let n = s.spans.len().min(BATCH_SPANS);
        s.in_flight = n as u64;
        (s.spans.drain(..n).collect(), s.flush)
    }

    fn post_traces(&self, spans: &[SpanData]) -> bool {
        let Some(to) = &self.traces else { return true };
        let body = encode::encode_traces(
            to.protocol == super::settings::Protocol::Json,
            &self.resource,
            spans,
        );
        self.post(to, "traces", body)
    }

    fn post_metrics(&self) {
        let Some(to) = &self.metrics_to else { return };
        let snapshot = {
            let m = self.metrics.locked();
            if m.is_empty() {
                return;
            }
            m.snapshot()
        };
        let body = encode::encode_metrics(
            to.protocol == super::settings::Protocol::Json,
            &self.resource,
            &snapshot,
            self.start_ns,
            super::now_ns(),
        );
        self.post(to, "metrics", body);
    }

    /// One POST; a failure is counted and said once (each one under `-v`).
    fn post(&self, to: &Endpoint, what: &str, body: Vec<u8>) -> bool {
        let mut req = self
            .agent
            .post(&to.url)
            .config()
            .timeout_global(Some(to.timeout))
            .build()
            .header("Content-Type", to.protocol.content_type());
        for (k, v) in &to.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let failure = match req.send(&body[..]) {
            Ok(resp) if resp.status().is_success() => None,
            Ok(resp) => {
                let status = resp.status().as_u16();
                let text = resp.into_body().read_to_string().unwrap_or_default();
                let text = crate::util::text::ellipsis(text.trim(), ERROR_BODY_CHARS);
                Some(format!(
                    "HTTP {status}{}",
                    if text.is_empty() {
                        String::new()
                    } else {
                        format!(": {text}")
                    }
                ))
            }
            Err(e) => Some(e.to_string()),
        };
        let Some(why) = failure else { return true };
        let first = {
            let mut s = self.shared.0.locked();
            s.failed += 1;
            !std::mem::replace(&mut s.warned, true)
        };
        let line = format!("telemetry: exporting {what} to {} failed: {why}", to.url);
        if first {
            output::warn(&format!(
                "{line} (later failures are counted, -v shows each; the run goes on)"
            ));
        } else {
            output::debug(&line);
        }
        false
    }
}
