//! OpenTelemetry export (docs/guide/opentelemetry.md): a scripted run against the loopback
//! collector of `tests/support/otlp.rs`, which decodes both encodings. The span tree
//! (names, parents, the GenAI attributes, status on failure), `TRACEPARENT` honoured and
//! handed to commands, the metrics against the transcript's totals, a collector that
//! fails or never answers, and the headers' values never in a log.

use crate::support::otlp::{Answer, Collector, SpanView};
use crate::support::*;
use serde_json::{Value, json};

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";
const HEADER_SECRET: &str = "otel-collector-token-DO-NOT-LEAK";

fn otel_env(c: &Collector, protocol: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", c.url.clone()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.to_string()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{HEADER_SECRET}"),
        ),
        ("GITHUB_ACTIONS", "true".into()),
        ("GITHUB_WORKFLOW", "CI".into()),
        ("GITHUB_RUN_ID", "4242".into()),
        ("GITHUB_REPOSITORY", "octo/repo".into()),
        ("GITHUB_REF_NAME", "main".into()),
    ]
}

fn run_with(env: &TestEnv, args: &[&str], vars: &[(&str, String)]) -> RunOutput {
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.run_with_env(args, &vars)
}

/// The one span named `name`.
fn one<'a>(spans: &'a [SpanView], name: &str) -> &'a SpanView {
    let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "spans named {name}: {spans:#?}");
    found[0]
}

/// What a Bash result says the command printed.
fn printed(result: &str) -> &str {
    let start = result.find("<output>").map_or(0, |i| i + "<output>".len());
    let end = result.find("</output>").unwrap_or(result.len());
    result[start..end].trim()
}

/// The text of each tool_result in the transcript, in order.
fn tool_results(t: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in t["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join(""),
                    _ => String::new(),
                };
                out.push(text);
            }
        }
    }
    out
}

