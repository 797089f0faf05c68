//! ATIF trajectories (`--trajectory`, `agent batch`, `agent export atif`) on every way out
//! of a run: the end, `--timeout`, SIGTERM, a SIGKILLed run converted from its `-o` file
//! and journal; with sub-agents, a context clearing, a verification round, structured
//! output, and each shipped cassette. Each trajectory is checked here against the RFC's
//! rules that a reader relies on (ids from 1, results naming a call of their step,
//! agent-only fields, resolvable sub-agent references) and against its transcript (step
//! metrics add up to the billed responses, final metrics are the run's usage). With
//! `AGENT_ATIF_DIR` set, each one is also copied there: `ci/interop/atif.sh` runs Harbor's
//! own validator over them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Copies the trajectory into `$AGENT_ATIF_DIR` (when set) as `NAME.json`.
fn keep(path: &Path, name: &str) {
    if let Some(dir) = std::env::var_os("AGENT_ATIF_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(path, dir.join(format!("{name}.json"))).unwrap();
    }
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// The RFC's structural rules, for one trajectory (and its embedded sub-agents).
fn check_structure(t: &Value) {
    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["agent"]["name"], "agent");
    let steps = t["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "a trajectory has a step: {t}");
    for (i, st) in steps.iter().enumerate() {
        assert_eq!(st["step_id"], i + 1, "step ids run from 1: {st}");
        let source = st["source"].as_str().unwrap();
        assert!(["system", "user", "agent"].contains(&source), "{st}");
        assert!(
            st["message"].is_string() || st["message"].is_array(),
            "{st}"
        );
        if source != "agent" {
            for k in ["model_name", "reasoning_content", "tool_calls", "metrics"] {
                assert!(st.get(k).is_none(), "{k} on a {source} step: {st}");
            }
        }
        let calls: Vec<&str> = st["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                assert!(c["arguments"].is_object(), "{c}");
                c["tool_call_id"].as_str().unwrap()
            })
            .collect();
        for r in st["observation"]["results"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(id) = r["source_call_id"].as_str() {
                assert!(calls.contains(&id), "result for {id} not in its step: {st}");
            }
            for reference in r["subagent_trajectory_ref"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let id = reference["trajectory_id"].as_str().unwrap();
                let found = t["subagent_trajectories"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|sub| sub["trajectory_id"] == id);
                assert!(found, "reference {id} resolves to no embedded trajectory");
            }
        }
    }
    let subs = t["subagent_trajectories"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut ids: Vec<&str> = subs
        .iter()
        .map(|s| s["trajectory_id"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), subs.len(), "sub-agent trajectory ids are unique");
    for sub in &subs {
        check_structure(sub);
    }
}

/// The trajectory against its transcript: the steps' metrics are the billed responses,
/// the final metrics the run's usage and cost, and each sub-agent is embedded.
fn check_against(t: &Value, transcript: &Value) {
    check_structure(t);
    let steps = t["steps"].as_array().unwrap();
    let sum = |k: &str| -> u64 { steps.iter().map(|s| u(&s["metrics"], k)).sum() };
    let responses = transcript["responses"].as_array().unwrap();
    let billed =
        |f: &dyn Fn(&Value) -> u64| -> u64 { responses.iter().map(|r| f(&r["usage"])).sum() };
    assert_eq!(
        sum("prompt_tokens"),
        billed(&|x| u(x, "input_tokens")
            + u(x, "cache_read_input_tokens")
            + u(x, "cache_creation_input_tokens"))
    );
    assert_eq!(sum("completion_tokens"), billed(&|x| u(x, "output_tokens")));
    assert_eq!(
        sum("cached_tokens"),
        billed(&|x| u(x, "cache_read_input_tokens"))
    );
    let calls: u64 = steps.iter().map(|s| u(s, "llm_call_count")).sum();
    assert_eq!(
        calls,
        responses.len() as u64,
        "every billed response is in a step"
    );
    let usage = &transcript["usage"];
    let f = &t["final_metrics"];
    assert_eq!(u(f, "total_completion_tokens"), u(usage, "output_tokens"));
    assert_eq!(
        u(f, "total_prompt_tokens"),
        u(usage, "input_tokens")
            + u(usage, "cache_read_input_tokens")
            + u(usage, "cache_creation_input_tokens")
    );
    assert_eq!(f["total_cost_usd"], transcript["cost_usd"]);
    assert_eq!(u(f, "total_steps"), steps.len() as u64);
    assert_eq!(t["session_id"], transcript["session_id"]);
    let agent_steps = steps.iter().filter(|s| s["source"] == "agent").count();
    let assistant = transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(agent_steps, assistant, "one agent step per model message");
    let subs = transcript["subagents"].as_array().map_or(0, Vec::len);
    assert_eq!(
        t["subagent_trajectories"].as_array().map_or(0, Vec::len),
        subs
    );
}

/// `agent export atif` of a transcript file: the trajectory it prints.
fn export(env: &TestEnv, transcript: &Path) -> Value {
    let out = env.run(&["export", "atif", s(transcript)]);
    out.assert_code(0);
    serde_json::from_str(&out.stdout).unwrap()
}

fn read_turn(n: usize, file: &str, input: u64) -> Reply {
    Reply::turn(
        Turn::new()
            .text(&format!("Reading {file}."))
            .tool(&format!("toolu_{n:02}"), "ReadFile", json!({"path": file}))
            .usage(input, 20),
    )
}

#[test]
fn a_finished_run_writes_its_trajectory_and_export_gives_the_same() {
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .text("Looking.")
                .tool("toolu_r", "ReadFile", json!({"path": "a.txt"}))
                .tool("toolu_x", "ReadFile", json!({"path": "missing.txt"}))
                .usage(1000, 50),
        ),
        Reply::turn(Turn::new().text("Done.").usage(1200, 30)),
    ]);
    env.write("a.txt", "alpha\n");
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    let out = env.run(&["run", "-o", s(&out_file), "--trajectory", s(&traj), "look"]);
    out.assert_code(0);
    let transcript = read_json(&out_file);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "finished");
    let sources: Vec<&str> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["system", "user", "agent", "agent"]);
    assert!(
        t["steps"][0]["message"]
            .as_str()
            .unwrap()
            .contains("You are agent")
    );
    assert_eq!(t["steps"][1]["message"], "look");
    let results = t["steps"][2]["observation"]["results"].as_array().unwrap();
    assert_eq!(results[0]["source_call_id"], "toolu_r");
    assert!(results[0]["content"].as_str().unwrap().contains("alpha"));
    assert_eq!(results[1]["extra"]["is_error"], true);
    assert_eq!(t["extra"]["status"], "success");
    // The conversion of the transcript is the trajectory the run wrote.
    assert_eq!(export(&env, &out_file), t);
}

