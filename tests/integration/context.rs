//! The context window. Clearing of old tool results once a request used more
//! than `--compact-at` of the window (the next request carries placeholders for the
//! oldest results only, pairs intact, the transcript keeps the originals), recovery from
//! a 400 prompt-too-long and from a `model_context_window_exceeded` stop (one clearing,
//! one retry), `context_exceeded` when nothing can be cleared, an OpenAI-compatible
//! server's `context_length_exceeded` teaching the window, each message serialised
//! once, and the `-o` checkpoint surviving a SIGKILL at any point.

use serde_json::{Value, json};

use crate::support::*;

/// What a cleared result says (src/context.rs `PLACEHOLDER`).
const CLEARED: &str = "[This tool result was cleared to save context space. \
     Call the tool again if you still need its output.]";

/// A file of about `bytes` bytes whose lines name it, so each result is recognisable.
fn big_file(env: &TestEnv, name: &str, bytes: usize) {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < bytes {
        i += 1;
        text.push_str(&format!(
            "{name} line {i}: some content to fill the context\n"
        ));
    }
    env.write(name, &text);
}

/// A turn that reads `file`, reporting `input` tokens of usage.
fn read_turn(n: usize, file: &str, input: u64) -> Reply {
    Reply::turn(
        Turn::new()
            .text(&format!("Reading {file}."))
            .tool(&format!("toolu_{n:02}"), "ReadFile", json!({"path": file}))
            .usage(input, 20),
    )
}

/// Every tool_result of a request, (id, text), in order.
fn results(r: &Recorded) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in r.messages() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let id = b["tool_use_id"].as_str().unwrap().to_string();
                out.push((id, b["content"].as_str().unwrap_or("").to_string()));
            }
        }
    }
    out
}

/// The tool_result texts of a request, in order.
fn result_texts(r: &Recorded) -> Vec<String> {
    results(r).into_iter().map(|(_, t)| t).collect()
}

fn is_cleared(text: &str) -> bool {
    text == CLEARED
}

/// Every tool_result text in the transcript's messages.
fn transcript_results(t: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in t["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            if b["type"] == "tool_result" {
                out.push(b["content"].as_str().unwrap().to_string());
            }
        }
    }
    out
}

#[test]
fn clearing_at_the_threshold_replaces_the_oldest_results_only() {
    // A 20k window, cleared above 80 %: turn 6's request reports 17k tokens.
    let usage = [1000, 4000, 7000, 10_000, 13_000, 17_000];
    let mut script: Vec<Reply> = (1..=6)
        .map(|k| read_turn(k, &format!("f{k}.txt"), usage[k - 1]))
        .collect();
    script.push(Reply::Sse(
        Turn::new().text("All read.").usage(9000, 5).frames(),
    ));
    let env = TestEnv::new(script);
    for k in 1..=6 {
        big_file(&env, &format!("f{k}.txt"), 3000);
    }
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--jsonl",
        "--context-window",
        "20000",
        "-o",
        out_file.to_str().unwrap(),
        "read the files",
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 7);
    // Requests 1–6 carry every result as it was.
    for r in &reqs[..6] {
        assert!(!result_texts(r).iter().any(|t| is_cleared(t)));
    }
    // Request 7: the oldest results cleared, a prefix of them, never the last three.
    let last = result_texts(&reqs[6]);
    assert_eq!(last.len(), 6);
    let cleared = last.iter().take_while(|t| is_cleared(t)).count();
    assert!(cleared >= 1, "nothing was cleared: {last:?}");
    assert!(cleared <= 3, "a result of the last three turns was cleared");
    assert!(last[cleared..].iter().all(|t| !is_cleared(t)));
    for (k, text) in last.iter().enumerate().skip(cleared) {
        assert!(text.contains(&format!("f{}.txt line 1:", k + 1)), "{text}");
    }
    // Each tool_use still has its result, by id, in order.
    let ids: Vec<String> = results(&reqs[6]).into_iter().map(|(id, _)| id).collect();
    let expected: Vec<String> = (1..=6).map(|n| format!("toolu_{n:02}")).collect();
    assert_eq!(ids, expected);

    // The transcript keeps the originals and records the clearing.
    let t = read_json(&out_file);
    assert_eq!(t["status"], "success");
    let originals = transcript_results(&t);
    assert_eq!(originals.len(), 6);
    assert!(originals.iter().all(|r| !is_cleared(r)));
    assert_eq!(t["context_window"], 20000);
    assert_eq!(t["context_tokens"], 9000);
    let clearings = t["context_clearings"].as_array().unwrap();
    assert_eq!(clearings.len(), 1, "{clearings:?}");
    assert_eq!(clearings[0]["turn"], 7);
    assert_eq!(clearings[0]["results_cleared"], cleared);
    assert_eq!(clearings[0]["tokens_before"], 17000);
    assert!(clearings[0]["tokens_after_estimate"].as_u64().unwrap() < 17000);

    // The same in the event stream.
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ev = events
        .iter()
        .find(|e| e["type"] == "context.cleared")
        .expect("a context.cleared event");
    assert_eq!(ev["turn"], 7);
    assert_eq!(ev["results_cleared"], cleared);
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn.finished")
        .collect();
    assert_eq!(finished[0]["context_tokens"], 1000);
    assert_eq!(finished[5]["context_tokens"], 17000);
}

