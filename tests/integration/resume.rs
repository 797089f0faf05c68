//! `--resume TRANSCRIPT [PROMPT]` and `--continue`: a max_turns run resumed to success, a
//! SIGKILLed run resumed from its `running` checkpoint (no call re-run), a `--jsonl`
//! capture resumed, foreign files refused, secrets still redacted, the `--continue` index.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

fn reply(turn: Turn) -> Reply {
    Reply::turn(turn)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_max_turns_run_is_resumed_to_success_with_the_whole_history() {
    let env = TestEnv::new(vec![
        reply(
            Turn::new()
                .text("Reading a.")
                .tool("toolu_a", "ReadFile", json!({"path": "a.txt"}))
                .usage(100, 10),
        ),
        reply(
            Turn::new()
                .text("Reading b.")
                .tool("toolu_b", "ReadFile", json!({"path": "b.txt"}))
                .usage(200, 20),
        ),
        reply(Turn::new().text("a says A; b was not read.").usage(300, 30)),
    ]);
    env.write("a.txt", "A");
    env.write("b.txt", "B");
    let first = env.out("first.json");
    env.run(&[
        "run",
        "read a and b",
        "--max-turns",
        "2",
        "-m",
        "model-one",
        "-o",
        s(&first),
    ])
    .assert_code(3);
    let t1 = read_json(&first);
    assert_eq!(t1["status"], "max_turns");
    assert_eq!(t1["subtype"], "error_max_turns");
    assert_eq!(
        t1["messages"].as_array().unwrap().len(),
        4,
        "ends with toolu_b unanswered"
    );

    // From another directory: the workspace comes from the transcript.
    let mut c = env.command(&[
        "run",
        "--resume",
        s(&first),
        "now say what a holds",
        "--json",
    ]);
    c.current_dir(env.out(""));
    let out = env.spawn_command(c).wait();
    out.assert_code(0).assert_no_secret();
    let t2 = out.json();

    let requests = env.server.requests();
    assert_eq!(requests.len(), 3);
    let resumed = &requests[2];
    // The model is the one the API reported for the first run (no -m given).
    assert_eq!(resumed.body["model"], t1["model"]);
    assert_eq!(resumed.body["model"], sse::MOCK_MODEL);
    let sent = without_cache_control(&json!(resumed.messages()));
    let sent = sent.as_array().unwrap();
    assert_eq!(sent.len(), 5);
    assert_eq!(
        json!(sent[..4]),
        without_cache_control(&t1["messages"]),
        "the whole earlier history"
    );
    let last = &sent[4];
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_b");
    assert_eq!(last["content"][0]["is_error"], true);
    let text = last["content"][0]["content"].as_str().unwrap();
    assert!(
        text.contains("reached --max-turns before this call could run"),
        "{text}"
    );
    assert_eq!(
        last["content"][1],
        json!({"type": "text", "text": "now say what a holds"})
    );
    env.server.assert_invariants();

    // The new transcript: the whole conversation, the new run's own numbers.
    assert_eq!(t2["status"], "success");
    assert_eq!(t2["subtype"], "success");
    assert_eq!(t2["result"], "a says A; b was not read.");
    assert_eq!(t2["workspace"], t1["workspace"]);
    let msgs = t2["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 6);
    assert_eq!(json!(msgs[..5]), json!(sent));
    assert_eq!(t2["num_turns"], 1);
    assert_eq!(t2["usage"]["input_tokens"], 300);
    assert_eq!(t2["usage"]["output_tokens"], 30);
    assert_eq!(t2["tool_calls"], json!([]));
    assert_eq!(t2["total_cost_usd"], t2["cost_usd"]);
    let from = &t2["resumed_from"];
    assert_eq!(from["path"], s(&first));
    assert_eq!(from["session_id"], t1["session_id"]);
    assert_eq!(from["num_turns"], 2);
    assert_eq!(from["status"], "max_turns");
    assert_eq!(from["usage"], t1["usage"]);
    assert_ne!(
        t2["session_id"], t1["session_id"],
        "a resumed run gets its own id"
    );
    assert!(t2["session_id"].as_str().unwrap().len() == 36);
}

/// Hang guard only: the command normally starts within milliseconds.
const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(60);

/// Makes a FIFO: a command reading it blocks until the test writes to it.
#[test]
fn a_killed_run_is_resumed_from_its_checkpoint_and_no_call_runs_again() {
    let env = TestEnv::new(vec![
        reply(
            Turn::new()
                .text("Running both.")
                .tool(
                    "toolu_first",
                    "Bash",
                    // Waits for `release` (bounded: 60 s), never on a FIFO: a FIFO opened after
                    // the test gave up on it would leave an orphan blocked for ever.
                    json!({"command": "echo first >> ran.txt; \
                        for i in $(seq 600); do [ -e release ] && break; sleep 0.1; done"}),
                )
                .tool(
                    "toolu_second",
                    "Bash",
                    json!({"command": "echo second >> ran.txt"}),
                ),
        ),
        reply(Turn::new().text("Both were interrupted; nothing to redo.")),
    ]);
    let out_file = env.out("killed.json");
    let running = env.spawn(&["run", "run both", "--allow-bash", "-o", s(&out_file)]);
    // The first command has started: the checkpoint before it was written.
    env.server.wait_for_requests(1);
    let started = std::time::Instant::now();
    // Its whole line, not just the file: `>>` creates the file before it writes.
    while std::fs::read_to_string(env.path("ran.txt")).unwrap_or_default() != "first\n" {
        assert!(
            started.elapsed() < HANG_GUARD,
            "the first command never started"
        );
        std::thread::yield_now();
    }
    running.signal(libc::SIGKILL);
    let killed = running.wait();
    assert_eq!(killed.status.code(), None, "killed by a signal");
    // Release the command, if it outlived the agent.
    std::fs::write(env.path("release"), "").unwrap();

    // The checkpoint: -o and the journal it names.
    let t1 = crate::journal::read_checkpoint(&out_file);
    assert_eq!(t1["status"], "running");
    let last = t1["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    let ids: Vec<&str> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["id"].as_str())
        .collect();
    assert_eq!(ids, ["toolu_first", "toolu_second"]);

    let out = env.run(&["run", "--resume", s(&out_file), "--allow-bash", "--json"]);
    out.assert_code(0);
    let requests = env.server.requests();
    let seen = requests[1].tool_results();
    assert_eq!(seen.len(), 2);
    for (r, id) in seen.iter().zip(["toolu_first", "toolu_second"]) {
        assert_eq!(r.tool_use_id, id);
        assert!(r.is_error);
        assert!(r.content.starts_with("interrupted: "), "{}", r.content);
        assert!(r.content.contains("not run again"), "{}", r.content);
    }
    env.server.assert_invariants();
    // On disk: the first command ran once (before the kill), the second never.
    assert_eq!(env.read("ran.txt"), "first\n");
    assert!(
        out.stderr.contains("2 call(s) it left unanswered"),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["resumed_from"]["status"], "running");
}

#[test]
fn a_jsonl_capture_is_resumed_from_its_run_finished_line() {
    let env = TestEnv::new(vec![
        reply(Turn::new().text("The first answer.")),
        reply(Turn::new().text("The second answer.")),
    ]);
    let out = env.run(&["run", "first task", "--jsonl"]);
    out.assert_code(0);
    let capture = env.out("capture.jsonl");
    std::fs::write(&capture, &out.stdout).unwrap();
    let started: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "run.started");
    let first_id = started["session_id"].as_str().unwrap().to_string();

    let out = env.run(&["run", "--resume", s(&capture), "a follow-up", "--jsonl"]);
    out.assert_code(0);
    let sent = env.server.requests()[1].messages().to_vec();
    let texts: Vec<(String, String)> = sent
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                mock::message_text(m),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            ("user".to_string(), "first task".to_string()),
            ("assistant".to_string(), "The first answer.".to_string()),
            ("user".to_string(), "a follow-up".to_string()),
        ]
    );
    let started: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(started["resumed_from"]["session_id"], first_id.as_str());
    assert_ne!(started["session_id"], first_id.as_str());
}

