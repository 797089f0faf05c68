//! Reading what the previous release wrote: the transcripts of `tests/fixtures/transcripts/`
//! (written by the binary before issue 35; its README says how) are read by `agent
//! summary`, resumed with `--resume` (and `--continue`, through the index that release
//! wrote) and merged with `agent batch merge`. What these
//! commands print from them is compared with goldens under `tests/fixtures/golden/`
//! (`previous_release.*`, rewritten like the others with `AGENT_BLESS=1 cargo test
//! golden`), besides the assertions below, which do not depend on the goldens.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::golden::Outputs;
use crate::support::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A fixture copied outside the repository (with its journal, if any), so that no run
/// can touch the checked-in file.
fn copy_fixture(env: &TestEnv, name: &str) -> PathBuf {
    let to = env.out(name);
    std::fs::copy(fixtures().join(name), &to).unwrap();
    let journal = fixtures().join(format!("{name}.journal"));
    if journal.exists() {
        std::fs::copy(journal, env.out(&format!("{name}.journal"))).unwrap();
    }
    to
}

#[test]
fn golden_previous_release_summaries() {
    let env = TestEnv::new(vec![]);
    let mut o = Outputs::new("previous_release");
    for name in ["plain", "tools", "verify", "structured", "killed"] {
        let f = copy_fixture(&env, &format!("{name}.json"));
        let out = env.run(&["summary", s(&f)]);
        out.assert_code(0);
        let md = &out.stdout;
        let expect: &[&str] = match name {
            "plain" => &["### agent: ✅ success", "1 turn · 0 tool calls"],
            "tools" => &[
                "5 turns · 6 tool calls",
                "| 5 | 3 | <code>EditFile</code> | <code>lib/stats.sh</code> | ok |",
                "- modified <code>lib/stats.sh</code>",
            ],
            "verify" => &["| 1 | <code>sh tests/run.sh</code> | 0 | ✅ passed |"],
            "structured" => &[
                "\"tests_passed\":4",
                "| 7 | 5 | <code>StructuredOutput</code>",
            ],
            // The -o file itself holds no turn: these come from its journal.
            "killed" => &["### agent: ❌ running", "4 turns · 5 tool calls"],
            _ => unreachable!(),
        };
        for e in expect {
            assert!(md.contains(e), "{name}: no {e:?} in\n{md}");
        }
        o.add(&format!("summary_{name}.md"), out.stdout.clone());
    }
    let f = copy_fixture(&env, "tools.json");
    let out = env.run(&["summary", "--github-output", s(&f)]);
    out.assert_code(0);
    assert!(out.stdout.starts_with("status=success\n"), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!("\ntranscript={}\n", s(&f))),
        "{}",
        out.stdout
    );
    o.check();
}

/// The messages of a request, without prompt-cache breakpoints.
fn sent(r: &Value) -> Vec<Value> {
    without_cache_control(r).as_array().unwrap().to_vec()
}

#[test]
fn previous_release_transcripts_are_resumed_with_their_whole_history() {
    for name in ["plain", "tools", "verify", "structured"] {
        let env = TestEnv::new(vec![Reply::turn(Turn::new().text("Nothing more to do."))]);
        env.copy_demo_project();
        let f = copy_fixture(&env, &format!("{name}.json"));
        let old = read_json(&f);
        let ws = env.ws();
        let out = env.run(&[
            "run",
            "--resume",
            s(&f),
            "-C",
            s(&ws),
            "one more thing",
            "--json",
        ]);
        out.assert_code(0);
        let requests = env.server.requests();
        assert_eq!(requests.len(), 1, "{name}");
        let messages = sent(&json!(requests[0].messages()));
        // The whole history, then the new prompt: its own user message after an answer,
        // joined to the last user message (tool results) after a tool call.
        let mut want = old["messages"].as_array().unwrap().clone();
        let prompt = json!({"type": "text", "text": "one more thing"});
        match want.last_mut() {
            Some(last) if last["role"] == "user" => {
                last["content"].as_array_mut().unwrap().push(prompt);
            }
            _ => want.push(json!({"role": "user", "content": [prompt]})),
        }
        assert_eq!(messages, want, "{name}: the history and the prompt");
        let t = out.json();
        assert_eq!(t["status"], "success");
        assert_eq!(t["result"], "Nothing more to do.");
        assert_eq!(t["resumed_from"]["path"], s(&f), "{name}");
        assert_eq!(t["resumed_from"]["session_id"], old["session_id"], "{name}");
        assert_eq!(t["resumed_from"]["status"], "success", "{name}");
        assert_ne!(
            t["session_id"], old["session_id"],
            "a resumed run gets its own id"
        );
        env.server.assert_invariants();
    }
}

