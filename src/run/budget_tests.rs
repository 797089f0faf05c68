//! Unit tests of `budget.rs`.

use super::*;
use crate::config::settings::{PROJECT_SETTINGS, SettingsSources};
use std::path::{Path, PathBuf};

/// The prices of the workspace's settings and `files`, read as a run reads them.
fn load(workspace: &Path, files: &[PathBuf], no_project: bool) -> Result<Prices, Error> {
    load_prices(&SettingsFiles::read(&SettingsSources {
        workspace,
        files,
        no_project_settings: no_project,
    })?)
}

fn usage(i: u64, o: u64, cw: u64, cr: u64) -> Usage {
    Usage {
        input_tokens: i,
        output_tokens: o,
        cache_creation_input_tokens: cw,
        cache_read_input_tokens: cr,
        reasoning_output_tokens: 0,
        unknown: false,
    }
}

#[test]
fn builtin_prices_match_by_longest_prefix() {
    let p = Prices::default();
    assert_eq!(p.lookup("claude-sonnet-4-5-20250929").unwrap().input, 3.0);
    assert_eq!(p.lookup("claude-sonnet-4-5").unwrap().output, 15.0);
    assert_eq!(p.lookup("claude-opus-4-1-20250805").unwrap().input, 15.0);
    assert_eq!(p.lookup("claude-opus-4-20250514").unwrap().input, 15.0);
    assert_eq!(p.lookup("claude-opus-4-5-20251101").unwrap().input, 5.0);
    assert_eq!(p.lookup("claude-haiku-4-5").unwrap().output, 5.0);
    assert_eq!(p.lookup("claude-3-5-haiku-latest").unwrap().input, 0.8);
    assert_eq!(
        p.lookup("us.anthropic.claude-sonnet-4-20250514-v1:0")
            .unwrap()
            .input,
        3.0
    );
    assert_eq!(p.lookup("claude-mock-1"), None);
    assert_eq!(p.lookup("gpt-4o"), None);
}

#[test]
fn cost_sums_the_four_token_kinds() {
    let p = Prices::default();
    // Sonnet: 3 in, 15 out, 3.75 cache write, 0.30 cache read per MTok.
    let c = p
        .cost(
            "claude-sonnet-4-5",
            &usage(1_000_000, 100_000, 200_000, 1_000_000),
        )
        .unwrap();
    assert!((c - (3.0 + 1.5 + 0.75 + 0.3)).abs() < 1e-9, "{c}");
    assert_eq!(p.cost("unknown-model", &usage(1, 1, 1, 1)), None);
}

#[test]
fn settings_override_and_extend_the_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".agent")).unwrap();
    std::fs::write(
        dir.path().join(PROJECT_SETTINGS),
        r#"{"prices": {"claude-mock": {"input": 10, "output": 20}},
                "permissions": {"allow": []}}"#,
    )
    .unwrap();
    let extra = dir.path().join("extra.json");
    std::fs::write(
        &extra,
        r#"{"prices": {"claude-sonnet-4": {"input": 1, "output": 2, "cache_read": 0}}}"#,
    )
    .unwrap();
    let p = load(dir.path(), &[extra], false).unwrap();
    let mock = p.lookup("claude-mock-1").unwrap();
    assert_eq!(
        (mock.input, mock.cache_write, mock.cache_read),
        (10.0, 12.5, 1.0)
    );
    let s = p.lookup("claude-sonnet-4-5").unwrap();
    assert_eq!((s.input, s.output, s.cache_read), (1.0, 2.0, 0.0));
    // --no-project-settings ignores the workspace's file.
    let p = load(dir.path(), &[], true).unwrap();
    assert_eq!(p.lookup("claude-mock-1"), None);
}

#[test]
fn bad_settings_are_usage_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.json");
    for (text, needle) in [
        ("{", "invalid JSON"),
        (r#"{"prices": []}"#, "must be an object"),
        (r#"{"prices": {"m": {"input": 1}}}"#, "prices.m"),
        (
            r#"{"prices": {"m": {"input": -1, "output": 1}}}"#,
            "not negative",
        ),
        (
            r#"{"prices": {"m": {"input": 1, "output": 1, "x": 1}}}"#,
            "unknown field",
        ),
    ] {
        std::fs::write(&f, text).unwrap();
        let e = load(dir.path(), std::slice::from_ref(&f), false).unwrap_err();
        assert!(e.to_string().contains(needle), "{text}: {e}");
        assert!(e.to_string().contains("s.json"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
    let e = load(dir.path(), &[dir.path().join("none.json")], false).unwrap_err();
    assert!(e.to_string().contains("none.json"), "{e}");
    // No project file and no --settings: the built-in table.
    assert_eq!(load(dir.path(), &[], false).unwrap(), Prices::default());
}

#[test]
fn budget_checks() {
    let b = Budget {
        max_tool_calls: Some(3),
        max_cost_usd: Some(0.5),
    };
    assert_eq!(b.exceeded(2, Some(0.1)), None);
    assert!(b.exceeded(3, None).unwrap().contains("--max-tool-calls 3"));
    assert!(b.exceeded(0, Some(0.5)).unwrap().contains("--max-cost-usd"));
    assert_eq!(Budget::default().exceeded(1000, Some(1e9)), None);
}

#[test]
fn parallel_reservations_never_add_up_past_the_cost_limit() {
    let price = price(3.0, 15.0);
    let next = Reservation::new(price, 400, 1000);
    assert_eq!(next.cost_usd, 0.0162);
    let limits = Limits {
        max_turns: 100,
        budget: Budget {
            max_tool_calls: None,
            max_cost_usd: Some(0.0045 + 2.0 * 0.0162 + 0.001),
        },
    };
    let run = Spent {
        cost_usd: 0.0045,
        turns: 1,
        tool_calls: 0,
    };
    let pool = Pool::default();
    assert!(pool.reserve("a", limits, run, 0.0, Some(next)).is_ok());
    assert!(pool.reserve("b", limits, run, 0.0, Some(next)).is_ok());
    let why = pool.reserve("c", limits, run, 0.0, Some(next)).unwrap_err();
    assert!(
        why.contains("reserves $0.0162") && why.contains("max_tokens 1000"),
        "{why}"
    );
    assert_eq!(pool.refused().as_deref(), Some(why.as_str()));
    // `a`'s request is done (it cost 0.0135): its next one no longer fits beside `b`'s.
    assert!(pool.reserve("a", limits, run, 0.0135, Some(next)).is_err());
    // Once `b` ended (its cost joined the run's), `a` is judged against the run alone.
    pool.release("b");
    let run = Spent {
        cost_usd: 0.0045 + 0.0135,
        ..run
    };
    assert!(pool.reserve("a", limits, run, 0.0135, Some(next)).is_err());
    assert!(pool.reserve("a", limits, run, 0.0, Some(next)).is_ok());
}

#[test]
fn turns_in_flight_count_against_max_turns() {
    let limits = Limits {
        max_turns: 3,
        budget: Budget::default(),
    };
    let run = Spent {
        cost_usd: 0.0,
        turns: 1,
        tool_calls: 0,
    };
    let pool = Pool::default();
    assert!(pool.reserve("a", limits, run, 0.0, None).is_ok());
    assert!(pool.reserve("b", limits, run, 0.0, None).is_ok());
    let why = pool.reserve("c", limits, run, 0.0, None).unwrap_err();
    assert!(why.contains("--max-turns 3"), "{why}");
}
