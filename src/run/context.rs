//! The context window: how full each request left it (from the API's `usage`), how big
//! it is (a table per model, `--context-window`, or what an overflow error taught), when
//! an API error or a stop reason means "the conversation no longer fits", and which old
//! tool results to clear so that it fits again. Pure logic; `history.rs` applies a plan
//! and the agent loop decides when to ask for one.
//!
//! Clearing is deterministic and needs no model call: the content of the oldest tool
//! results outside the last few turns is replaced by a short placeholder. Blocks and
//! messages are never removed, so `tool_use`/`tool_result` pairs, thinking blocks and the
//! cache breakpoints (which sit on the newest message) stay valid. Each clearing breaks
//! the prompt cache once, so it clears in large steps: from over `--compact-at` of the
//! window to under half of it.

use std::sync::OnceLock;

use regex::Regex;

use crate::config::cli::ContextStrategy;
use crate::model::protocol::Usage;

/// Default `--compact-at`: clear once a request used more than this share of the window,
/// leaving room for the answer and a few more results before the wall.
pub(crate) const DEFAULT_COMPACT_AT: f64 = 0.8;

/// Clearing goes on until the estimate is under this share of the window: large steps,
/// because every clearing invalidates the prompt cache once.
pub(crate) const CLEAR_TARGET: f64 = 0.5;

/// Tool results of this many most recent turns are never cleared: the model is still
/// working with them.
pub(crate) const KEEP_RECENT_TURNS: usize = 3;

/// Results shorter than this (bytes) are not worth clearing: the placeholder is about as
/// long, and clearing them would break the cache for nothing.
pub(crate) const MIN_CLEARABLE_BYTES: usize = 400;

/// Bytes of request JSON per token when no `usage` has told us the real ratio yet (the
/// usual rule of thumb for English and code is about 4; 3 errs towards clearing more).
pub(crate) const FALLBACK_BYTES_PER_TOKEN: f64 = 3.0;

/// What a cleared tool result says instead of its content.
pub(crate) const PLACEHOLDER: &str = "[This tool result was cleared to save context space. \
     Call the tool again if you still need its output.]";

/// The most a summary may take (output tokens).
const SUMMARY_MAX_TOKENS: u64 = 8192;

/// The least a summary is given, even in a small window.
const SUMMARY_MIN_TOKENS: u64 = 1024;

/// What the summary request sends besides the replaced messages (its system prompt and
/// the closing instruction with the record's facts), in tokens, generously.
pub(crate) const INSTRUCTION_TOKENS: u64 = 1500;

/// The summary request's `max_tokens`: an eighth of the window, between 1024 and 8192.
pub(crate) fn summary_max_tokens(window: Option<u64>) -> u32 {
    let t = window.map_or(SUMMARY_MAX_TOKENS, |w| {
        (w / 8).clamp(SUMMARY_MIN_TOKENS, SUMMARY_MAX_TOKENS)
    });
    u32::try_from(t).unwrap_or(u32::MAX)
}

/// The size over which a summary is asked for before the wall: `--compact-at` of the
/// window, lowered when needed so that the summary request (the history it replaces,
/// its instructions and its answer) still fits in the window.
pub(crate) fn trigger(window: u64, compact_at: f64) -> u64 {
    let at = compact_tokens(window, compact_at);
    let headroom = u64::from(summary_max_tokens(Some(window))) + INSTRUCTION_TOKENS;
    at.min(window.saturating_sub(headroom))
}

/// The stop reason with which the API ends a response that ran into the window.
pub(crate) const WINDOW_EXCEEDED_STOP: &str = "model_context_window_exceeded";

/// `--compact-at` in tokens for a window: a fraction of it, or (over 1) a token count,
/// held between just over the clearing target (half the window: clearing could never get
/// under a lower one) and the window.
pub(crate) fn compact_tokens(window: u64, compact_at: f64) -> u64 {
    if compact_at <= 1.0 {
        return (window as f64 * compact_at).floor() as u64;
    }
    let floor = (window as f64 * CLEAR_TARGET).floor() as u64 + 1;
    (compact_at as u64).clamp(floor.min(window), window)
}

/// Claude models' window (every Claude 3.x and 4.x model), in tokens.
const CLAUDE_WINDOW: u64 = 200_000;

/// The window of the models that take the `context-1m` beta, when it is sent.
const CLAUDE_1M_WINDOW: u64 = 1_000_000;

/// Model id prefixes that accept the `context-1m` beta.
const CLAUDE_1M_MODELS: &[&str] = &["claude-sonnet-4", "claude-opus-4-6"];

