//! `agent batch` at scale: resume after a kill, `--retry-failed`, changed task
//! lines, the batch cost cap, `--task-timeout`, `--repeat` with pass@k, `setup`,
//! `--shard auto` per CI engine, `batch merge` and `batch report`, and the progress
//! lines a CI log shows.

use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Requests the mock received, counted per task prompt.
fn per_prompt(env: &TestEnv) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in env.server.requests() {
        *m.entry(r.first_user_text()).or_default() += 1;
    }
    m
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// `n` tasks `t1`…`tn` on `proj`, with prompts `do t1`… and these extra args.
fn write_tasks(env: &TestEnv, n: usize, args: Value) {
    env.write("proj/README", "a project\n");
    let lines: Vec<String> = (1..=n)
        .map(|i| {
            json!({"id": format!("t{i}"), "prompt": format!("do t{i}"), "workspace": "proj",
                   "args": args})
            .to_string()
        })
        .collect();
    env.write("tasks.jsonl", &(lines.join("\n") + "\n"));
}

fn batch(env: &TestEnv, dir: &Path, extra: &[&str]) -> RunOutput {
    let mut args = vec!["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    env.run(&args)
}

fn row<'a>(s: &'a Value, id: &str) -> &'a Value {
    s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no row {id} in {s}"))
}

fn pass() -> Reply {
    Reply::Sse(turn_text("task done"))
}

/// With `--max-turns 1`, a turn that wants a tool ends the run with max_turns.
fn fail() -> Reply {
    Reply::Sse(turn_tools(&[("toolu_1", "Glob", json!({"pattern": "*"}))]))
}

/// The batch is SIGKILLed while its third task waits on the model. `--resume` then
/// skips the two finished tasks (the mock sees no second request for them), re-runs
/// the killed one (its transcript said `running`) in a fresh copy, and runs the last.
#[test]
fn a_batch_killed_halfway_resumes_where_it_stopped() {
    let env = TestEnv::new(vec![pass(), pass(), Reply::Hang(vec![]), pass(), pass()]);
    write_tasks(&env, 4, json!([]));
    let dir = env.out("results");
    let mut c = env.command(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
    c.stdin(std::process::Stdio::null());
    let running = env.spawn_command(c);
    env.server.wait_for_requests(3);
    let t3 = read_json(&dir.join("t3.json"));
    assert_eq!(t3["status"], "running", "t3 is mid-run");
    // A marker left in t3's copy: the re-run must start from a fresh one.
    std::fs::write(dir.join("workspaces/t3/STALE"), "x").unwrap();
    running.signal(libc::SIGKILL);
    let killed = running.wait();
    assert_eq!(killed.status.code(), None, "killed by a signal");
    // The killed batch's running task died with it (PR_SET_PDEATHSIG), rather than
    // running on unsupervised beside the resumed batch.
    let t3_json = dir.join("t3.json").display().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !agents_running_with(&t3_json).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "t3's agent outlived the batch: {:?}",
            agents_running_with(&t3_json)
        );
        std::thread::yield_now();
    }
    assert!(!dir.join("summary.json").exists());
    assert_eq!(read_json(&dir.join("t3.json"))["status"], "running");

    let out = batch(&env, &dir, &["--resume"]);
    out.assert_code(0);
    assert_eq!(
        per_prompt(&env),
        counts(&[("do t1", 1), ("do t2", 1), ("do t3", 2), ("do t4", 1)])
    );
    let s = out.json();
    assert_eq!(s["skipped"], 2);
    assert_eq!(s["status_counts"], json!({"success": 4}));
    for id in ["t1", "t2"] {
        assert_eq!(row(&s, id)["skipped"], true, "{id}");
        assert_eq!(
            row(&s, id)["num_turns"],
            1,
            "{id}: its row comes from its transcript"
        );
    }
    assert_eq!(row(&s, "t3")["skipped"], false);
    let note = row(&s, "t3")["note"].as_str().unwrap();
    assert!(note.contains("killed") && note.contains("fresh"), "{note}");
    assert!(row(&s, "t4")["note"].is_null(), "a first run has no note");
    assert!(!dir.join("workspaces/t3/STALE").exists(), "a fresh copy");
    assert_eq!(read_json(&dir.join("t3.json"))["status"], "success");
    assert!(
        out.stderr.contains("skipped: finished earlier"),
        "{}",
        out.stderr
    );
}