/// Four turns of reads, then `wall` for the fifth request, then a final answer.
fn wall_script(wall: Reply) -> Vec<Reply> {
    let mut script: Vec<Reply> = (1..=4)
        .map(|k| read_turn(k, &format!("f{k}.txt"), 1000 * k as u64))
        .collect();
    script.push(wall);
    script.push(Reply::Sse(turn_text("Done after clearing.")));
    script
}

/// The mock with `script`, and the four files of `wall_script`.
fn wall_env(script: Vec<Reply>) -> TestEnv {
    let env = TestEnv::new(script);
    for k in 1..=4 {
        big_file(&env, &format!("f{k}.txt"), 2000);
    }
    env
}

/// The retry after a wall: one clearing, the oldest result cleared, success.
fn assert_recovered(env: &TestEnv, out: &RunOutput) -> Value {
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let t = out.json();
    assert_eq!(t["status"], "success", "{}", out.stderr);
    assert_eq!(t["result"], "Done after clearing.");
    assert_eq!(t["num_turns"], 5, "the wall is not a model turn");
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 6, "one retry");
    // The retry is the same turn: the same messages, the oldest result cleared.
    assert_eq!(reqs[4].messages().len(), reqs[5].messages().len());
    let before = result_texts(&reqs[4]);
    let after = result_texts(&reqs[5]);
    assert!(!before.iter().any(|t| is_cleared(t)));
    assert!(is_cleared(&after[0]), "{after:?}");
    assert_eq!(after[1..], before[1..], "the last three turns are kept");
    let clearings = t["context_clearings"].as_array().unwrap();
    assert_eq!(clearings.len(), 1);
    assert_eq!(clearings[0]["turn"], 5);
    assert_eq!(clearings[0]["results_cleared"], 1);
    assert!(transcript_results(&t).iter().all(|r| !is_cleared(r)));
    t
}

#[test]
fn prompt_too_long_clears_and_retries_the_turn_once() {
    let env = wall_env(wall_script(Reply::bad_request(
        "prompt is too long: 210000 tokens > 200000 maximum",
    )));
    let out = env.run(&["run", "--json", "read the files"]);
    let t = assert_recovered(&env, &out);
    assert_eq!(t["context_clearings"][0]["tokens_before"], 210000);
    assert_eq!(t["context_window"], 200000);
}

#[test]
fn a_window_exceeded_stop_clears_and_retries_the_turn_once() {
    let wall = Reply::Sse(
        Turn::new()
            .text("I was about to")
            .stop_reason("model_context_window_exceeded")
            .usage(199_990, 10)
            .frames(),
    );
    let env = wall_env(wall_script(wall));
    let out = env.run(&["run", "--json", "read the files"]);
    let t = assert_recovered(&env, &out);
    assert_eq!(t["context_clearings"][0]["tokens_before"], 200000);
    // Its tokens were billed; its partial answer is in no message.
    assert!(t["usage"]["input_tokens"].as_u64().unwrap() >= 199_990);
    assert!(!t["messages"].to_string().contains("I was about to"));
}