#[test]
fn a_timeout_writes_the_trajectory_of_the_run_so_far() {
    let env = TestEnv::new(vec![Reply::turn(
        Turn::new()
            .text("Sleeping.")
            .tool(
                "toolu_sleep",
                "Bash",
                json!({"command": "echo $$ > pid.txt; sleep 60"}),
            )
            .usage(500, 10),
    )]);
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    let out = env.run(&[
        "run",
        "--allow-bash",
        "--timeout",
        "3s",
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
        "sleep",
    ]);
    out.assert_code(124);
    let transcript = read_json(&out_file);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "timeout");
    assert_eq!(t["extra"]["status"], "timeout");
    // The call that was cut has no result; its step still has the call.
    assert_eq!(
        t["steps"][2]["tool_calls"][0]["tool_call_id"],
        "toolu_sleep"
    );
}

#[test]
fn a_sigterm_writes_the_trajectory_of_the_run_so_far() {
    let env = TestEnv::new(vec![Reply::turn(
        Turn::new()
            .tool(
                "toolu_sleep",
                "Bash",
                json!({"command": "echo $$ > pid.txt; sleep 60"}),
            )
            .usage(500, 10),
    )]);
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    let running = env.spawn(&[
        "run",
        "--allow-bash",
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
        "sleep",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(env.path("pid.txt")).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "Bash never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    running.signal(libc::SIGTERM);
    running.wait().assert_code(130);
    let transcript = read_json(&out_file);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "sigterm");
    assert_eq!(t["extra"]["status"], "interrupted");
}

#[test]
fn a_sigkilled_run_converts_from_its_checkpoint_and_journal() {
    let mut script: Vec<Reply> = (1..=4)
        .map(|k| read_turn(k, &format!("f{k}.txt"), 100 * k as u64))
        .collect();
    // Never answered: the run is killed while it waits.
    script.push(Reply::silence());
    let env = TestEnv::new(script);
    for k in 1..=4 {
        env.write(&format!("f{k}.txt"), &format!("file {k}\n"));
    }
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    let running = env.spawn(&[
        "run",
        "-q",
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
        "read",
    ]);
    env.server.wait_for_requests(5);
    running.signal(libc::SIGKILL);
    running.wait();
    assert!(
        !traj.exists(),
        "a SIGKILL leaves no trajectory: it is made from -o"
    );
    let doc = read_json(&out_file);
    assert_eq!(doc["status"], "running");
    let out = env.run(&["export", "atif", s(&out_file), "-o", s(&traj)]);
    out.assert_code(0);
    assert!(out.stdout.is_empty(), "-o writes the file, not stdout");
    let t = read_json(&traj);
    check_structure(&t);
    keep(&traj, "sigkill");
    assert_eq!(t["extra"]["status"], "running");
    // The journal's last checkpoint has all four turns.
    let agent = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "agent")
        .count();
    assert_eq!(agent, 4);
    let prompt: u64 = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["metrics"], "prompt_tokens"))
        .sum();
    assert_eq!(prompt, 100 + 200 + 300 + 400);
}

