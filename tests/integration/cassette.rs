//! Record/replay (SPEC §3.3): a session recorded against the mock replays into a fresh
//! workspace with the same calls, files and transcript; a truncated cassette ends with
//! `error`; the key never reaches a cassette; the shipped demo really fixes its project.

use crate::support::*;
use serde_json::{Value, json};

const LIB: &str = "mul() {\n  echo $(( $1 + $2 ))\n}\n";
const TEST: &str = ". ./lib.sh\n[ \"$(mul 3 4)\" = 12 ] && echo PASS || { echo FAIL; exit 1; }\n";

/// A session whose tool inputs name absolute paths in the recording workspace.
fn script(ws: &str) -> Vec<Reply> {
    vec![
        Reply::Sse(
            Turn::new()
                .text("Reading the code and the test.")
                .tool(
                    "toolu_r1",
                    "ReadFile",
                    json!({"path": format!("{ws}/lib.sh")}),
                )
                .tool("toolu_r2", "ReadFile", json!({"path": "test.sh"}))
                .tool("toolu_g", "Glob", json!({"pattern": "*.sh", "path": ws}))
                .usage(120, 30)
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .text("`mul` adds. Fixing it.")
                .tool(
                    "toolu_e",
                    "EditFile",
                    json!({"path": format!("{ws}/lib.sh"), "old_string": "$1 + $2",
                           "new_string": "$1 * $2"}),
                )
                .usage(200, 40)
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .tool(
                    "toolu_b",
                    "Bash",
                    json!({"command": format!("cd {ws} && sh test.sh")}),
                )
                .usage(260, 20)
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                // A model that echoes the key: it must still never reach the cassette.
                .text(&format!(
                    "Fixed; test.sh prints PASS. (not a key: {API_KEY})"
                ))
                .usage(300, 25)
                .frames(),
        ),
    ]
}

/// Writes the two files with distinct, fixed modification times, so that Glob's
/// newest-first order is the same in both workspaces (coarse timestamps can tie).
fn write_project(env: &TestEnv) {
    let base = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    for (i, (name, text)) in [("lib.sh", LIB), ("test.sh", TEST)].into_iter().enumerate() {
        let path = env.write(name, text);
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(base + std::time::Duration::from_secs(i as u64))
            .unwrap();
    }
}

/// The transcript without what may differ between two runs of the same session.
fn normalized(t: &Value, ws: &str) -> Value {
    fn walk(v: &mut Value, ws: &str) {
        match v {
            Value::Object(o) => {
                // Per run by design: timings and the session id.
                for k in ["duration_ms", "api_duration_ms", "started_ms", "session_id"] {
                    o.remove(k);
                }
                o.values_mut().for_each(|v| walk(v, ws));
            }
            Value::Array(a) => a.iter_mut().for_each(|v| walk(v, ws)),
            Value::String(s) if s.contains(ws) => *s = s.replace(ws, "<WS>"),
            _ => {}
        }
    }
    let mut t = t.clone();
    walk(&mut t, ws);
    t
}

fn record() -> (TestEnv, Value, std::path::PathBuf) {
    let env = TestEnv::keep_alive_for(script);
    write_project(&env);
    let cassette = env.out("session.cassette.jsonl");
    let out = env.run(&[
        "run",
        "--full-auto",
        "--json",
        "--record",
        cassette.to_str().unwrap(),
        "fix mul",
    ]);
    out.assert_code(0).assert_no_secret();
    env.server.assert_invariants();
    env.server.assert_script_consumed();
    let t = out.json();
    (env, t, cassette)
}

