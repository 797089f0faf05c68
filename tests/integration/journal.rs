//! The `-o` checkpoint journal: while a run goes, `-o` is written once (status `running`,
//! naming `FILE.journal`) and every later checkpoint is appended to the journal; at the
//! end the final transcript replaces `-o` and the journal goes. A SIGKILL at any point
//! leaves a valid `-o` and a journal whose whole lines parse, which `agent summary` and
//! `--resume` read; a torn last line is ignored. `read_checkpoint` below reads the format
//! as docs/guide/resume.md documents it, independently of the agent's own reader.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::*;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn journal_of(out: &Path) -> PathBuf {
    PathBuf::from(format!("{}.journal", out.display()))
}

/// A turn that reads `file`.
fn read_turn(n: usize, file: &str) -> Reply {
    Reply::turn(Turn::new().text(&format!("Reading {file}.")).tool(
        &format!("toolu_{n:02}"),
        "ReadFile",
        json!({"path": file}),
    ))
}

/// The transcript an `-o` file stands for: the file itself, unless it says `running` and
/// names a journal of the same run that holds a whole checkpoint; then the messages, tool
/// calls, responses and last checkpoint of the journal's lines up to its last whole
/// checkpoint line.
/// Panics unless the file is valid JSON and every whole line of the journal is JSON.
pub(crate) fn read_checkpoint(out: &Path) -> Value {
    let file = read_json(out);
    let Some(name) = file["journal"]
        .as_str()
        .filter(|_| file["status"] == "running")
    else {
        return file;
    };
    let Ok(text) = std::fs::read_to_string(out.parent().unwrap().join(name)) else {
        return file;
    };
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let lines: Vec<Value> = whole
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("journal line {} is not JSON ({e}): {l}", i + 1))
        })
        .collect();
    let Some(last) = lines.iter().rposition(|l| l["type"] == "checkpoint") else {
        return file;
    };
    assert_eq!(lines[0]["type"], "journal", "{text}");
    if lines[0]["session_id"] != file["session_id"] {
        return file; // an earlier run's journal, not yet replaced
    }
    let (mut messages, mut calls, mut t) = (Vec::new(), Vec::new(), Value::Null);
    let mut responses = Vec::new();
    for l in &lines[1..=last] {
        match l["type"].as_str().unwrap() {
            "message" => messages.push(l["message"].clone()),
            "tool_call" => calls.push(l["tool_call"].clone()),
            "response" => responses.push(l["response"].clone()),
            "truncate" => {
                messages.truncate(l["messages"].as_u64().unwrap() as usize);
                calls.truncate(l["tool_calls"].as_u64().unwrap() as usize);
            }
            "checkpoint" => t = l["transcript"].clone(),
            other => panic!("unknown journal line {other}"),
        }
    }
    t["messages"] = Value::Array(messages);
    t["tool_calls"] = Value::Array(calls);
    assert_eq!(
        t["responses"],
        json!([]),
        "a checkpoint line holds no responses"
    );
    t["responses"] = Value::Array(responses);
    t
}