#[test]
fn subagents_are_embedded_and_linked_from_their_task_calls() {
    let task = |id: &str| json!({"description": format!("job {id}"), "prompt": format!("find {id}"), "subagent_type": "explore"});
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .tool("toolu_t1", "Task", task("one"))
                .usage(1000, 100),
        ),
        Reply::turn(Turn::new().text("found one").usage(200, 20)),
        Reply::turn(
            Turn::new()
                .tool("toolu_t2", "Task", task("two"))
                .usage(1100, 100),
        ),
        Reply::turn(
            Turn::new()
                .tool("toolu_s1", "ReadFile", json!({"path": "a.txt"}))
                .usage(210, 20),
        ),
        Reply::turn(Turn::new().text("found two").usage(220, 20)),
        Reply::turn(Turn::new().text("all found").usage(3000, 30)),
    ]);
    env.write("a.txt", "alpha\n");
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    env.run(&["run", "-o", s(&out_file), "--trajectory", s(&traj), "find"])
        .assert_code(0);
    let transcript = read_json(&out_file);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "subagents");
    let subs = t["subagent_trajectories"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    // The second sub-agent read a file: its steps have the call and its result.
    let second = &subs[1];
    assert_eq!(second["steps"][0]["source"], "user");
    assert_eq!(second["steps"][0]["message"], "find two");
    assert_eq!(
        second["steps"][1]["tool_calls"][0]["function_name"],
        "ReadFile"
    );
    assert_eq!(second["final_metrics"]["total_completion_tokens"], 40);
    // Step 3 is the first Task call; its result references the first sub-agent.
    let r = &t["steps"][2]["observation"]["results"][0];
    assert_eq!(r["source_call_id"], "toolu_t1");
    assert_eq!(
        r["subagent_trajectory_ref"][0]["trajectory_id"],
        subs[0]["trajectory_id"]
    );
    assert_eq!(r["content"], "found one");
}

