//! Stop reasons other than `tool_use`/`end_turn` (SPEC §3.1): `refusal` ends the run with
//! exit 1, `pause_turn` sends the assistant turn back and goes on, and a silent stream
//! past `--idle-timeout` counts as dropped and is retried.

use crate::support::*;

#[test]
fn refusal_is_exit_1_with_status_refusal() {
    let env = TestEnv::new(vec![Reply::Sse(
        Turn::new()
            .text("I can't help with that.")
            .stop_reason("refusal")
            .frames(),
    )]);
    let out = env.run(&["run", "--json", "do something bad"]);
    out.assert_code(1).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "refusal");
    assert_eq!(t["is_error"], true);
    assert_eq!(t["stop_reason"], "refusal");
    env.server.assert_invariants();
}

#[test]
fn pause_turn_sends_the_turn_back_and_continues() {
    let env = TestEnv::new(vec![
        Reply::Sse(
            Turn::new()
                .text("Working on it, part one.")
                .stop_reason("pause_turn")
                .frames(),
        ),
        Reply::Sse(turn_text("Part two, done.")),
    ]);
    let out = env.run(&["run", "--json", "long task"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["num_turns"], 2);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1].messages().last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(mock::message_text(last), "Working on it, part one.");
    env.server.assert_invariants();
}

#[test]
fn idle_stream_is_dropped_and_retried() {
    let env = TestEnv::new(vec![
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
        Reply::Sse(turn_text("second try")),
    ]);
    let out = env.run(&["run", "--json", "--idle-timeout", "1s", "hi"]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["result"], "second try");
    assert_eq!(t["retries"], 1);
    assert_eq!(env.server.request_count(), 2);
    env.server.assert_invariants();
}
