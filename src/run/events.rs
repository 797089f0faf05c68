//! `--jsonl` (SPEC §9): the run's events as JSON lines on stdout while it goes. Every
//! line starts with `version`, `type`, `seq` (1, 2, 3 … with no gaps) and `elapsed_ms`
//! (since the run started), then the event's own fields; the last line is `run.finished`
//! with the whole transcript. The schema is documented in docs/reference/events.md.
//!
//! Events are emitted from several threads (tool calls run on rayon workers, the deadline
//! and signal threads finish the run): one mutex numbers and writes each line, so lines
//! never interleave and `seq` follows the order on stdout. After `run.finished` nothing
//! more is written. Writing goes through `output::print_stdout` (the only stdout writer).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};

use crate::util::sync::Locked;

/// The version of the event schema; fields are only ever added within a version.
pub(crate) const EVENTS_VERSION: u32 = 1;

type WriteLine = Box<dyn FnMut(&str) + Send>;

struct Sink {
    seq: u64,
    closed: bool,
    write: WriteLine,
}

/// The event stream of one run; a disabled one (no `--jsonl`) does nothing.
pub(crate) struct Events {
    sink: Option<Arc<Mutex<Sink>>>,
    start: Instant,
    /// A field every event of this stream carries after the common four (a
    /// sub-agent's `subagent_id`): its events share the run's sink and numbering.
    tag: Option<(String, Value)>,
}

impl Events {
    /// No events (the run prints text or one JSON document instead).
    pub(crate) fn disabled() -> Self {
        Events {
            sink: None,
            start: Instant::now(),
            tag: None,
        }
    }

    /// Events on stdout, secrets redacted.
    pub(crate) fn stdout(start: Instant) -> Self {
        Events::to_writer(
            start,
            Box::new(|line| {
                crate::util::output::print_stdout(&crate::util::output::redact(line));
            }),
        )
    }

    /// Events to any line writer (tests, `agent github`'s progress).
    pub(crate) fn to_writer(start: Instant, write: WriteLine) -> Self {
        Events {
            sink: Some(Arc::new(Mutex::new(Sink {
                seq: 0,
                closed: false,
                write,
            }))),
            start,
            tag: None,
        }
    }

    /// The same stream, each event carrying `key: value` (a sub-agent's events).
    pub(crate) fn tagged(&self, key: &str, value: Value) -> Events {
        Events {
            sink: self.sink.clone(),
            start: self.start,
            tag: Some((key.to_string(), value)),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// A sub-agent's stream (`tagged`).
    pub(crate) fn is_tagged(&self) -> bool {
        self.tag.is_some()
    }

    /// `"subagent_1: "` for a sub-agent's stream, else empty: its log lines' prefix.
    pub(crate) fn log_prefix(&self) -> String {
        match &self.tag {
            Some((_, Value::String(v))) => format!("{v}: "),
            _ => String::new(),
        }
    }

    /// Writes one event; `fields` is a JSON object of the event's own fields.
    pub(crate) fn emit(&self, kind: &str, fields: Value) {
        self.write(kind, fields, false);
    }

    /// Writes one event with `raw` (already JSON, e.g. a history message's stored
    /// bytes) spliced in as the field `key`, after the others.
    pub(crate) fn emit_raw(&self, kind: &str, fields: Value, key: &str, raw: &str) {
        self.write_with(kind, fields, Some((key, raw)), false);
    }

    /// Writes `run.finished` (the last event) and closes the stream. `transcript` is the
    /// transcript's one-line JSON, spliced in as it is so its key order (`version` first)
    /// survives.
    pub(crate) fn finish(&self, fields: Value, transcript: &str) {
        self.write_with(
            "run.finished",
            fields,
            Some(("transcript", transcript)),
            true,
        );
    }

    fn write(&self, kind: &str, fields: Value, last: bool) {
        self.write_with(kind, fields, None, last);
    }

    fn write_with(&self, kind: &str, fields: Value, raw: Option<(&str, &str)>, last: bool) {
        let Some(sink) = &self.sink else { return };
        let mut s = sink.locked();
        if s.closed {
            return;
        }
        s.seq += 1;
        s.closed = last;
        let fields = match (&self.tag, fields) {
            (Some((k, v)), Value::Object(mut m)) => {
                m.insert(k.clone(), v.clone());
                Value::Object(m)
            }
            (Some((k, v)), Value::Null) => Value::Object(Map::from_iter([(k.clone(), v.clone())])),
            (_, other) => other,
        };
        let mut line = render(kind, s.seq, self.start.elapsed().as_millis() as u64, fields);
        if let Some((key, raw)) = raw {
            line.pop(); // the closing brace
            line.push(',');
            line.push_str(&Value::String(key.to_string()).to_string());
            line.push(':');
            line.push_str(raw);
            line.push('}');
        }
        (s.write)(&line);
    }
}

/// One line: the four common fields first (a `Map` would sort them), then the rest.
fn render(kind: &str, seq: u64, elapsed_ms: u64, fields: Value) -> String {
    let mut line = format!(
        "{{\"version\":{EVENTS_VERSION},\"type\":{},\"seq\":{seq},\"elapsed_ms\":{elapsed_ms}",
        Value::String(kind.to_string())
    );
    let rest: Map<String, Value> = match fields {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => Map::from_iter([("value".to_string(), other)]),
    };
    for (k, v) in rest {
        if matches!(k.as_str(), "version" | "type" | "seq" | "elapsed_ms") {
            continue; // the common fields cannot be overridden
        }
        line.push(',');
        line.push_str(&Value::String(k).to_string());
        line.push(':');
        line.push_str(&v.to_string());
    }
    line.push('}');
    line
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
