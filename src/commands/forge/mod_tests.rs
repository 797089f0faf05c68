//! Unit tests of `mod.rs`: the forge clients' shared retry loop.

use super::*;

fn policy(max_retries: u32) -> RetryPolicy<'static> {
    RetryPolicy {
        label: "GitLab API",
        max_retries,
        backoff_base: Duration::ZERO,
        token: "glpat-secret",
    }
}

fn failing(status: u16, retry: Option<Option<Duration>>) -> Failure {
    Failure {
        status: Some(status),
        message: format!("HTTP {status}: token glpat-secret refused"),
        retry,
    }
}

#[test]
fn a_retryable_failure_is_retried_until_the_attempt_succeeds() {
    let mut calls = 0;
    let got = call_with_retries(&policy(3), "GET /projects/7", || {
        calls += 1;
        if calls < 3 {
            Err(failing(502, Some(Some(Duration::ZERO))))
        } else {
            Ok(calls)
        }
    });
    assert_eq!(got, Ok(3));
}

#[test]
fn the_budget_spent_names_the_call_the_retries_and_never_the_token() {
    let mut calls = 0;
    let err = call_with_retries(&policy(2), "POST /projects/7/notes", || -> Result<(), _> {
        calls += 1;
        Err(failing(429, Some(None)))
    })
    .unwrap_err();
    assert_eq!(calls, 3, "one attempt and two retries");
    assert_eq!(err.status, Some(429));
    assert!(
        err.message
            .starts_with("GitLab API POST /projects/7/notes: HTTP 429"),
        "{err}"
    );
    assert!(err.message.ends_with("(gave up after 2 retries)"), "{err}");
    assert!(!err.message.contains("glpat-secret"), "{err}");
}

#[test]
fn a_final_failure_is_not_retried() {
    let mut calls = 0;
    let err = call_with_retries(&policy(5), "GET /x", || -> Result<(), _> {
        calls += 1;
        Err(failing(404, None))
    })
    .unwrap_err();
    assert_eq!(calls, 1);
    assert_eq!(err.status, Some(404));
    assert!(!err.message.contains("gave up"), "{err}");
}

#[test]
fn the_call_name_drops_the_query() {
    assert_eq!(
        call_name("GET", "/repos/o/r/pulls?page=2"),
        "GET /repos/o/r/pulls"
    );
}