#[test]
fn a_context_clearing_is_a_system_step_with_context_management() {
    let usage = [1000, 4000, 7000, 10_000, 13_000, 17_000];
    let mut script: Vec<Reply> = (1..=6)
        .map(|k| read_turn(k, &format!("f{k}.txt"), usage[k - 1]))
        .collect();
    script.push(Reply::turn(Turn::new().text("All read.").usage(9000, 5)));
    let env = TestEnv::new(script);
    for k in 1..=6 {
        env.write(
            &format!("f{k}.txt"),
            &format!("f{k} line: some content\n").repeat(60),
        );
    }
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    env.run(&[
        "run",
        "--context-window",
        "20000",
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
        "read the files",
    ])
    .assert_code(0);
    let transcript = read_json(&out_file);
    assert_eq!(transcript["context_clearings"].as_array().unwrap().len(), 1);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "clearing");
    let steps = t["steps"].as_array().unwrap();
    let at = steps
        .iter()
        .position(|s| s["extra"]["context_management"]["type"] == "clearing")
        .expect("a clearing step");
    assert_eq!(steps[at]["source"], "system");
    assert_eq!(
        steps[at]["extra"]["context_management"]["results_cleared"],
        transcript["context_clearings"][0]["results_cleared"]
    );
    // It stands just before the turn whose request first carried the cleared history.
    let turn = transcript["context_clearings"][0]["turn"].as_u64().unwrap() as usize;
    let agent_before = steps[..at]
        .iter()
        .filter(|s| s["source"] == "agent")
        .count();
    assert_eq!(agent_before + 1, turn);
    assert_eq!(steps[at + 1]["source"], "agent");
}

#[test]
fn a_verification_round_is_a_user_step() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().text("I think it is done.").usage(100, 10)),
        Reply::turn(
            Turn::new()
                .text("Writing the fix.")
                .tool(
                    "toolu_w",
                    "WriteFile",
                    json!({"path": "fixed.txt", "content": "ok\n"}),
                )
                .usage(200, 10),
        ),
        Reply::turn(Turn::new().text("Fixed.").usage(300, 10)),
    ]);
    env.write(
        "check.sh",
        "test -f fixed.txt || { echo 'FAIL: fixed.txt missing'; exit 1; }\n",
    );
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    env.run(&[
        "run",
        "--full-auto",
        "--verify",
        "sh check.sh",
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
        "fix it",
    ])
    .assert_code(0);
    let transcript = read_json(&out_file);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "verify");
    let rounds: Vec<&Value> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["extra"]["verification_round"].is_number())
        .collect();
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0]["source"], "user");
    assert!(
        rounds[0]["message"]
            .as_str()
            .unwrap()
            .contains("sh check.sh")
    );
}

#[test]
fn structured_output_is_in_the_root_extra() {
    let env = TestEnv::new(vec![Reply::turn(
        Turn::new()
            .text("Here.")
            .tool(
                "toolu_ans",
                "StructuredOutput",
                json!({"name": "Ada", "age": 36}),
            )
            .usage(100, 10),
    )]);
    let schema = env.out("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}"#,
    )
    .unwrap();
    let (out_file, traj) = (env.out("t.json"), env.out("t.atif.json"));
    env.run(&[
        "run",
        "--output-schema",
        s(&schema),
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
        "who?",
    ])
    .assert_code(0);
    let transcript = read_json(&out_file);
    let t = read_json(&traj);
    check_against(&t, &transcript);
    keep(&traj, "structured");
    assert_eq!(
        t["extra"]["structured_output"],
        json!({"name": "Ada", "age": 36})
    );
}

/// Replays `cassette` (in fixtures/demo) with `args`; checks and keeps the trajectory.
fn replay(env: &TestEnv, name: &str, cassette: &str, args: &[&str], code: i32) -> PathBuf {
    let (out_file, traj) = (
        env.out(&format!("{name}.json")),
        env.out(&format!("{name}.atif.json")),
    );
    let c = demo_dir().join(cassette);
    let mut all = vec![
        "run",
        "--replay",
        s(&c),
        "--full-auto",
        "-o",
        s(&out_file),
        "--trajectory",
        s(&traj),
    ];
    all.extend_from_slice(args);
    let out = env.run(&all);
    out.assert_code(code);
    let t = read_json(&traj);
    check_against(&t, &read_json(&out_file));
    keep(&traj, name);
    out_file
}

