//! `--verify` (SPEC §9): the command runs when the model stops; a failure goes back to
//! the model as a user message and the loop goes on; still failing after --max-verify
//! rounds is `verify_failed`, exit 4. Every round is in `verifications`.

use crate::support::*;
use serde_json::json;

/// Passes only once the model wrote `fixed.txt` containing `ok`.
const CHECK: &str = "if grep -qx ok fixed.txt 2>/dev/null; then echo ALL PASS; else \
                     echo 'FAIL: test_fix (fixed.txt missing)'; exit 1; fi\n";

#[test]
fn first_verification_fails_and_the_model_fixes_it() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_text("I think it is done.")),
        Reply::Sse(
            Turn::new()
                .text("The check still fails; writing the fix.")
                .tool(
                    "toolu_w",
                    "WriteFile",
                    json!({"path": "fixed.txt", "content": "ok\n"}),
                )
                .frames(),
        ),
        Reply::Sse(turn_text("Fixed: the check passes now.")),
    ]);
    env.write("check.sh", CHECK);
    let out = env.run(&[
        "run",
        "--full-auto",
        "--json",
        "--verify",
        "sh check.sh",
        "fix it",
    ]);
    out.assert_code(0).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "Fixed: the check passes now.");
    assert_eq!(t["num_turns"], 3);
    let v = t["verifications"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(
        (&v[0]["round"], &v[0]["exit_code"], &v[0]["passed"]),
        (&json!(1), &json!(1), &json!(false))
    );
    assert_eq!(v[0]["command"], "sh check.sh");
    assert!(
        v[0]["output_tail"]
            .as_str()
            .unwrap()
            .contains("FAIL: test_fix")
    );
    assert_eq!(
        (&v[1]["round"], &v[1]["exit_code"], &v[1]["passed"]),
        (&json!(2), &json!(0), &json!(true))
    );
    assert!(v[1]["duration_ms"].is_u64());
    // The second request ends with the failure, as a user message, for the model to fix.
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 3);
    let last = reqs[1].messages().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    let text = support_text(&last);
    assert!(
        text.contains("The verification command `sh check.sh` failed (exit 1)"),
        "{text}"
    );
    assert!(
        text.contains("FAIL: test_fix (fixed.txt missing)"),
        "{text}"
    );
    // ... and it is in the transcript's messages too.
    let msgs = t["messages"].as_array().unwrap();
    assert!(
        msgs.iter()
            .any(|m| support_text(m).contains("verification command"))
    );
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn a_verification_that_never_passes_is_exit_4() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_text("Done.")),
        Reply::Sse(turn_text("Really done.")),
    ]);
    env.write("check.sh", CHECK);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--json",
        "--verify",
        "sh check.sh",
        "--max-verify",
        "2",
        "-o",
        out_file.to_str().unwrap(),
        "fix it",
    ]);
    out.assert_code(4).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "verify_failed");
    assert_eq!(t["is_error"], true);
    assert_eq!(t["error"]["kind"], "verify_failed");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("after 2 rounds"),
        "{}",
        t["error"]
    );
    let passed: Vec<_> = t["verifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["passed"].clone())
        .collect();
    assert_eq!(passed, vec![json!(false), json!(false)]);
    assert_eq!(env.server.request_count(), 2);
    assert_eq!(read_json(&out_file)["status"], "verify_failed");
    env.server.assert_invariants();
}

#[test]
fn a_failed_verification_on_the_last_allowed_turn_ends_the_run() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
    let out = env.run(&[
        "run",
        "--json",
        "--verify",
        "exit 7",
        "--max-turns",
        "1",
        "x",
    ]);
    out.assert_code(4);
    let t = out.json();
    assert_eq!(t["verifications"][0]["exit_code"], 7);
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-turns")
    );
    assert_eq!(env.server.request_count(), 1);
}

/// The text of a message (string content or text blocks).
fn support_text(m: &serde_json::Value) -> String {
    crate::support::mock::message_text(m)
}

#[test]
fn verification_runs_inside_the_bash_sandbox() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
    let out = env.run(&[
        "run",
        "--json",
        "--sandbox",
        "read-only",
        "--verify",
        "touch verify-wrote",
        "--max-verify",
        "1",
        "x",
    ]);
    if out.code() == Some(2) {
        eprintln!("skipped (no Landlock here): {}", out.stderr);
        return;
    }
    out.assert_code(4);
    let t = out.json();
    assert_ne!(t["verifications"][0]["exit_code"], 0);
    assert!(
        !env.path("verify-wrote").exists(),
        "the sandbox let verify write"
    );
    // Without the sandbox the same command passes.
    let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
    env.run(&["run", "--verify", "touch verify-wrote", "x"])
        .assert_code(0);
    assert!(env.path("verify-wrote").exists());
}

/// An empty answer (or one with only thinking) before a failed verification is kept in
/// the transcript but not sent back: the API refuses an assistant message with nothing
/// in it (the mock checks every request for that).
#[test]
fn an_empty_answer_before_a_failed_verification_is_not_sent_back() {
    let env = TestEnv::new(vec![
        Reply::Sse(Turn::new().frames()),
        Reply::Sse(Turn::new().thinking("Nothing to say yet.", "c2ln").frames()),
        Reply::Sse(
            Turn::new()
                .tool(
                    "toolu_w",
                    "WriteFile",
                    json!({"path": "fixed.txt", "content": "ok\n"}),
                )
                .frames(),
        ),
        Reply::Sse(turn_text("Fixed.")),
    ]);
    env.write("check.sh", CHECK);
    let out = env.run(&[
        "run",
        "--full-auto",
        "--json",
        "--verify",
        "sh check.sh",
        "fix it",
    ]);
    out.assert_code(0);
    env.server.assert_invariants();
    let t = out.json();
    assert_eq!(t["num_turns"], 4);
    assert_eq!(t["verifications"].as_array().unwrap().len(), 3);
    let second = &env.server.requests()[1];
    assert!(
        second.messages().iter().all(|m| m["role"] != "assistant"),
        "the empty answer was sent back: {:?}",
        second.messages()
    );
}
