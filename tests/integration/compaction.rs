//! Summarising compaction (`--context-strategy`): a 300-turn session over a 20,000-token
//! window that compacts three times and keeps the task and the latest plan verbatim; the
//! summary request's contents (the task, the plan, the files changed from the record,
//! no tools) and the shape of the request after it (task, summary, the latest turns
//! verbatim, every tool pair intact); compaction at the wall; a summary request that
//! overflows (cut and retried once) or fails (retried, then clearing); a PreCompact veto;
//! `fail`; costs; the order of the events; sub-agents, `--resume` and structured output.

use serde_json::{Value, json};

use crate::support::*;

const TASK: &str = "Port the parser to the new API; keep the public names unchanged.";

/// How the summary request's system prompt begins (`run::compaction::SUMMARY_SYSTEM`).
const SUMMARY_SYSTEM_START: &str = "You write the hand-over summary";

fn is_summary_request(r: &Recorded) -> bool {
    r.system_text().starts_with(SUMMARY_SYSTEM_START)
}

fn summary_reply(n: usize, input: u64) -> Reply {
    Reply::turn(
        Turn::new()
            .text(&format!(
                "SUMMARY-{n}: the parser is half ported; next, the lexer."
            ))
            .usage(input, 300),
    )
}

/// The texts of a message's text blocks.
fn texts(m: &Value) -> Vec<String> {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap().to_string())
        .collect()
}

/// The JSONL events of a run.
fn events(out: &RunOutput) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn transcript_of(out: &RunOutput) -> Value {
    events(out)
        .into_iter()
        .find(|e| e["type"] == "run.finished")
        .expect("run.finished")["transcript"]
        .clone()
}