/// `--resume` alone keeps a failed task's result; `--retry-failed` runs it again.
#[test]
fn retry_failed_reruns_only_the_failures() {
    let env = TestEnv::new(vec![pass(), fail(), pass(), pass()]);
    write_tasks(&env, 3, json!(["--max-turns", "1"]));
    let dir = env.out("results");
    batch(&env, &dir, &[]).assert_code(1);
    assert_eq!(read_json(&dir.join("t2.json"))["status"], "max_turns");
    // --resume: everything has a final status; nothing runs.
    let out = batch(&env, &dir, &["--resume"]);
    out.assert_code(1);
    assert_eq!(out.json()["skipped"], 3);
    assert_eq!(env.server.request_count(), 3);
    assert_eq!(
        row(&out.json(), "t2")["exit_code"],
        3,
        "the recorded exit code"
    );
    // --retry-failed: only t2 runs again (and passes this time).
    let out = batch(&env, &dir, &["--resume", "--retry-failed"]);
    out.assert_code(0);
    assert_eq!(
        per_prompt(&env),
        counts(&[("do t1", 1), ("do t2", 2), ("do t3", 1)])
    );
    let s = out.json();
    assert_eq!(s["skipped"], 2);
    let note = row(&s, "t2")["note"].as_str().unwrap();
    assert!(
        note.contains("--retry-failed") && note.contains("max_turns"),
        "{note}"
    );
    // --retry-failed without --resume is a usage error.
    let out = batch(&env, &dir, &["--retry-failed"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--resume"), "{}", out.stderr);
}

/// A task whose line changed since the earlier run is run again, with a note.
#[test]
fn a_changed_task_line_is_rerun_with_a_note() {
    let env = TestEnv::new(vec![pass(), pass(), pass()]);
    write_tasks(&env, 2, json!([]));
    let dir = env.out("results");
    batch(&env, &dir, &[]).assert_code(0);
    let text = env
        .read("tasks.jsonl")
        .replace("\"do t2\"", "\"do t2 better\"");
    env.write("tasks.jsonl", &text);
    let out = batch(&env, &dir, &["--resume"]);
    out.assert_code(0);
    let s = out.json();
    assert_eq!(s["skipped"], 1);
    let note = row(&s, "t2")["note"].as_str().unwrap();
    assert!(
        note.contains("changed") && note.contains("prompt"),
        "{note}"
    );
    assert_eq!(per_prompt(&env)["do t2 better"], 1);
}

/// `--max-cost-usd`: once the batch has spent the cap, no task starts; the rest are
/// `not_run` and the batch exits 3.
#[test]
fn the_batch_cost_cap_stops_new_tasks() {
    let env = TestEnv::new(vec![pass(), pass(), pass(), pass()]);
    write_tasks(&env, 4, json!([]));
    // 100 input tokens per turn at $2000/MTok: $0.20 a task.
    env.write(
        "proj/.agent/settings.json",
        r#"{"prices": {"claude-mock": {"input": 2000, "output": 0, "cache_write": 0, "cache_read": 0}}}"#,
    );
    let dir = env.out("results");
    let out = batch(&env, &dir, &["--max-cost-usd", "0.35"]);
    out.assert_code(3);
    let s = out.json();
    assert_eq!(s["status_counts"], json!({"not_run": 2, "success": 2}));
    assert_eq!(env.server.request_count(), 2);
    assert_eq!(s["cost_usd"], 0.4);
    let why = row(&s, "t3")["error"].as_str().unwrap();
    assert!(
        why.contains("--max-cost-usd 0.35") && why.contains("$0.4000"),
        "{why}"
    );
    // A bad cap is a usage error.
    batch(&env, &dir, &["--max-cost-usd", "0"]).assert_code(2);
}

/// With a cap, a finished task whose cost is unknown (no price for its model) stops new
/// starts: the batch can no longer tell what it spent.
#[test]
fn an_unknown_cost_stops_a_capped_batch() {
    let env = TestEnv::new(vec![pass(), pass()]);
    write_tasks(&env, 3, json!([]));
    let dir = env.out("results");
    let out = batch(&env, &dir, &["--max-cost-usd", "5"]);
    out.assert_code(3);
    let s = out.json();
    assert_eq!(s["status_counts"], json!({"not_run": 2, "success": 1}));
    let why = row(&s, "t2")["error"].as_str().unwrap();
    assert!(why.contains("cost of task t1 is unknown"), "{why}");
    assert_eq!(env.server.request_count(), 1);
}

/// `--task-timeout` becomes each task's `--timeout`, unless its args set one.
#[test]
fn task_timeout_applies_unless_the_task_sets_its_own() {
    let env = TestEnv::new(vec![Reply::Hang(vec![]), Reply::Hang(vec![])]);
    env.write("proj/README", "x\n");
    env.write(
        "tasks.jsonl",
        "{\"id\":\"plain\",\"prompt\":\"a\",\"workspace\":\"proj\"}\n\
         {\"id\":\"own\",\"prompt\":\"b\",\"workspace\":\"proj\",\"args\":[\"--timeout=1500ms\"]}\n",
    );
    let dir = env.out("results");
    let out = batch(&env, &dir, &["--task-timeout", "1s", "--parallel", "2"]);
    out.assert_code(1);
    let s = out.json();
    for (id, limit) in [("plain", "--timeout 1s"), ("own", "--timeout 1s 500ms")] {
        let r = row(&s, id);
        assert_eq!(r["status"], "timeout", "{id}");
        assert_eq!(r["exit_code"], 124, "{id}");
        let e = r["error"].as_str().unwrap();
        assert!(e.contains(limit), "{id}: {e}");
    }
}

/// `--repeat 3` against a mock that fails every other run: runs a~1 a~2 a~3 b~1 b~2
/// b~3 go pass, fail, pass, fail, pass, fail. a passes 2 of 3, b 1 of 3, so pass@1 =
/// (2/3 + 1/3) / 2 = 0.5, pass@2 = (1 + (1 - C(2,2)/C(3,2))) / 2 = 5/6, pass@3 = 1.
#[test]
fn repeat_three_gives_pass_at_k() {
    let env = TestEnv::new(vec![pass(), fail(), pass(), fail(), pass(), fail()]);
    env.write("proj/README", "x\n");
    env.write(
        "tasks.jsonl",
        "{\"id\":\"a\",\"prompt\":\"do a\",\"workspace\":\"proj\",\"args\":[\"--max-turns\",\"1\"]}\n\
         {\"id\":\"b\",\"prompt\":\"do b\",\"workspace\":\"proj\",\"args\":[\"--max-turns\",\"1\"]}\n",
    );
    let dir = env.out("results");
    let out = batch(&env, &dir, &["--repeat", "3"]);
    out.assert_code(1);
    let s = out.json();
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a~1", "a~2", "a~3", "b~1", "b~2", "b~3"]);
    assert_eq!(s["repeat"], 3);
    assert_eq!(
        s["per_task"],
        json!([{"id": "a", "runs": 3, "passes": 2}, {"id": "b", "runs": 3, "passes": 1}])
    );
    let p = |k: &str| s["pass_at"][k].as_f64().unwrap();
    assert!((p("1") - 0.5).abs() < 1e-9, "{}", s["pass_at"]);
    assert!((p("2") - 5.0 / 6.0).abs() < 1e-9, "{}", s["pass_at"]);
    assert!((p("3") - 1.0).abs() < 1e-9, "{}", s["pass_at"]);
    for id in &ids {
        assert!(dir.join(format!("{id}.json")).is_file(), "{id}");
        assert!(
            dir.join("workspaces").join(id).is_dir(),
            "{id}: its own workspace"
        );
    }
    assert_eq!(per_prompt(&env), counts(&[("do a", 3), ("do b", 3)]));
    // The report shows the same numbers.
    let md = env.run(&["batch", "report", dir.to_str().unwrap()]);
    md.assert_code(0);
    assert!(
        md.stdout
            .contains("| pass@k | pass@1 0.500 · pass@2 0.833 · pass@3 1.000 |"),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout.contains("| <code>b</code> | 1 | 3 |"),
        "{}",
        md.stdout
    );
}

/// A failing `setup` makes the task `setup_failed` and the agent does not run; a passing
/// one runs in the task's copy (not the source), without the API key in its
/// environment, and its output heads the task's log.
#[test]
fn setup_failure_skips_the_agent() {
    let env = TestEnv::new(vec![pass()]);
    env.write("proj/README", "x\n");
    let lines = [
        json!({"id": "broken", "prompt": "do broken", "workspace": "proj",
               "setup": "echo SETUP-SAYS-NO; exit 7"}),
        json!({"id": "ready", "prompt": "do ready", "workspace": "proj",
               "setup": "test -z \"$ANTHROPIC_API_KEY\" && echo made > made.txt && echo SETUP-OK"}),
    ];
    env.write("tasks.jsonl", &format!("{}\n{}\n", lines[0], lines[1]));
    let dir = env.out("results");
    let out = batch(&env, &dir, &[]);
    out.assert_code(1).assert_no_secret();
    let s = out.json();
    assert_eq!(s["status_counts"], json!({"setup_failed": 1, "success": 1}));
    let e = row(&s, "broken")["error"].as_str().unwrap();
    assert!(e.contains("exit 7") && e.contains("SETUP-SAYS-NO"), "{e}");
    assert_eq!(per_prompt(&env), counts(&[("do ready", 1)]));
    // The batch's stand-in is a whole transcript (read_json checks it against the
    // schema) that says who wrote it.
    let stand_in = read_json(&dir.join("broken.json"));
    assert_eq!(stand_in["status"], "setup_failed");
    assert_eq!(stand_in["subtype"], "error_during_execution");
    assert_eq!(stand_in["error"]["kind"], "setup_failed");
    assert_eq!(
        stand_in["written_by"],
        "agent batch (the agent did not run)"
    );
    assert!(dir.join("workspaces/ready/made.txt").is_file());
    assert!(
        !env.path("proj/made.txt").exists(),
        "the source is untouched"
    );
    let log = std::fs::read_to_string(dir.join("ready.log")).unwrap();
    assert!(log.starts_with("agent batch: setup: "), "{log}");
    assert!(log.contains("SETUP-OK"), "{log}");
    // --resume skips a setup_failed task like any finished one.
    let out = batch(&env, &dir, &["--resume"]);
    assert_eq!(out.json()["skipped"], 2);
}

/// The variables one CI job of a sharded run sees.
type ShardEnv = Vec<(&'static str, String)>;

/// `--shard auto` with each engine's variables: the shards' union is the task list,
/// each task exactly once; with none set, exit 2 names the variables.
#[test]
fn shard_auto_reads_each_engine_and_covers_the_file() {
    const TASKS: usize = 5;
    let engines: [(&str, Vec<ShardEnv>); 4] = [
        (
            "gitlab",
            (1..=3)
                .map(|i| {
                    vec![
                        ("CI_NODE_INDEX", i.to_string()),
                        ("CI_NODE_TOTAL", "3".into()),
                    ]
                })
                .collect(),
        ),
        (
            "circleci",
            (0..2)
                .map(|i| {
                    vec![
                        ("CIRCLE_NODE_INDEX", i.to_string()),
                        ("CIRCLE_NODE_TOTAL", "2".into()),
                    ]
                })
                .collect(),
        ),
        (
            "buildkite",
            (0..2)
                .map(|i| {
                    vec![
                        ("BUILDKITE_PARALLEL_JOB", i.to_string()),
                        ("BUILDKITE_PARALLEL_JOB_COUNT", "2".into()),
                    ]
                })
                .collect(),
        ),
        (
            "kubernetes",
            (0..3)
                .map(|i| {
                    vec![
                        ("JOB_COMPLETION_INDEX", i.to_string()),
                        ("AGENT_SHARDS", "3".into()),
                    ]
                })
                .collect(),
        ),
    ];
    for (engine, shards) in engines {
        let env = TestEnv::new((0..TASKS).map(|_| pass()).collect());
        write_tasks(&env, TASKS, json!([]));
        let mut seen = Vec::new();
        for (n, vars) in shards.iter().enumerate() {
            let dir = env.out(&format!("{engine}-{n}"));
            let mut c = env.command(&[
                "batch",
                "tasks.jsonl",
                "--out",
                dir.to_str().unwrap(),
                "--shard",
                "auto",
            ]);
            for (k, v) in vars {
                c.env(k, v);
            }
            let out = env.spawn_command(c).wait();
            out.assert_code(0);
            let s = out.json();
            assert_eq!(s["shard"]["index"], n + 1, "{engine}: {vars:?}");
            assert_eq!(s["shard"]["count"], shards.len(), "{engine}");
            for t in s["tasks"].as_array().unwrap() {
                seen.push(t["id"].as_str().unwrap().to_string());
            }
        }
        seen.sort();
        let all: Vec<String> = (1..=TASKS).map(|i| format!("t{i}")).collect();
        assert_eq!(seen, all, "{engine}: every task exactly once");
        env.server.assert_script_consumed();
    }
    let env = TestEnv::new(vec![]);
    write_tasks(&env, 2, json!([]));
    let dir = env.out("r");
    let out = batch(&env, &dir, &["--shard", "auto"]);
    out.assert_code(2);
    for var in [
        "CI_NODE_INDEX",
        "CIRCLE_NODE_INDEX",
        "BUILDKITE_PARALLEL_JOB",
        "JOB_COMPLETION_INDEX",
    ] {
        assert!(out.stderr.contains(var), "{var}: {}", out.stderr);
    }
    assert!(!dir.exists());
}

/// Three shard outputs merge into one summary with every task, its transcript and log;
/// a missing shard and the same id with different results are refused.
#[test]
fn merge_three_shards_then_report() {
    const TASKS: usize = 6;
    let env = TestEnv::new((0..TASKS).map(|_| pass()).collect());
    write_tasks(&env, TASKS, json!([]));
    let shard_dir = |i: usize| env.out(&format!("shard-{i}"));
    for i in 1..=3 {
        batch(&env, &shard_dir(i), &["--shard", &format!("{i}/3")]).assert_code(0);
    }
    let merged = env.out("merged");
    let dirs: Vec<PathBuf> = (1..=3).map(shard_dir).collect();
    let d = |p: &PathBuf| p.to_str().unwrap().to_string();
    let mut args = vec!["batch".to_string(), "merge".into(), d(&merged)];
    args.extend(dirs.iter().map(d));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.run(&argv);
    out.assert_code(0);
    let s = read_json(&merged.join("summary.json"));
    assert_eq!(out.json(), s);
    assert_eq!(s["total"], TASKS);
    assert_eq!(s["succeeded"], TASKS);
    assert_eq!(s["shards"], json!({"count": 3, "merged": [1, 2, 3]}));
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["t1", "t2", "t3", "t4", "t5", "t6"], "file order");
    for i in 1..=TASKS {
        assert!(merged.join(format!("t{i}.json")).is_file());
        assert!(merged.join(format!("t{i}.log")).is_file());
    }
    // The same shard twice (a re-uploaded artifact) is fine: same results.
    let mut again = argv.clone();
    let dup = d(&dirs[0]);
    again.push(&dup);
    let other = env.out("merged-again");
    let other_s = d(&other);
    again[2] = &other_s;
    env.run(&again).assert_code(0);

    // A missing shard.
    let out = env.run(&[
        "batch",
        "merge",
        env.out("m2").to_str().unwrap(),
        &d(&dirs[0]),
        &d(&dirs[2]),
    ]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("missing shard(s) 2 of 3"),
        "{}",
        out.stderr
    );
    assert!(!env.out("m2").exists(), "nothing written");
    // The same id with a different result.
    let forged = env.out("forged");
    std::fs::create_dir_all(&forged).unwrap();
    let mut f = read_json(&dirs[0].join("summary.json"));
    f["tasks"][0]["status"] = json!("error");
    std::fs::write(forged.join("summary.json"), f.to_string()).unwrap();
    let out = env.run(&[
        "batch",
        "merge",
        env.out("m3").to_str().unwrap(),
        &d(&dirs[0]),
        &d(&forged),
        &d(&dirs[1]),
        &d(&dirs[2]),
    ]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("\"t1\"") && out.stderr.contains("different results"),
        "{}",
        out.stderr
    );
    // Shards of different totals.
    let mut f = read_json(&dirs[0].join("summary.json"));
    f["shard"]["count"] = json!(4);
    std::fs::write(forged.join("summary.json"), f.to_string()).unwrap();
    let out = env.run(&[
        "batch",
        "merge",
        env.out("m4").to_str().unwrap(),
        &d(&forged),
        &d(&dirs[1]),
        &d(&dirs[2]),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("different totals"), "{}", out.stderr);
    // Not a batch directory.
    let out = env.run(&[
        "batch",
        "merge",
        env.out("m5").to_str().unwrap(),
        env.out("nowhere").to_str().unwrap(),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("summary.json"), "{}", out.stderr);

    // The report of the merged directory: Markdown tables and the JSON numbers.
    let md = env.run(&["batch", "report", merged.to_str().unwrap()]);
    md.assert_code(0);
    for needle in [
        "### agent batch: ✅ 6 of 6 runs succeeded",
        "| Pass rate | 100.0% |",
        "| Statuses | success 6 |",
        "| Turns | median 1 · p90 1 |",
        "#### Runs (6)\n\n| Task | Status | Turns | Cost | Tokens | Duration | Transcript |\n|---|---|---|---|---|---|---|\n",
        "| <code>t1</code> | success | 1 | unknown | 120 |",
        "[<code>t6.json</code>](t6.json) |",
    ] {
        assert!(
            md.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            md.stdout
        );
    }
    let js = env.run(&[
        "batch",
        "report",
        merged.to_str().unwrap(),
        "--format",
        "json",
    ]);
    js.assert_code(0);
    let r = js.json();
    assert_eq!(r["pass_rate"], 1.0);
    assert_eq!(r["tokens"]["total"], 120 * TASKS as u64);
    assert_eq!(r["turns"]["median"], 1.0);
    assert_eq!(r["rows"].as_array().unwrap().len(), TASKS);
    let out = env.run(&["batch", "report", env.out("nowhere").to_str().unwrap()]);
    out.assert_code(2);
}

/// Off a terminal, each finished task is one plain line on stderr: id, status, turns,
/// cost and duration, numbered against the total.
#[test]
fn progress_lines_off_a_terminal() {
    let env = TestEnv::new(vec![pass(), fail()]);
    write_tasks(&env, 2, json!(["--max-turns", "1"]));
    let dir = env.out("results");
    let out = batch(&env, &dir, &[]);
    out.assert_code(1);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("batch: ["))
        .collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].starts_with("agent: batch: [1/2] t1 success · 1 turn · cost unknown · "),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(" s"), "{}", lines[0]);
    assert!(
        lines[1].starts_with("agent: batch: [2/2] t2 max_turns · 1 turn · "),
        "{}",
        lines[1]
    );
    assert!(!out.stderr.contains('\r'), "no bar drawing off a terminal");
}

/// The offline batch of docs/guide/batch.md and getting-started.md: the shipped tasks file replays the demo cassette, from a
/// copy of the repository's `fixtures/demo` laid out as in a clone, with no API key;
/// then `batch report` renders it.
#[test]
fn the_readme_batch_demo_runs_offline() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = TestEnv::new(vec![]);
    let root = env.out("clone");
    copy_tree(&repo.join("fixtures/demo"), &root.join("fixtures/demo"));
    let results = env.out("results");
    let run = |args: &[&str]| {
        let mut c = env.command(args);
        c.env_remove("ANTHROPIC_API_KEY").current_dir(&root);
        env.spawn_command(c).wait()
    };
    let out = run(&[
        "batch",
        "fixtures/demo/tasks.jsonl",
        "--out",
        results.to_str().unwrap(),
        "--repeat",
        "2",
        "--parallel",
        "2",
    ]);
    out.assert_code(0);
    let s = out.json();
    assert_eq!(s["total"], 4);
    assert_eq!(s["pass_at"]["2"], 1.0);
    let md = run(&["batch", "report", results.to_str().unwrap()]);
    md.assert_code(0);
    assert!(
        md.stdout
            .contains("### agent batch: ✅ 4 of 4 runs succeeded"),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout
            .contains("[<code>fix-stats~1.json</code>](fix-stats~1.json)"),
        "{}",
        md.stdout
    );
    assert_eq!(env.server.request_count(), 0, "offline");
    // The guide runs it as `cargo run -q -- batch …`: with more than one binary in the
    // package, that needs the agent named as the default.
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("\ndefault-run = \"agent\"\n"),
        "{manifest}"
    );
}

