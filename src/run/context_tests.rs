use super::*;

fn usage(input: u64, read: u64, created: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: 7,
        cache_read_input_tokens: read,
        cache_creation_input_tokens: created,
        reasoning_output_tokens: 0,
        unknown: false,
    }
}

#[test]
fn input_size_counts_fresh_cached_and_cache_written_tokens() {
    let mut c = ContextWindow::new("m", Some(10_000), false, 0.8);
    c.observe(&usage(10, 1000, 200), 100);
    assert_eq!(c.last_tokens(), Some(1210));
}

#[test]
fn table_windows() {
    assert_eq!(
        table_window("claude-sonnet-4-5-20250929", false),
        Some(200_000)
    );
    assert_eq!(
        table_window("claude-sonnet-4-5-20250929", true),
        Some(1_000_000)
    );
    assert_eq!(table_window("claude-opus-4-1", true), Some(200_000));
    assert_eq!(table_window("claude-haiku-4-5", false), Some(200_000));
    assert_eq!(table_window("gpt-4o-mini", false), Some(128_000));
    assert_eq!(table_window("gpt-4.1-mini", false), Some(1_047_576));
    assert_eq!(table_window("llama3.1:8b", false), None);
}

#[test]
fn the_flag_beats_the_table_and_is_never_unlearned() {
    let mut c = ContextWindow::new("claude-sonnet-4-5", Some(50_000), false, 0.8);
    assert_eq!(c.window(), Some(50_000));
    assert_eq!(c.source(), Some(WindowSource::Flag));
    let o = Overflow {
        tokens: Some(9000),
        limit: Some(8192),
    };
    assert_eq!(c.learn(&o), None);
    assert_eq!(c.window(), Some(50_000));

    let mut u = ContextWindow::new("local-model", None, false, 0.8);
    assert_eq!(u.window(), None);
    assert_eq!(u.learn(&o), Some(8192));
    assert_eq!(u.window(), Some(8192));
    assert_eq!(u.source(), Some(WindowSource::Learned));
    assert_eq!(
        u.learn(&Overflow::default()),
        None,
        "no number, nothing learned"
    );
}

#[test]
fn threshold_is_on_the_last_request_and_exclusive() {
    let mut c = ContextWindow::new("m", Some(1000), false, 0.8);
    // Before any usage: the bytes about to be sent, at 3 bytes per token.
    assert_eq!(c.next_tokens(2400), 800);
    assert!(
        !c.over_threshold(c.next_tokens(2400)),
        "exactly 80% is not over"
    );
    assert!(c.over_threshold(c.next_tokens(2403)));
    c.observe(&usage(800, 0, 0), 3200);
    assert!(!c.over_threshold(c.next_tokens(99_999)), "usage wins");
    c.observe(&usage(1, 800, 0), 3200);
    assert!(c.over_threshold(c.next_tokens(0)));
    assert_eq!(c.last_tokens(), Some(801));
    // A server that reports no usage leaves the last figures alone.
    c.observe(&Usage::default(), 9999);
    assert_eq!(c.last_tokens(), Some(801));
    assert_eq!(c.clear_target(), Some(500));
    let unknown = ContextWindow::new("local-model", None, false, 0.8);
    assert!(!unknown.over_threshold(u64::MAX), "no window, no threshold");
}

#[test]
fn the_byte_ratio_comes_from_the_last_request() {
    let mut c = ContextWindow::new("m", Some(1000), false, 0.8);
    assert_eq!(c.tokens_of(300), 100, "fallback 3 bytes per token");
    c.observe(&usage(100, 0, 0), 500);
    assert_eq!(c.tokens_of(500), 100);
    assert_eq!(c.tokens_of(501), 101, "rounded up");
}

#[test]
fn anthropic_prompt_too_long_is_an_overflow_with_both_numbers() {
    let o = overflow_of(
        400,
        "invalid_request_error",
        "prompt is too long: 208310 tokens > 200000 maximum",
    );
    assert_eq!(
        o,
        Some(Overflow {
            tokens: Some(208_310),
            limit: Some(200_000)
        })
    );
}

#[test]
fn openai_style_overflows() {
    let o = overflow_of(
        400,
        "invalid_request_error",
        "This model's maximum context length is 8192 tokens. However, your messages resulted \
         in 9000 tokens. Please reduce the length of the messages. (code context_length_exceeded)",
    )
    .unwrap();
    assert_eq!(o.limit, Some(8192));
    assert_eq!(o.tokens, Some(9000));
    let vllm = overflow_of(
        400,
        "BadRequestError",
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens \
         (4000 in the messages, 1000 in the completion).",
    )
    .unwrap();
    assert_eq!((vllm.limit, vllm.tokens), (Some(4096), Some(5000)));
    let bare = overflow_of(400, "context_length_exceeded", "too long").unwrap();
    assert_eq!(bare, Overflow::default());
    assert!(
        overflow_of(
            400,
            "exceed_context_size_error",
            "the request exceeds the available context size"
        )
        .is_some()
    );
}

#[test]
fn other_errors_are_not_overflows() {
    assert_eq!(
        overflow_of(
            400,
            "invalid_request_error",
            "messages: roles must alternate"
        ),
        None
    );
    assert_eq!(
        overflow_of(500, "api_error", "prompt is too long: 1 tokens > 0 maximum"),
        None,
        "only a refused request is an overflow"
    );
    assert_eq!(
        overflow_of(429, "rate_limit_error", "tokens per minute"),
        None
    );
}

