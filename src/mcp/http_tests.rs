//! The MCP timeout is found by type: ureq's deadline wrapped in the body reader's
//! `io::Error`, or the socket's `TimedOut`; a message that merely says "timeout" is not one.

use std::io;
use std::time::Duration;

use super::*;

#[test]
fn a_timeout_is_known_by_its_type_not_its_text() {
    assert!(is_timeout(
        &ureq::Error::Timeout(ureq::Timeout::Global).into_io()
    ));
    assert!(is_timeout(
        &ureq::Error::Timeout(ureq::Timeout::PerRead).into_io()
    ));
    assert!(is_timeout(&io::Error::from(io::ErrorKind::TimedOut)));
    assert!(!is_timeout(&io::Error::other("server said: timeout")));
    assert!(!is_timeout(&ureq::Error::ConnectionFailed.into_io()));
}

#[test]
fn a_read_out_of_time_is_a_call_timeout() {
    let limit = Duration::from_secs(7);
    let e = read_error(ureq::Error::Timeout(ureq::Timeout::Global).into_io(), limit);
    assert!(matches!(e, CallError::Timeout(d) if d == limit), "{e:?}");
    let e = read_error(io::Error::other("read timeout header missing"), limit);
    assert!(matches!(e, CallError::Transport(_)), "{e:?}");
}
