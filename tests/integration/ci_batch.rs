//! `agent batch` (SPEC §9): each task in its own copy of its workspace, run by a separate
//! agent process; one transcript per task plus summary.json; `--shard I/N` takes the
//! tasks whose index % N == I-1.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

const TASKS: usize = 6;

fn tasks_file(env: &TestEnv) -> String {
    let lines: Vec<String> = (1..=TASKS)
        .map(|i| {
            json!({"id": format!("task-{i}"), "prompt": format!("do task {i}"),
                   "workspace": "proj", "args": ["--max-turns", "3"]})
            .to_string()
        })
        .collect();
    env.write("proj/README", "a project\n");
    env.write("tasks.jsonl", &(lines.join("\n") + "\n"));
    "tasks.jsonl".into()
}

fn replies(n: usize) -> Vec<Reply> {
    (0..n).map(|_| Reply::Sse(turn_text("task done"))).collect()
}

fn check_task(dir: &Path, id: &str, ws: &Path) -> Value {
    let t = read_json(&dir.join(format!("{id}.json")));
    assert_eq!(t["status"], "success", "{id}");
    assert_eq!(t["result"], "task done");
    let task_ws = t["workspace"].as_str().unwrap();
    let expected = dir.join("workspaces").join(id).canonicalize().unwrap();
    assert_eq!(Path::new(task_ws), expected, "{id} runs in its own copy");
    assert_ne!(Path::new(task_ws), ws.join("proj"));
    assert_eq!(
        std::fs::read_to_string(expected.join("README")).unwrap(),
        "a project\n"
    );
    t
}

#[test]
fn six_tasks_three_at_a_time() {
    let env = TestEnv::new(replies(TASKS));
    let tasks = tasks_file(&env);
    let dir = env.out("results");
    let out = env.run(&[
        "batch",
        &tasks,
        "--out",
        dir.to_str().unwrap(),
        "--parallel",
        "3",
    ]);
    out.assert_code(0).assert_no_secret();
    let dir = dir.canonicalize().unwrap();
    for i in 1..=TASKS {
        check_task(&dir, &format!("task-{i}"), &env.ws());
        assert!(dir.join(format!("task-{i}.log")).is_file());
    }
    let s = read_json(&dir.join("summary.json"));
    assert_eq!(out.json(), s, "the summary is also printed");
    assert_eq!(s["version"], 1);
    assert_eq!(s["total"], TASKS);
    assert_eq!(s["succeeded"], TASKS);
    assert_eq!(s["all_succeeded"], true);
    assert_eq!(s["status_counts"], json!({"success": TASKS}));
    assert_eq!(s["parallel"], 3);
    assert!(s["shard"].is_null());
    assert_eq!(s["usage"]["input_tokens"], 100 * TASKS as u64);
    assert_eq!(s["usage"]["output_tokens"], 20 * TASKS as u64);
    assert!(s["cost_usd"].is_null(), "the mock model has no price");
    assert!(s["wall_time_ms"].is_u64());
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["task-1", "task-2", "task-3", "task-4", "task-5", "task-6"]
    );
    for t in s["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "success");
        assert_eq!(t["exit_code"], 0);
        assert_eq!(t["num_turns"], 1);
        assert_eq!(t["workspace_kind"], "copy");
    }
    // Every task made exactly its one request, with its own prompt.
    let mut prompts: Vec<String> = env
        .server
        .requests()
        .iter()
        .map(|r| r.first_user_text())
        .collect();
    prompts.sort();
    let expected: Vec<String> = (1..=TASKS).map(|i| format!("do task {i}")).collect();
    assert_eq!(prompts, expected);
    env.server.assert_invariants();
}

#[test]
fn shard_2_of_3_runs_every_third_task() {
    let env = TestEnv::new(replies(2));
    let tasks = tasks_file(&env);
    let dir = env.out("results");
    let out = env.run(&[
        "batch",
        &tasks,
        "--out",
        dir.to_str().unwrap(),
        "--parallel",
        "3",
        "--shard",
        "2/3",
    ]);
    out.assert_code(0);
    let dir = dir.canonicalize().unwrap();
    // Indices 1 and 4 (0-based): task-2 and task-5.
    for id in ["task-2", "task-5"] {
        check_task(&dir, id, &env.ws());
    }
    for id in ["task-1", "task-3", "task-4", "task-6"] {
        assert!(
            !dir.join(format!("{id}.json")).exists(),
            "{id} belongs to another shard"
        );
    }
    let s = read_json(&dir.join("summary.json"));
    assert_eq!(s["total"], 2);
    assert_eq!(s["shard"], json!({"index": 2, "count": 3}));
    assert_eq!(s["status_counts"], json!({"success": 2}));
    assert_eq!(env.server.request_count(), 2);
    env.server.assert_script_consumed();
}