fn slot(message: usize, bytes: usize) -> ResultSlot {
    ResultSlot {
        message,
        block: 0,
        bytes,
    }
}

#[test]
fn a_plan_clears_the_oldest_until_the_target() {
    let mut c = ContextWindow::new("m", Some(10_000), false, 0.8);
    c.observe(&usage(9000, 0, 0), 36_000); // 4 bytes per token
    let candidates = [slot(2, 8000), slot(4, 8000), slot(6, 8000), slot(8, 8000)];
    let placeholder = c.tokens_of(PLACEHOLDER.len());
    let plan = plan_clearing(&candidates, 9000, 5000, &c).unwrap();
    // Each clears 2000 tokens minus the placeholder: two leave 9000 just over 5000.
    assert_eq!(plan.slots, candidates[..3].to_vec());
    assert_eq!(plan.tokens_after_estimate, 9000 - 3 * (2000 - placeholder));
    assert!(plan.tokens_after_estimate <= 5000);
}

#[test]
fn a_plan_may_fall_short_and_nothing_to_clear_is_none() {
    let c = ContextWindow::new("m", Some(10_000), false, 0.8);
    let plan = plan_clearing(&[slot(2, 3000)], 9000, 5000, &c).unwrap();
    assert_eq!(plan.slots.len(), 1);
    assert!(plan.tokens_after_estimate > 5000);
    assert_eq!(plan_clearing(&[], 9000, 5000, &c), None);
    assert_eq!(
        plan_clearing(&[slot(2, 3000)], 4000, 5000, &c),
        None,
        "already under the target"
    );
}

// The exact texts: a lost `\` continuation once put runs of spaces inside them.

#[test]
fn the_clearing_note_reads_as_one_sentence() {
    let c = Clearing {
        turn: 5,
        results_cleared: 2,
        tokens_before: 180_000,
        tokens_after_estimate: 90_000,
    };
    assert_eq!(
        cleared_note(&c, Some(200_000)),
        "turn 5: cleared 2 old tool results to save context \
         (180000 → about 90000 tokens of a 200000-token window)"
    );
    assert_eq!(
        cleared_note(&c, None),
        "turn 5: cleared 2 old tool results to save context (180000 → about 90000 tokens)"
    );
}

#[test]
fn the_learned_window_note_reads_as_one_sentence() {
    assert_eq!(
        learned_window_note(8192),
        "the model's context window is 8192 tokens (from the API's error); \
         --context-window sets it from the start"
    );
}

#[test]
fn the_context_exceeded_messages_read_as_one_sentence() {
    assert_eq!(
        still_exceeded(" (205000 tokens > 200000)", "prompt is too long"),
        "the conversation still does not fit in the model's context window after clearing \
         old tool results (205000 tokens > 200000): prompt is too long"
    );
    assert_eq!(
        nothing_to_clear("", "too long"),
        "the conversation does not fit in the model's context window, and no old tool \
         result is left to clear (a single message may be too large): too long"
    );
}

#[test]
fn a_bad_compact_at_is_named_in_one_sentence() {
    let args = crate::config::cli::ContextArgs {
        context_window: None,
        compact_at: Some(0.3),
        ..Default::default()
    };
    assert_eq!(
        ContextSettings::from_args(&args).err().as_deref(),
        Some(
            "--compact-at must be a fraction of the window above 0.5 (clearing goes down \
             to half the window) and at most 1, or a token count of at least 1000, got 0.3"
        )
    );
    for bad in [1.5, 999.0, 12_000.5, f64::INFINITY] {
        let args = crate::config::cli::ContextArgs {
            compact_at: Some(bad),
            ..Default::default()
        };
        assert!(ContextSettings::from_args(&args).is_err(), "{bad}");
    }
}

#[test]
fn compact_at_takes_a_token_count_held_between_half_the_window_and_the_window() {
    use crate::run::context::compact_tokens;
    let args = crate::config::cli::ContextArgs {
        compact_at: Some(150_000.0),
        ..Default::default()
    };
    assert_eq!(
        ContextSettings::from_args(&args).unwrap().compact_at,
        150_000.0
    );
    assert_eq!(compact_tokens(200_000, 150_000.0), 150_000);
    assert_eq!(compact_tokens(200_000, 0.8), 160_000);
    assert_eq!(
        compact_tokens(100_000, 150_000.0),
        100_000,
        "never over the window"
    );
    assert_eq!(
        compact_tokens(200_000, 50_000.0),
        100_001,
        "never at or under the clearing target"
    );
    let w = ContextWindow::new("m", Some(200_000), false, 150_000.0);
    assert_eq!(w.threshold(), Some(150_000));
}

#[test]
fn the_threshold_keeps_headroom_for_a_summary_in_a_small_window() {
    use crate::run::context::{summary_max_tokens, trigger};
    assert_eq!(summary_max_tokens(Some(20_000)), 2_500);
    assert_eq!(summary_max_tokens(Some(4_000)), 1_024);
    assert_eq!(summary_max_tokens(Some(1_000_000)), 8_192);
    assert_eq!(summary_max_tokens(None), 8_192);
    // --compact-at rules where the window is large enough …
    assert_eq!(trigger(200_000, 0.8), 160_000);
    assert_eq!(trigger(20_000, 0.8), 16_000);
    // … and the summary request's room where it is not.
    assert_eq!(trigger(20_000, 0.95), 20_000 - 2_500 - 1_500);
    assert_eq!(trigger(8_000, 0.8), 8_000 - 1_024 - 1_500);
}
