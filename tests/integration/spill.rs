//! The run's saved outputs (full command output): removed when the run ends, unless
//! `--keep-spill` or `-o` is given; with `-o` they sit beside the transcript, which
//! names their directory.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::*;

/// A Bash call whose output (about 49 KB) is too long to keep whole.
fn long_output() -> Vec<Reply> {
    vec![
        Reply::Sse(turn_tools(&[(
            "toolu_seq",
            "Bash",
            json!({"command": "seq 1 10000"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]
}

fn saved_path(t: &Value) -> PathBuf {
    PathBuf::from(
        t["tool_calls"][0]["metadata"]["full_output_path"]
            .as_str()
            .expect("the output was saved"),
    )
}

#[test]
fn saved_outputs_are_removed_when_the_run_ends() {
    let env = TestEnv::new(long_output());
    let out = env.run(&["run", "--allow-bash", "--json", "count"]);
    out.assert_code(0);
    let t = out.json();
    let saved = saved_path(&t);
    assert!(!saved.exists(), "{} outlived the run", saved.display());
    assert!(
        !saved.parent().unwrap().exists(),
        "the spill directory is left"
    );
    assert_eq!(t["spill_dir"], Value::Null);
}

#[test]
fn keep_spill_keeps_them_and_the_transcript_names_the_directory() {
    let env = TestEnv::new(long_output());
    let out = env.run(&["run", "--allow-bash", "--json", "--keep-spill", "count"]);
    out.assert_code(0);
    let t = out.json();
    let saved = saved_path(&t);
    let dir = saved.parent().unwrap().to_path_buf();
    assert!(
        std::fs::read_to_string(&saved)
            .unwrap()
            .ends_with("10000\n")
    );
    assert_eq!(t["spill_dir"], json!(dir.to_str().unwrap()));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn with_an_output_file_they_are_kept_beside_it() {
    let env = TestEnv::new(long_output());
    let out_file = env.out("t.json");
    let out = env.run(&[
        "run",
        "--allow-bash",
        "-o",
        out_file.to_str().unwrap(),
        "count",
    ]);
    out.assert_code(0);
    let t = read_json(&out_file);
    let dir = env.out("t.json.spill").canonicalize().unwrap();
    assert_eq!(t["spill_dir"], json!(dir.to_str().unwrap()));
    let saved = saved_path(&t);
    assert_eq!(saved.parent().unwrap(), dir);
    assert!(
        std::fs::read_to_string(&saved)
            .unwrap()
            .ends_with("10000\n")
    );
}

#[test]
fn a_spill_directory_inside_the_workspace_is_not_a_change() {
    let env = TestEnv::new(long_output());
    let out = env.run(&["run", "--allow-bash", "-o", "t.json", "count"]);
    out.assert_code(0);
    let t = read_json(&env.path("t.json"));
    assert!(env.path("t.json.spill").is_dir());
    assert_eq!(t["files_changed"], json!([]), "{}", t["files_changed"]);
}
