//! Durations in messages, for people: rounded to their two largest units (`2s`, `1s 500ms`,
//! `1m 30s`, `1h 5m`), in humantime's syntax so a value can be pasted back into a flag.

use std::time::Duration;

const MS_PER_S: u128 = 1_000;
const S_PER_M: u128 = 60;
const S_PER_H: u128 = 3_600;
/// Below this, tenths of a second still matter (`1s 500ms`); above, whole seconds do.
const TENTHS_BELOW_S: u128 = 10;

/// `d` rounded for a message: under a second, whole milliseconds (a non-zero one at least
/// `1ms`); under 10 s, tenths; under a minute, seconds; under an hour, minutes and
/// seconds; then hours and minutes.
pub(crate) fn human(d: Duration) -> String {
    let ns = d.as_nanos();
    let ms = (ns + 500_000) / 1_000_000;
    if ms < MS_PER_S {
        return format!("{}ms", if ns > 0 { ms.max(1) } else { 0 });
    }
    if ms < TENTHS_BELOW_S * MS_PER_S {
        let tenths = (ms + 50) / 100;
        let (s, rest) = (tenths / 10, tenths % 10);
        return if rest == 0 {
            format!("{s}s")
        } else {
            format!("{s}s {}ms", rest * 100)
        };
    }
    let s = (ms + 500) / MS_PER_S;
    if s < S_PER_M {
        return format!("{s}s");
    }
    if s < S_PER_H {
        return join(s / S_PER_M, "m", s % S_PER_M, "s");
    }
    let m = (s + S_PER_M / 2) / S_PER_M;
    join(m / S_PER_M, "h", m % S_PER_M, "m")
}

/// `"2m"`, or `"2m 5s"`: a zero second part is left out.
fn join(big: u128, big_unit: &str, small: u128, small_unit: &str) -> String {
    if small == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit} {small}{small_unit}")
    }
}

#[cfg(test)]
mod tests {
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
}
