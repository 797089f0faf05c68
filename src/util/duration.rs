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
#[path = "duration_tests.rs"]
mod tests;
