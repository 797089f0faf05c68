//! A final answer cut off by `max_tokens` is not a success: it is sent back with a
//! request to continue (a few times), the parts are joined, and an answer still cut
//! off ends the run with status `max_tokens`, exit 1.

use serde_json::Value;

use crate::support::mock::message_text;
use crate::support::*;

fn cut(text: &str) -> Reply {
    Reply::Sse(Turn::new().text(text).stop_reason("max_tokens").frames())
}

fn last_user_text(messages: &[Value]) -> String {
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    message_text(last)
}

#[test]
fn a_cut_answer_is_continued_and_the_parts_joined() {
    let env = TestEnv::new(vec![
        cut("The first half, "),
        Reply::Sse(turn_text("and the second half.")),
    ]);
    let out = env.run(&["run", "explain"]);
    out.assert_code(0);
    assert_eq!(
        out.stdout.trim_end(),
        "The first half, and the second half."
    );
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].messages();
    assert_eq!(msgs[msgs.len() - 2]["role"], "assistant");
    assert_eq!(message_text(&msgs[msgs.len() - 2]), "The first half, ");
    assert!(last_user_text(msgs).contains("cut off"), "{msgs:?}");
    env.server.assert_invariants();
}

#[test]
fn an_answer_still_cut_off_ends_with_status_max_tokens() {
    let env = TestEnv::new(vec![cut("one "), cut("two "), cut("three "), cut("four")]);
    let out = env.run(&["run", "--json", "explain"]);
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["status"], "max_tokens");
    assert_eq!(t["error"]["kind"], "max_tokens");
    assert_eq!(t["result"], "one two three four");
    assert_eq!(
        env.server.request_count(),
        4,
        "three continuations, no more"
    );
    env.server.assert_invariants();
}

#[test]
fn a_cut_answer_on_the_last_allowed_turn_is_max_tokens() {
    let env = TestEnv::new(vec![cut("cut short")]);
    let out = env.run(&["run", "--json", "--max-turns", "1", "explain"]);
    out.assert_code(1);
    assert_eq!(out.json()["status"], "max_tokens");
    assert_eq!(env.server.request_count(), 1);
}