#[test]
fn corrupt_and_foreign_files_are_usage_errors() {
    let env = TestEnv::new(vec![]);
    let cassette = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo/demo.cassette.jsonl");
    let cases = [
        (
            "garbage.json",
            "this is not json\nat all",
            "line 1 is not JSON",
        ),
        ("object.json", "{\"hello\": 1}", "no \"version\""),
        (
            "cut.json",
            "{\"version\": 1, \"messages\": [",
            "line 1 is not JSON",
        ),
        ("empty.json", "", "the file is empty"),
    ];
    for (name, content, needle) in cases {
        let f = env.out(name);
        std::fs::write(&f, content).unwrap();
        let out = env.run(&["run", "--resume", s(&f), "go on"]);
        out.assert_code(2);
        assert!(
            out.stderr.contains(&format!("--resume {}", f.display())),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains(needle), "{name}: {}", out.stderr);
    }
    let out = env.run(&["run", "--resume", s(&cassette), "go on"]);
    out.assert_code(2);
    assert!(out.stderr.contains("this is a cassette"), "{}", out.stderr);
    let out = env.run(&["run", "--resume", s(&env.out("missing.json")), "go on"]);
    out.assert_code(2);
    // A finished transcript with nothing new to say.
    let done = env.out("done.json");
    std::fs::write(
        &done,
        json!({"version": 1, "status": "success", "workspace": s(&env.ws()), "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]})
        .to_string(),
    )
    .unwrap();
    let out = env.run(&["run", "--resume", s(&done)]);
    out.assert_code(2);
    assert!(out.stderr.contains("give a PROMPT"), "{}", out.stderr);
    assert_eq!(
        env.server.request_count(),
        0,
        "no request for a usage error"
    );
}

#[test]
fn a_redacted_secret_stays_redacted_when_resumed() {
    const SECRET: &str = "hunter2-very-secret-value";
    let env = TestEnv::new(vec![
        reply(Turn::new().tool("toolu_r", "ReadFile", json!({"path": "notes.txt"}))),
        reply(Turn::new().text("I read the notes.")),
        reply(Turn::new().text("Still fine.")),
    ]);
    env.write("notes.txt", &format!("deploy token: {SECRET}\n"));
    let t = env.out("t.json");
    let mut c = env.command(&["run", "read the notes", "-o", s(&t)]);
    c.env("DEPLOY_TOKEN", SECRET);
    env.spawn_command(c).wait().assert_code(0);
    let raw = std::fs::read_to_string(&t).unwrap();
    assert!(!raw.contains(SECRET) && raw.contains("[REDACTED]"));

    // Resumed without the secret in the environment: the model gets the redacted text.
    let out = env.run(&["run", "--resume", s(&t), "summarise the notes", "--json"]);
    out.assert_code(0);
    let body = String::from_utf8_lossy(&env.server.requests()[2].raw_body).into_owned();
    assert!(!body.contains(SECRET), "the secret went back to the model");
    assert!(body.contains("deploy token: [REDACTED]"), "{body}");
}

#[test]
fn continue_resumes_the_newest_o_transcript_of_the_workspace() {
    let env = TestEnv::new(vec![
        reply(Turn::new().text("one")),
        reply(Turn::new().text("two")),
        reply(Turn::new().text("three")),
    ]);
    // No run with -o yet.
    let out = env.run(&["run", "--continue", "go on"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("run with -o FILE first"),
        "{}",
        out.stderr
    );

    env.run(&["run", "task one", "-o", s(&env.out("one.json"))])
        .assert_code(0);
    // With Bash on, the workspace is scanned for changes: the index is not one of them.
    env.run(&[
        "run",
        "task two",
        "--allow-bash",
        "-o",
        s(&env.out("two.json")),
    ])
    .assert_code(0);
    assert_eq!(read_json(&env.out("two.json"))["files_changed"], json!([]));
    let index = read_json(&env.path(".agent/sessions.json"));
    assert_eq!(index["sessions"].as_array().unwrap().len(), 2);
    let out = env.run(&["run", "--continue", "and then?", "--json"]);
    out.assert_code(0);
    let sent = env.server.requests()[2].messages().to_vec();
    assert_eq!(mock::message_text(&sent[0]), "task two");
    assert_eq!(mock::message_text(&sent[1]), "two");
    assert_eq!(mock::message_text(&sent[2]), "and then?");
    let t = out.json();
    assert_eq!(t["resumed_from"]["path"], s(&env.out("two.json")));
    // --resume and --continue together are a usage error.
    let out = env.run(&["run", "--continue", "--resume", "x.json", "go"]);
    out.assert_code(2);
}

/// docs/guide/resume.md, as a test: the demo stopped by --max-turns 2 is resumed with the
/// second shipped cassette, which finishes the fix; then --continue finds the same file.
#[test]
fn the_readme_resume_demo_runs() {
    let root = demo_dir();
    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    let first = env.out("demo.json");
    env.run(&[
        "run",
        "--replay",
        s(&root.join("demo.cassette.jsonl")),
        "--full-auto",
        "--max-turns",
        "2",
        "-o",
        s(&first),
        "Fix the failing tests",
    ])
    .assert_code(3);
    let out = env.run(&[
        "run",
        "--resume",
        s(&first),
        "--replay",
        s(&root.join("resume.cassette.jsonl")),
        "--full-auto",
        "--json",
    ]);
    out.assert_code(0);
    let t = out.json();
    assert!(t["result"].as_str().unwrap().starts_with("Fixed: `mean`"));
    assert!(
        t["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["is_error"] == false)
    );
    let tests = env.run_demo_tests();
    assert!(
        tests.status.success(),
        "the demo's tests pass after the resumed run"
    );
    let out = env.run(&[
        "run",
        "--continue",
        "--replay",
        s(&root.join("resume.cassette.jsonl")),
        "--json",
    ]);
    out.assert_code(0);
    assert_eq!(out.json()["resumed_from"]["path"], s(&first));
}

#[test]
fn one_session_id_in_the_transcript_run_started_and_the_cassette_header() {
    let env = TestEnv::new(vec![reply(Turn::new().text("hi"))]);
    let cassette = env.out("c.jsonl");
    let out = env.run(&["run", "hello", "--jsonl", "--record", s(&cassette)]);
    out.assert_code(0);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let id = lines[0]["session_id"].as_str().unwrap();
    assert_eq!(lines[0]["resumed_from"], Value::Null);
    let finished = lines.last().unwrap();
    assert_eq!(finished["transcript"]["session_id"], id);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&cassette)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["session_id"], id);
}
