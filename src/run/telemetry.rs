//! A run as OpenTelemetry sees it, after the GenAI semantic conventions: the run span
//! (`invoke_agent agent`), one `chat {model}` span per model request, one
//! `execute_tool {name}` span per tool call, a `verify` span per `--verify` round (hooks
//! open their own spans in `policy::hooks`), and the metrics (token usage and request
//! duration histograms, tool calls, runs, cost). `CiRun` and `RunWatch`, the loop's
//! observers, call it at their fixed points and the `Finisher` ends it on every way out;
//! it never decides anything. With telemetry off every method is a no-op.
//!
//! Nesting: the run span's parent is `TRACEPARENT` (or a batch's span), so a sub-agent's
//! run can be given the calling tool span as its parent the same way (`RunTrace::new`
//! takes the parent); every other span of the run hangs under its run span.

use std::sync::Mutex;

use crate::model::protocol::Usage;
use crate::model::turn::{PendingCall, Turn};
use crate::otel::{self, AttrValue, Attrs, Instrument, Kind, Span, SpanContext, SpanKind};
use crate::record::RunRecord;
use crate::record::outcome::Outcome;
use crate::tools::dispatch::CallOutcome;
use crate::util::output;
use crate::util::sync::Locked;

/// How much content (`--otel-content`) one attribute carries.
const CONTENT_CHARS: usize = 4_000;

/// The GenAI conventions' token buckets.
const TOKEN_BOUNDS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// The GenAI conventions' duration buckets (seconds).
const DURATION_BOUNDS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

pub(crate) static TOKEN_USAGE: Instrument = Instrument {
    name: "gen_ai.client.token.usage",
    description: "Tokens used per model request, by gen_ai.token.type",
    unit: "{token}",
    kind: Kind::Histogram(TOKEN_BOUNDS),
};
pub(crate) static OPERATION_DURATION: Instrument = Instrument {
    name: "gen_ai.client.operation.duration",
    description: "Duration of each model request",
    unit: "s",
    kind: Kind::Histogram(DURATION_BOUNDS),
};
pub(crate) static TOOL_CALLS: Instrument = Instrument {
    name: "agent.tool.calls",
    description: "Tool calls, by tool and outcome (ok, error, denied)",
    unit: "{call}",
    kind: Kind::Counter,
};
pub(crate) static TOOL_DURATION: Instrument = Instrument {
    name: "agent.tool.duration",
    description: "Duration of each tool call, by tool and outcome",
    unit: "s",
    kind: Kind::Histogram(DURATION_BOUNDS),
};
pub(crate) static RUNS: Instrument = Instrument {
    name: "agent.runs",
    description: "Runs, by status",
    unit: "{run}",
    kind: Kind::Counter,
};
pub(crate) static COST: Instrument = Instrument {
    name: "agent.cost",
    description: "What the run's model requests cost (USD), by model",
    unit: "USD",
    kind: Kind::CounterF64,
};

/// A chat span and when its request began.
struct Chat {
    span: Span,
    started: std::time::Instant,
}

/// A tool call's span while it runs (and the thread's span before it, restored after).
struct Running {
    span: Span,
    previous: Option<SpanContext>,
}

/// The spans of one run.
pub(crate) struct RunTrace {
    run: Mutex<Span>,
    context: Option<SpanContext>,
    provider: &'static str,
    request_model: String,
    max_tokens: u32,
    chat: Mutex<Option<Chat>>,
    /// By call id (a handful at once: a list beats hashing).
    calls: Mutex<Vec<(String, Running)>>,
    /// Calls that ended, waiting for the batch number `turn_finished` reads from the record.
    ended: Mutex<Vec<(String, u32, Span)>>,
    /// A sub-agent's (Task): its run is counted, and its cost charged, by the parent's.
    subagent: bool,
}