#[test]
fn failed_tasks_are_counted_and_the_batch_exits_1() {
    // Task 1 succeeds; task 2 ends with max_turns (its one allowed turn wants a tool).
    let env = TestEnv::new(vec![
        Reply::Sse(turn_text("task done")),
        Reply::Sse(turn_tools(&[("toolu_1", "Glob", json!({"pattern": "*"}))])),
    ]);
    env.write("proj/README", "x\n");
    env.write(
        "tasks.jsonl",
        "{\"id\":\"ok\",\"prompt\":\"a\",\"workspace\":\"proj\"}\n\
         {\"id\":\"limited\",\"prompt\":\"b\",\"workspace\":\"proj\",\"args\":[\"--max-turns\",\"1\"]}\n",
    );
    let dir = env.out("results");
    let out = env.run(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
    out.assert_code(1);
    let s = out.json();
    assert_eq!(s["status_counts"], json!({"max_turns": 1, "success": 1}));
    assert_eq!(s["tasks"][1]["exit_code"], 3);
    assert_eq!(s["all_succeeded"], false);
}

#[test]
fn the_demo_cassette_fixes_each_copy_and_never_the_source() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo");
    let env = TestEnv::new(vec![]);
    let cassette = demo.join("demo.cassette.jsonl");
    copy_tree(&demo.join("project"), &env.path("project"));
    let original = env.read("project/lib/stats.sh");
    let line = |id: &str| {
        json!({"id": id, "prompt": "Fix the failing tests", "workspace": "project",
               "args": ["--full-auto", "--replay", cassette.to_str().unwrap()]})
        .to_string()
    };
    env.write("tasks.jsonl", &format!("{}\n{}\n", line("a"), line("b")));
    let dir = env.out("results");
    let out = env.run(&[
        "batch",
        "tasks.jsonl",
        "--out",
        dir.to_str().unwrap(),
        "--parallel",
        "2",
    ]);
    out.assert_code(0);
    assert_eq!(
        env.read("project/lib/stats.sh"),
        original,
        "the source is untouched"
    );
    for id in ["a", "b"] {
        let ws = dir.join("workspaces").join(id);
        let fixed = std::fs::read_to_string(ws.join("lib/stats.sh")).unwrap();
        assert_ne!(fixed, original, "{id}: the copy was fixed");
        let t = read_json(&dir.join(format!("{id}.json")));
        assert!(
            t["files_changed"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["path"] == "lib/stats.sh"),
            "{}",
            t["files_changed"]
        );
    }
    assert_eq!(env.server.request_count(), 0, "replay needs no server");
}