/// Two turns of calls (two reads in one parallel batch, one failing; then a Bash call
/// behind a PreToolUse hook), an answer, and a `--verify` round: the whole tree, in
/// both encodings.
#[test]
fn a_scripted_run_is_one_span_tree() {
    for protocol in ["http/protobuf", "http/json"] {
        let collector = Collector::start(Answer::Ok);
        let env = TestEnv::new(vec![
            Reply::turn(
                Turn::new()
                    .tool("toolu_r1", "ReadFile", json!({"path": "a.txt"}))
                    .tool("toolu_r2", "ReadFile", json!({"path": "missing.txt"}))
                    .usage(100, 20),
            ),
            Reply::turn(
                Turn::new()
                    .tool(
                        "toolu_b",
                        "Bash",
                        json!({"command": "echo \"TP=$TRACEPARENT\""}),
                    )
                    .usage(200, 30),
            ),
            Reply::turn(Turn::new().text("done").usage(300, 40)),
        ]);
        env.write("a.txt", "hello\n");
        env.write(
            ".agent/settings.json",
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash",
                "command": "echo \"$TRACEPARENT\" > hook-traceparent.txt"}]},
               "prices": {"claude-mock": {"input": 1000, "output": 2000, "cache_write": 0, "cache_read": 0}}}"#,
        );
        let mut vars = otel_env(&collector, protocol);
        vars.push(("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")));
        vars.push(("TRACESTATE", "vendor=x".into()));
        let out = run_with(
            &env,
            &[
                "run",
                "-m",
                "claude-mock-asked",
                "--allow-bash",
                "--json",
                "--verify",
                "echo \"$TRACEPARENT\" > verify-traceparent.txt",
                "go",
            ],
            &vars,
        );
        out.assert_code(0).assert_no_secret();
        let t = out.json();
        let spans = collector.spans();

        // Every span is in the parent's trace; the run is the parent's child.
        assert!(
            spans.iter().all(|s| s.trace_id == PARENT_TRACE),
            "{spans:#?}"
        );
        let run = one(&spans, "invoke_agent agent");
        assert_eq!(run.parent.as_deref(), Some(PARENT_SPAN));
        assert_eq!(run.status, 1, "{protocol}: {run:#?}");
        assert_eq!(run.attr("gen_ai.operation.name"), "invoke_agent");
        assert_eq!(run.attr("gen_ai.conversation.id"), &t["session_id"]);
        assert_eq!(run.attr("agent.run.status"), "success");
        assert_eq!(run.attr("agent.run.turns"), &json!(3));
        assert_eq!(run.attr("agent.run.cost_usd"), &t["total_cost_usd"]);
        assert_eq!(
            run.attr("agent.workspace"),
            &json!(env.ws().display().to_string())
        );

        // Three requests, each a chat span under the run.
        let chats: Vec<_> = spans
            .iter()
            .filter(|s| s.name.starts_with("chat "))
            .collect();
        assert_eq!(chats.len(), 3, "{spans:#?}");
        for (c, (input, output)) in chats.iter().zip([(100, 20), (200, 30), (300, 40)]) {
            assert_eq!(c.parent.as_deref(), Some(run.span_id.as_str()));
            assert_eq!(c.kind, 3, "client");
            assert_eq!(c.attr("gen_ai.operation.name"), "chat");
            assert_eq!(c.attr("gen_ai.provider.name"), "anthropic");
            assert_eq!(c.name, "chat claude-mock-asked");
            assert_eq!(c.attr("gen_ai.request.model"), "claude-mock-asked");
            assert_eq!(c.attr("gen_ai.response.model"), "claude-mock-1");
            assert!(
                c.attr("gen_ai.response.id")
                    .as_str()
                    .is_some_and(|s| !s.is_empty())
            );
            assert_eq!(c.attr("gen_ai.usage.input_tokens"), &json!(input));
            assert_eq!(c.attr("gen_ai.usage.output_tokens"), &json!(output));
            assert_eq!(c.attr("gen_ai.usage.cache_read.input_tokens"), &json!(0));
        }
        assert_eq!(
            chats[0].attr("gen_ai.response.finish_reasons"),
            &json!(["tool_use"])
        );
        assert_eq!(
            chats[2].attr("gen_ai.response.finish_reasons"),
            &json!(["end_turn"])
        );

        // The tool calls: batch numbers as the transcript has them, the failure marked.
        let calls = t["tool_calls"].as_array().unwrap();
        for c in calls {
            let id = c["id"].as_str().unwrap();
            let s = spans
                .iter()
                .find(|s| s.attr("gen_ai.tool.call.id") == id)
                .unwrap_or_else(|| panic!("no span for {id}: {spans:#?}"));
            assert_eq!(
                s.name,
                format!("execute_tool {}", c["name"].as_str().unwrap())
            );
            assert_eq!(s.parent.as_deref(), Some(run.span_id.as_str()));
            assert_eq!(s.attr("gen_ai.operation.name"), "execute_tool");
            assert_eq!(s.attr("gen_ai.tool.name"), &c["name"]);
            assert_eq!(s.attr("gen_ai.tool.type"), "function");
            assert_eq!(s.attr("agent.tool.batch"), &c["batch"]);
            if c["is_error"] == true {
                assert_eq!(s.status, 2, "{s:#?}");
                assert_eq!(s.attr("error.type"), "tool_error");
            } else {
                assert_ne!(s.status, 2, "{s:#?}");
                assert_eq!(s.attr("error.type"), &Value::Null);
            }
        }
        assert_eq!(calls[0]["batch"], calls[1]["batch"], "one parallel batch");
        assert_eq!(calls[1]["is_error"], true);
        // No content without --otel-content.
        assert!(
            spans
                .iter()
                .all(|s| !s.attrs.contains_key("gen_ai.tool.call.arguments")
                    && !s.attrs.contains_key("gen_ai.output.messages"))
        );

        // Bash got its own span as TRACEPARENT, tracestate kept; the hook and --verify
        // ran in spans of their own.
        let bash = spans
            .iter()
            .find(|s| s.name == "execute_tool Bash")
            .unwrap();
        let results = tool_results(&t);
        assert_eq!(
            printed(&results[2]),
            format!("TP=00-{PARENT_TRACE}-{}-01", bash.span_id),
            "{results:?}"
        );
        let hook = one(&spans, "hook PreToolUse");
        assert_eq!(hook.parent.as_deref(), Some(bash.span_id.as_str()));
        assert_eq!(hook.attr("process.exit.code"), &json!(0));
        assert_eq!(
            env.read("hook-traceparent.txt").trim(),
            format!("00-{PARENT_TRACE}-{}-01", hook.span_id)
        );
        let verify = one(&spans, "verify");
        assert_eq!(verify.parent.as_deref(), Some(run.span_id.as_str()));
        assert_eq!(verify.attr("agent.verify.passed"), &json!(true));
        assert_eq!(
            env.read("verify-traceparent.txt").trim(),
            format!("00-{PARENT_TRACE}-{}-01", verify.span_id)
        );

        // The resource: service and the GitHub Actions run.
        let res = collector.resource();
        assert_eq!(res["service.name"], "agent");
        assert_eq!(res["cicd.pipeline.name"], "CI");
        assert_eq!(res["cicd.pipeline.run.id"], "4242");
        assert_eq!(
            res["vcs.repository.url.full"],
            "https://github.com/octo/repo"
        );
        assert_eq!(res["vcs.ref.head.name"], "main");

        // The metrics add up to the transcript's totals.
        let sum_by = |points: &[Value], key: &str, value: &str| -> f64 {
            points
                .iter()
                .filter(|p| {
                    crate::support::otlp::attributes(&p["attributes"])
                        .get(key)
                        .is_some_and(|v| v == value)
                })
                .map(|p| p["sum"].as_f64().unwrap())
                .sum()
        };
        let tokens = collector.metric("gen_ai.client.token.usage");
        assert_eq!(
            sum_by(&tokens, "gen_ai.token.type", "input"),
            t["usage"]["input_tokens"].as_f64().unwrap()
        );
        assert_eq!(
            sum_by(&tokens, "gen_ai.token.type", "output"),
            t["usage"]["output_tokens"].as_f64().unwrap()
        );
        let durations = collector.metric("gen_ai.client.operation.duration");
        let count: u64 = durations
            .iter()
            .map(|p| p["count"].as_str().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(count, t["num_turns"].as_u64().unwrap());
        let tool_calls = collector.metric("agent.tool.calls");
        let n = |outcome: &str| -> i64 {
            tool_calls
                .iter()
                .filter(|p| {
                    crate::support::otlp::attributes(&p["attributes"])["agent.tool.outcome"]
                        == outcome
                })
                .map(|p| p["asInt"].as_str().unwrap().parse::<i64>().unwrap())
                .sum()
        };
        assert_eq!((n("ok"), n("error")), (2, 1));
        assert_eq!(n("ok") + n("error"), calls.len() as i64);
        let runs = collector.metric("agent.runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["asInt"], "1");
        let cost = collector.metric("agent.cost");
        assert_eq!(cost[0]["asDouble"], t["total_cost_usd"]);
        assert!(t["total_cost_usd"].as_f64().unwrap() > 0.0);

        // The collector got the header; no log line shows its value.
        let e = &collector.exports()[0];
        assert_eq!(
            e.headers["authorization"],
            format!("Bearer {HEADER_SECRET}")
        );
        assert!(!out.stderr.contains(HEADER_SECRET));
    }
}