/// Live (not zombie) processes whose command line contains `needle`.
fn agents_running_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

/// SIGTERM while a task's setup runs stops the setup (its whole process group) and the
/// task is `interrupted`, not `setup_failed`; the batch exits 130.
#[test]
fn a_signal_during_setup_interrupts_the_task() {
    let env = TestEnv::new(vec![]);
    env.write("proj/README", "x\n");
    let fifo = env.out("setup-started");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let setup = format!("echo started > '{}'; sleep 120", fifo.display());
    env.write(
        "tasks.jsonl",
        &format!(
            "{}\n",
            json!({"id": "slow", "prompt": "p", "workspace": "proj", "setup": setup})
        ),
    );
    let dir = env.out("results");
    let running =
        env.spawn_command(env.command(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]));
    // Opening the FIFO blocks until the setup opens it: then the setup is running. (In a
    // thread, so a batch that never gets there fails the test instead of hanging it.)
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    std::thread::spawn(move || tx.send(std::fs::read_to_string(&reader)));
    let said = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the setup never started")
        .unwrap();
    assert_eq!(said, "started\n");
    running.signal(libc::SIGTERM);
    let out = running.wait();
    out.assert_code(130);
    let s = out.json();
    assert_eq!(s["tasks"][0]["status"], "interrupted", "{s}");
    assert_eq!(env.server.request_count(), 0);
}

/// On a terminal (here a pseudo-terminal as stderr) the bar shows the runs done of the
/// total, the successes, the running tasks and the cost so far.
#[test]
fn a_terminal_gets_a_progress_bar() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let env = TestEnv::new(vec![pass(), Reply::Hang(vec![])]);
    write_tasks(&env, 2, json!([]));
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two fds we then own; no name, termios or size given.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: both fds are fresh from openpty and owned only here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let dir = env.out("results");
    let mut c = env.command(&["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()]);
    c.stderr(std::process::Stdio::from(slave));
    let running = env.spawn_command(c);
    // Read the terminal until the bar shows t1 done and t2 running.
    let mut term = std::fs::File::from(master);
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !seen.contains("1 succeeded · 1 running") {
        assert!(std::time::Instant::now() < deadline, "no such bar: {seen}");
        let n = term.read(&mut buf).expect("the bar before the pty closed");
        assert!(n > 0, "the terminal closed first: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("1/2"), "{seen}");
    assert!(seen.contains("$0.0000"), "{seen}");
    assert!(
        seen.contains("batch: [1/2] t1 success"),
        "the finished line too: {seen}"
    );
    running.signal(libc::SIGTERM);
    running.wait().assert_code(130);
}
