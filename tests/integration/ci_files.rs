//! `files_changed` (SPEC §7): from the file tools and a before/after scan of the
//! workspace, so a Bash `rm` counts too; `git_diff_stat` in a git repository.

use crate::support::*;
use serde_json::{Value, json};

fn changes(t: &Value) -> Vec<(String, String)> {
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

fn script() -> Vec<Reply> {
    vec![
        Reply::Sse(
            Turn::new()
                .tool(
                    "toolu_w",
                    "WriteFile",
                    json!({"path": "src/new.txt", "content": "new\n"}),
                )
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .tool(
                    "toolu_e",
                    "EditFile",
                    json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
                )
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .tool(
                    "toolu_b",
                    "Bash",
                    json!({"command": "rm b.txt && touch d.txt"}),
                )
                .frames(),
        ),
        Reply::Sse(turn_text("done")),
    ]
}

#[test]
fn write_edit_and_bash_rm_are_all_listed() {
    let env = TestEnv::new(script());
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    env.write("c.txt", "gamma\n");
    // -o inside the workspace: the run's own file is not a change it made.
    let out = env.run(&[
        "run",
        "--full-auto",
        "--json",
        "-o",
        "transcript.json",
        "change",
    ]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(
        changes(&t),
        vec![
            ("a.txt".to_string(), "modified".to_string()),
            ("b.txt".to_string(), "deleted".to_string()),
            ("d.txt".to_string(), "created".to_string()),
            ("src/new.txt".to_string(), "created".to_string()),
        ]
    );
    assert!(t["git_diff_stat"].is_null(), "not a git repository");
}

#[test]
fn git_diff_stat_in_a_repository() {
    let env = TestEnv::new(script());
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    env.write("c.txt", "gamma\n");
    env.git(&["init", "-q"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "init"]);
    let out = env.run(&["run", "--full-auto", "--json", "change"]);
    out.assert_code(0);
    let t = out.json();
    assert_eq!(changes(&t).len(), 4, "{:?}", changes(&t));
    let stat = t["git_diff_stat"].as_str().unwrap();
    assert!(stat.contains("a.txt") && stat.contains("b.txt"), "{stat}");
    assert!(stat.contains("2 files changed"), "{stat}");
}