impl RunTrace {
    /// The run span, started now under `parent`.
    pub(crate) fn new(
        provider: &'static str,
        model: &str,
        max_tokens: u32,
        parent: Option<SpanContext>,
    ) -> RunTrace {
        let mut run = Span::start("invoke_agent agent", SpanKind::Internal, parent.as_ref());
        run.set("gen_ai.operation.name", "invoke_agent");
        run.set("gen_ai.agent.name", "agent");
        run.set("gen_ai.provider.name", provider);
        run.set("gen_ai.request.model", model.to_string());
        RunTrace {
            context: run.context(),
            run: Mutex::new(run),
            provider,
            request_model: model.to_string(),
            max_tokens,
            chat: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
            ended: Mutex::new(Vec::new()),
            subagent: false,
        }
    }

    /// A sub-agent's run span, a child of its Task call's span (the calling thread's
    /// current one); its requests and tool calls nest under it.
    pub(crate) fn for_subagent(
        provider: &'static str,
        model: &str,
        max_tokens: u32,
        id: &str,
    ) -> RunTrace {
        let mut trace = RunTrace::new(provider, model, max_tokens, otel::context::current());
        trace.run.locked().set("agent.subagent.id", id.to_string());
        trace.subagent = true;
        trace
    }

    /// Nothing recorded (tests).
    #[cfg(test)]
    pub(crate) fn off() -> RunTrace {
        RunTrace {
            run: Mutex::new(Span::none()),
            context: None,
            provider: "",
            request_model: String::new(),
            max_tokens: 0,
            chat: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
            ended: Mutex::new(Vec::new()),
            subagent: false,
        }
    }

    fn recording(&self) -> bool {
        self.context.is_some()
    }

    /// `run.started`: the session, the workspace, the prompt with `--otel-content`.
    pub(crate) fn run_started(&self, record: &RunRecord, prompt: &str) {
        if !self.recording() {
            return;
        }
        let mut run = self.run.locked();
        run.set("gen_ai.conversation.id", record.session_id().to_string());
        run.set("agent.workspace", record.workspace().display().to_string());
        if otel::content_enabled() {
            run.set("gen_ai.input.messages", content(prompt));
        }
    }

    /// A model request begins (a new turn).
    pub(crate) fn request_started(&self, turn: u32) {
        if !self.recording() {
            return;
        }
        let mut span = Span::start(
            format!("chat {}", self.request_model),
            SpanKind::Client,
            self.context.as_ref(),
        );
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.provider.name", self.provider);
        span.set("gen_ai.request.model", self.request_model.clone());
        span.set("gen_ai.request.max_tokens", self.max_tokens);
        span.set("agent.turn", turn);
        let previous = self.chat.locked().replace(Chat {
            span,
            started: std::time::Instant::now(),
        });
        drop(previous);
    }

    /// A retry or a switch to the fallback model, as an event of the request's span.
    pub(crate) fn request_event(&self, name: &str, attrs: Attrs) {
        if let Some(c) = self.chat.locked().as_mut() {
            c.span.event(name, attrs);
        }
    }

