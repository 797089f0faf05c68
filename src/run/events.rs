//! The run's event bus (SPEC §9): each `RunEvent` is emitted once, where it happens, and
//! handed to every sink in the order of its `seq`. The sinks are the `--jsonl` writer
//! (`Jsonl`, stdout), the stderr log (`Log`) and in-process observers (`agent github`'s
//! progress comment); the run record and OpenTelemetry are told at the same fixed points
//! by `CiRun` (DESIGN.md "The event bus and the transcript").
//!
//! After ripgrep's `crates/searcher/src/sink.rs`: a sink is a typed trait (`Sink::event`
//! takes a `RunEvent`), not a callback over a string.
//!
//! Every `--jsonl` line starts with `version`, `type`, `seq` (1, 2, 3 … with no gaps) and
//! `elapsed_ms` (since the run started), then the event's own fields in key order (a
//! sub-agent's `subagent_id` among them), then the field written as it is (`message`,
//! `transcript`); the last line is `run.finished` with the whole transcript. The schema is
//! generated in docs/reference/events.schema.json and
//! documented in docs/reference/events.md.
//!
//! Events are emitted from several threads (tool calls run on rayon workers, the deadline
//! and signal threads finish the run): one mutex numbers each event and hands it to the
//! sinks, so lines never interleave and `seq` follows the order on stdout. After
//! `run.finished` the `--jsonl` writer writes nothing more. The sinks run under that
//! lock, on the emitting thread: the `--jsonl` writer is the product and stays
//! synchronous and lossless; a sink that does network I/O must hand it to a bounded queue
//! of its own (the progress comment's `Editor` queue drops, and counts, what it has no
//! room for).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};

use crate::run::event::{RunEvent, Verbatim};
use crate::util::sync::Locked;

/// The version of the event schema; fields are only ever added within a version.
pub(crate) const EVENTS_VERSION: u32 = 1;

/// One event as the sinks get it: the event and its envelope.
pub(crate) struct Emitted<'a> {
    pub seq: u64,
    pub elapsed_ms: u64,
    /// A Task sub-agent's events carry its id.
    pub subagent_id: Option<&'a str>,
    pub event: &'a RunEvent,
}

/// Where events go. Called under the bus's lock, in `seq` order: it must not block on
/// anything but its own output (network I/O goes to a bounded queue).
pub(crate) trait Sink: Send {
    fn event(&mut self, e: &Emitted<'_>);

    /// Whether this sink takes the run's result from `run.finished` (the `--jsonl`
    /// stream, `agent github`): then stdout gets no answer or document from the finisher.
    fn takes_the_result(&self) -> bool {
        false
    }
}

struct Bus {
    seq: u64,
    sinks: Vec<Box<dyn Sink>>,
}

/// The event stream of one run; one without sinks does nothing.
pub(crate) struct Events {
    bus: Option<Arc<Mutex<Bus>>>,
    /// A sink takes the result from `run.finished` (`Sink::takes_the_result`).
    takes_the_result: bool,
    start: Instant,
    /// A sub-agent's stream: its events share the run's sinks and numbering.
    subagent_id: Option<String>,
}

impl Events {
    /// No events (no `--jsonl`, no observer).
    #[cfg(test)]
    pub(crate) fn disabled() -> Self {
        Events {
            bus: None,
            takes_the_result: false,
            start: Instant::now(),
            subagent_id: None,
        }
    }

    /// Events to `sinks`; none: disabled.
    pub(crate) fn new(start: Instant, sinks: Vec<Box<dyn Sink>>) -> Self {
        Events {
            takes_the_result: sinks.iter().any(|s| s.takes_the_result()),
            bus: (!sinks.is_empty()).then(|| Arc::new(Mutex::new(Bus { seq: 0, sinks }))),
            start,
            subagent_id: None,
        }
    }

    /// The same stream, each event carrying `subagent_id` (a sub-agent's events).
    pub(crate) fn tagged(&self, subagent_id: &str) -> Events {
        Events {
            bus: self.bus.clone(),
            takes_the_result: self.takes_the_result,
            start: self.start,
            subagent_id: Some(subagent_id.to_string()),
        }
    }

    /// Whether anything hears the events (building one may be skipped otherwise).
    pub(crate) fn enabled(&self) -> bool {
        self.bus.is_some()
    }

    /// Whether `run.finished` carries the run's result in place of stdout's answer.
    pub(crate) fn takes_the_result(&self) -> bool {
        self.takes_the_result
    }

    /// A sub-agent's stream (`tagged`).
    pub(crate) fn is_tagged(&self) -> bool {
        self.subagent_id.is_some()
    }

    /// `"subagent_1: "` for a sub-agent's stream, else empty: its log lines' prefix.
    pub(crate) fn log_prefix(&self) -> String {
        prefix(self.subagent_id.as_deref())
    }

