//! `--fallback-model`: once the model's retries end overloaded (HTTP 529, or an
//! `overloaded_error` in the stream), the same request goes to the fallback model, which
//! answers for the rest of the run; the transcript, the events and the cassette say which
//! model answered each turn. Other failures never reach the fallback. The mock sees every
//! request, so each test checks which model each one went to. Retries stay fast: the
//! 529s carry `retry-after-ms: 1`, which the client honours.

use serde_json::{Value, json};

use crate::support::responses;
use crate::support::*;

const PRIMARY: &str = "claude-sonnet-4-5";
const FALLBACK: &str = "claude-haiku-4-5";

/// HTTP 529 that asks for a 1 ms wait (instead of the half-second backoff).
fn overloaded() -> Reply {
    Reply::overloaded().with_header("retry-after-ms", "1")
}

/// The model each request the mock received went to.
fn models_asked(env: &TestEnv) -> Vec<String> {
    env.server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_string())
        .collect()
}

/// `[PRIMARY × n, FALLBACK × m]`.
fn asked(primary: usize, fallback: usize) -> Vec<String> {
    let mut v = vec![PRIMARY.to_string(); primary];
    v.extend(vec![FALLBACK.to_string(); fallback]);
    v
}

/// Cost of one turn of the mock's default usage (100 in, 20 out) at `input`/`output`
/// USD per million tokens.
fn turn_cost(input: f64, output: f64) -> f64 {
    (100.0 * input + 20.0 * output) / 1_000_000.0
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-12)
}

/// `agent run --json -m PRIMARY --fallback-model FALLBACK --max-retries N PROMPT`.
fn run_with_fallback(env: &TestEnv, retries: &str, prompt: &str) -> RunOutput {
    env.run(&[
        "run",
        "--json",
        "-m",
        PRIMARY,
        "--fallback-model",
        FALLBACK,
        "--max-retries",
        retries,
        prompt,
    ])
}

#[test]
fn after_the_retries_for_529_the_fallback_answers_the_rest_of_the_run() {
    let env = TestEnv::new(vec![
        // Turn 1: the model answers with a tool call.
        Reply::turn(
            Turn::new()
                .text("Reading.")
                .tool("toolu_1", "ReadFile", json!({"path": "a.txt"}))
                .model(PRIMARY),
        ),
        // Turn 2: 1 try + 2 retries overloaded, then the fallback.
        overloaded(),
        overloaded(),
        overloaded(),
        Reply::turn(
            Turn::new()
                .tool("toolu_2", "ReadFile", json!({"path": "a.txt"}))
                .model(FALLBACK),
        ),
        // Turn 3 goes straight to the fallback.
        Reply::turn(Turn::new().text("done").model(FALLBACK)),
    ]);
    env.write("a.txt", "alpha\n");
    let out = run_with_fallback(&env, "2", "read a.txt");
    out.assert_code(0).assert_no_secret();
    assert_eq!(models_asked(&env), asked(4, 2));
    let reqs = env.server.requests();
    let body_without_model = |i: usize| {
        let mut b = reqs[i].body.clone();
        b.as_object_mut().unwrap().remove("model");
        b
    };
    assert_eq!(
        body_without_model(4),
        body_without_model(1),
        "the same request, to the other model"
    );
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(t["result"], "done");
    assert_eq!(t["retries"], 2);
    assert_eq!(t["model"], FALLBACK, "the last turn's model");
    let used = &t["models_used"];
    assert_eq!(used[0]["model"], PRIMARY);
    assert_eq!(used[0]["turns"], 1);
    assert_eq!(used[1]["model"], FALLBACK);
    assert_eq!(used[1]["turns"], 2);
    assert_eq!(used.as_array().unwrap().len(), 2);
    let calls = t["tool_calls"].as_array().unwrap();
    let call_models: Vec<&str> = calls.iter().map(|c| c["model"].as_str().unwrap()).collect();
    assert_eq!(call_models, [PRIMARY, FALLBACK]);
    // Each turn priced by its own model: Sonnet 3/15, Haiku 1/5 USD per MTok.
    let sonnet = turn_cost(3.0, 15.0);
    let haiku = 2.0 * turn_cost(1.0, 5.0);
    assert!(close(&used[0]["cost_usd"], sonnet), "{used}");
    assert!(close(&used[1]["cost_usd"], haiku), "{used}");
    assert!(close(&t["cost_usd"], sonnet + haiku), "{}", t["cost_usd"]);
    assert!(
        out.stderr.contains(PRIMARY)
            && out.stderr.contains(FALLBACK)
            && out.stderr.contains("fallback"),
        "the switch is logged: {}",
        out.stderr
    );
    env.server.assert_invariants();
    env.server.assert_script_consumed();
}

