//! OpenTelemetry export over OTLP/HTTP (traces and metrics), off unless the standard
//! `OTEL_*` variables configure it (`settings.rs`). The process-wide `Telemetry` is set
//! once by the command that runs (`agent run`, `agent batch`); every call here is a no-op
//! without it, so nothing else checks. Spans are built with `Span` (started, given
//! attributes and events, ended on drop) and queued for the export thread
//! (`export.rs`); metrics are aggregated in memory (`metrics.rs`) and sent with the
//! traces' flush. `context.rs` holds the trace ids and the thread's current span, which
//! is what a command started on that thread gets as `TRACEPARENT`. What a span of a run
//! is called and carries (the GenAI conventions) is `run::telemetry`'s business.

pub(crate) mod context;
mod encode;
mod export;
pub(crate) mod metrics;
pub(crate) mod settings;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use context::SpanContext;
pub(crate) use encode::{AttrValue, Attrs, SpanKind};
use encode::{EventData, SpanData, StatusCode};
pub(crate) use export::Report;
pub(crate) use metrics::{Instrument, Kind};
use settings::OtelSettings;

use crate::util::output;
use crate::util::sync::Locked;

/// How long the final flush may take on every way out: short, because a signal's finish
/// must also write the transcript within GitHub's 7.5 s.
pub(crate) const FLUSH_DEADLINE: Duration = Duration::from_secs(2);

/// Attributes a span is made room for at once (a chat span sets about a dozen).
const SPAN_ATTRS: usize = 16;

struct Telemetry {
    exporter: export::Exporter,
    metrics: Arc<Mutex<metrics::Metrics>>,
    parent: Option<SpanContext>,
    content: bool,
    /// The report of the flush, once it ran (a second way out does not flush again).
    flushed: Mutex<Option<Report>>,
}

static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();

/// Starts exporting as `settings` say (nothing when they configure nothing). Once per
/// process; the `-v` log names the endpoints with the header values redacted.
pub(crate) fn start(settings: &OtelSettings) {
    if !settings.enabled() {
        return;
    }
    for (what, e) in [("traces", &settings.traces), ("metrics", &settings.metrics)] {
        if let Some(e) = e {
            let headers: Vec<String> = e
                .headers
                .iter()
                .map(|(k, _)| format!("{k}=[REDACTED]"))
                .collect();
            output::debug(&format!(
                "telemetry: {what} to {} ({}, timeout {}ms{}{})",
                e.url,
                e.protocol.as_str(),
                e.timeout.as_millis(),
                if headers.is_empty() { "" } else { ", headers " },
                headers.join(",")
            ));
        }
    }
    let metrics = Arc::new(Mutex::new(metrics::Metrics::default()));
    let exporter = export::Exporter::start(settings, metrics.clone(), now_ns());
    let _ = TELEMETRY.set(Telemetry {
        exporter,
        metrics,
        parent: settings.parent.clone(),
        content: settings.content,
        flushed: Mutex::new(None),
    });
}

/// Whether spans and metrics go anywhere.
pub(crate) fn enabled() -> bool {
    TELEMETRY.get().is_some()
}

/// `--otel-content`: whether spans may carry prompts, answers and tool content.
pub(crate) fn content_enabled() -> bool {
    TELEMETRY.get().is_some_and(|t| t.content)
}

/// The span this process's work is a child of (`TRACEPARENT`), if any.
pub(crate) fn process_parent() -> Option<SpanContext> {
    TELEMETRY.get().and_then(|t| t.parent.clone())
}

/// Adds `value` to an instrument's series with these attributes.
pub(crate) fn record(instrument: &'static Instrument, value: f64, attrs: &[(&'static str, &str)]) {
    if let Some(t) = TELEMETRY.get() {
        t.metrics.locked().record(instrument, value, attrs);
    }
}

/// The final flush: the queued spans and the metrics, within `FLUSH_DEADLINE`. Says how
/// it went in one line when anything was lost (a warning) and under `-v` otherwise.
/// Later calls return the first one's report.
pub(crate) fn shutdown() -> Option<Report> {
    let t = TELEMETRY.get()?;
    let mut flushed = t.flushed.locked();
    if let Some(r) = *flushed {
        return Some(r);
    }
    let r = t.exporter.flush(FLUSH_DEADLINE);
    let line = format!(
        "telemetry: {} span(s) exported, {} dropped (queue full), {} export(s) failed{}",
        r.exported_spans,
        r.dropped_spans,
        r.failed_exports,
        if r.timed_out {
            format!(
                ", gave up after {}s with {} span(s) unsent",
                FLUSH_DEADLINE.as_secs(),
                r.unsent_spans
            )
        } else {
            String::new()
        }
    );
    if r.dropped_spans > 0 || r.failed_exports > 0 || r.timed_out {
        output::warn(&line);
    } else {
        output::debug(&line);
    }
    *flushed = Some(r);
    Some(r)
}

/// Nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The id generator's state: seeded once from the OS (the `getrandom` crate), then
/// SplitMix64 steps, so a span costs no system call. `fetch_add` of the odd gamma makes
/// every state distinct, so two threads never draw the same id.
static ID_STATE: OnceLock<std::sync::atomic::AtomicU64> = OnceLock::new();

/// SplitMix64's increment (an odd constant: the states cycle through all 2^64 values).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

fn next_random() -> u64 {
    let state = ID_STATE.get_or_init(|| {
        let mut seed = [0u8; 8];
        if getrandom::fill(&mut seed).is_err() {
            // No OS randomness: time and pid still make ids unlikely to collide.
            seed = (now_ns() ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
        }
        std::sync::atomic::AtomicU64::new(u64::from_le_bytes(seed))
    });
    let mut z = state
        .fetch_add(GAMMA, std::sync::atomic::Ordering::Relaxed)
        .wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random id of `N` bytes, never all zero (invalid in W3C Trace Context).
fn random_id<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    for chunk in buf.chunks_mut(8) {
        let r = next_random().to_le_bytes();
        chunk.copy_from_slice(&r[..chunk.len()]);
    }
    if buf.iter().all(|b| *b == 0) {
        buf[0] = 1;
    }
    buf
}

/// A span being recorded; inert (every method a no-op) when telemetry is off. Ends and
/// is queued for export when dropped, at the time `stop` noted or else then.
pub(crate) struct Span {
    data: Option<Box<SpanData>>,
}

impl Span {
    /// A span that records nothing.
    pub(crate) fn none() -> Span {
        Span { data: None }
    }

    /// Starts a span under `parent` (a new trace without one).
    pub(crate) fn start(
        name: impl Into<String>,
        kind: SpanKind,
        parent: Option<&SpanContext>,
    ) -> Span {
        if !enabled() {
            return Span::none();
        }
        let (trace_id, parent_span_id, trace_state, flags) = match parent {
            Some(p) => (p.trace_id, Some(p.span_id), p.trace_state.clone(), p.flags),
            None => (random_id::<16>(), None, String::new(), 1),
        };
        Span {
            data: Some(Box::new(SpanData {
                trace_id,
                span_id: random_id::<8>(),
                parent_span_id,
                trace_state,
                flags,
                name: name.into(),
                kind,
                start_ns: now_ns(),
                end_ns: 0,
                attrs: Vec::with_capacity(SPAN_ATTRS),
                events: Vec::new(),
                status: StatusCode::Unset,
                status_message: String::new(),
            })),
        }
    }

    /// A span under the calling thread's current one (`context::current`), else under
    /// the process's parent.
    pub(crate) fn start_here(name: impl Into<String>, kind: SpanKind) -> Span {
        if !enabled() {
            return Span::none();
        }
        let parent = context::current().or_else(process_parent);
        Span::start(name, kind, parent.as_ref())
    }

    /// Its identity, to parent other spans and to hand to commands.
    pub(crate) fn context(&self) -> Option<SpanContext> {
        self.data.as_ref().map(|d| SpanContext {
            trace_id: d.trace_id,
            span_id: d.span_id,
            flags: d.flags,
            trace_state: d.trace_state.clone(),
        })
    }

    /// Sets an attribute (a later value for the same key replaces the earlier one).
    pub(crate) fn set(&mut self, key: &'static str, value: impl Into<AttrValue>) {
        if let Some(d) = &mut self.data {
            let value = value.into();
            match d.attrs.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => d.attrs.push((key.into(), value)),
            }
        }
    }

    /// Adds a timestamped event.
    pub(crate) fn event(&mut self, name: &str, attrs: Attrs) {
        if let Some(d) = &mut self.data {
            d.events.push(EventData {
                time_ns: now_ns(),
                name: name.to_string(),
                attrs,
            });
        }
    }

    /// Marks the span failed: status `ERROR` with `message`, and `error.type`.
    pub(crate) fn fail(&mut self, error_type: &str, message: &str) {
        self.set("error.type", error_type.to_string());
        if let Some(d) = &mut self.data {
            d.status = StatusCode::Error;
            d.status_message = crate::util::text::ellipsis(&output::redact(message), 1_000);
        }
    }

    /// Marks the span a success (status `OK`).
    pub(crate) fn succeed(&mut self) {
        if let Some(d) = &mut self.data {
            d.status = StatusCode::Ok;
        }
    }

    /// Notes the end time now; the span is exported when dropped.
    pub(crate) fn stop(&mut self) {
        if let Some(d) = &mut self.data
            && d.end_ns == 0
        {
            d.end_ns = now_ns();
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some(mut d) = self.data.take() else {
            return;
        };
        if d.end_ns == 0 {
            d.end_ns = now_ns();
        }
        if let Some(t) = TELEMETRY.get() {
            t.exporter.push(*d);
        }
    }
}
