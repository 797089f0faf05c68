//! `apply_patch` through the binary: offered instead of WriteFile and EditFile to a GPT
//! model on the Responses provider (and on request to any model), a multi-file patch
//! applied whole and recorded in `files_changed`, the `-o` journal and the transcript, a
//! failing hunk that changes nothing and tells the model where, and a deny rule on one
//! of its paths that denies the whole call.

use serde_json::{Value, json};

use crate::support::*;

fn patch_turn(id: &str, patch: &str) -> Reply {
    Reply::turn(Turn::new().tool(id, "apply_patch", json!({"input": patch})))
}

fn gpt_args(env: &TestEnv, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "run",
        "--provider",
        "openai-responses",
        "--base-url",
        &env.server.openai_url(),
        "-m",
        "gpt-5-codex",
        "--allow-write",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(env: &TestEnv, args: &[String]) -> RunOutput {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run(&args)
}

fn results(t: &Value) -> Vec<(String, bool)> {
    t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["content"].as_str().unwrap_or("").to_string(),
                b["is_error"] == true,
            )
        })
        .collect()
}

fn changed(t: &Value) -> Vec<(String, String)> {
    t["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["change"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

const MULTI: &str = "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Update File: src/lib.rs\n@@ fn a() {\n-    1\n+    2\n*** Delete File: old.txt\n*** End Patch";

#[test]
fn a_gpt_model_gets_apply_patch_and_a_multi_file_patch_is_applied_and_recorded() {
    let env = TestEnv::new(vec![
        patch_turn("call_p", MULTI),
        Reply::turn(Turn::new().text("patched")),
    ]);
    env.write("src/lib.rs", "fn a() {\n    1\n}\n");
    env.write("old.txt", "bye\n");
    let out_file = env.out("run.json");
    let out = run(
        &env,
        &gpt_args(&env, &["-o", out_file.to_str().unwrap(), "patch it"]),
    );
    out.assert_code(0);
    let t = out.json();
    assert_eq!(t["status"], "success");
    assert_eq!(env.read("docs/new.md"), "hello\n");
    assert_eq!(env.read("src/lib.rs"), "fn a() {\n    2\n}\n");
    assert!(!env.path("old.txt").exists());
    let mut files = changed(&t);
    files.sort();
    assert_eq!(
        files,
        [
            ("docs/new.md".to_string(), "created".to_string()),
            ("old.txt".to_string(), "deleted".to_string()),
            ("src/lib.rs".to_string(), "modified".to_string()),
        ]
    );
    assert_eq!(t["tool_calls"][0]["name"], "apply_patch");
    assert!(!results(&t)[0].1);
    let written = read_json(&out_file);
    assert_eq!(written["files_changed"], t["files_changed"]);
    // Offered instead of WriteFile and EditFile.
    let tools = env.server.requests()[0].tool_names();
    assert!(tools.contains(&"apply_patch".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "EditFile" || t == "WriteFile"),
        "{tools:?}"
    );
    env.server.assert_invariants();
}

#[test]
fn the_journal_of_a_killed_run_holds_the_patch_and_its_changes() {
    let env = TestEnv::new(vec![patch_turn("call_p", MULTI), Reply::silence()]);
    env.write("src/lib.rs", "fn a() {\n    1\n}\n");
    env.write("old.txt", "bye\n");
    let out_file = env.out("killed.json");
    let args = gpt_args(&env, &["-o", out_file.to_str().unwrap(), "patch it"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let running = env.spawn(&args);
    // The second request goes out after the results' checkpoint was appended.
    env.server.wait_for_requests(2);
    running.signal(libc::SIGKILL);
    running.wait();
    let journal = std::fs::read_to_string(format!("{}.journal", out_file.display())).unwrap();
    let last = journal
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "checkpoint")
        .unwrap();
    let mut files = changed(&last["transcript"]);
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(journal.contains("\"name\":\"apply_patch\""), "{journal}");
    // agent summary reads the killed run through its journal.
    let out = env.run(&["summary", out_file.to_str().unwrap()]);
    out.assert_code(0);
    assert!(out.stdout.contains("docs/new.md"), "{}", out.stdout);
}

#[test]
fn a_failing_hunk_changes_nothing_and_the_model_is_told_where() {
    let env = TestEnv::new(vec![
        patch_turn(
            "call_p",
            "*** Begin Patch\n*** Add File: made.txt\n+x\n*** Update File: a.txt\n one\n-too\n+2\n*** End Patch",
        ),
        Reply::turn(Turn::new().text("gave up")),
    ]);
    env.write("a.txt", "one\ntwo\nthree\n");
    let out = run(&env, &gpt_args(&env, &["patch it"]));
    out.assert_code(0);
    let t = out.json();
    assert!(!env.path("made.txt").exists());
    assert_eq!(env.read("a.txt"), "one\ntwo\nthree\n");
    let (text, is_error) = &results(&t)[0];
    assert!(is_error);
    assert!(text.contains("*** Update File: a.txt: hunk 1"), "{text}");
    assert!(text.contains("2\ttwo"), "{text}");
    assert_eq!(t["files_changed"], json!([]));
    // The model saw the same error in its next request.
    let input = env.server.requests()[1].body["input"].clone();
    let output = input
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        output.starts_with("Error: ") && output.contains("hunk 1"),
        "{output}"
    );
}

#[test]
fn a_deny_rule_on_one_path_denies_the_whole_patch() {
    let env = TestEnv::new(vec![
        patch_turn(
            "call_p",
            "*** Begin Patch\n*** Update File: src/a.txt\n-a\n+A\n*** Update File: secrets/key\n-k\n+K\n*** End Patch",
        ),
        Reply::turn(Turn::new().text("denied")),
    ]);
    env.write("src/a.txt", "a\n");
    env.write("secrets/key", "k\n");
    env.write(
        ".agent/settings.json",
        r#"{"permissions": {"deny": ["apply_patch(secrets/**)"]}}"#,
    );
    let out = run(&env, &gpt_args(&env, &["patch it"]));
    out.assert_code(0);
    let t = out.json();
    assert_eq!(
        env.read("src/a.txt"),
        "a\n",
        "the allowed path was not written either"
    );
    assert_eq!(env.read("secrets/key"), "k\n");
    assert_eq!(
        t["permission_denials"][0]["reason"],
        "denied by policy: apply_patch(secrets/**)"
    );
    // An allow list must cover every path.
    let env = TestEnv::new(vec![
        patch_turn(
            "call_p",
            "*** Begin Patch\n*** Update File: src/a.txt\n-a\n+A\n*** Add File: elsewhere.txt\n+x\n*** End Patch",
        ),
        Reply::turn(Turn::new().text("denied")),
    ]);
    env.write("src/a.txt", "a\n");
    let args = gpt_args(
        &env,
        &["--allowed-tools", "apply_patch(src/**)", "patch it"],
    );
    let out = run(&env, &args);
    out.assert_code(0);
    assert_eq!(env.read("src/a.txt"), "a\n");
    assert!(!env.path("elsewhere.txt").exists());
    let reason = out.json()["permission_denials"][0]["reason"].clone();
    assert!(
        reason
            .as_str()
            .unwrap()
            .contains("elsewhere.txt matches no allow rule"),
        "{reason}"
    );
}

#[test]
fn any_model_can_ask_for_apply_patch_and_a_gpt_model_for_edit_file() {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("hi"))]);
    let out = env.run(&[
        "run",
        "--allow-write",
        "--edit-tool",
        "apply-patch",
        "--json",
        "hi",
    ]);
    out.assert_code(0);
    let tools = env.server.requests()[0].tool_names();
    assert!(tools.contains(&"apply_patch".to_string()), "{tools:?}");
    assert!(!tools.contains(&"EditFile".to_string()), "{tools:?}");

    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("hi"))]);
    let out = run(&env, &gpt_args(&env, &["--edit-tool", "edit-file", "hi"]));
    out.assert_code(0);
    let tools = env.server.requests()[0].tool_names();
    assert!(tools.contains(&"EditFile".to_string()), "{tools:?}");
    assert!(!tools.contains(&"apply_patch".to_string()), "{tools:?}");

    let env = TestEnv::new(vec![]);
    let out = env.run(&["run", "--edit-tool", "sed", "hi"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--edit-tool"), "{}", out.stderr);
}