/// A retried request: the retry is an event of the request's span, which ends well.
#[test]
fn retries_are_events_of_the_request_span() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![
        Reply::overloaded().with_header("retry-after-ms", "1"),
        Reply::turn(Turn::new().text("done")),
    ]);
    let out = run_with(
        &env,
        &["run", "--json", "go"],
        &otel_env(&collector, "http/json"),
    );
    out.assert_code(0);
    let spans = collector.spans();
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    assert_eq!(chat.events.len(), 1, "{chat:#?}");
    let (name, attrs) = &chat.events[0];
    assert_eq!(name, "retry");
    assert_eq!(attrs["agent.retry.attempt"], json!(1));
    assert_ne!(chat.status, 2);
}

/// A failed run: the run span and the request's span say so (status ERROR, error.type).
#[test]
fn a_failed_run_marks_its_spans() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![Reply::bad_request("no such thing")]);
    let out = run_with(
        &env,
        &["run", "--json", "go"],
        &otel_env(&collector, "http/protobuf"),
    );
    out.assert_code(1);
    let spans = collector.spans();
    let run = one(&spans, "invoke_agent agent");
    assert_eq!(run.parent, None, "no TRACEPARENT: a new trace");
    assert_eq!(run.status, 2);
    assert_eq!(run.attr("error.type"), "api_error");
    assert_eq!(run.attr("agent.run.status"), "error");
    assert!(run.status_message.contains("no such thing"), "{run:#?}");
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    assert_eq!(chat.status, 2);
    assert_eq!(chat.attr("error.type"), "api_error");
    let runs = collector.metric("agent.runs");
    assert_eq!(
        crate::support::otlp::attributes(&runs[0]["attributes"])["agent.run.status"],
        "error"
    );
}