#[test]
fn every_shipped_cassette_replays_to_a_trajectory() {
    let shipped: Vec<String> = std::fs::read_dir(demo_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cassette.jsonl"))
        .collect();
    let mut played = vec![
        "demo.cassette.jsonl",
        "resume.cassette.jsonl",
        "structured.cassette.jsonl",
    ];
    played.sort();
    let mut shipped_sorted = shipped.clone();
    shipped_sorted.sort();
    assert_eq!(shipped_sorted, played, "a new cassette needs a case here");

    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    replay(
        &env,
        "cassette-demo",
        "demo.cassette.jsonl",
        &["Fix the failing tests"],
        0,
    );

    // The resume demo (docs/guide/resume.md): stopped after two turns, then resumed; the
    // resumed run's copy of the first run's steps is marked as copied context.
    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    let first = replay(
        &env,
        "cassette-demo-stopped",
        "demo.cassette.jsonl",
        &["--max-turns", "2", "Fix the failing tests"],
        3,
    );
    let resumed = replay(
        &env,
        "cassette-resume",
        "resume.cassette.jsonl",
        &["--resume", s(&first)],
        0,
    );
    let t = read_json(&env.out("cassette-resume.atif.json"));
    let copied = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["is_copied_context"] == true)
        .count();
    assert!(copied >= 3, "the first run's steps are copied context: {t}");
    assert!(
        t["extra"]["resumed_from"]
            .as_str()
            .unwrap()
            .ends_with("cassette-demo-stopped.json")
    );
    assert!(resumed.exists());

    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    let schema = env.out("schema.json");
    std::fs::write(
        &schema,
        std::fs::read(demo_dir().join("report.schema.json")).unwrap(),
    )
    .unwrap();
    replay(
        &env,
        "cassette-structured",
        "structured.cassette.jsonl",
        &[
            "--output-schema",
            s(&schema),
            "Fix the failing tests and report what you did",
        ],
        0,
    );
    let t = read_json(&env.out("cassette-structured.atif.json"));
    assert!(t["extra"]["structured_output"].is_object());
}

#[test]
fn batch_writes_a_trajectory_beside_each_transcript() {
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().text("one done").usage(10, 1)),
        Reply::turn(Turn::new().text("two done").usage(20, 2)),
    ]);
    let tasks = env.out("tasks.jsonl");
    std::fs::write(
        &tasks,
        "{\"id\":\"one\",\"prompt\":\"first\"}\n{\"id\":\"two\",\"prompt\":\"second\"}\n",
    )
    .unwrap();
    let out_dir = env.out("batch");
    env.run(&["batch", s(&tasks), "--out", s(&out_dir), "--parallel", "1"])
        .assert_code(0);
    for id in ["one", "two"] {
        let traj = out_dir.join(format!("{id}.trajectory.json"));
        let transcript = read_json(&out_dir.join(format!("{id}.json")));
        check_against(&read_json(&traj), &transcript);
        keep(&traj, &format!("batch-{id}"));
    }
    // `agent batch merge` brings the trajectories along with the transcripts.
    let merged = env.out("merged");
    env.run(&["batch", "merge", s(&merged), s(&out_dir)])
        .assert_code(0);
    for id in ["one", "two"] {
        let name = format!("{id}.trajectory.json");
        assert_eq!(
            read_json(&merged.join(&name)),
            read_json(&out_dir.join(&name))
        );
    }
}

#[test]
fn export_refuses_what_is_not_a_transcript_naming_the_file() {
    let env = TestEnv::new(vec![]);
    let bad = env.write("notes.json", "{\"hello\": 1}\n");
    let out = env.run(&["export", "atif", s(&bad)]);
    out.assert_code(2);
    assert!(out.stderr.contains("notes.json"), "{}", out.stderr);
    assert!(out.stdout.is_empty());

    let v = env.write(
        "v9.json",
        &json!({"version": 9, "status": "success"}).to_string(),
    );
    let out = env.run(&["export", "atif", s(&v)]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("v9.json") && out.stderr.contains("version 9"),
        "{}",
        out.stderr
    );

    // A journal cut before its first checkpoint holds no transcript.
    let j = env.write(
        "t.json.journal",
        "{\"type\":\"journal\",\"version\":1,\"session_id\":\"x\"}\n{\"type\":\"mess",
    );
    let out = env.run(&["export", "atif", s(&j)]);
    out.assert_code(2);
    assert!(out.stderr.contains("t.json.journal"), "{}", out.stderr);

    let out = env.run(&["export", "atif", s(&env.path("absent.json"))]);
    out.assert_code(2);
    assert!(out.stderr.contains("absent.json"), "{}", out.stderr);
}

#[test]
fn a_trajectory_file_in_a_missing_directory_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--trajectory", "/nonexistent-dir/t.json", "x"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--trajectory"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 0);
}
