//! Durations in messages are rounded for people: a limit given with sub-millisecond noise
//! is shown as `250ms`, not `250ms 400us 7ns` (`util::duration`).

use crate::support::*;

#[test]
fn a_timeout_message_shows_the_limit_rounded() {
    let env = TestEnv::new(vec![Reply::Hang(vec![sse::message_start(10, 0, 0)])]);
    let out = env.run(&["run", "--timeout", "250ms 400us 7ns", "wait"]);
    assert!(
        out.stderr.contains("the run exceeded --timeout 250ms\n"),
        "{}",
        out.stderr
    );
}