#[test]
fn an_overloaded_error_in_the_stream_also_goes_to_the_fallback_on_both_wires() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::Responses] {
        let broken =
            Reply::turn(Turn::new().text("Partial-walrus")).with_fault(Fault::ErrorBeforeEnd {
                kind: "overloaded_error".into(),
                message: "Overloaded".into(),
            });
        let env = TestEnv::new(vec![
            broken.clone(),
            broken,
            // This stream names no model: the one asked for answered.
            Reply::Sse(match wire {
                Wire::Anthropic | Wire::Bedrock | Wire::Vertex => turn_text("recovered"),
                Wire::OpenAi => chat_without_model("recovered"),
                Wire::Responses => responses_without_model("recovered"),
            }),
        ]);
        let mut args = vec!["run", "--jsonl", "--max-retries", "1"];
        let url = env.server.openai_url();
        if wire == Wire::OpenAi {
            args.extend(["--provider", "openai", "--base-url", &url]);
        }
        if wire == Wire::Responses {
            args.extend(["--provider", "openai-responses", "--base-url", &url]);
        }
        args.extend(["-m", PRIMARY, "--fallback-model", FALLBACK, "hi"]);
        let out = env.run_with_env(&args, &[("OPENAI_API_KEY", OPENAI_KEY)]);
        out.assert_code(0).assert_no_secret();
        assert_eq!(models_asked(&env), asked(2, 1), "{wire:?}");
        let events: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let of =
            |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
        let switch = of("model.fallback");
        assert_eq!(switch.len(), 1, "{wire:?}: {}", out.stdout);
        assert_eq!(switch[0]["from"], PRIMARY);
        assert_eq!(switch[0]["to"], FALLBACK);
        assert_eq!(switch[0]["turn"], 1);
        assert!(
            switch[0]["reason"]
                .as_str()
                .unwrap()
                .contains("overloaded_error"),
            "{}",
            switch[0]
        );
        let messages = of("assistant.message");
        let reported = match wire {
            Wire::Anthropic | Wire::Bedrock | Wire::Vertex => sse::MOCK_MODEL,
            Wire::OpenAi | Wire::Responses => FALLBACK,
        };
        assert_eq!(messages[0]["model"], reported, "{wire:?}");
        assert_eq!(of("turn.finished")[0]["model"], reported);
        let t = &of("run.finished")[0]["transcript"];
        assert_eq!(t["status"], "success");
        assert_eq!(t["result"], "recovered");
        assert_eq!(
            t["models_used"],
            json!([{"model": reported, "turns": 1,
            "cost_usd": t["models_used"][0]["cost_usd"]}])
        );
        assert!(!t["messages"].to_string().contains("Partial-walrus"));
        env.server.assert_invariants();
    }
}

/// An OpenAI-compatible stream whose chunks carry no `model` (some servers send none).
/// A Responses stream of `text` whose response objects name no model.
fn responses_without_model(text: &str) -> Vec<String> {
    let model = format!("\"model\":{},", json!(responses::RESPONSES_MODEL));
    responses::frames(&Turn::new().text(text))
        .into_iter()
        .map(|frame| frame.replace(&model, ""))
        .collect()
}

fn chat_without_model(text: &str) -> Vec<String> {
    chat::frames(&Turn::new().text(text))
        .into_iter()
        .map(|frame| {
            let parsed = frame
                .strip_prefix("data: ")
                .map(|d| serde_json::from_str(d.trim()));
            match parsed {
                Some(Ok(Value::Object(mut chunk))) => {
                    chunk.remove("model");
                    format!("data: {}\n\n", Value::Object(chunk))
                }
                _ => frame, // [DONE]
            }
        })
        .collect()
}

#[test]
fn without_a_fallback_model_an_overload_ends_the_run_as_before() {
    let env = TestEnv::new(vec![
        overloaded(),
        overloaded(),
        Reply::turn(Turn::new().text("never asked")),
    ]);
    let out = env.run(&["run", "--json", "-m", PRIMARY, "--max-retries", "1", "hi"]);
    out.assert_code(1).assert_no_secret();
    assert_eq!(models_asked(&env), asked(2, 0));
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert_eq!(t["error"]["kind"], "api_error");
    let msg = t["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("529") && msg.contains("gave up after 1 retries"),
        "{msg}"
    );
    assert!(!msg.contains("fallback"), "{msg}");
    assert_eq!(t["models_used"], json!([]));
    assert!(!out.stderr.contains("fallback"), "{}", out.stderr);
}

#[test]
fn an_overloaded_fallback_is_an_error_naming_both_models() {
    let env = TestEnv::new(vec![
        overloaded(),
        overloaded(),
        overloaded(),
        overloaded(),
        Reply::turn(Turn::new().text("never asked")),
    ]);
    let out = run_with_fallback(&env, "1", "hi");
    out.assert_code(1).assert_no_secret();
    assert_eq!(
        models_asked(&env),
        asked(2, 2),
        "the fallback is retried like any request, then given up"
    );
    let t = out.json();
    assert_eq!(t["status"], "error");
    assert_eq!(t["retries"], 2);
    let msg = t["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("both models are overloaded")
            && msg.contains(PRIMARY)
            && msg.contains(FALLBACK),
        "{msg}"
    );
    assert!(out.stderr.contains(msg), "{}", out.stderr);
}