/// SIGKILL at random points of a 12-turn session, 24 times: every time `-o` is valid
/// JSON, the journal's whole lines parse, `agent summary` reads the run with as many
/// turns as were checkpointed (at least every turn whose next request the mock got, at
/// most the requests it got), and `--resume` continues exactly that history.
#[test]
fn a_sigkill_at_random_points_leaves_a_checkpoint_that_summary_and_resume_read() {
    const TURNS: usize = 12;
    const KILLS: usize = 24;
    let (mut rng, seed) = Rng::from_clock();
    let mut recovered = Vec::new();
    for kill in 0..KILLS {
        let mut script: Vec<Reply> = (1..=TURNS)
            .map(|k| read_turn(k, &format!("f{k}.txt")))
            .collect();
        // The killed run's answer, if it gets that far, and the resumed run's.
        script.push(Reply::turn(Turn::new().text("Done.")));
        script.push(Reply::turn(Turn::new().text("Resumed.")));
        let env = TestEnv::new(script);
        for k in 1..=TURNS {
            env.write(&format!("f{k}.txt"), &format!("file {k}\n").repeat(200));
        }
        let out_file = env.out("t.json");
        let run = env.spawn(&["run", "-q", "-o", s(&out_file), "read"]);
        // Wait for a random request, then spin a random while: the kill lands anywhere
        // in a turn (streaming, running the tool, appending to the journal).
        let at = 1 + rng.below(TURNS as u64 - 1) as usize;
        env.server.wait_for_requests(at);
        let spin = rng.spin(3_000_000);
        run.signal(libc::SIGKILL);
        let killed = run.wait();
        let served = env.server.request_count();
        let why = format!("kill {kill} (seed {seed}, request {at}, spin {spin})");
        let t = read_checkpoint(&out_file);
        if t["status"] != "running" {
            // The run outpaced the kill and wrote its final transcript (the kill may have
            // come before the journal was removed).
            assert_eq!(t["status"], "success", "{why}");
            assert_eq!(t["num_turns"], TURNS + 1, "{why}");
            continue;
        }
        assert_eq!(
            killed.code(),
            None,
            "{why}: a finished run left a checkpoint"
        );
        let turns = t["num_turns"].as_u64().unwrap() as usize;
        assert!(turns + 1 >= at, "{why}: {turns} turns checkpointed");
        assert!(turns <= served, "{why}: {turns} turns of {served} requests");
        let messages = t["messages"].as_array().unwrap();
        // The task (checkpointed before the first request), then a response and (unless
        // the kill came while its call ran) its results per turn.
        assert!(
            messages.len() == 2 * turns + 1 || (turns > 0 && messages.len() == 2 * turns),
            "{why}: {} messages for {turns} turns",
            messages.len()
        );
        recovered.push(turns);

        let summary = env.run(&["summary", s(&out_file)]);
        summary.assert_code(0);
        assert!(
            summary.stdout.contains(&format!("| Turns | {turns} |")),
            "{why}: {}",
            summary.stdout
        );
        // One turn: the mock may answer with its next read (max_turns, exit 3).
        let resumed = env.run(&[
            "run",
            "--resume",
            s(&out_file),
            "go on",
            "--json",
            "--max-turns",
            "1",
        ]);
        assert!(
            matches!(resumed.code(), Some(0 | 3)),
            "{why}: {}",
            resumed.stderr
        );
        // The resumed run's request (the killed run's last one may be recorded late).
        let requests = env.server.requests();
        let sent = requests
            .iter()
            .map(|r| r.messages().to_vec())
            .find(|m| {
                m.last()
                    .is_some_and(|l| mock::message_text(l).ends_with("go on"))
            })
            .unwrap_or_else(|| panic!("{why}: no resumed request"));
        // The whole checkpointed history, then the prompt: joined to the last results,
        // or with the error results of the calls the kill left unanswered.
        let n = messages.len();
        assert!(sent[..n - 1] == messages[..n - 1], "{why}: resumed history");
        let last = &sent[n - 1]["content"];
        if n % 2 == 1 {
            assert_eq!(sent.len(), n, "{why}");
            let kept = messages[n - 1]["content"].as_array().unwrap();
            assert!(last.as_array().unwrap()[..kept.len()] == kept[..], "{why}");
        } else {
            assert_eq!(sent.len(), n + 1, "{why}");
            assert!(sent[n - 1] == messages[n - 1], "{why}: the pending call");
            // After the answer ("Done.") the prompt is a message of its own.
            let pending = messages[n - 1]["content"][1]["type"] == "tool_use";
            assert_eq!(sent[n]["content"][0]["is_error"] == true, pending, "{why}");
        }
        let prompt = sent[sent.len() - 1]["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap();
        assert_eq!(prompt["text"], "go on", "{why}");
        assert_eq!(resumed.json()["resumed_from"]["num_turns"], turns);
        env.server.assert_invariants();
    }
    eprintln!("seed {seed}: turns recovered per kill {recovered:?}");
    assert!(!recovered.is_empty(), "no kill landed before the run's end");
}

/// A run killed while its third request hangs: `-o` is the first checkpoint, naming the
/// journal; `agent summary` and `--resume` read the journal's two turns, given either
/// file; a torn last line is ignored, a cut checkpoint line falls back to the one before.
#[test]
fn summary_and_resume_read_a_killed_runs_journal_up_to_its_last_whole_line() {
    let env = TestEnv::new(vec![
        read_turn(1, "a.txt"),
        read_turn(2, "b.txt"),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
        Reply::turn(Turn::new().text("Resumed from the journal.")),
        Reply::turn(Turn::new().text("Resumed from the journal itself.")),
    ]);
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    let out_file = env.out("t.json");
    let journal = journal_of(&out_file);
    let run = env.spawn(&["run", "-o", s(&out_file), "read both"]);
    env.server.wait_for_requests(3);
    run.signal(libc::SIGKILL);
    assert_eq!(run.wait().code(), None, "killed by the signal");

    let file = read_json(&out_file);
    assert_eq!(file["status"], "running");
    assert_eq!(file["journal"], "t.json.journal", "named relative to -o");
    assert_eq!(
        file["num_turns"], 0,
        "-o itself is the run's first checkpoint"
    );
    let t = read_checkpoint(&out_file);
    assert_eq!(t["num_turns"], 2);
    assert_eq!(t["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(t["messages"].as_array().unwrap().len(), 5);

    let summary = env.run(&["summary", s(&out_file)]);
    summary.assert_code(0);
    assert!(
        summary.stdout.contains("| Turns | 2 |"),
        "{}",
        summary.stdout
    );
    assert!(summary.stdout.contains("running"), "{}", summary.stdout);
    let direct = env.run(&["summary", s(&journal)]);
    direct.assert_code(0);
    assert_eq!(direct.stdout, summary.stdout);

    // A torn last line (a write cut by the kill) is not read.
    let whole = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, format!("{whole}{{\"type\":\"message\",\"mess")).unwrap();
    let torn = env.run(&["summary", s(&out_file)]);
    torn.assert_code(0);
    assert_eq!(torn.stdout, summary.stdout);
    // Cut inside the last checkpoint line: the checkpoint before it (turn 2's response,
    // written before its call ran) is what remains.
    assert!(
        summary.stdout.contains("2 turns · 2 tool calls"),
        "{}",
        summary.stdout
    );
    std::fs::write(&journal, &whole[..whole.len() - 20]).unwrap();
    let cut = env.run(&["summary", s(&out_file)]);
    cut.assert_code(0);
    assert!(
        cut.stdout.contains("2 turns · 1 tool call"),
        "{}",
        cut.stdout
    );
    std::fs::write(&journal, &whole).unwrap();

    // --resume through -o: the two turns, the second's results, then the new prompt.
    let out = env.run(&["run", "--resume", s(&out_file), "go on", "--json"]);
    out.assert_code(0);
    let sent = env.server.requests()[3].messages().to_vec();
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert_eq!(sent[4]["content"][0]["tool_use_id"], "toolu_02");
    assert_eq!(mock::message_text(&sent[4]), "go on");
    assert_eq!(out.json()["resumed_from"]["status"], "running");
    assert_eq!(out.json()["resumed_from"]["num_turns"], 2);
    // --resume given the journal itself.
    let out = env.run(&["run", "--resume", s(&journal), "again", "--json"]);
    out.assert_code(0);
    assert_eq!(env.server.requests()[4].messages().len(), 5);
    env.server.assert_invariants();
}

/// After a normal end, and after a SIGTERM, `-o` is the whole final transcript and the
/// journal is gone; the journal is never one of the run's file changes.
#[test]
fn the_final_transcript_replaces_the_checkpoint_and_the_journal_goes() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool("toolu_b", "Bash", json!({"command": "echo hi > made.txt"}))),
        read_turn(2, "made.txt"),
        Reply::turn(Turn::new().text("Made and read it.")),
        read_turn(3, "made.txt"),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
    ]);
    // Inside the workspace, where the scan for changes looks.
    let out_file = env.path("t.json");
    let out = env.run(&["run", "--allow-bash", "-o", s(&out_file), "make it"]);
    out.assert_code(0);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "success");
    assert!(t.get("journal").is_none(), "{t}");
    assert_eq!(t["messages"].as_array().unwrap().len(), 6);
    assert_eq!(t["tool_calls"].as_array().unwrap().len(), 2);
    assert!(!journal_of(&out_file).exists());
    assert_eq!(
        t["files_changed"],
        json!([{"path": "made.txt", "change": "created"}])
    );

    let out_file = env.out("term.json");
    let run = env.spawn(&["run", "-o", s(&out_file), "read it"]);
    env.server.wait_for_requests(5);
    assert!(journal_of(&out_file).exists(), "the journal while it runs");
    run.signal(libc::SIGTERM);
    run.wait().assert_code(130);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "interrupted");
    assert_eq!(t["num_turns"], 1);
    assert_eq!(t["messages"].as_array().unwrap().len(), 3);
    assert!(t.get("journal").is_none(), "{t}");
    assert!(!journal_of(&out_file).exists());
}