/// `--otel-content`: the answer and the tool input reach the spans, secrets redacted.
#[test]
fn otel_content_adds_redacted_content() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool("toolu_r", "ReadFile", json!({"path": "a.txt"}))),
        Reply::turn(Turn::new().text(&format!("the key is {API_KEY}"))),
    ]);
    env.write("a.txt", "hello\n");
    let out = run_with(
        &env,
        &["run", "--json", "--otel-content", "go"],
        &otel_env(&collector, "http/json"),
    );
    out.assert_code(0);
    let spans = collector.spans();
    let read = one(&spans, "execute_tool ReadFile");
    assert!(
        read.attr("gen_ai.tool.call.arguments")
            .as_str()
            .unwrap()
            .contains("a.txt")
    );
    assert!(
        read.attr("gen_ai.tool.call.result")
            .as_str()
            .unwrap()
            .contains("hello")
    );
    let last = spans
        .iter()
        .rev()
        .find(|s| s.name.starts_with("chat "))
        .unwrap();
    let answer = last.attr("gen_ai.output.messages").as_str().unwrap();
    assert!(answer.contains("the key is [REDACTED]"), "{answer}");
    let all = format!("{:?}", collector.exports());
    assert!(!all.contains(API_KEY));
}

/// A collector that fails every export, or never answers: the run ends as it would
/// without one, and says what was lost; nothing waits for the collector's own timeout.
#[test]
fn a_failing_or_silent_collector_does_not_hold_the_run() {
    for answer in [Answer::Status(503), Answer::Never] {
        let collector = Collector::start(answer);
        let env = TestEnv::new(vec![Reply::turn(Turn::new().text("done"))]);
        let mut vars = otel_env(&collector, "http/protobuf");
        // Longer than the run limit of the test harness: only the flush deadline ends it.
        vars.push(("OTEL_EXPORTER_OTLP_TIMEOUT", "600000".into()));
        let out = run_with(&env, &["run", "--json", "go"], &vars);
        out.assert_code(0);
        assert_eq!(out.json()["result"], "done");
        let e = &out.stderr;
        match answer {
            Answer::Status(_) => {
                assert!(
                    e.contains("telemetry: exporting traces to") && e.contains("HTTP 503"),
                    "{e}"
                );
                // One warning for the first failure, the rest counted.
                assert_eq!(e.matches("failed: HTTP 503").count(), 1, "{e}");
                assert!(e.contains("export(s) failed"), "{e}");
            }
            _ => assert!(e.contains("gave up after 2s with"), "{e}"),
        }
        assert!(!collector.exports().is_empty(), "the export was tried");
        assert!(!e.contains(HEADER_SECRET));
    }
}

/// `-v` names the endpoint and the header's name, never its value; commands do not
/// inherit the headers variable.
#[test]
fn headers_are_redacted_in_verbose_logs_and_hidden_from_commands() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool(
            "toolu_b",
            "Bash",
            json!({"command": "echo \"H=$OTEL_EXPORTER_OTLP_HEADERS\""}),
        )),
        Reply::turn(Turn::new().text("done")),
    ]);
    let out = run_with(
        &env,
        &["run", "-v", "--allow-bash", "--json", "go"],
        &otel_env(&collector, "http/protobuf"),
    );
    out.assert_code(0);
    assert!(
        out.stderr.contains("telemetry: traces to")
            && out.stderr.contains("authorization=[REDACTED]"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(HEADER_SECRET), "{}", out.stderr);
    assert!(!out.stdout.contains(HEADER_SECRET));
    assert_eq!(printed(&tool_results(&out.json())[0]), "H=");
    assert_eq!(
        collector.exports()[0].headers["authorization"],
        format!("Bearer {HEADER_SECRET}")
    );
}

/// Without the variables nothing is exported and commands get no TRACEPARENT of ours.
#[test]
fn off_without_the_variables() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().tool(
            "toolu_b",
            "Bash",
            json!({"command": "echo \"TP=$TRACEPARENT\""}),
        )),
        Reply::turn(Turn::new().text("done")),
    ]);
    let out = run_with(
        &env,
        &["run", "--allow-bash", "--json", "go"],
        &[("OTEL_SERVICE_NAME", "x".into())],
    );
    out.assert_code(0);
    assert_eq!(printed(&tool_results(&out.json())[0]), "TP=");
    assert!(collector.exports().is_empty());
    // gRPC is refused with a warning; the run goes on.
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("done"))]);
    let out = run_with(
        &env,
        &["run", "--json", "go"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".into()),
        ],
    );
    out.assert_code(0);
    assert!(out.stderr.contains("OTLP over HTTP only"), "{}", out.stderr);
}

