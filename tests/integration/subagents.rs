//! Task's sub-agents against the scripted mock: three `explore` sub-agents of one turn
//! run at the same time (the mock holds their answers until all three requests are in),
//! `general` ones run one after another with the run's tools, budgets are shared (a
//! sub-agent that would pass `--max-turns` is stopped, and the run with it), the
//! transcript nests them with the run's usage including theirs, `--jsonl` events carry
//! `subagent_id`, and a SIGTERM during one leaves a valid transcript marking it
//! interrupted.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::*;

fn task(id: &str, prompt: &str, kind: &str) -> (String, Value) {
    (
        id.to_string(),
        json!({"description": format!("job {id}"), "prompt": prompt, "subagent_type": kind}),
    )
}

fn tasks_turn(calls: &[(String, Value)]) -> Reply {
    let mut t = Turn::new().usage(1000, 100);
    for (id, input) in calls {
        t = t.tool(id, "Task", input.clone());
    }
    Reply::turn(t)
}

/// The parent's requests and the sub-agents', told apart by their system prompt.
fn split(env: &TestEnv) -> (Vec<Recorded>, Vec<Recorded>) {
    env.server
        .requests()
        .into_iter()
        .partition(|r| !r.system_text().contains("You are a sub-agent"))
}

#[test]
fn three_explore_subagents_of_one_turn_run_at_once_and_nest_in_the_transcript() {
    let calls: Vec<_> = (1..=3)
        .map(|i| {
            task(
                &format!("toolu_t{i}"),
                &format!("find thing {i}"),
                "explore",
            )
        })
        .collect();
    let mut script = vec![tasks_turn(&calls)];
    // Each answer is held until all three sub-agents' first requests are in.
    for i in 1..=3 {
        script.push(Reply::Barrier(
            3,
            Box::new(Reply::turn(
                Turn::new().text(&format!("report {i}")).usage(200, 20),
            )),
        ));
    }
    script.push(Reply::turn(Turn::new().text("all found").usage(3000, 30)));
    let env = TestEnv::new(script);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--jsonl",
        "-o",
        out_file.to_str().unwrap(),
        "find things",
    ]);
    out.assert_code(0);
    let t = read_json(&out_file);

    let (parent, subs) = split(&env);
    assert_eq!((parent.len(), subs.len()), (2, 3));
    let prompts: BTreeSet<String> = subs.iter().map(Recorded::first_user_text).collect();
    assert_eq!(
        prompts,
        ["find thing 1", "find thing 2", "find thing 3"]
            .map(String::from)
            .into()
    );
    for s in &subs {
        // Fresh history (the prompt alone), read-only tools, no Task: no nesting.
        assert_eq!(s.messages().len(), 1);
        let mut tools = s.tool_names();
        tools.sort();
        assert_eq!(tools, ["Glob", "Grep", "ReadFile"]);
        assert!(s.system_text().contains(env.ws().to_str().unwrap()));
    }
    // The parent got each report as its Task result.
    let results: BTreeSet<String> = parent[1]
        .last_blocks()
        .iter()
        .map(|b| b["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        results,
        ["report 1", "report 2", "report 3"]
            .map(String::from)
            .into()
    );

    let nested = t["subagents"].as_array().unwrap();
    assert_eq!(nested.len(), 3);
    let ids: BTreeSet<&str> = nested
        .iter()
        .map(|s| s["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_t1", "toolu_t2", "toolu_t3"].into());
    for s in nested {
        assert_eq!(s["status"], "success");
        assert_eq!(s["subagent_type"], "explore");
        assert_eq!(s["num_turns"], 1);
        assert_eq!(s["usage"]["input_tokens"], 200);
        assert_eq!(s["messages"].as_array().unwrap().len(), 2);
        let n = s["id"].as_str().unwrap();
        assert!(n.starts_with("subagent_"), "{n}");
        // The report it answered with is its last message.
        let report = s["messages"][1]["content"][0]["text"].as_str().unwrap();
        let call = s["tool_use_id"].as_str().unwrap();
        let asked = &calls.iter().find(|(id, _)| id == call).unwrap().1["prompt"];
        assert_eq!(s["messages"][0]["content"][0]["text"], *asked);
        assert!(report.starts_with("report "), "{report}");
    }
    // The run's usage includes the sub-agents'.
    assert_eq!(t["usage"]["input_tokens"], 1000 + 3 * 200 + 3000);
    assert_eq!(t["usage"]["output_tokens"], 100 + 3 * 20 + 30);
    assert_eq!(t["num_turns"], 2);

    // --jsonl: the sub-agents' events carry their id; the run's do not.
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tagged: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| e["subagent_id"].as_str())
        .collect();
    assert_eq!(tagged.len(), 3, "{tagged:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "subagent.started" && e["subagent_id"].is_string())
    );
    assert!(
        events
            .iter()
            .all(|e| e["type"] != "run.started" || e["subagent_id"].is_null())
    );
    assert_eq!(
        events.iter().filter(|e| e["type"] == "run.started").count(),
        1,
        "one run.started, the run's"
    );
}