/// A response that streams `text` and stops at the context window.
fn wall_stop(text: &str) -> Reply {
    Reply::Sse(
        Turn::new()
            .text(text)
            .stop_reason("model_context_window_exceeded")
            .model("claude-reported-at-the-wall")
            .usage(199_990, 10)
            .frames(),
    )
}

/// The transcript's last message: an assistant message of `text` alone.
fn assert_ends_with_partial(t: &Value, text: &str) {
    let messages = t["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap(),
        &json!({"role": "assistant", "content": [{"type": "text", "text": text}]}),
        "{t}"
    );
    assert_eq!(t["stop_reason"], "model_context_window_exceeded");
    assert_eq!(t["model"], "claude-reported-at-the-wall");
}

#[test]
fn a_window_exceeded_stop_that_ends_the_run_keeps_its_partial_text() {
    // The first request: no tool result to clear, so the run ends at once.
    let env = TestEnv::new(vec![wall_stop("Half of my answer")]);
    let out_file = env.out("t.json");
    let out = env.run(&["run", "--json", "-o", out_file.to_str().unwrap(), "a task"]);
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["status"], "context_exceeded");
    assert_eq!(t["num_turns"], 0, "the wall is not a model turn");
    assert_ends_with_partial(&t, "Half of my answer");
    assert_eq!(t["messages"].as_array().unwrap().len(), 2, "{t}");
    assert_ends_with_partial(&read_json(&out_file), "Half of my answer");
    assert_eq!(env.server.request_count(), 1);
}

#[test]
fn a_second_window_exceeded_stop_keeps_only_its_own_partial_text() {
    let mut script = wall_script(wall_stop("I was about to"));
    script.pop();
    script.push(wall_stop("Still trying to"));
    // After the clearing, a summary is tried once (and refused here).
    script.push(Reply::bad_request("no summary today"));
    let env = wall_env(script);
    let out = env.run(&["run", "--json", "read the files"]);
    out.assert_code(1);
    env.server.assert_invariants();
    let t = out.json();
    assert_eq!(t["status"], "context_exceeded");
    assert_ends_with_partial(&t, "Still trying to");
    let messages = t["messages"].to_string();
    assert!(
        !messages.contains("I was about to"),
        "replaced by the retry's"
    );
    // A partial answer is never sent back: the retry asks the same turn again.
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 7, "one retry, one summary request");
    assert_eq!(reqs[4].messages().len(), reqs[5].messages().len());
    for r in &reqs[5..] {
        let sent = Value::from(r.messages().to_vec()).to_string();
        assert!(!sent.contains("I was about to") && !sent.contains("Still trying to"));
    }
    assert!(
        t["context_compactions"][0]["error"]
            .as_str()
            .unwrap()
            .contains("no summary today")
    );
}

#[test]
fn a_history_that_cannot_be_cleared_is_context_exceeded() {
    // The very first request is too long: there is no tool result to clear.
    let env = TestEnv::new(vec![Reply::bad_request(
        "prompt is too long: 250000 tokens > 200000 maximum",
    )]);
    let out = env.run(&["run", "--json", "a huge prompt"]);
    out.assert_code(1).assert_no_secret();
    let t = out.json();
    assert_eq!(t["status"], "context_exceeded");
    assert_eq!(t["error"]["kind"], "context_exceeded");
    let msg = t["error"]["message"].as_str().unwrap();
    assert!(msg.contains("does not fit"), "{msg}");
    assert!(msg.contains("250000 tokens > 200000"), "{msg}");
    assert!(out.stderr.contains("does not fit"), "{}", out.stderr);
    assert_eq!(env.server.request_count(), 1);
}

/// A run whose request overflows, is cleared, and overflows again.
fn overflow_twice() -> (TestEnv, RunOutput) {
    let mut script = wall_script(Reply::bad_request(
        "prompt is too long: 210000 tokens > 200000 maximum",
    ));
    script.pop();
    script.push(Reply::bad_request(
        "prompt is too long: 205000 tokens > 200000 maximum",
    ));
    // After the clearing, a summary is tried once (and refused here).
    script.push(Reply::bad_request("no summary today"));
    let env = wall_env(script);
    let out = env.run(&["run", "--json", "read the files"]);
    (env, out)
}