/// Windows of well-known models on OpenAI-compatible servers, by id prefix (longest
/// prefix wins). Anything else needs `--context-window` or learns it from an overflow.
const OPENAI_WINDOWS: &[(&str, u64)] = &[
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
];

/// The `anthropic-beta` value that opens the 1M window.
pub(crate) const CONTEXT_1M_BETA: &str = "context-1m-2025-08-07";

/// The smallest token count `--compact-at` takes (a smaller number is a mistake).
const MIN_COMPACT_AT_TOKENS: f64 = 1000.0;

/// `--context-window`, `--compact-at`, `--context-1m` and the compaction flags, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ContextSettings {
    pub window: Option<u64>,
    pub compact_at: f64,
    pub context_1m: bool,
    /// `--context-strategy`.
    pub strategy: ContextStrategy,
    /// `--compact-instructions`, its file already read.
    pub compact_instructions: Option<String>,
    /// `--compact-model`; None: the run's model.
    pub compact_model: Option<String>,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            window: None,
            compact_at: DEFAULT_COMPACT_AT,
            context_1m: false,
            strategy: ContextStrategy::default(),
            compact_instructions: None,
            compact_model: None,
        }
    }
}

impl ContextSettings {
    /// The flags, or a message naming the bad one (exit 2).
    pub(crate) fn from_args(args: &crate::config::cli::ContextArgs) -> Result<Self, String> {
        if args.context_window == Some(0) {
            return Err("--context-window must be a number of tokens above 0".into());
        }
        let compact_at = args.compact_at.unwrap_or(DEFAULT_COMPACT_AT);
        let fraction = compact_at > CLEAR_TARGET && compact_at <= 1.0;
        let tokens = compact_at >= MIN_COMPACT_AT_TOKENS && compact_at.fract() == 0.0;
        if !(compact_at.is_finite() && (fraction || tokens)) {
            return Err(format!(
                "--compact-at must be a fraction of the window above {CLEAR_TARGET} (clearing \
                 goes down to half the window) and at most 1, or a token count of at least \
                 {MIN_COMPACT_AT_TOKENS}, got {compact_at}"
            ));
        }
        if args
            .compact_model
            .as_deref()
            .is_some_and(|m| m.trim().is_empty())
        {
            return Err("--compact-model needs a model name".into());
        }
        Ok(ContextSettings {
            window: args.context_window,
            compact_at,
            context_1m: args.context_1m,
            strategy: args.context_strategy.unwrap_or_default(),
            // `@FILE` is read by the config (`session.rs`), which may do I/O.
            compact_instructions: args.compact_instructions.clone(),
            compact_model: args.compact_model.clone(),
        })
    }
}

/// The table's window for `model`: Claude models by name (1M with the beta where the
/// model takes it), well-known OpenAI models by prefix. None: unknown.
pub(crate) fn table_window(model: &str, context_1m: bool) -> Option<u64> {
    if model.starts_with("claude-") {
        let wide = context_1m && CLAUDE_1M_MODELS.iter().any(|p| model.starts_with(p));
        return Some(if wide {
            CLAUDE_1M_WINDOW
        } else {
            CLAUDE_WINDOW
        });
    }
    OPENAI_WINDOWS
        .iter()
        .filter(|(p, _)| model.starts_with(p))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, w)| *w)
}

/// Where the window size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowSource {
    Flag,
    Table,
    /// An overflow error named the limit.
    Learned,
}

/// What the API said when a request did not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Overflow {
    /// The request's size, when the message names it.
    pub tokens: Option<u64>,
    /// The window, when the message names it.
    pub limit: Option<u64>,
}

fn numbers(re: &'static OnceLock<Regex>, pattern: &str, text: &str) -> Option<u64> {
    #[expect(
        clippy::expect_used,
        reason = "the patterns are constants, checked by the tests"
    )]
    let re = re.get_or_init(|| Regex::new(pattern).expect("a valid constant pattern"));
    re.captures(text)?.get(1)?.as_str().parse().ok()
}