#[test]
fn a_killed_previous_release_run_is_resumed_from_its_journal() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("The test run was cut."))]);
    env.copy_demo_project();
    let f = copy_fixture(&env, "killed.json");
    let ws = env.ws();
    let out = env.run(&["run", "--resume", s(&f), "-C", s(&ws), "--json"]);
    out.assert_code(0);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1);
    let messages = sent(&json!(requests[0].messages()));
    // Turns 1-3 whole (seven messages) and turn 4's assistant message, whose Bash call
    // never answered: the resumed run answers it as interrupted, without running it.
    assert_eq!(messages.len(), 9, "{messages:#?}");
    assert_eq!(messages[0]["content"][0]["text"], "Fix the failing tests");
    assert_eq!(messages[7]["role"], "assistant");
    assert_eq!(messages[7]["content"][1]["id"], "toolu_01Demo4Bash");
    let results = requests[0].tool_results();
    let last = results.last().unwrap();
    assert_eq!(last.tool_use_id, "toolu_01Demo4Bash");
    assert!(last.is_error);
    assert!(
        last.content.starts_with("interrupted: "),
        "{}",
        last.content
    );
    assert!(
        out.stderr.contains("1 call(s) it left unanswered"),
        "{}",
        out.stderr
    );
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["resumed_from"]["status"], "running");
    assert_eq!(
        t["resumed_from"]["session_id"],
        "73e89d47-8ea5-447c-9018-3f7569d42eb5"
    );
    // The call was not run again: the demo's tests still fail on the unfixed copy.
    assert!(!env.run_demo_tests().status.success());
}

/// `--continue` reads the index the previous release wrote in the workspace. Its entry
/// names the transcript by the absolute path it had where it was written; that one path
/// is pointed at the copy, the rest of the file is read as written.
#[test]
fn a_previous_release_index_is_continued() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("Picked up."))]);
    env.copy_demo_project();
    let f = copy_fixture(&env, "killed.json");
    let index = std::fs::read_to_string(fixtures().join("killed.sessions.json")).unwrap();
    let parsed: Value = serde_json::from_str(&index).unwrap();
    let written_at = parsed["sessions"][0]["path"].as_str().unwrap();
    env.write(".agent/sessions.json", &index.replace(written_at, s(&f)));
    let ws = env.ws();
    let out = env.run(&["run", "--continue", "-C", s(&ws), "--json"]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["result"], "Picked up.");
    assert_eq!(t["resumed_from"]["path"], s(&f));
    assert_eq!(t["resumed_from"]["status"], "running");
    assert_eq!(
        t["resumed_from"]["session_id"],
        "73e89d47-8ea5-447c-9018-3f7569d42eb5"
    );
    let messages = sent(&json!(env.server.requests()[0].messages()));
    assert_eq!(messages.len(), 9, "the journal's history: {messages:#?}");
}

#[test]
fn golden_previous_release_shards_are_merged_and_reported() {
    let env = TestEnv::new(vec![]);
    let dir = env.out("batch");
    copy_tree(&fixtures().join("batch"), &dir);
    let run = |args: &[&str]| {
        let mut c = env.command(args);
        c.current_dir(&dir);
        env.spawn_command(c).wait()
    };
    let out = run(&["batch", "merge", "merged", "shard1", "shard2"]);
    out.assert_code(0);
    let summary = read_json(&dir.join("merged/summary.json"));
    assert_eq!(summary["total"], 2);
    assert_eq!(summary["succeeded"], 2);
    assert_eq!(summary["all_succeeded"], true);
    assert_eq!(summary["shards"]["merged"], json!([1, 2]));
    for (shard, id) in [("shard1", "fix-stats"), ("shard2", "fix-stats-again")] {
        let copied = std::fs::read(dir.join(format!("merged/{id}.json"))).unwrap();
        let original = std::fs::read(dir.join(format!("{shard}/{id}.json"))).unwrap();
        assert_eq!(copied, original, "{id}.json is carried over as it was");
    }
    let report = run(&["batch", "report", "merged"]);
    report.assert_code(0);
    assert!(
        report
            .stdout
            .contains("### agent batch: ✅ 2 of 2 runs succeeded"),
        "{}",
        report.stdout
    );
    let mut o = Outputs::new("previous_release");
    o.add("merge.stdout.json", out.stdout.clone());
    o.add(
        "merge.summary.json",
        std::fs::read_to_string(dir.join("merged/summary.json")).unwrap(),
    );
    o.add("report.md", report.stdout.clone());
    o.check();
}
