//! What `--resume` and `agent summary` refuse to read, promptly and with exit 2 naming it:
//! a journal named by a `running` file that is not a plain file name beside it, or not a
//! regular file (a FIFO, a symlink to a device), or bigger than a transcript; a history
//! the API would refuse (no request is sent); a `running` file whose journal was lost.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use crate::support::*;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A `running` -o file naming `journal`, with a history that resumes on its own.
fn running_stub(journal: &str) -> Value {
    json!({
        "version": 1, "status": "running", "journal": journal,
        "session_id": "11111111-2222-4333-8444-555555555555", "num_turns": 0,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "the task"}]}],
        "tool_calls": []
    })
}

/// Both readers refuse the stub at `file` with exit 2, naming `named` and saying `why`;
/// the model is never asked.
fn both_refuse(env: &TestEnv, file: &Path, named: &str, why: &str) {
    for args in [
        vec!["summary", s(file)],
        vec!["run", "--resume", s(file), "go on"],
    ] {
        let out = env.run(&args);
        out.assert_code(2);
        assert!(out.stderr.contains(named), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(why), "{args:?}: {}", out.stderr);
    }
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn a_journal_that_is_not_a_regular_file_beside_the_transcript_is_refused() {
    let env = TestEnv::new(vec![]);
    let dir = env.out("sub");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.json");
    let stub = |name: &str| std::fs::write(&file, running_stub(name).to_string()).unwrap();

    // A FIFO beside it: opening it for reading would wait for a writer for ever.
    let fifo = dir.join("j.fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    stub("j.fifo");
    both_refuse(
        &env,
        &file,
        s(&fifo),
        "is a FIFO: a journal is a regular file",
    );

    // A symlink to /dev/zero: endless bytes.
    let zero = dir.join("z.journal");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    stub("z.journal");
    both_refuse(&env, &file, s(&zero), "is a symbolic link");

    // Names that are not a file beside it, even when the file is there.
    let elsewhere = env.out("x");
    std::fs::write(&elsewhere, "{}\n").unwrap();
    for name in [s(&elsewhere), "../x"] {
        stub(name);
        both_refuse(
            &env,
            &file,
            &format!("{name:?}"),
            "which is not a file name",
        );
    }

    // Bigger than a transcript may be (sparse: nothing is written, and nothing read).
    let big = dir.join("big.journal");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((512 << 20) + 1).unwrap();
    stub("big.journal");
    both_refuse(&env, &file, s(&big), "bytes, more than the");
}

/// A history the API answers 400 is refused when read, naming the message; nothing is
/// sent.
#[test]
fn a_history_the_api_refuses_is_not_sent() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("never sent"))]);
    let file = env.out("t.json");
    let mut t = running_stub("unused");
    t["status"] = json!("success");
    t["messages"] = json!([
        {"role": "user", "content": [{"type": "text", "text": "the task"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_orphan", "content": "?"}]}
    ]);
    std::fs::write(&file, t.to_string()).unwrap();
    let out = env.run(&["run", "--resume", s(&file), "go on"]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("message 3 holds a tool_result for toolu_orphan"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(s(&file)), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}

/// A killed run's `-o` file uploaded without its journal: `--resume` says the journal is
/// missing and what it is, instead of "messages do not start with the user's task".
#[test]
fn a_killed_run_without_its_journal_says_the_journal_is_missing() {
    let env = TestEnv::new(vec![Reply::Hang(vec![sse::message_start(10, 0, 0)])]);
    let file = env.out("t.json");
    let run = env.spawn(&["run", "-o", s(&file), "the task"]);
    env.server.wait_for_requests(1);
    run.signal(libc::SIGKILL);
    assert_eq!(run.wait().code(), None, "killed by the signal");
    let journal = PathBuf::from(format!("{}.journal", file.display()));
    std::fs::remove_file(&journal).unwrap();

    let out = env.run(&["run", "--resume", s(&file), "go on"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains(&format!(
            "the run's journal {} is missing",
            journal.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("every checkpoint after the first"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("do not start with the user's task"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 1, "nothing more was sent");
}