/// Whether an HTTP error says the prompt is too long for the window, and the numbers it
/// gives. Anthropic: 400 `prompt is too long: 208310 tokens > 200000 maximum`; OpenAI
/// and vLLM: `context_length_exceeded` / `This model's maximum context length is 8192
/// tokens. However, your messages resulted in 9000 tokens`; llama.cpp:
/// `exceed_context_size_error`. Other 400s (and other statuses) are not overflows.
pub(crate) fn overflow_of(status: u16, error_type: &str, message: &str) -> Option<Overflow> {
    if !matches!(status, 400 | 413) {
        return None;
    }
    let lower = message.to_ascii_lowercase();
    let is = error_type == "context_length_exceeded"
        || error_type == "exceed_context_size_error"
        || lower.contains("prompt is too long")
        || lower.contains("context_length_exceeded")
        || lower.contains("maximum context length")
        || lower.contains("exceeds the available context size")
        || lower.contains("context window");
    if !is {
        return None;
    }
    static ANTHROPIC: OnceLock<Regex> = OnceLock::new();
    static ANTHROPIC_LIMIT: OnceLock<Regex> = OnceLock::new();
    static OPENAI_LIMIT: OnceLock<Regex> = OnceLock::new();
    static OPENAI_TOKENS: OnceLock<Regex> = OnceLock::new();
    let tokens = numbers(&ANTHROPIC, r"(\d+) tokens >", &lower).or_else(|| {
        numbers(
            &OPENAI_TOKENS,
            r"(?:resulted in|requested|request has) (\d+) tokens",
            &lower,
        )
    });
    let limit = numbers(&ANTHROPIC_LIMIT, r"> (\d+) maximum", &lower).or_else(|| {
        numbers(
            &OPENAI_LIMIT,
            r"(?:maximum context length is|context size is|context size \() ?(\d+)",
            &lower,
        )
    });
    Some(Overflow { tokens, limit })
}

/// The run's view of its window: its size and how full the last request left it.
#[derive(Debug, Clone)]
pub(crate) struct ContextWindow {
    window: Option<(u64, WindowSource)>,
    compact_at: f64,
    /// The last request's input size (from usage).
    last_tokens: Option<u64>,
    /// Request JSON bytes per token, measured on the last request that reported usage.
    bytes_per_token: Option<f64>,
    /// A summary may be asked for: the threshold keeps headroom for its request.
    summarizes: bool,
}

impl ContextWindow {
    /// The run's window: `--context-window`, else the table's entry for the model.
    pub(crate) fn for_run(model: &str, settings: &ContextSettings) -> Self {
        let mut w = ContextWindow::new(
            model,
            settings.window,
            settings.context_1m,
            settings.compact_at,
        );
        w.summarizes = settings.strategy != ContextStrategy::Fail;
        w
    }

    /// `flag` is `--context-window`; without it, the table's entry for the model.
    pub(crate) fn new(model: &str, flag: Option<u64>, context_1m: bool, compact_at: f64) -> Self {
        let window = match flag {
            Some(n) => Some((n, WindowSource::Flag)),
            None => table_window(model, context_1m).map(|w| (w, WindowSource::Table)),
        };
        ContextWindow {
            window,
            compact_at,
            last_tokens: None,
            bytes_per_token: None,
            summarizes: false,
        }
    }

    pub(crate) fn window(&self) -> Option<u64> {
        self.window.map(|(w, _)| w)
    }

    #[cfg(test)]
    pub(crate) fn source(&self) -> Option<WindowSource> {
        self.window.map(|(_, s)| s)
    }

    pub(crate) fn last_tokens(&self) -> Option<u64> {
        self.last_tokens
    }

    /// Notes a request's usage; `request_bytes` is the size of what was sent for it
    /// (history, system prompt and tools), which calibrates later estimates.
    pub(crate) fn observe(&mut self, usage: &Usage, request_bytes: usize) {
        let tokens = usage.input_total();
        if tokens == 0 {
            return; // the server reported no usage: keep what we knew
        }
        self.last_tokens = Some(tokens);
        if request_bytes > 0 {
            self.bytes_per_token = Some(request_bytes as f64 / tokens as f64);
        }
    }

    /// An overflow error taught the window: it holds for the rest of the run, unless
    /// the user set it. Returns the size learned, if any.
    pub(crate) fn learn(&mut self, overflow: &Overflow) -> Option<u64> {
        if matches!(self.window, Some((_, WindowSource::Flag))) {
            return None;
        }
        let limit = overflow.limit?;
        self.window = Some((limit, WindowSource::Learned));
        Some(limit)
    }

    pub(crate) fn bytes_per_token(&self) -> f64 {
        self.bytes_per_token.unwrap_or(FALLBACK_BYTES_PER_TOKEN)
    }

    /// Tokens of `bytes` of request JSON, at the measured ratio.
    pub(crate) fn tokens_of(&self, bytes: usize) -> u64 {
        (bytes as f64 / self.bytes_per_token()).ceil() as u64
    }

    /// The size of the next request: the last request's usage, or, before any usage
    /// (a `--resume`d history), an estimate from the bytes about to be sent.
    pub(crate) fn next_tokens(&self, request_bytes: usize) -> u64 {
        self.last_tokens
            .unwrap_or_else(|| self.tokens_of(request_bytes))
    }