#[test]
fn a_failure_other_than_an_overload_never_goes_to_the_fallback() {
    let server_error = || {
        Reply::api_error(500, "api_error", "Internal server error")
            .with_header("retry-after-ms", "1")
    };
    let cases: Vec<(&str, Vec<Reply>, usize)> = vec![
        ("500s", vec![server_error(), server_error()], 2),
        ("400", vec![Reply::bad_request("messages: mock says no")], 1),
        (
            "401",
            vec![Reply::api_error(
                401,
                "authentication_error",
                "invalid x-api-key",
            )],
            1,
        ),
    ];
    for (what, mut script, tries) in cases {
        script.push(Reply::turn(Turn::new().text("never asked")));
        let env = TestEnv::new(script);
        let out = run_with_fallback(&env, "1", "hi");
        out.assert_code(1).assert_no_secret();
        assert_eq!(models_asked(&env), asked(tries, 0), "{what}");
        let t = out.json();
        assert_eq!(t["status"], "error", "{what}");
        assert!(
            !t["error"]["message"].as_str().unwrap().contains(FALLBACK),
            "{what}: {}",
            t["error"]
        );
        assert!(!out.stderr.contains(FALLBACK), "{what}: {}", out.stderr);
    }
}

#[test]
fn the_flag_must_name_another_model() {
    let env = TestEnv::new(vec![]);
    for (args, says) in [
        (vec!["run", "--fallback-model", "", "hi"], "is empty"),
        (
            vec!["run", "-m", PRIMARY, "--fallback-model", PRIMARY, "hi"],
            "the run's model too",
        ),
    ] {
        let out = env.run(&args);
        out.assert_code(2);
        assert!(out.stdout.is_empty());
        assert!(
            out.stderr.contains("--fallback-model") && out.stderr.contains(says),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn a_recorded_fallback_replays_with_the_same_models() {
    let env = TestEnv::new(vec![
        Reply::turn(
            Turn::new()
                .tool("toolu_1", "ReadFile", json!({"path": "a.txt"}))
                .model(PRIMARY),
        ),
        overloaded(),
        Reply::turn(Turn::new().text("done").model(FALLBACK)),
    ]);
    env.write("a.txt", "alpha\n");
    let cassette = env.out("fallback.cassette.jsonl");
    let cassette = cassette.to_str().unwrap();
    let flags = ["-m", PRIMARY, "--fallback-model", FALLBACK];
    let mut args = vec!["run", "--json", "--max-retries", "0", "--record", cassette];
    args.extend(flags);
    args.push("read a.txt");
    let live = env.run(&args);
    live.assert_code(0);
    assert_eq!(models_asked(&env), asked(2, 1));
    let lines: Vec<Value> = std::fs::read_to_string(cassette)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let recorded: Vec<&Value> = lines[1..].iter().map(|l| &l["request"]["model"]).collect();
    assert_eq!(recorded, [PRIMARY, FALLBACK], "which model each turn asked");
    let replayed = env.run(&["run", "--json", "--replay", cassette, "read a.txt"]);
    replayed.assert_code(0);
    let (live, replayed) = (live.json(), replayed.json());
    assert_eq!(replayed["models_used"], live["models_used"]);
    assert_eq!(replayed["tool_calls"][0]["model"], PRIMARY);
    assert_eq!(replayed["model"], FALLBACK);
    assert_eq!(env.server.request_count(), 3, "replay asked nobody");
}

#[test]
fn a_resumed_run_goes_on_with_the_model_it_fell_back_to() {
    let env = TestEnv::new(vec![
        overloaded(),
        Reply::turn(Turn::new().text("first answer").model(FALLBACK)),
        Reply::turn(Turn::new().text("second answer").model(FALLBACK)),
    ]);
    let saved = env.out("t.json");
    let saved = saved.to_str().unwrap();
    let flags = ["--fallback-model", FALLBACK, "--max-retries", "0"];
    let mut first = vec!["run", "-o", saved, "-m", PRIMARY];
    first.extend(flags);
    first.push("first task");
    env.run(&first).assert_code(0);
    // The same flags again, without -m: the transcript's model is the fallback.
    let mut again = vec!["run", "--json", "--resume", saved];
    again.extend(flags);
    again.push("and now this");
    let out = env.run(&again);
    out.assert_code(0);
    assert_eq!(models_asked(&env), asked(1, 2));
    assert_eq!(out.json()["result"], "second answer");
    assert!(
        out.stderr.contains("already ran on the --fallback-model"),
        "{}",
        out.stderr
    );
}