fn plan_of(turn: usize) -> Value {
    json!({"todos": [
        {"content": format!("Port the lexer (plan {turn})"), "status": "completed", "activeForm": "Porting the lexer"},
        {"content": format!("Port the parser (plan {turn})"), "status": "in_progress", "activeForm": format!("Porting the parser (plan {turn})")},
        {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"}
    ]})
}

/// The plan block the compacted history carries for `plan_of(turn)`.
fn plan_block(turn: usize) -> String {
    format!(
        "[The current plan (TodoWrite), as last written:]\n[x] Port the lexer (plan {turn})\n\
         [>] Porting the parser (plan {turn})\n[ ] Run the tests"
    )
}

/// The scripted 300-turn session: every turn reads a small file, every 100th (from the
/// first) rewrites the plan, every 50th (from the 25th) writes a file, the last answers.
/// Usage grows 150 tokens a turn from 3,000 after each compaction, so with a 20,000-token
/// window (threshold 16,000) the history is compacted before turns 89, 177 and 265.
/// Returns the replies and the turns before which a summary is expected.
fn long_session(turns: usize) -> (Vec<Reply>, Vec<usize>) {
    let mut replies = Vec::new();
    let mut compacted_before = Vec::new();
    let (mut last, mut since) = (0u64, 0u64);
    for t in 1..=turns {
        if last > 16_000 {
            compacted_before.push(t);
            replies.push(summary_reply(compacted_before.len(), 9_000));
            since = 0;
        }
        let usage = 3_000 + 150 * since;
        since += 1;
        last = usage;
        let id = format!("toolu_{t:03}");
        let turn = if t == turns {
            Turn::new().text("The parser is ported.")
        } else if t % 100 == 1 {
            Turn::new().tool(&id, "TodoWrite", plan_of(t))
        } else if t % 50 == 25 {
            Turn::new().tool(
                &id,
                "WriteFile",
                json!({"path": format!("src/mod{t}.rs"), "content": format!("// module {t}\n")}),
            )
        } else {
            Turn::new()
                .text(&format!("Turn {t}: reading the notes."))
                .tool(&id, "ReadFile", json!({"path": "notes.txt"}))
        };
        replies.push(Reply::turn(turn.usage(usage, 40)));
    }
    (replies, compacted_before)
}

#[test]
fn a_300_turn_session_compacts_three_times_and_keeps_its_frontier() {
    let (script, compacted_before) = long_session(300);
    assert_eq!(
        compacted_before,
        [89, 177, 265],
        "the script's own arithmetic"
    );
    let expected_input: u64 = {
        let mut sum = 0;
        let (mut last, mut since) = (0u64, 0u64);
        for _ in 1..=300 {
            if last > 16_000 {
                sum += 9_000;
                since = 0;
            }
            last = 3_000 + 150 * since;
            since += 1;
            sum += last;
        }
        sum
    };
    let env = TestEnv::new(script);
    env.write(
        "notes.txt",
        "The lexer is in src/lex.rs; the parser in src/parse.rs.\n",
    );
    let out = env.run(&[
        "run",
        "--jsonl",
        "--allow-write",
        "--max-turns",
        "400",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    env.server.assert_script_consumed();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 303);
    let summaries: Vec<usize> = (0..reqs.len())
        .filter(|&i| is_summary_request(&reqs[i]))
        .collect();
    assert_eq!(summaries.len(), 3, "three compactions");

    for (k, &i) in summaries.iter().enumerate() {
        let (before, summary, after) = (&reqs[i - 1], &reqs[i], &reqs[i + 1]);
        // The summary request: no tools, the task first, the record's facts last.
        assert!(summary.tool_names().is_empty());
        assert!(summary.body.get("tools").is_none());
        let msgs = summary.messages();
        assert_eq!(texts(&msgs[0])[0], TASK);
        if k > 0 {
            // A later compaction summarises the previous summary and what followed.
            assert!(
                texts(&msgs[0])
                    .iter()
                    .any(|t| t.contains(&format!("SUMMARY-{k}:")))
            );
        }
        let closing = texts(msgs.last().unwrap()).pop().unwrap();
        assert!(closing.starts_with("[Compaction]"), "{closing}");
        let files: Vec<usize> = (1..compacted_before[k]).filter(|t| t % 50 == 25).collect();
        for t in &files {
            assert!(
                closing.contains(&format!("- src/mod{t}.rs (created)\n")),
                "{closing}"
            );
        }
        let plan_turn = (1..compacted_before[k])
            .rev()
            .find(|t| t % 100 == 1)
            .unwrap();
        assert!(
            closing.contains(&format!("[>] Porting the parser (plan {plan_turn})")),
            "{closing}"
        );

        // The request after it: the task verbatim, the summary, the latest plan
        // verbatim, then the latest turns as they were sent.
        let msgs = after.messages();
        let head = texts(&msgs[0]);
        assert_eq!(head[0], TASK, "the original task, verbatim");
        assert!(head[1].contains(&format!("SUMMARY-{}:", k + 1)), "{head:?}");
        assert!(head[1].contains(&format!("(compaction {})", k + 1)));
        assert_eq!(head[2], plan_block(plan_turn), "the latest plan, verbatim");
        assert_eq!(msgs[1]["role"], "assistant");
        assert!(msgs.len() < 100, "{} messages", msgs.len());
        // The kept turns (the newest pair aside) are the tail of the previous request,
        // byte for byte; the newest pair answers the turn just before.
        let kept = without_cache_control(&Value::from(msgs[1..msgs.len() - 2].to_vec()));
        let prev = without_cache_control(&Value::from(before.messages().to_vec()));
        let prev = prev.as_array().unwrap();
        let tail = &prev[prev.len() - kept.as_array().unwrap().len()..];
        assert_eq!(kept.as_array().unwrap().as_slice(), tail);
        let newest = &msgs[msgs.len() - 2];
        assert_eq!(
            newest["content"].as_array().unwrap().last().unwrap()["id"],
            format!("toolu_{:03}", compacted_before[k] - 1)
        );
        // The request after that one goes on from the compacted history.
        let next = without_cache_control(&Value::from(reqs[i + 2].messages().to_vec()));
        let this = without_cache_control(&Value::from(msgs.to_vec()));
        assert_eq!(
            next.as_array().unwrap()[..msgs.len()],
            this.as_array().unwrap()[..]
        );
    }

    // The transcript keeps every original message and each summary; usage counts the
    // summary requests.
    let t = transcript_of(&out);
    assert_eq!(t["status"], "success");
    assert_eq!(t["num_turns"], 300);
    assert_eq!(t["messages"].as_array().unwrap().len(), 600);
    assert_eq!(texts(&t["messages"][0])[0], TASK);
    let c = t["context_compactions"].as_array().unwrap();
    assert_eq!(c.len(), 3);
    for (k, c) in c.iter().enumerate() {
        assert_eq!(c["turn"], compacted_before[k]);
        assert_eq!(c["reason"], "threshold");
        assert!(
            c["summary"]
                .as_str()
                .unwrap()
                .starts_with(&format!("SUMMARY-{}:", k + 1))
        );
        assert_eq!(c["usage"]["input_tokens"], 9_000);
        assert!(c["error"].is_null());
        assert!(c["tokens_after_estimate"].as_u64().unwrap() < 16_000);
    }
    assert_eq!(t["usage"]["input_tokens"], expected_input);

    // Events: each compaction after its turn started, before that turn's answer.
    let ev = events(&out);
    let at = |ty: &str, turn: usize| {
        ev.iter()
            .position(|e| e["type"] == ty && e["turn"] == turn)
            .unwrap_or_else(|| panic!("no {ty} for turn {turn}"))
    };
    for &turn in &compacted_before {
        let previous = at("turn.finished", turn - 1);
        let started = at("turn.started", turn);
        let compacting = at("context.compacting", turn);
        let compacted = at("context.compacted", turn);
        let finished = at("turn.finished", turn);
        assert!(previous < started && started < compacting);
        assert!(compacting < compacted && compacted < finished);
        assert_eq!(ev[compacting]["reason"], "threshold");
        assert_eq!(ev[compacting]["threshold"], 16_000);
        assert_eq!(ev[compacting]["strategy"], "summarize");
        assert!(ev[compacting]["tokens"].as_u64().unwrap() > 16_000);
        assert!(ev[compacted]["summary_chars"].as_u64().unwrap() > 10);
    }
    assert!(
        out.stderr
            .contains("agent: turn 89: compacting the conversation")
    );
    assert!(
        out.stderr
            .contains("agent: turn 89: compacted the conversation:")
    );
}

/// Reads of small files, `n` turns, with the given input usage each.
fn reads(n: usize, usage: u64) -> Vec<Reply> {
    (1..=n)
        .map(|k| {
            Reply::turn(
                Turn::new()
                    .text(&format!("Reading f{k}."))
                    .tool(
                        &format!("toolu_{k:02}"),
                        "ReadFile",
                        json!({"path": format!("f{k}.txt")}),
                    )
                    .usage(usage, 20),
            )
        })
        .collect()
}

fn small_files(env: &TestEnv, n: usize) {
    for k in 1..=n {
        env.write(&format!("f{k}.txt"), &format!("file {k}\n"));
    }
}

#[test]
fn at_the_wall_with_nothing_to_clear_the_history_is_summarised_and_the_turn_retried() {
    let mut script = reads(4, 1_000);
    script.push(Reply::bad_request(
        "prompt is too long: 210000 tokens > 200000 maximum",
    ));
    script.push(summary_reply(1, 5_000));
    script.push(Reply::turn(
        Turn::new().text("Done after the summary.").usage(2_000, 10),
    ));
    let env = TestEnv::new(script);
    small_files(&env, 4);
    // Prices: $1000 per million input tokens, so cost = input tokens / 1000.
    env.write(
        ".agent/settings.json",
        &json!({
            "prices": {"claude-mock": {"input": 1000, "output": 0, "cache_write": 0, "cache_read": 0}},
            "hooks": {
                "PreCompact": [{"matcher": "auto", "command": "cat > pre.json"}],
                "PostCompact": [{"command": "cat > post.json"}]
            }
        })
        .to_string(),
    );
    env.write("instructions.md", "Name every test that still fails.");
    let out = env.run(&[
        "run",
        "--jsonl",
        "-m",
        sse::MOCK_MODEL,
        "--compact-model",
        "claude-mock-small",
        "--compact-instructions",
        "@instructions.md",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 7);
    assert!(is_summary_request(&reqs[5]));
    assert_eq!(reqs[5].body["model"], "claude-mock-small");
    let closing = texts(reqs[5].messages().last().unwrap()).pop().unwrap();
    assert!(closing.ends_with("Additional instructions:\nName every test that still fails.\n"));
    // The retry is the same turn over the compacted history: the task, the summary,
    // then the latest turns verbatim (in a 200k window all but the first read fit the
    // fifth of it they may take).
    let retry = reqs[6].messages();
    assert_eq!(texts(&retry[0])[0], TASK);
    assert!(texts(&retry[0])[1].contains("SUMMARY-1"));
    assert_eq!(retry.len(), 7);
    assert_eq!(
        without_cache_control(&Value::from(retry[1..].to_vec())),
        without_cache_control(&Value::from(reqs[4].messages()[3..].to_vec()))
    );
    // The summary request covered what the retry no longer carries: the first read.
    assert_eq!(reqs[5].messages().len(), 3);

    let t = transcript_of(&out);
    assert_eq!(t["status"], "success");
    assert_eq!(t["num_turns"], 5, "the wall is not a model turn");
    assert!(
        t["context_clearings"].as_array().unwrap().is_empty(),
        "nothing to clear"
    );
    let c = &t["context_compactions"][0];
    assert_eq!(c["reason"], "wall");
    assert_eq!(c["turn"], 5);
    assert_eq!(c["tokens_before"], 210_000);
    // Costs: the summary's 5,000 input tokens are in the run's usage and cost.
    assert_eq!(t["usage"]["input_tokens"], 4 * 1_000 + 5_000 + 2_000);
    assert_eq!(c["cost_usd"].as_f64().unwrap(), 5.0);
    assert!(
        (t["cost_usd"].as_f64().unwrap() - 11.0).abs() < 1e-9,
        "{}",
        t["cost_usd"]
    );
    let ev = events(&out);
    let compacted = ev
        .iter()
        .find(|e| e["type"] == "context.compacted")
        .unwrap();
    assert_eq!(compacted["cost_usd"].as_f64().unwrap(), 5.0);
    assert_eq!(compacted["usage"]["input_tokens"], 5_000);
    // The hooks saw the compaction.
    let pre: Value = serde_json::from_str(&env.read("pre.json")).unwrap();
    assert_eq!(pre["hook_event_name"], "PreCompact");
    assert_eq!(pre["trigger"], "auto");
    assert_eq!(pre["reason"], "wall");
    assert_eq!(
        pre["custom_instructions"],
        "Name every test that still fails."
    );
    let post: Value = serde_json::from_str(&env.read("post.json")).unwrap();
    assert_eq!(post["hook_event_name"], "PostCompact");
    assert!(post["summary"].as_str().unwrap().starts_with("SUMMARY-1"));
}

#[test]
fn a_summary_request_that_overflows_is_cut_further_and_retried_once() {
    // 15,000 tokens a request in a 20,000-token window: the latest turns kept verbatim
    // (a fifth of the window) are a few messages, the rest is summarised.
    let mut script = reads(12, 15_000);
    script.push(Reply::bad_request(
        "prompt is too long: 21000 tokens > 20000 maximum",
    ));
    script.push(Reply::bad_request(
        "prompt is too long: 20100 tokens > 20000 maximum",
    ));
    script.push(summary_reply(1, 5_000));
    script.push(Reply::turn(Turn::new().text("Done.").usage(2_000, 10)));
    let env = TestEnv::new(script);
    // Results of 1,500 bytes: the messages, not the tools and system prompt, make the
    // history's size.
    for k in 1..=12 {
        env.write(
            &format!("f{k}.txt"),
            &format!("f{k} {}\n", "z".repeat(1_500)),
        );
    }
    let out = env.run(&[
        "run",
        "--jsonl",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 16);
    assert!(is_summary_request(&reqs[13]) && is_summary_request(&reqs[14]));
    let (first, second) = (reqs[13].messages(), reqs[14].messages());
    assert!(
        second.len() < first.len(),
        "{} then {}",
        first.len(),
        second.len()
    );
    // Cut at an assistant message, after the task.
    assert_eq!(texts(&second[0])[0], TASK);
    assert_eq!(second[1]["role"], "assistant");
    let closing = texts(second.last().unwrap()).pop().unwrap();
    assert!(
        closing.contains("earlier messages were left out"),
        "{closing}"
    );
    let t = transcript_of(&out);
    assert_eq!(t["status"], "success");
    let c = &t["context_compactions"][0];
    assert!(c["messages_left_out"].as_u64().unwrap() > 0);
    assert!(
        out.stderr.contains("the summary request was too long"),
        "{}",
        out.stderr
    );
}

/// Six reads of 3,000-byte files (so clearing has something to clear) reporting 1,000
/// tokens, then one reporting 17,000 of a 20,000-token window.
fn over_threshold_env(after: Vec<Reply>) -> TestEnv {
    let mut script: Vec<Reply> = (1..=6)
        .map(|k| {
            Reply::turn(
                Turn::new()
                    .tool(
                        &format!("toolu_{k:02}"),
                        "ReadFile",
                        json!({"path": format!("f{k}.txt")}),
                    )
                    .usage(if k == 6 { 17_000 } else { 1_000 }, 20),
            )
        })
        .collect();
    script.extend(after);
    let env = TestEnv::new(script);
    for k in 1..=6 {
        env.write(
            &format!("f{k}.txt"),
            &format!("f{k} {}\n", "x".repeat(3_000)),
        );
    }
    env
}

#[test]
fn a_failed_summary_request_is_retried_then_the_history_is_cleared() {
    let env = over_threshold_env(vec![
        Reply::api_error(500, "api_error", "internal"),
        Reply::api_error(500, "api_error", "internal again"),
        Reply::turn(Turn::new().text("Done without a summary.").usage(9_000, 10)),
    ]);
    let out = env.run(&[
        "run",
        "--jsonl",
        "--max-retries",
        "1",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 9);
    assert!(
        is_summary_request(&reqs[6]) && is_summary_request(&reqs[7]),
        "retried once"
    );
    let ev = events(&out);
    let retry = ev.iter().position(|e| e["type"] == "retry").unwrap();
    let compacting = ev
        .iter()
        .position(|e| e["type"] == "context.compacting")
        .unwrap();
    let cleared = ev
        .iter()
        .position(|e| e["type"] == "context.cleared")
        .unwrap();
    assert!(compacting < retry && retry < cleared);
    assert!(!ev.iter().any(|e| e["type"] == "context.compacted"));
    let t = transcript_of(&out);
    assert_eq!(t["status"], "success");
    let c = &t["context_compactions"][0];
    assert!(c["summary"].is_null());
    assert!(
        c["error"]
            .as_str()
            .unwrap()
            .starts_with("the summary request failed"),
        "{}",
        c["error"]
    );
    assert_eq!(t["context_clearings"].as_array().unwrap().len(), 1);
    assert!(
        out.stderr.contains("could not be compacted"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("clearing old tool results"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_pre_compact_veto_clears_instead_and_makes_no_request() {
    let env = over_threshold_env(vec![Reply::turn(
        Turn::new().text("Done.").usage(9_000, 10),
    )]);
    env.write(
        ".agent/settings.json",
        r#"{"hooks": {"PreCompact": [{"command": "echo 'not during the release' >&2; exit 2"}]}}"#,
    );
    let out = env.run(&[
        "run",
        "--jsonl",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 7);
    assert!(!reqs.iter().any(is_summary_request));
    let t = transcript_of(&out);
    assert_eq!(
        t["context_compactions"][0]["error"],
        "vetoed by a PreCompact hook: not during the release"
    );
    assert_eq!(t["context_clearings"].as_array().unwrap().len(), 1);
    assert!(
        !events(&out)
            .iter()
            .any(|e| e["type"] == "context.compacting")
    );
}

#[test]
fn a_bad_compaction_hook_matcher_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    env.write(
        ".agent/settings.json",
        r#"{"hooks": {"PreCompact": [{"matcher": "manual", "command": "true"}]}}"#,
    );
    let out = env.run(&["run", "x"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("PreCompact: matcher \"manual\""),
        "{}",
        out.stderr
    );
}

#[test]
fn fail_neither_clears_nor_summarises() {
    let env = over_threshold_env(vec![Reply::bad_request(
        "prompt is too long: 21000 tokens > 20000 maximum",
    )]);
    let out = env.run(&[
        "run",
        "--json",
        "--context-window",
        "20000",
        "--context-strategy",
        "fail",
        TASK,
    ]);
    out.assert_code(1).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 7, "no summary request, no retry");
    assert!(!reqs.iter().any(is_summary_request));
    let results = reqs[6].tool_results();
    assert!(results.iter().all(|r| !r.content.contains("was cleared")));
    let t = out.json();
    assert_eq!(t["status"], "context_exceeded");
    assert!(t["context_clearings"].as_array().unwrap().is_empty());
    assert!(t["context_compactions"].as_array().unwrap().is_empty());
    assert_eq!(
        t["error"]["message"],
        "the conversation does not fit in the model's context window (21000 tokens > \
         20000), and --context-strategy fail neither clears nor summarises it: HTTP 400 \
         invalid_request_error: prompt is too long: 21000 tokens > 20000 maximum"
    );
}

#[test]
fn the_default_clears_first_and_summarises_only_when_that_is_not_enough() {
    // The results are tiny: clearing finds nothing, so the history is summarised.
    let mut script = reads(5, 1_000);
    script.push(Reply::turn(
        Turn::new()
            .tool("toolu_06", "ReadFile", json!({"path": "f1.txt"}))
            .usage(17_000, 20),
    ));
    script.push(summary_reply(1, 4_000));
    script.push(Reply::turn(Turn::new().text("Done.").usage(3_000, 10)));
    let env = TestEnv::new(script);
    small_files(&env, 5);
    let out = env.run(&["run", "--jsonl", "--context-window", "20000", TASK]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert!(is_summary_request(&reqs[6]));
    let t = transcript_of(&out);
    assert!(t["context_clearings"].as_array().unwrap().is_empty());
    assert_eq!(t["context_compactions"][0]["reason"], "threshold");
    assert_eq!(
        events(&out)
            .iter()
            .find(|e| e["type"] == "context.compacting")
            .unwrap()["strategy"],
        "clear"
    );
}

#[test]
fn a_subagent_compacts_its_own_history() {
    let task = json!({"description": "look", "prompt": "find the parser's entry points", "subagent_type": "explore"});
    let script = vec![
        Reply::turn(
            Turn::new()
                .tool("toolu_task", "Task", task)
                .usage(1_000, 10),
        ),
        Reply::turn(
            Turn::new()
                .tool("toolu_s1", "ReadFile", json!({"path": "f1.txt"}))
                .usage(1_000, 10),
        ),
        Reply::turn(
            Turn::new()
                .tool("toolu_s2", "ReadFile", json!({"path": "f2.txt"}))
                .usage(17_000, 10),
        ),
        summary_reply(1, 4_000),
        Reply::turn(
            Turn::new()
                .text("parse() and parse_file().")
                .usage(3_000, 10),
        ),
        Reply::turn(Turn::new().text("Found them.").usage(2_000, 10)),
    ];
    let env = TestEnv::new(script);
    small_files(&env, 2);
    let out = env.run(&[
        "run",
        "--jsonl",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert!(is_summary_request(&reqs[3]));
    assert_eq!(
        texts(&reqs[3].messages()[0])[0],
        "find the parser's entry points"
    );
    let after = reqs[4].messages();
    assert_eq!(texts(&after[0])[0], "find the parser's entry points");
    assert!(texts(&after[0])[1].contains("SUMMARY-1"));
    let ev = events(&out);
    let compacted = ev
        .iter()
        .find(|e| e["type"] == "context.compacted")
        .unwrap();
    assert!(compacted["subagent_id"].is_string(), "{compacted}");
    let t = transcript_of(&out);
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "Found them.");
    assert_eq!(
        t["usage"]["input_tokens"],
        1_000 + 1_000 + 17_000 + 4_000 + 3_000 + 2_000
    );
}

#[test]
fn a_resumed_history_over_the_window_is_compacted_before_its_first_request() {
    let mut script: Vec<Reply> = (1..=6)
        .map(|k| {
            Reply::turn(
                Turn::new()
                    .tool(
                        &format!("toolu_{k:02}"),
                        "ReadFile",
                        json!({"path": format!("f{k}.txt")}),
                    )
                    .usage(1_000, 20),
            )
        })
        .collect();
    script.push(Reply::turn(Turn::new().text("Read them.")));
    script.push(summary_reply(1, 4_000));
    script.push(Reply::turn(Turn::new().text("Still fine.")));
    let env = TestEnv::new(script);
    for k in 1..=6 {
        env.write(
            &format!("f{k}.txt"),
            &format!("f{k} {}\n", "y".repeat(2_000)),
        );
    }
    let first = env.out("first.json");
    env.run(&["run", "-q", "-o", first.to_str().unwrap(), TASK])
        .assert_code(0);
    let out = env.run(&[
        "run",
        "--jsonl",
        "--resume",
        first.to_str().unwrap(),
        "--context-window",
        "10000",
        "--context-strategy",
        "summarize",
        "anything else?",
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 9);
    assert!(
        is_summary_request(&reqs[7]),
        "before the resumed run's first request"
    );
    let after = reqs[8].messages();
    assert_eq!(texts(&after[0])[0], TASK);
    assert_eq!(texts(after.last().unwrap()), ["anything else?"]);
    let t = transcript_of(&out);
    assert_eq!(t["context_compactions"][0]["reason"], "resume");
    assert_eq!(t["context_compactions"][0]["turn"], 1);
}

#[test]
fn a_structured_output_run_compacts_and_still_answers_through_its_tool() {
    let schema =
        r#"{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}"#;
    let mut script = reads(3, 1_000);
    script.push(Reply::turn(
        Turn::new()
            .tool("toolu_04", "ReadFile", json!({"path": "f1.txt"}))
            .usage(17_000, 20),
    ));
    script.push(summary_reply(1, 4_000));
    script.push(Reply::turn(
        Turn::new()
            .tool("toolu_ans", "StructuredOutput", json!({"ok": true}))
            .usage(3_000, 10),
    ));
    let env = TestEnv::new(script);
    small_files(&env, 3);
    let schema_file = env.out("schema.json");
    std::fs::write(&schema_file, schema).unwrap();
    let out = env.run(&[
        "run",
        "--jsonl",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        "--output-schema",
        schema_file.to_str().unwrap(),
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert!(is_summary_request(&reqs[4]));
    assert!(reqs[4].tool_names().is_empty());
    assert!(reqs[5].tool_names().iter().any(|n| n == "StructuredOutput"));
    let t = transcript_of(&out);
    assert_eq!(t["status"], "success");
    assert_eq!(t["structured_output"], json!({"ok": true}));
    assert_eq!(t["context_compactions"].as_array().unwrap().len(), 1);
}

#[test]
fn an_openai_compatible_server_gets_the_same_summary_request() {
    let mut script = reads(3, 1_000);
    script.push(Reply::turn(
        Turn::new()
            .tool("toolu_04", "ReadFile", json!({"path": "f1.txt"}))
            .usage(17_000, 20),
    ));
    script.push(summary_reply(1, 4_000));
    script.push(Reply::turn(Turn::new().text("Done.").usage(3_000, 10)));
    let env = TestEnv::new(script);
    small_files(&env, 3);
    let out = env.run_openai(
        chat::CHAT_MODEL,
        &[
            "--jsonl",
            "--context-window",
            "20000",
            "--context-strategy",
            "summarize",
            TASK,
        ],
    );
    out.assert_code(0).assert_no_secret();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 6);
    let summary = &reqs[4].body;
    assert!(summary.get("tools").is_none(), "no tools: {summary}");
    let msgs = summary["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert!(
        msgs[0]["content"]
            .as_str()
            .unwrap()
            .starts_with(SUMMARY_SYSTEM_START)
    );
    assert!(
        msgs.last().unwrap()["content"]
            .to_string()
            .contains("[Compaction]")
    );
    let after = reqs[5].body["messages"].as_array().unwrap();
    assert!(after[1]["content"].to_string().contains(TASK));
    assert!(after[1]["content"].to_string().contains("SUMMARY-1"));
    assert_eq!(
        transcript_of(&out)["context_compactions"][0]["reason"],
        "threshold"
    );
}

#[test]
fn a_loaded_skills_content_is_carried_over_verbatim() {
    let body = "Step one of the playbook.\n".repeat(40);
    let mut script = vec![Reply::turn(
        Turn::new()
            .tool("toolu_00", "Skill", json!({"skill": "play"}))
            .usage(1_000, 10),
    )];
    for k in 1..=6 {
        script.push(Reply::turn(
            Turn::new()
                .tool(
                    &format!("toolu_{k:02}"),
                    "ReadFile",
                    json!({"path": format!("f{k}.txt")}),
                )
                .usage(if k == 6 { 17_000 } else { 2_000 * k as u64 }, 20),
        ));
    }
    script.push(summary_reply(1, 4_000));
    script.push(Reply::turn(Turn::new().text("Played.").usage(3_000, 10)));
    let env = TestEnv::new(script);
    let dir = env.ws().join(".agents/skills/play");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: play\ndescription: A playbook.\n---\n{body}\n"),
    )
    .unwrap();
    for k in 1..=6 {
        env.write(
            &format!("f{k}.txt"),
            &format!("f{k} {}\n", "w".repeat(1_500)),
        );
    }
    let out = env.run(&[
        "run",
        "--jsonl",
        "--context-window",
        "20000",
        "--context-strategy",
        "summarize",
        TASK,
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert!(is_summary_request(&reqs[7]));
    let after = reqs[8].messages();
    // The Skill call's turn was summarised …
    let sent = Value::from(after.to_vec()).to_string();
    assert!(!sent.contains("toolu_00"), "the Skill turn was kept");
    // … and its content is in the first message, verbatim.
    let head = texts(&after[0]);
    let kept = head
        .iter()
        .find(|t| {
            t.starts_with("[An activated skill, kept verbatim:]\n<skill_content name=\"play\">")
        })
        .unwrap_or_else(|| panic!("no skill block in {head:?}"));
    assert!(kept.contains(&body), "{kept}");
    assert!(kept.ends_with("</skill_content>"), "{kept}");
}
