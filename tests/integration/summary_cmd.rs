//! `agent summary` reads what a CI step has at hand: a `-o` transcript, a `--jsonl`
//! capture (its `run.finished` event), or either on stdin (`-`).

use crate::support::*;

#[test]
fn summary_reads_a_jsonl_capture_from_a_file_and_from_stdin() {
    let env = TestEnv::new(vec![
        Reply::Sse(turn_text("All done.")),
        Reply::Sse(turn_text("Again.")),
    ]);
    let run = env.run(&["run", "--jsonl", "say done"]);
    run.assert_code(0);
    // The run's own closing line counts in words too.
    assert!(
        run.stderr
            .contains("agent: success · 1 turn · 0 tool calls · "),
        "{}",
        run.stderr
    );
    let capture = env.out("events.jsonl");
    std::fs::write(&capture, &run.stdout).unwrap();

    let from_file = env.run(&["summary", capture.to_str().unwrap()]);
    from_file.assert_code(0);
    let md = &from_file.stdout;
    assert!(
        md.starts_with("### agent: ✅ success\n\n1 turn · 0 tool calls"),
        "{md}"
    );
    assert!(md.contains("| Turns | 1 |"), "{md}");
    assert!(md.contains("All done."), "{md}");

    let from_stdin = env.run_with_stdin(&["summary", "-"], &run.stdout);
    from_stdin.assert_code(0);
    assert_eq!(from_stdin.stdout, from_file.stdout);

    // A plain transcript on stdin too, and outputs without a file to point at.
    let t = env.run(&["run", "--json", "again"]);
    let out = env.run_with_stdin(&["summary", "-", "--github-output"], &t.stdout);
    out.assert_code(0);
    assert!(out.stdout.starts_with("status=success\n"), "{}", out.stdout);
    assert!(out.stdout.contains("\nAgain.\n"), "{}", out.stdout);
    assert!(out.stdout.ends_with("transcript=\n"), "{}", out.stdout);

    // A capture cut before run.finished is a usage error that says so.
    let cut: String = run
        .stdout
        .lines()
        .filter(|l| !l.contains("run.finished"))
        .map(|l| format!("{l}\n"))
        .collect();
    let out = env.run_with_stdin(&["summary", "-"], &cut);
    out.assert_code(2);
    assert!(
        out.stderr.contains("without a run.finished event"),
        "{}",
        out.stderr
    );
}