    /// Whether `tokens` is more than the threshold.
    pub(crate) fn over_threshold(&self, tokens: u64) -> bool {
        self.threshold().is_some_and(|t| tokens > t)
    }

    /// `--compact-at` of the window, lowered (in a small window) to leave room for a
    /// summary request when the strategy may ask for one (`compaction::trigger`).
    pub(crate) fn threshold(&self) -> Option<u64> {
        self.window().map(|w| match self.summarizes {
            true => trigger(w, self.compact_at),
            false => compact_tokens(w, self.compact_at),
        })
    }

    /// The history was compacted: until the next request reports its usage, its size
    /// is this estimate.
    pub(crate) fn assume(&mut self, tokens: u64) {
        self.last_tokens = Some(tokens);
    }

    /// The size the history must get under when clearing before the wall.
    pub(crate) fn clear_target(&self) -> Option<u64> {
        self.window()
            .map(|w| (w as f64 * CLEAR_TARGET).floor() as u64)
    }
}

/// A tool result the clearing may consider, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResultSlot {
    /// Index of the message in the history.
    pub message: usize,
    /// Index of the block in the message.
    pub block: usize,
    /// Length of its content (bytes).
    pub bytes: usize,
}

/// What to clear, and what the request should weigh after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClearPlan {
    pub slots: Vec<ResultSlot>,
    pub tokens_after_estimate: u64,
}

/// The oldest `candidates` (already outside the recent turns, not yet cleared, big
/// enough) to clear until the estimate of `tokens_now` falls to `target` or below.
/// Returns None when nothing can be cleared. The plan may fall short of the target when
/// the candidates run out; the caller decides whether that is enough.
pub(crate) fn plan_clearing(
    candidates: &[ResultSlot],
    tokens_now: u64,
    target: u64,
    ctx: &ContextWindow,
) -> Option<ClearPlan> {
    let placeholder = ctx.tokens_of(PLACEHOLDER.len());
    let mut estimate = tokens_now;
    let mut slots = Vec::new();
    for slot in candidates {
        if estimate <= target {
            break;
        }
        let saved = ctx.tokens_of(slot.bytes).saturating_sub(placeholder);
        estimate = estimate.saturating_sub(saved);
        slots.push(*slot);
    }
    (!slots.is_empty()).then_some(ClearPlan {
        slots,
        tokens_after_estimate: estimate,
    })
}

/// The line a clearing prints: `turn 5: cleared 2 old tool results to save context
/// (180000 → about 90000 tokens of a 200000-token window)`.
pub(crate) fn cleared_note(c: &Clearing, window: Option<u64>) -> String {
    format!(
        "turn {}: cleared {} old tool results to save context ({} → about {} tokens{})",
        c.turn,
        c.results_cleared,
        c.tokens_before,
        c.tokens_after_estimate,
        window
            .map(|w| format!(" of a {w}-token window"))
            .unwrap_or_default()
    )
}

/// The warning when an overflow error taught the window.
pub(crate) fn learned_window_note(limit: u64) -> String {
    format!(
        "the model's context window is {limit} tokens (from the API's error); \
         --context-window sets it from the start"
    )
}

/// `context_exceeded` after the one clearing and retry. `sizes` is ` (N tokens > W)` or
/// empty; `what` is what the API said.
pub(crate) fn still_exceeded(sizes: &str, what: &str) -> String {
    format!(
        "the conversation still does not fit in the model's context window after \
         clearing old tool results{sizes}: {what}"
    )
}

/// `context_exceeded` after a summary, when the compacted history overflows too.
pub(crate) fn still_exceeded_after_summary(sizes: &str, what: &str) -> String {
    format!(
        "the conversation still does not fit in the model's context window after \
         summarising it{sizes}: {what}"
    )
}

/// `context_exceeded` at the wall with `--context-strategy fail`.
pub(crate) fn neither_tried(sizes: &str, what: &str) -> String {
    format!(
        "the conversation does not fit in the model's context window{sizes}, and \
         --context-strategy fail neither clears nor summarises it: {what}"
    )
}

/// `context_exceeded` when nothing is left to clear.
pub(crate) fn nothing_to_clear(sizes: &str, what: &str) -> String {
    format!(
        "the conversation does not fit in the model's context window{sizes}, and no \
         old tool result is left to clear (a single message may be too large): {what}"
    )
}

/// One clearing, as the transcript and the `context.cleared` event record it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct Clearing {
    /// The turn whose request is the first to carry the cleared history.
    pub turn: u32,
    pub results_cleared: usize,
    pub tokens_before: u64,
    pub tokens_after_estimate: u64,
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
