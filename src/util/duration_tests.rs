//! Unit tests of `duration.rs`.

use super::human;
use std::time::Duration;

#[test]
fn durations_are_rounded_to_two_units() {
    let cases = [
        (Duration::ZERO, "0ms"),
        (Duration::from_nanos(1), "1ms"),
        (Duration::from_micros(250_400), "250ms"),
        (Duration::from_micros(999_600), "1s"),
        (Duration::new(1, 997_832_541), "2s"),
        (Duration::from_millis(1500), "1s 500ms"),
        (Duration::from_millis(9_960), "10s"),
        (Duration::from_millis(12_345), "12s"),
        (Duration::from_millis(59_600), "1m"),
        (Duration::from_secs(90), "1m 30s"),
        (Duration::from_secs(3_599), "59m 59s"),
        (Duration::from_secs(3_600), "1h"),
        (Duration::from_secs(3_605), "1h"),
        (Duration::from_secs(5_430), "1h 31m"),
        (Duration::from_secs(90_000), "25h"),
    ];
    for (d, want) in cases {
        assert_eq!(human(d), want, "{d:?}");
    }
}

/// What is shown reads back (humantime's syntax) as the rounded value.
#[test]
fn a_shown_duration_parses_back() {
    for ms in [1, 300, 1_500, 45_000, 90_000, 5_430_000] {
        let shown = human(Duration::from_millis(ms));
        assert!(humantime::parse_duration(&shown).is_ok(), "{shown}");
    }
}