#[test]
fn record_then_replay_into_a_fresh_workspace() {
    let (rec_env, rec_t, cassette) = record();
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(API_KEY), "the key reached the cassette");
    assert_eq!(text.lines().count(), 5, "a header and four turns");
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "header");
    assert_eq!(header["workspace"], rec_env.ws().to_str().unwrap());

    // A fresh workspace, no key, and a server that must not be asked anything.
    let env = TestEnv::new(vec![]);
    write_project(&env);
    let mut cmd = env.command(&[
        "run",
        "--full-auto",
        "--json",
        "--replay",
        cassette.to_str().unwrap(),
        "fix mul",
    ]);
    cmd.env_remove("ANTHROPIC_API_KEY");
    let out = env.spawn_command(cmd).wait();
    out.assert_code(0);
    assert_eq!(env.server.request_count(), 0, "replay used the network");
    assert_eq!(env.read("lib.sh"), rec_env.read("lib.sh"));
    assert_eq!(env.read("lib.sh"), "mul() {\n  echo $(( $1 * $2 ))\n}\n");
    let t = out.json();
    let calls = |t: &Value| -> Vec<(String, String)> {
        t["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["input"].to_string(),
                )
            })
            .collect()
    };
    let rec_ws = rec_env.ws().to_str().unwrap().to_string();
    let new_ws = env.ws().to_str().unwrap().to_string();
    assert_eq!(
        calls(&normalized(&rec_t, &rec_ws)),
        calls(&normalized(&t, &new_ws)),
        "the same tool calls, paths rewritten to the replay workspace"
    );
    assert!(
        t["tool_calls"][4]["input"]["command"]
            .as_str()
            .unwrap()
            .contains(&new_ws)
    );
    assert_eq!(normalized(&rec_t, &rec_ws), normalized(&t, &new_ws));
    // The key the model echoed was split across deltas; the cassette still lost it.
    assert!(
        t["result"]
            .as_str()
            .unwrap()
            .ends_with("(not a key: [REDACTED])")
    );
    assert!(!out.stdout.contains(API_KEY));
}

#[test]
fn truncated_cassette_ends_with_error_and_a_transcript() {
    let (_rec_env, _t, cassette) = record();
    let text = std::fs::read_to_string(&cassette).unwrap();
    let env = TestEnv::new(vec![]);
    write_project(&env);
    let short = env.out("short.jsonl");
    let kept: Vec<&str> = text.lines().take(3).collect(); // header + two turns
    std::fs::write(&short, kept.join("\n") + "\n").unwrap();
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--full-auto",
        "--replay",
        short.to_str().unwrap(),
        "-o",
        out_file.to_str().unwrap(),
        "fix mul",
    ]);
    out.assert_code(1);
    assert!(
        out.stderr.contains("ran out after 2 turns"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "no answer on stdout: {}", out.stdout);
    let t = read_json(&out_file);
    assert_eq!(t["status"], "error");
    assert_eq!(t["error"]["kind"], "cassette_error");
    assert_eq!(t["num_turns"], 2);
    assert_eq!(t["tool_calls"].as_array().unwrap().len(), 4);
}

#[test]
fn replay_and_record_together_is_a_usage_error() {
    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--replay", "a.jsonl", "--record", "b.jsonl", "task"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--record") || out.stderr.contains("--replay"),
        "{}",
        out.stderr
    );
    let out = env.run(&["run", "--replay", "missing.jsonl", "task"]);
    out.assert_code(2);
    assert!(out.stderr.contains("missing.jsonl"), "{}", out.stderr);
}

#[test]
fn different_tools_warn_on_replay() {
    let (_rec_env, _t, cassette) = record();
    let env = TestEnv::new(vec![]);
    write_project(&env);
    // Read-only tools only: the edit is refused, the run still goes on to the end.
    let out = env.run(&["run", "--replay", cassette.to_str().unwrap(), "fix mul"]);
    out.assert_code(0);
    assert!(
        out.stderr.contains("differ from those recorded"),
        "{}",
        out.stderr
    );
    assert_eq!(env.read("lib.sh"), LIB);
}

/// The README's demo, as a test: the shipped cassette fixes the shipped project.
#[test]
fn shipped_demo_fixes_the_demo_project() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = TestEnv::new(vec![]);
    env.copy_demo_project();
    let before = env.run_demo_tests();
    assert!(
        !before.status.success(),
        "the demo project must start broken"
    );
    let cassette = root.join("fixtures/demo/demo.cassette.jsonl");
    let mut cmd = env.command(&[
        "run",
        "--full-auto",
        "--json",
        "--replay",
        cassette.to_str().unwrap(),
        "Fix the failing tests",
    ]);
    cmd.env_remove("ANTHROPIC_API_KEY");
    let out = env.spawn_command(cmd).wait();
    out.assert_code(0);
    let t = out.json();
    let batches: Vec<u64> = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["batch"].as_u64().unwrap())
        .collect();
    assert_eq!(
        batches,
        vec![1, 1, 1, 2, 3, 4],
        "three parallel reads, then one call per batch"
    );
    assert!(
        t["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["is_error"] == false)
    );
    let after = env.run_demo_tests();
    assert!(
        after.status.success(),
        "{}",
        String::from_utf8_lossy(&after.stdout)
    );
}