#[test]
fn a_second_overflow_after_clearing_is_context_exceeded() {
    let (env, out) = overflow_twice();
    out.assert_code(1);
    let t = out.json();
    assert_eq!(t["status"], "context_exceeded");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still does not fit"),
        "{}",
        t["error"]
    );
    assert_eq!(
        env.server.request_count(),
        7,
        "one retry, then one summary request, and no further retry"
    );
    env.server.assert_invariants();
}

#[test]
fn openai_context_length_exceeded_teaches_the_window_and_is_recovered() {
    let mut script: Vec<Reply> = (1..=4)
        .map(|k| read_turn(k, &format!("f{k}.txt"), 1000))
        .collect();
    let overflow = json!({"error": {"message": "This model's maximum context length is 8192 \
        tokens. However, your messages resulted in 9000 tokens. Please reduce the length of \
        the messages.", "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}});
    script.push(Reply::raw(400, "application/json", &overflow.to_string()));
    script.push(Reply::turn(Turn::new().text("Done.")));
    let env = TestEnv::new(script);
    for k in 1..=4 {
        env.write(
            &format!("f{k}.txt"),
            &format!("file {k} content line\n").repeat(100),
        );
    }
    // An unknown model, no --context-window: nothing is known until the error.
    let out = env.run_openai("local-model", &["--json", "read the files"]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let t = out.json();
    assert_eq!(t["context_window"], 8192, "learned from the error");
    assert_eq!(t["context_clearings"][0]["tokens_before"], 9000);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 6);
    let tool_texts = |r: &Recorded| -> Vec<String> {
        r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    let before = tool_texts(&reqs[4]);
    let after = tool_texts(&reqs[5]);
    assert!(!is_cleared(&before[0]));
    assert!(is_cleared(&after[0]), "{after:?}");
    assert_eq!(after[1..], before[1..]);
    assert!(out.stderr.contains("8192 tokens"), "{}", out.stderr);
    let learned = "agent: warning: the model's context window is 8192 tokens (from the API's error); \
                   --context-window sets it from the start";
    assert!(out.stderr.lines().any(|l| l == learned), "{}", out.stderr);
}

#[test]
fn every_message_is_serialised_once_across_the_run() {
    const TURNS: usize = 12;
    let mut script: Vec<Reply> = (1..=TURNS)
        .map(|k| read_turn(k, &format!("f{k}.txt"), 100))
        .collect();
    script.push(Reply::Sse(turn_text("Read them all.")));
    let env = TestEnv::new(script);
    for k in 1..=TURNS {
        big_file(&env, &format!("f{k}.txt"), 500);
    }
    let out_file = env.out("t.json");
    // Requests, -o checkpoints and the --jsonl transcript all go through the same bytes.
    let out = env.run(&[
        "run",
        "-v",
        "--jsonl",
        "-o",
        out_file.to_str().unwrap(),
        "read them",
    ]);
    out.assert_code(0);
    // The task, each turn's answer and results, the final answer.
    let messages = 1 + 2 * TURNS + 1;
    let line = format!("history: {messages} messages, {messages} serialisations");
    assert!(out.stderr.contains(&line), "{}", out.stderr);
    assert_eq!(
        read_json(&out_file)["messages"].as_array().unwrap().len(),
        messages
    );
}

#[test]
fn a_sigkill_at_any_point_leaves_a_valid_checkpoint() {
    const TURNS: usize = 30;
    const KILLS: u64 = 6;
    let (mut rng, seed) = Rng::from_clock();
    for kill in 0..KILLS {
        let script: Vec<Reply> = (1..=TURNS)
            .map(|k| read_turn(k, &format!("f{k}.txt"), 100))
            .collect();
        let env = TestEnv::keep_alive(script);
        for k in 1..=TURNS {
            big_file(&env, &format!("f{k}.txt"), 4000);
        }
        let out_file = env.out("t.json");
        let run = env.spawn(&["run", "-q", "-o", out_file.to_str().unwrap(), "read"]);
        // A random request to wait for, then a random amount of busy work: the kill
        // lands anywhere in a turn (streaming, running the tool, writing the file).
        let at = 1 + rng.below(TURNS as u64 - 2) as usize;
        env.server.wait_for_requests(at);
        let spin = rng.spin(2_000_000);
        run.signal(libc::SIGKILL);
        let _ = run.wait();
        // Panics unless -o is whole, valid JSON and the journal's whole lines parse.
        let t = crate::journal::read_checkpoint(&out_file);
        let why = format!("kill {kill} (seed {seed}, request {at}, spin {spin})");
        if t["status"] != "running" {
            // On a loaded machine the run may outpace the kill and end (the script ran
            // out): then the file is the final transcript, also whole.
            assert_eq!(t["status"], "error", "{why}");
            continue;
        }
        let messages = t["messages"].as_array().unwrap();
        assert!(!messages.is_empty(), "{why}");
        // A checkpoint ends after results, or (written before the calls run)
        // with the response whose calls were running.
        let last = messages.last().unwrap();
        let calls_pending = last["role"] == "assistant"
            && last["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["type"] == "tool_use");
        assert!(
            messages.len() % 2 == 1 || calls_pending,
            "a checkpoint ends after results or with pending calls; {why}"
        );
    }
}

#[test]
fn a_resumed_history_is_cleared_before_its_first_request() {
    // Run 1: six reads, then an answer. Run 2 resumes it with a window the resumed
    // history already fills past --compact-at: no usage is known yet, so the bytes decide.
    let mut script: Vec<Reply> = (1..=6)
        .map(|k| read_turn(k, &format!("f{k}.txt"), 1000))
        .collect();
    script.push(Reply::turn(Turn::new().text("Read them.")));
    script.push(Reply::turn(Turn::new().text("Still fine.")));
    let env = TestEnv::new(script);
    for k in 1..=6 {
        big_file(&env, &format!("f{k}.txt"), 3000);
    }
    let first = env.out("first.json");
    env.run(&["run", "-q", "-o", first.to_str().unwrap(), "read the files"])
        .assert_code(0);
    let out = env.run(&[
        "run",
        "--json",
        "--resume",
        first.to_str().unwrap(),
        "--context-window",
        "11000",
        "anything else?",
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 8);
    let texts = result_texts(&reqs[7]);
    assert_eq!(texts.len(), 6);
    let cleared = texts.iter().take_while(|t| is_cleared(t)).count();
    assert!((1..=3).contains(&cleared), "{texts:?}");
    assert!(texts[cleared..].iter().all(|t| !is_cleared(t)));
    let t = out.json();
    assert_eq!(t["context_clearings"][0]["turn"], 1);
    assert_eq!(t["context_clearings"][0]["results_cleared"], cleared);
}

/// The texts of a clearing and of a wall, exactly: a lost `\` continuation once put runs
/// of spaces inside them. The retry's request is the first attempt's with only the
/// oldest result replaced, by exactly the placeholder.
#[test]
fn the_clearing_and_wall_texts_are_exact() {
    let (env, out) = overflow_twice();
    out.assert_code(1);
    let t = out.json();
    let after = t["context_clearings"][0]["tokens_after_estimate"]
        .as_u64()
        .unwrap();
    let line = format!(
        "agent: turn 5: cleared 1 old tool results to save context \
         (210000 → about {after} tokens of a 200000-token window)"
    );
    assert!(
        out.stderr.lines().any(|l| l == line),
        "no line {line:?} in\n{}",
        out.stderr
    );
    assert_eq!(
        t["error"]["message"],
        "the conversation still does not fit in the model's context window after clearing \
         old tool results (205000 tokens > 200000): HTTP 400 invalid_request_error: prompt is too long: \
         205000 tokens > 200000 maximum"
    );
    // What the model received: the retry is the first attempt with the oldest result
    // replaced by exactly the placeholder, everything else byte for byte.
    let reqs = env.server.requests();
    let (first, retry) = (&reqs[4], &reqs[5]);
    let mut expected = without_cache_control(&first.body["messages"]);
    let oldest = expected[2]["content"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|b| b["type"] == "tool_result")
        .unwrap();
    oldest["content"] = json!(CLEARED);
    assert_eq!(without_cache_control(&retry.body["messages"]), expected);
}

#[test]
fn a_bad_compact_at_is_named_in_one_sentence() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--compact-at", "0.3", "x"]);
    out.assert_code(2);
    assert!(
        out.stderr.lines().any(|l| l
            == "agent: error: --compact-at must be a fraction of the window above 0.5 \
                (clearing goes down to half the window) and at most 1, or a token count of at \
                least 1000, got 0.3"),
        "{}",
        out.stderr
    );
}
