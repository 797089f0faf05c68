//! Secrets are redacted before any cut: no prefix or suffix of a secret survives the
//! Bash head/tail cut, the `--jsonl` content cut or the saved full output.

use serde_json::json;

use crate::support::*;

const TOKEN: &str = "ghp_q7Zx9Lm2Kp4Vt8Wn3Yr6Bs1Cd5Fh0Jg2Hk";

/// Fails if `text` holds any 6-character piece of the token.
fn assert_no_token_piece(what: &str, text: &str) {
    for i in 0..=TOKEN.len() - 6 {
        let piece = &TOKEN[i..i + 6];
        assert!(!text.contains(piece), "{what} holds {piece:?} of the token");
    }
}

#[test]
fn a_secret_cut_through_anywhere_leaves_no_piece_behind() {
    // The token back to back: every cut lands inside one.
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[(
            "toolu_cat",
            "Bash",
            json!({"command": "cat tokens.txt"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    env.write("tokens.txt", &TOKEN.repeat(2_000));
    let out_file = env.out("t.json");
    let out = env.run_with_env(
        &[
            "run",
            "--allow-bash",
            "--jsonl",
            "-o",
            out_file.to_str().unwrap(),
            "cat",
        ],
        &[("GITHUB_TOKEN", TOKEN)],
    );
    out.assert_code(0);
    assert_no_token_piece("stdout (--jsonl)", &out.stdout);
    assert!(
        out.stdout.contains("\"content_truncated\":true"),
        "{}",
        out.stdout
    );
    let transcript = std::fs::read_to_string(&out_file).unwrap();
    assert_no_token_piece("the -o transcript", &transcript);
    let t = read_json(&out_file);
    let spill = t["tool_calls"][0]["metadata"]["full_output_path"]
        .as_str()
        .expect("the full output was saved")
        .to_string();
    let saved = std::fs::read_to_string(&spill).unwrap();
    assert_no_token_piece("the saved full output", &saved);
    assert!(saved.contains("[REDACTED]"));
    for r in env.server.requests() {
        assert_no_token_piece("a request to the model", &r.body.to_string());
    }
}

#[test]
fn read_file_and_grep_redact_a_long_line_before_cutting_it() {
    // One long line: every cut (ReadFile's at 2,000 characters, Grep's window of 500
    // around the match) lands inside a token.
    let env = TestEnv::new(vec![
        Reply::Sse(turn_tools(&[
            ("toolu_read", "ReadFile", json!({"path": "long.txt"})),
            ("toolu_grep", "Grep", json!({"pattern": "NEEDLE"})),
        ])),
        Reply::Sse(turn_text("done")),
    ]);
    env.write("long.txt", &format!("z{} NEEDLE\n", TOKEN.repeat(100)));
    let out_file = env.out("t.json");
    let out = env.run_with_env(
        &["run", "-o", out_file.to_str().unwrap(), "read"],
        &[("GITHUB_TOKEN", TOKEN)],
    );
    out.assert_code(0);
    let results = env.server.requests()[1].tool_results();
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(!r.is_error, "{}", r.content);
        assert_no_token_piece(&format!("the result of {}", r.tool_use_id), &r.content);
    }
    assert!(
        results[1].content.contains("NEEDLE"),
        "{}",
        results[1].content
    );
    assert_no_token_piece(
        "the -o transcript",
        &std::fs::read_to_string(&out_file).unwrap(),
    );
}