    /// Hands one event to every sink (after `run.finished`, the `--jsonl` writer
    /// writes nothing more; the log still says what happens on the way out).
    pub(crate) fn emit(&self, event: RunEvent) {
        let Some(bus) = &self.bus else { return };
        let mut b = bus.locked();
        b.seq += 1;
        let e = Emitted {
            seq: b.seq,
            elapsed_ms: self.start.elapsed().as_millis() as u64,
            subagent_id: self.subagent_id.as_deref(),
            event: &event,
        };
        for sink in &mut b.sinks {
            sink.event(&e);
        }
    }
}

/// A log line's prefix for a sub-agent's event.
pub(crate) fn prefix(subagent_id: Option<&str>) -> String {
    subagent_id.map(|id| format!("{id}: ")).unwrap_or_default()
}

/// The `--jsonl` writer: each event as one line, secrets redacted; nothing after
/// `run.finished`.
pub(crate) struct Jsonl {
    write: Box<dyn FnMut(&str) + Send>,
    closed: bool,
}

impl Jsonl {
    /// Lines on stdout (`output::print_stdout`, the only stdout writer).
    pub(crate) fn stdout() -> Self {
        Jsonl::to_writer(Box::new(|line| {
            crate::util::output::print_stdout(line);
        }))
    }

    /// Lines to any writer (tests).
    pub(crate) fn to_writer(write: Box<dyn FnMut(&str) + Send>) -> Self {
        Jsonl {
            write,
            closed: false,
        }
    }
}

impl Sink for Jsonl {
    fn event(&mut self, e: &Emitted<'_>) {
        if self.closed {
            return;
        }
        self.closed = matches!(e.event, RunEvent::RunFinished(_));
        (self.write)(&crate::util::output::redact_owned(line(e)));
    }

    fn takes_the_result(&self) -> bool {
        true
    }
}

/// The stderr log's lines of the events that have one (CI and terminal alike: `output`
/// picks the form). What the loop logs with more than an event says (the progress line,
/// `-v`'s request and call lines, a clearing's window) is logged where it happens.
pub(crate) struct Log;

impl Sink for Log {
    fn event(&mut self, e: &Emitted<'_>) {
        use crate::util::output::{info, warn};
        let p = prefix(e.subagent_id);
        match e.event {
            RunEvent::BackgroundStarted(b) => info(&format!(
                "{p}background {} started (pid {}): {}",
                b.id,
                b.pid,
                crate::util::text::ellipsis(&b.command, 120)
            )),
            RunEvent::BackgroundFinished(b) => {
                info(&format!("{p}background {} ended: {}", b.id, b.status));
            }
            RunEvent::PlanUpdated(plan) => {
                info(&format!("{p}plan ({} items):", plan.todos.len()));
                for t in &plan.todos {
                    info(&format!("{p}  {}", t.line()));
                }
            }
            RunEvent::NetworkDenied(d) => warn(&format!("{p}{}", d.text())),
            RunEvent::SkillActivated(s) => {
                info(&format!("{p}skill {} loaded ({})", s.name, s.path))
            }
            RunEvent::VerifyFinished(v) if v.passed => info(&format!("{p}verification passed")),
            _ => {}
        }
    }
}

/// One line: the four common fields first, then the event's own (in key order, as a
/// `serde_json::Map` keeps them, nested objects too), then the verbatim field.
pub(crate) fn line(e: &Emitted<'_>) -> String {
    use std::fmt::Write as _;
    let (head, tail) = split(e.event);
    let mut fields = match serde_json::to_value(&head) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if let Some((key, _)) = tail {
        fields.remove(key);
    }
    if let Some(id) = e.subagent_id {
        fields.insert("subagent_id".into(), Value::String(id.to_string()));
    }
    // Sized for the verbatim field: `run.finished` carries the whole transcript, and a
    // line grown by doubling would peak at twice its size.
    let mut line = String::with_capacity(256 + tail.map_or(0, |(_, raw)| raw.0.len()));
    let _ = write!(
        line,
        "{{\"version\":{EVENTS_VERSION},\"type\":{},\"seq\":{},\"elapsed_ms\":{}",
        Value::String(e.event.kind().to_string()),
        e.seq,
        e.elapsed_ms
    );
    for (k, v) in fields {
        if matches!(k.as_str(), "version" | "type" | "seq" | "elapsed_ms") {
            continue; // the envelope's, and the tag
        }
        line.push(',');
        line.push_str(&Value::String(k).to_string());
        line.push(':');
        line.push_str(&v.to_string());
    }
    if let Some((key, raw)) = tail {
        line.push(',');
        line.push_str(&Value::String(key.to_string()).to_string());
        line.push(':');
        line.push_str(&raw.0);
    }
    line.push('}');
    line
}

/// The event without its verbatim field (so that it is not parsed into a `Value`), and
/// that field.
fn split(event: &RunEvent) -> (std::borrow::Cow<'_, RunEvent>, Option<(&str, &Verbatim)>) {
    use std::borrow::Cow;
    let Some((key, raw)) = event.verbatim() else {
        return (Cow::Borrowed(event), None);
    };
    let hollow = Verbatim("null".into());
    let head = match event {
        RunEvent::AssistantMessage(m) => {
            RunEvent::AssistantMessage(crate::run::event::AssistantMessage {
                turn: m.turn,
                model: m.model.clone(),
                stop_reason: m.stop_reason.clone(),
                usage: m.usage,
                message: hollow,
            })
        }
        RunEvent::RunFinished(f) => RunEvent::RunFinished(crate::run::event::RunFinished {
            status: f.status.clone(),
            exit_code: f.exit_code,
            transcript: hollow,
        }),
        other => other.clone(),
    };
    (Cow::Owned(head), Some((key, raw)))
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
