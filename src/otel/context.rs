//! Trace context (W3C Trace Context, `TRACEPARENT`/`TRACESTATE`): the ids of a span, their
//! text form, and the span a thread is working in now, so that a command started on it
//! (`process::run`) is handed a `TRACEPARENT` naming that span. Imports nothing of the
//! crate: `process` reads it below the exporter.

use std::cell::RefCell;

/// The identity of one span, as it travels between processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpanContext {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    /// `01` when sampled (the only flag W3C defines).
    pub(crate) flags: u8,
    /// `TRACESTATE`, passed on as it came.
    pub(crate) trace_state: String,
}

impl SpanContext {
    /// `00-<trace id>-<span id>-<flags>`.
    pub(crate) fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            self.flags
        )
    }

    /// A `TRACEPARENT` value, or None when it is not a valid version-00 one (all-zero ids
    /// are invalid by the spec). A later version is read by its first four fields, as the
    /// spec asks.
    pub(crate) fn parse(traceparent: &str, trace_state: Option<&str>) -> Option<SpanContext> {
        let t = traceparent.trim();
        let mut parts = t.split('-');
        let version = parts.next()?;
        let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        u8::from_str_radix(version, 16).ok()?;
        let trace_id: [u8; 16] = unhex(trace)?.try_into().ok()?;
        let span_id: [u8; 8] = unhex(span)?.try_into().ok()?;
        let flags = unhex(flags)?.first().copied()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(SpanContext {
            trace_id,
            span_id,
            flags,
            trace_state: trace_state.unwrap_or_default().trim().to_string(),
        })
    }
}

/// Lowercase hex, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex only (W3C), an even number of digits.
fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2)
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

thread_local! {
    /// The span this thread works in now (a tool call, a hook, `--verify`).
    static CURRENT: RefCell<Option<SpanContext>> = const { RefCell::new(None) };
}

/// The span the calling thread works in, if any.
pub(crate) fn current() -> Option<SpanContext> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Makes `ctx` the calling thread's span until the guard drops (the previous one is then
/// restored, so spans nest: a hook inside a tool call).
pub(crate) fn enter(ctx: Option<SpanContext>) -> Entered {
    let previous = CURRENT.with(|c| c.replace(ctx));
    Entered { previous }
}

/// Makes `ctx` the calling thread's span and returns the previous one (for a span that
/// starts and ends in two calls on the same thread, as a tool call's does).
pub(crate) fn replace(ctx: Option<SpanContext>) -> Option<SpanContext> {
    CURRENT.with(|c| c.replace(ctx))
}

/// Restores the thread's previous span when dropped.
pub(crate) struct Entered {
    previous: Option<SpanContext>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// The variables a command started on this thread gets for the span it runs in:
/// `TRACEPARENT`, and `TRACESTATE` when there is one. Empty outside any span.
pub(crate) fn child_env() -> Vec<(String, String)> {
    let Some(ctx) = current() else {
        return Vec::new();
    };
    let mut vars = vec![("TRACEPARENT".to_string(), ctx.traceparent())];
    if !ctx.trace_state.is_empty() {
        vars.push(("TRACESTATE".to_string(), ctx.trace_state));
    }
    vars
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