#[test]
fn general_subagents_run_one_after_another_with_the_runs_tools() {
    let env = TestEnv::new(vec![
        tasks_turn(&[
            task("toolu_g1", "make one", "general"),
            task("toolu_g2", "check one", "general"),
        ]),
        Reply::Sse(turn_tools(&[(
            "toolu_b1",
            "Bash",
            json!({"command": "touch one"}),
        )])),
        Reply::Sse(turn_text("made")),
        Reply::Sse(turn_tools(&[(
            "toolu_b2",
            "Bash",
            json!({"command": "test -e one && echo ordered"}),
        )])),
        Reply::Sse(turn_text("checked")),
        Reply::Sse(turn_text("done")),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--allow-bash",
        "-o",
        out_file.to_str().unwrap(),
        "go",
    ]);
    out.assert_code(0);
    // The CI log tells the sub-agents' steps from the run's.
    assert!(
        out.stderr.contains("agent: subagent_2: turn 1: Bash"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("agent: turn 1: Task"), "{}", out.stderr);
    let (_, subs) = split(&env);
    // The first sub-agent's whole conversation comes before the second's.
    let order: Vec<String> = subs.iter().map(Recorded::first_user_text).collect();
    assert_eq!(order, ["make one", "make one", "check one", "check one"]);
    let mut tools = subs[0].tool_names();
    tools.sort();
    assert!(tools.contains(&"Bash".to_string()), "{tools:?}");
    assert!(
        !tools.contains(&"Task".to_string()),
        "no nesting: {tools:?}"
    );
    let t = read_json(&out_file);
    let second = &t["subagents"][1];
    assert_eq!(second["subagent_type"], "general");
    let bash = &second["tool_calls"][0];
    assert_eq!(bash["name"], "Bash");
    assert_eq!(bash["metadata"]["exit_code"], 0, "{bash}");
}

#[test]
fn a_subagent_that_would_pass_max_turns_is_stopped_and_the_run_with_it() {
    let glob = |id: &str| Reply::Sse(turn_tools(&[(id, "Glob", json!({"pattern": "*"}))]));
    let env = TestEnv::new(vec![
        tasks_turn(&[task("toolu_t", "search forever", "explore")]),
        glob("toolu_s1"),
        glob("toolu_s2"),
    ]);
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--max-turns",
        "3",
        "-o",
        out_file.to_str().unwrap(),
        "go",
    ]);
    // 1 turn of the run + 2 of the sub-agent = 3: the run makes no further request.
    assert_eq!(env.server.request_count(), 3);
    assert_eq!(out.code(), Some(3), "{}", out.stderr);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "max_turns");
    let sub = &t["subagents"][0];
    assert_eq!(sub["status"], "max_turns");
    assert_eq!(sub["num_turns"], 2);
    // Its second turn's call was not run: the limit came first.
    assert_eq!(sub["tool_calls"].as_array().unwrap().len(), 1);
    let task_call = &t["tool_calls"][0];
    assert_eq!(task_call["is_error"], true);
}

