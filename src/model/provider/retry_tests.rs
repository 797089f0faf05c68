//! Unit tests of `retry.rs`.

use super::*;

#[test]
fn backoff_doubles_caps_and_jitters_down_by_at_most_a_quarter() {
    let base = Duration::from_millis(500);
    for (retry, full) in [
        (1, 500),
        (2, 1_000),
        (3, 2_000),
        (4, 4_000),
        (7, 30_000),
        (40, 30_000),
    ] {
        let d = backoff(base, retry);
        let full = Duration::from_millis(full);
        assert!(d <= full && d >= full.mul_f64(0.75), "retry {retry}: {d:?}");
    }
    let f = jitter_fraction();
    assert!((0.0..1.0).contains(&f));
}

#[test]
fn retry_after_parsing() {
    let now = UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 07:27:50 GMT
    let mut h = ureq::http::HeaderMap::new();
    assert_eq!(retry_after(&h, now), None);
    h.insert("retry-after", "2.5".parse().unwrap());
    assert_eq!(retry_after(&h, now), Some(Duration::from_millis(2_500)));
    h.insert(
        "retry-after",
        "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
    );
    assert_eq!(retry_after(&h, now), Some(Duration::from_secs(10)));
    assert_eq!(
        retry_after(&h, now + Duration::from_secs(60)),
        Some(Duration::ZERO),
        "a date in the past: retry now"
    );
    for bad in [
        "Wed, 21 Oct 2015 07:28:00 CET",
        "Wed, 21 Foo 2015 07:28:00 GMT",
        "soon",
    ] {
        h.insert("retry-after", bad.parse().unwrap());
        assert_eq!(retry_after(&h, now), None, "{bad}");
    }
    h.insert("retry-after", "-3".parse().unwrap());
    assert_eq!(retry_after(&h, now), None);
    h.insert("retry-after-ms", "250".parse().unwrap());
    assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
    h.insert("retry-after-ms", "12.5".parse().unwrap());
    assert_eq!(retry_after(&h, now), Some(Duration::from_micros(12_500)));
}

#[test]
fn http_dates_of_the_rfc_and_a_leap_day() {
    let at = |s: &str| http_date(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs());
    assert_eq!(at("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
    assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(at("Thu, 29 Feb 2024 12:00:00 GMT"), Some(1_709_208_000));
    assert_eq!(at("Sunday, 06-Nov-94 08:49:37 GMT"), None, "RFC 850 form");
}

fn failing(retryable: bool, retry_after: Option<Duration>) -> AttemptError {
    AttemptError {
        error: ProviderError {
            kind: ProviderErrorKind::Transport,
            message: "boom with sk-secret-123456".into(),
        },
        retryable,
        retry_after,
    }
}

const POLICY: RetryPolicy = RetryPolicy {
    max_retries: 2,
    backoff_base: Duration::from_millis(1),
};

#[test]
fn with_retries_gives_up_after_max_retries_and_redacts() {
    let mut attempts = 0;
    let mut notices = Vec::new();
    let err = with_retries(
        POLICY,
        &["sk-secret-123456".to_string()],
        &mut |n| notices.push(format!("{n:?}")),
        &mut |_| {
            attempts += 1;
            Err(failing(true, Some(Duration::from_millis(2))))
        },
    )
    .unwrap_err();
    assert_eq!(attempts, 3);
    assert_eq!(
        err.message,
        "boom with [REDACTED] (gave up after 2 retries)"
    );
    assert_eq!(notices.len(), 2);
    assert!(notices[0].contains("delay: 2ms"), "{}", notices[0]);
    assert!(!notices[0].contains("sk-secret"), "{}", notices[0]);
}

#[test]
fn overloads_are_told_from_other_failures() {
    let http = |status: u16, error_type: &str, message: &str| ProviderError {
        kind: ProviderErrorKind::Http {
            status,
            error_type: error_type.into(),
        },
        message: message.into(),
    };
    let stream = |error_type: &str| ProviderError {
        kind: ProviderErrorKind::StreamError {
            error_type: error_type.into(),
        },
        message: "stream error".into(),
    };
    for overload in [
        http(
            529,
            "overloaded_error",
            "HTTP 529 overloaded_error: Overloaded",
        ),
        http(529, "", "HTTP 529"),
        http(500, "overloaded_error", "a gateway passing the type on"),
        http(503, "", "HTTP 503: The engine is currently Overloaded"),
        stream("overloaded_error"),
    ] {
        assert!(is_overload(&overload), "{overload:?}");
    }
    for other in [
        http(500, "api_error", "Internal server error"),
        http(503, "", "HTTP 503: Service Unavailable"),
        http(429, "rate_limit_error", "slow down"),
        http(400, "invalid_request_error", "bad"),
        stream("api_error"),
        failing(true, None).error,
    ] {
        assert!(!is_overload(&other), "{other:?}");
    }
}

#[test]
fn with_retries_stops_at_a_permanent_failure() {
    let mut attempts = 0;
    let err = with_retries(POLICY, &[], &mut |_| {}, &mut |_| {
        attempts += 1;
        Err(failing(false, None))
    })
    .unwrap_err();
    assert_eq!(attempts, 1);
    assert!(!err.message.contains("gave up"));
}