/// `agent batch`: one batch span under `TRACEPARENT`, each task's run a child of it.
#[test]
fn batch_tasks_are_children_of_the_batch_span() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().text("one")),
        Reply::turn(Turn::new().text("two")),
    ]);
    env.write("proj/README", "a project\n");
    env.write(
        "tasks.jsonl",
        &[
            json!({"id": "t1", "prompt": "do 1", "workspace": "proj"}).to_string(),
            json!({"id": "t2", "prompt": "do 2", "workspace": "proj"}).to_string(),
        ]
        .join("\n"),
    );
    let dir = env.out("results");
    let mut vars = otel_env(&collector, "http/protobuf");
    vars.push(("TRACEPARENT", format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01")));
    let out = run_with(
        &env,
        &["batch", "tasks.jsonl", "--out", dir.to_str().unwrap()],
        &vars,
    );
    out.assert_code(0);
    let spans = collector.spans();
    let batch = one(&spans, "invoke_workflow agent batch");
    assert_eq!(batch.parent.as_deref(), Some(PARENT_SPAN));
    assert_eq!(batch.attr("agent.batch.succeeded"), &json!(2));
    let runs: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent agent")
        .collect();
    assert_eq!(runs.len(), 2, "{spans:#?}");
    for r in runs {
        assert_eq!(r.parent.as_deref(), Some(batch.span_id.as_str()));
        assert_eq!(r.trace_id, PARENT_TRACE);
    }
}

/// An MCP tool's span names its server and the tool's own name.
#[test]
fn mcp_calls_name_their_server() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::keep_alive(vec![
        Reply::turn(Turn::new().tool("toolu_m", "mcp__t__echo", json!({"text": "hi"}))),
        Reply::turn(Turn::new().text("done")),
    ]);
    // The test server, as a Claude Code style stdio entry (tests/support/mcp.rs).
    let cfg = env.out("mcp.json");
    std::fs::write(
        &cfg,
        json!({"mcpServers": {"t": {"type": "stdio",
            "command": env!("CARGO_BIN_EXE_mcp-test-server"), "args": [], "env": {}}}})
        .to_string(),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap().to_string();
    let out = run_with(
        &env,
        &["run", "--json", "--mcp-config", &cfg, "go"],
        &otel_env(&collector, "http/protobuf"),
    );
    out.assert_code(0);
    let spans = collector.spans();
    let call = one(&spans, "execute_tool mcp__t__echo");
    assert_eq!(call.attr("agent.mcp.server"), "t");
    assert_eq!(call.attr("agent.mcp.tool"), "echo");
    assert_eq!(call.attr("gen_ai.tool.type"), "extension");
    assert_ne!(call.status, 2, "{call:#?}");
}

/// A sub-agent (Task) is a run span of its own under the Task call's span, with its
/// requests and calls under it; the run count and cost metrics count it once, in the
/// parent's.
#[test]
fn a_subagent_is_a_run_span_under_its_task_call() {
    let collector = Collector::start(Answer::Ok);
    let env = TestEnv::new(vec![
        Reply::turn(Turn::new().usage(1000, 100).tool(
            "toolu_t",
            "Task",
            json!({"description": "look", "prompt": "find notes", "subagent_type": "explore"}),
        )),
        Reply::turn(Turn::new().tool("toolu_r", "ReadFile", json!({"path": "notes.txt"}))),
        Reply::turn(Turn::new().text("found")),
        Reply::turn(Turn::new().text("done")),
    ]);
    env.write("notes.txt", "alpha\n");
    let out = run_with(
        &env,
        &["run", "--json", "go"],
        &otel_env(&collector, "http/protobuf"),
    );
    out.assert_code(0);
    let spans = collector.spans();
    let runs: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent agent")
        .collect();
    assert_eq!(runs.len(), 2, "{spans:#?}");
    let parent_run = runs
        .iter()
        .find(|s| s.attr("agent.subagent.id").is_null())
        .unwrap();
    let sub_run = runs
        .iter()
        .find(|s| s.attr("agent.subagent.id") == "subagent_1")
        .unwrap();
    let task = one(&spans, "execute_tool Task");
    assert_eq!(task.parent.as_deref(), Some(parent_run.span_id.as_str()));
    assert_eq!(sub_run.parent.as_deref(), Some(task.span_id.as_str()));
    let read = one(&spans, "execute_tool ReadFile");
    assert_eq!(read.parent.as_deref(), Some(sub_run.span_id.as_str()));
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 4);
    assert_eq!(
        chats
            .iter()
            .filter(|c| c.parent.as_deref() == Some(sub_run.span_id.as_str()))
            .count(),
        2
    );
    // One run counted, not two.
    let runs_metric = collector.metric("agent.runs");
    let total: f64 = runs_metric
        .iter()
        .map(|p| {
            p["asDouble"]
                .as_f64()
                .or(p["asInt"].as_str().and_then(|s| s.parse().ok()))
                .unwrap_or(0.0)
        })
        .sum();
    assert_eq!(total, 1.0, "{runs_metric:#?}");
}