#[test]
fn sigterm_during_a_subagent_leaves_a_valid_transcript_marking_it_interrupted() {
    let env = TestEnv::new(vec![
        tasks_turn(&[task("toolu_t", "look around", "explore")]),
        Reply::Sse(turn_tools(&[("toolu_s1", "Glob", json!({"pattern": "*"}))])),
        Reply::Hang(vec![sse::message_start(10, 0, 0)]),
    ]);
    let out_file = env.out("t.json");
    let running = env.spawn(&["run", "-o", out_file.to_str().unwrap(), "go"]);
    // The third request is the sub-agent's second turn: it is running.
    env.server.wait_for_requests(3);
    running.signal(libc::SIGTERM);
    let out = running.wait();
    out.assert_code(130);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "interrupted");
    let sub = &t["subagents"][0];
    assert_eq!(sub["status"], "interrupted");
    assert_eq!(sub["tool_use_id"], "toolu_t");
    // Its progress so far: the task, its first turn and that turn's result.
    assert_eq!(sub["messages"].as_array().unwrap().len(), 3, "{sub}");
    assert_eq!(sub["tool_calls"][0]["name"], "Glob");
    // The Task call is listed as unfinished.
    let call = &t["tool_calls"][0];
    assert_eq!(call["id"], "toolu_t");
    assert_eq!(call["metadata"]["unfinished"], true);
}

/// Issue 46, item 5: three `explore` sub-agents at once against a `--max-cost-usd` that
/// leaves room for two more requests. Each sub-agent reserves its next request (its
/// estimated input and all of its max_tokens, here $0.10 of output) in the run's pool
/// before sending it, so together they stop at the limit: the run's cost stays under it
/// (never more than one request's worth over), the run ends `budget`, and the refused
/// request's reservation is in the transcript. Before, each sub-agent got the whole
/// remainder and spent up to it: about three times the limit.
#[test]
fn parallel_subagents_reserve_their_requests_and_stop_at_the_cost_limit() {
    let calls: Vec<_> = (1..=3)
        .map(|i| task(&format!("toolu_t{i}"), &format!("look {i}"), "explore"))
        .collect();
    let mut script = vec![tasks_turn(&calls)];
    for i in 1..=9 {
        script.push(Reply::turn(
            Turn::new()
                .tool(&format!("toolu_g{i}"), "Glob", json!({"pattern": "*"}))
                .usage(1000, 9000),
        ));
    }
    script.push(Reply::turn(Turn::new().text("done").usage(1000, 10)));
    let env = TestEnv::new(script);
    // $10 per million tokens either way: a sub-agent request (1000 in, 9000 out) costs
    // $0.10, and reserves $0.10 of output (--max-tokens 10000) plus its input estimate.
    env.write(
        ".agent/settings.json",
        r#"{"prices": {"claude-mock": {"input": 10, "output": 10, "cache_write": 0, "cache_read": 0}}}"#,
    );
    let limit = 0.25;
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "-m",
        sse::MOCK_MODEL,
        "--max-tokens",
        "10000",
        "--max-cost-usd",
        &limit.to_string(),
        "-o",
        out_file.to_str().unwrap(),
        "look around",
    ]);
    out.assert_code(3);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "budget", "{}", t["error"]);
    let cost = t["cost_usd"].as_f64().unwrap();
    let one_request = 0.10;
    assert!(
        cost <= limit + one_request,
        "cost {cost} over {limit} + {one_request}"
    );
    let (_, subs) = split(&env);
    assert!(subs.len() <= 3, "{} sub-agent requests", subs.len());
    // The refusal names the reservation, in the run's error and in a Task result.
    let message = t["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--max-cost-usd 0.25") && message.contains("reserves $"),
        "{message}"
    );
    let refused = t["subagents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "budget")
        .count();
    assert!(refused >= 1, "{}", t["subagents"]);
    let results = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "Task")
        .filter_map(|c| c["content"].as_str().or(c["output"].as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let messages = t["messages"].to_string();
    assert!(
        messages.contains("reserves $") || results.contains("reserves $"),
        "no reservation shown: {messages}"
    );
}