#[test]
fn bad_task_files_are_usage_errors() {
    let env = TestEnv::new(vec![]);
    env.write(
        "dup.jsonl",
        "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"a\",\"prompt\":\"q\"}\n",
    );
    let out = env.run(&["batch", "dup.jsonl", "--out", "r"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("line 2: duplicate id"),
        "{}",
        out.stderr
    );
    let out = env.run(&["batch", "dup.jsonl", "--out", "r", "--shard", "4/3"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--shard"), "{}", out.stderr);
    env.write(
        "ws.jsonl",
        "{\"id\":\"a\",\"prompt\":\"p\",\"workspace\":\"nope\"}\n",
    );
    let out = env.run(&["batch", "ws.jsonl", "--out", "r"]);
    out.assert_code(2);
    assert!(out.stderr.contains("workspace"), "{}", out.stderr);
}

#[test]
fn the_id_summary_is_reserved() {
    let env = TestEnv::new(vec![]);
    env.write("proj/README", "x\n");
    env.write(
        "tasks.jsonl",
        "{\"id\":\"summary\",\"prompt\":\"a\",\"workspace\":\"proj\"}\n",
    );
    let dir = env.out("results");
    let out = env.run(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
    out.assert_code(2);
    assert!(out.stderr.contains("reserved"), "{}", out.stderr);
}

/// A task whose agent is killed (here by its own Bash call: the shell's parent is its
/// supervisor, whose parent is the agent) leaves a checkpoint saying `running`: the
/// batch reports it as an error with the signal, never as running.
#[test]
fn a_killed_task_is_an_error_not_running() {
    let env = TestEnv::new(vec![Reply::Sse(turn_tools(&[(
        "toolu_k",
        "Bash",
        json!({"command": "kill -9 $(ps -o ppid= -p $PPID)"}),
    )]))]);
    env.write("proj/README", "x\n");
    env.write(
        "tasks.jsonl",
        "{\"id\":\"k\",\"prompt\":\"a\",\"workspace\":\"proj\",\"args\":[\"--allow-bash\"]}\n",
    );
    let dir = env.out("results");
    let out = env.run(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
    out.assert_code(1);
    let s = out.json();
    assert_eq!(s["tasks"][0]["status"], "error", "{s}");
    let err = s["tasks"][0]["error"].as_str().unwrap();
    assert!(err.contains("killed") && err.contains("signal 9"), "{err}");
    // The row comes from the checkpoint in the transcript's journal (the turn whose call
    // killed it), not from the transcript file alone, which was written at the start.
    assert_eq!(s["tasks"][0]["num_turns"], 1, "{s}");
}

/// A task's args go through `agent run`'s own parser
/// and checks before anything runs: exit 2 naming the task and the flag, no workspace
/// copied, no request made, and no Rust debug text (`Some(2)`) in the message.
#[test]
fn bad_args_stop_the_batch_before_any_workspace_is_copied() {
    for (args, needle) in [
        (json!(["-C/tmp"]), "-C/--cwd is set by the batch"),
        (json!(["-o/tmp/x"]), "-o/--output is set by the batch"),
        (json!(["--cwd=x"]), "-C/--cwd is set by the batch"),
        (json!(["--output=x"]), "-o/--output is set by the batch"),
        (json!(["--", "another prompt"]), "`--` is not allowed"),
        (json!(["--max-turns", "many"]), "--max-turns"),
        (json!(["--bogus-flag"]), "--bogus-flag"),
        // Passes clap, fails `agent run`'s own checks: caught up front too.
        (
            json!(["--max-turns", "0"]),
            "--max-turns must be at least 1",
        ),
    ] {
        let env = TestEnv::new(vec![]);
        env.write("proj/README", "x\n");
        let good = json!({"id": "good", "prompt": "p", "workspace": "proj"});
        let bad = json!({"id": "bad", "prompt": "p", "workspace": "proj", "args": args});
        env.write("tasks.jsonl", &format!("{good}\n{bad}\n"));
        let dir = env.out("results");
        let out = env.run(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
        out.assert_code(2);
        assert!(
            out.stderr.contains("task \"bad\""),
            "{args}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(needle), "{args}: {}", out.stderr);
        assert!(!out.stderr.contains("Some("), "{}", out.stderr);
        assert!(
            !dir.exists(),
            "{args}: nothing was created before the check"
        );
        assert_eq!(env.server.request_count(), 0);
    }
}

/// Each shard's summary carries its tasks file's SHA-256; `merge` refuses shards of two
/// different files (shard 1/2 of A and 2/2 of B), naming both, and writes nothing. An
/// older summary without the digest merges only when it names the same file.
#[test]
fn merge_refuses_shards_of_different_tasks_files() {
    let env = TestEnv::new(replies(TASKS));
    let a = tasks_file(&env);
    let b_text = env.read(&a).replace("do task", "do another task");
    env.write("b.jsonl", &b_text);
    let (one, two) = (env.out("a-1"), env.out("b-2"));
    for (file, shard, dir) in [(a.as_str(), "1/2", &one), ("b.jsonl", "2/2", &two)] {
        let out = env.run(&[
            "batch",
            file,
            "--out",
            dir.to_str().unwrap(),
            "--shard",
            shard,
        ]);
        out.assert_code(0);
    }
    let s1 = read_json(&one.join("summary.json"));
    let digest = s1["tasks_sha256"].as_str().unwrap();
    assert_eq!(digest.len(), 64, "{s1}");
    let b_digest = read_json(&two.join("summary.json"))["tasks_sha256"].clone();
    assert_ne!(b_digest, s1["tasks_sha256"]);

    let merged = env.out("merged");
    let merge = |dirs: [&Path; 2]| {
        env.run(&[
            "batch",
            "merge",
            merged.to_str().unwrap(),
            dirs[0].to_str().unwrap(),
            dirs[1].to_str().unwrap(),
        ])
    };
    let out = merge([&one, &two]);
    out.assert_code(2);
    for needle in [
        "ran different tasks files",
        "\"tasks.jsonl\"",
        "\"b.jsonl\"",
        digest,
        b_digest.as_str().unwrap(),
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
    assert!(!merged.exists(), "nothing written");

    // An older shard 2/2 (no digest): accepted only when it names the same file.
    let mut old = read_json(&two.join("summary.json"));
    old.as_object_mut().unwrap().remove("tasks_sha256");
    std::fs::write(two.join("summary.json"), old.to_string()).unwrap();
    let out = merge([&one, &two]);
    out.assert_code(2);
    assert!(out.stderr.contains("no digest"), "{}", out.stderr);
    old["tasks_file"] = s1["tasks_file"].clone();
    std::fs::write(two.join("summary.json"), old.to_string()).unwrap();
    merge([&one, &two]).assert_code(0);
    let m = read_json(&merged.join("summary.json"));
    assert_eq!(m["tasks_sha256"], s1["tasks_sha256"]);
    assert_eq!(m["tasks_file"], s1["tasks_file"]);
}