    /// The turn came: the response's attributes, the usage; the chat span ends.
    pub(crate) fn turn_received(&self, turn: &Turn, message_json: &str) {
        let Some(mut chat) = self.chat.locked().take() else {
            return;
        };
        let model = if turn.model.is_empty() {
            self.request_model.clone()
        } else {
            turn.model.clone()
        };
        let s = &mut chat.span;
        s.set("gen_ai.response.model", model.clone());
        if !turn.id.is_empty() {
            s.set("gen_ai.response.id", turn.id.clone());
        }
        s.set(
            "gen_ai.response.finish_reasons",
            vec![turn.stop_reason.as_str().to_string()],
        );
        if !turn.usage.unknown {
            set_usage(s, &turn.usage);
        }
        if otel::content_enabled() {
            s.set("gen_ai.output.messages", content(message_json));
        }
        let attrs = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", self.provider),
            ("gen_ai.request.model", self.request_model.as_str()),
            ("gen_ai.response.model", model.as_str()),
        ];
        if !turn.usage.unknown {
            for (kind, n) in [
                ("input", turn.usage.input_tokens),
                ("output", turn.usage.output_tokens),
            ] {
                let [a, b, c, d] = attrs;
                otel::record(
                    &TOKEN_USAGE,
                    n as f64,
                    &[a, b, c, d, ("gen_ai.token.type", kind)],
                );
            }
        }
        otel::record(
            &OPERATION_DURATION,
            chat.started.elapsed().as_secs_f64(),
            &attrs,
        );
    }

    /// A tool call starts on this thread: its span becomes the thread's, so the command
    /// it runs (Bash) and its hooks nest under it.
    pub(crate) fn call_started(&self, call: &PendingCall, turn: u32) {
        if !self.recording() {
            return;
        }
        let mut span = Span::start(
            format!("execute_tool {}", call.name),
            SpanKind::Internal,
            self.context.as_ref(),
        );
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", call.name.clone());
        span.set("gen_ai.tool.call.id", call.id.clone());
        span.set("agent.turn", turn);
        // Only MCP tools are in the server table (a built-in needs no lock).
        let origin = call
            .name
            .starts_with("mcp__")
            .then(|| crate::mcp::names::origin(&call.name))
            .flatten();
        match origin {
            Some((server, tool)) => {
                span.set("gen_ai.tool.type", "extension");
                span.set("agent.mcp.server", server);
                span.set("agent.mcp.tool", tool);
            }
            None => span.set("gen_ai.tool.type", "function"),
        }
        if otel::content_enabled()
            && let Ok(input) = &call.input
        {
            span.set("gen_ai.tool.call.arguments", content(&input.to_string()));
        }
        let previous = otel::context::replace(span.context());
        self.calls
            .locked()
            .push((call.id.clone(), Running { span, previous }));
    }

    /// The call ended (on the thread it started on): its outcome; the span waits for its
    /// batch number (`turn_finished`).
    pub(crate) fn call_finished(&self, call: &PendingCall, outcome: &CallOutcome, turn: u32) {
        let taken = {
            let mut calls = self.calls.locked();
            let at = calls.iter().position(|(id, _)| *id == call.id);
            at.map(|i| calls.swap_remove(i))
        };
        let Some((id, Running { mut span, previous })) = taken else {
            return;
        };
        otel::context::replace(previous);
        let outcome_name = if outcome.denial.is_some() {
            span.fail("denied", &outcome.result.content);
            "denied"
        } else if outcome.fatal.is_some() {
            span.fail("fatal", &outcome.result.content);
            "error"
        } else if outcome.result.is_error {
            span.fail("tool_error", &outcome.result.content);
            "error"
        } else {
            "ok"
        };
        if otel::content_enabled() {
            span.set("gen_ai.tool.call.result", content(&outcome.result.content));
        }
        span.stop();
        let attrs = [
            ("gen_ai.tool.name", call.name.as_str()),
            ("agent.tool.outcome", outcome_name),
        ];
        otel::record(&TOOL_CALLS, 1.0, &attrs);
        otel::record(&TOOL_DURATION, outcome.duration.as_secs_f64(), &attrs);
        self.ended.locked().push((id, turn, span));
    }

    /// The turn's calls were answered: each ended call gets its batch from the record
    /// and is exported.
    pub(crate) fn turn_finished(&self, record: &RunRecord) {
        let ended = std::mem::take(&mut *self.ended.locked());
        for (id, turn, mut span) in ended {
            // From the end: the turn's calls are the last ones recorded.
            if let Some(c) = record
                .tool_calls()
                .iter()
                .rev()
                .find(|c| c.id == id && c.turn == turn)
            {
                span.set("agent.tool.batch", c.batch);
            }
        }
    }

    /// A `--verify` round starts: its span, which the command runs in.
    pub(crate) fn verify_span(&self) -> Span {
        if !self.recording() {
            return Span::none();
        }
        let mut span = Span::start("verify", SpanKind::Internal, self.context.as_ref());
        span.set("agent.operation.name", "verify");
        span
    }

    /// The round ended: what the record says of it.
    pub(crate) fn verify_finished(&self, mut span: Span, record: &RunRecord) {
        let Some(v) = record.verifications().last() else {
            return;
        };
        span.set("agent.verify.round", v.round);
        span.set("agent.verify.command", output::redact(&v.command));
        span.set("agent.verify.passed", v.passed);
        if let Some(code) = v.exit_code {
            span.set("process.exit.code", i64::from(code));
        }
        if v.passed {
            span.succeed();
        } else if v.timed_out {
            span.fail("timeout", "the verification command timed out");
        } else {
            span.fail("verify_failed", "the verification command failed");
        }
    }

    /// The run ended (any way out): open spans end with the outcome, the run span gets
    /// the totals, and the run's metrics are recorded.
    pub(crate) fn finish(&self, record: &RunRecord, outcome: &Outcome) {
        if !self.recording() {
            return;
        }
        let error = outcome.error.as_ref().map(|e| {
            let kind = serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| "error".into());
            (kind, e.message.clone())
        });
        if let Some(mut chat) = self.chat.locked().take() {
            // A request the run ended during (or that failed: the run's error is its).
            let (kind, msg) = error
                .clone()
                .unwrap_or_else(|| ("interrupted".into(), "the run ended".into()));
            chat.span.fail(&kind, &msg);
            otel::record(
                &OPERATION_DURATION,
                chat.started.elapsed().as_secs_f64(),
                &[
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.provider.name", self.provider),
                    ("gen_ai.request.model", self.request_model.as_str()),
                    ("error.type", kind.as_str()),
                ],
            );
        }
        for (_, mut running) in self.calls.locked().drain(..) {
            running
                .span
                .fail("interrupted", "the run ended while the call ran");
        }
        self.turn_finished(record);
        let status = outcome.status.as_str();
        let mut run = self.run.locked();
        run.set("agent.run.status", status);
        run.set("agent.run.turns", record.num_turns());
        run.set("agent.run.tool_calls", record.tool_calls().len() as u64);
        if !record.usage().unknown {
            set_usage(&mut run, record.usage());
        }
        if let Some(cost) = record.cost_usd() {
            run.set("agent.run.cost_usd", cost);
        }
        if let Some(cost) = record.cost_usd().filter(|_| !self.subagent) {
            otel::record(
                &COST,
                cost,
                &[("gen_ai.request.model", self.request_model.as_str())],
            );
        }
        match &error {
            Some((kind, msg)) => run.fail(kind, msg),
            None => run.succeed(),
        }
        if !self.subagent {
            otel::record(&RUNS, 1.0, &[("agent.run.status", status)]);
        }
        // Ends the run span now: the flush that follows takes it.
        *run = Span::none();
    }
}

/// `gen_ai.provider.name` of a `--provider`.
pub(crate) fn provider_name(kind: crate::config::cli::ProviderKind) -> &'static str {
    kind.as_str()
}

/// The usage attributes (the transcript's counts: input excludes the cache counts).
fn set_usage(s: &mut Span, u: &Usage) {
    s.set("gen_ai.usage.input_tokens", u.input_tokens);
    s.set("gen_ai.usage.output_tokens", u.output_tokens);
    s.set(
        "gen_ai.usage.cache_read.input_tokens",
        u.cache_read_input_tokens,
    );
    s.set(
        "gen_ai.usage.cache_creation.input_tokens",
        u.cache_creation_input_tokens,
    );
}

/// Content for a span (`--otel-content`): redacted like the transcript, then cut.
fn content(text: &str) -> AttrValue {
    let redacted = output::redact(text);
    AttrValue::from(crate::util::text::counted(
        &redacted,
        CONTENT_CHARS,
        "chars",
    ))
}
