//! Byte-identity of what a run writes: transcripts (`--json` stdout, `-o` files, `agent
//! batch`'s `summary.json` and task transcripts) and `--jsonl` streams, produced by the
//! built binary from the shipped cassettes (`fixtures/demo/*.cassette.jsonl` against
//! `fixtures/demo/project`), compared with the goldens under `tests/fixtures/golden/`.
//!
//! The goldens were written by the binary before issue 35 (main at b1bb7bf); a refactor
//! that changes one byte of an output (key order, number formatting, a field) fails here
//! with a line diff. Only what legitimately varies between two runs is masked (`mask`
//! lists each mask and why), and the order of events that run concurrently in a `--jsonl`
//! stream is put in a documented canonical order (`canonical_jsonl`); nothing else is.
//!
//! To rewrite the goldens after an intended change of output:
//! `AGENT_BLESS=1 cargo test golden` (then review `git diff tests/fixtures/golden`).

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use crate::support::*;

/// Where the goldens live.
fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The demo project laid into the workspace with fixed modification times (in path
/// order): `Glob` lists newest first, and a copy's times can tie or follow the copy
/// order, which would make the first turn's Glob output vary between runs.
fn lay_out_demo(env: &TestEnv) {
    env.copy_demo_project();
    fix_mtimes(&env.ws());
}

/// Gives the files under `dir` fixed, distinct modification times in path order.
fn fix_mtimes(dir: &Path) {
    let mut files = Vec::new();
    collect_files(dir, &mut files);
    files.sort();
    let base = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    for (i, f) in files.iter().enumerate() {
        let file = std::fs::File::options().write(true).open(f).unwrap();
        file.set_modified(base + std::time::Duration::from_secs(i as u64))
            .unwrap();
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            collect_files(&e.path(), out);
        } else {
            out.push(e.path());
        }
    }
}

/// A shipped cassette, by absolute path.
fn cassette(name: &str) -> String {
    s(&demo_dir().join(name)).to_string()
}

/// Runs the binary in the workspace with no API key (replay needs none).
fn run(env: &TestEnv, args: &[&str]) -> RunOutput {
    let mut c = env.command(args);
    c.env_remove("ANTHROPIC_API_KEY");
    env.spawn_command(c).wait()
}

/// The masks, applied to the raw text in this order. Each names what varies and why:
/// - the test's temporary directory (`root`, also in its canonical form): a new one per
///   run; it is in `workspace`, tool metadata, absolute paths in tool input and output,
///   `-o`/`resumed_from` paths and the batch's workspaces;
/// - the repository's root (`CARGO_MANIFEST_DIR`, where the cassettes are): a cassette
///   error names the cassette by absolute path, which differs between checkouts;
/// - the values of the timing keys `duration_ms`, `api_duration_ms`, `started_ms`,
///   `elapsed_ms` and `wall_time_ms`: wall-clock measurements;
/// - session ids (the values of `session_id` keys, and each such id wherever else it
///   appears): random per run. Each distinct id becomes `<session-N>` in order of first
///   appearance, so that one id named in two places (a resumed run's `resumed_from`) is
///   still checked to be the same id.
///
///
/// Nothing else is masked.
fn mask(text: &str, root: &Path) -> String {
    let mut t = text.to_string();
    let canon = root.canonicalize().unwrap();
    for r in [s(&canon), s(root)] {
        t = t.replace(r, "<TMP>");
    }
    t = t.replace(env!("CARGO_MANIFEST_DIR"), "<REPO>");
    let timing = Regex::new(
        r#""(duration_ms|api_duration_ms|started_ms|elapsed_ms|wall_time_ms)":(\s*)\d+"#,
    )
    .unwrap();
    t = timing.replace_all(&t, "\"$1\":$2<ms>").into_owned();
    let session = Regex::new(r#""session_id":\s*"([^"]+)""#).unwrap();
    let mut ids: Vec<String> = Vec::new();
    for c in session.captures_iter(&t) {
        let id = c[1].to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    for (i, id) in ids.iter().enumerate() {
        t = t.replace(id.as_str(), &format!("<session-{}>", i + 1));
    }
    t
}

/// A `--jsonl` stream in its canonical order. Tool calls of one turn run concurrently
/// (rayon, and eagerly while the answer still streams), so between a `turn.started` and
/// its `turn.finished` the order of `tool.started`, `tool.finished` and
/// `assistant.message` lines varies from run to run; their content does not. Inside each
/// such stretch the lines are put in this order: `assistant.message` first, then per call
/// (in the order its `tool.started` names ids in the assistant message) its
/// `tool.started` then its `tool.finished`; any other line keeps its place relative to
/// the stretch. `seq` numbers those lines in the order they were written, so within a
/// stretch each line's `seq` is replaced by `<seq>` after checking that the stream's
/// `seq` counts 1, 2, 3, … in file order; the lines themselves are compared whole.
fn canonical_jsonl(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for (i, v) in parsed.iter().enumerate() {
        assert_eq!(
            v["seq"],
            i + 1,
            "seq counts 1, 2, 3, … in file order: {}",
            lines[i]
        );
    }
    let seq = Regex::new(r#""seq":\d+"#).unwrap();
    let mut out: Vec<String> = Vec::new();
    let mut stretch: Vec<(usize, &Value, &str)> = Vec::new();
    let flush = |stretch: &mut Vec<(usize, &Value, &str)>, out: &mut Vec<String>| {
        // The ids in the order the assistant message names them.
        let order: Vec<String> = stretch
            .iter()
            .filter(|(_, v, _)| v["type"] == "assistant.message")
            .flat_map(|(_, v, _)| {
                v["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].as_str().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        let key = |v: &Value| -> (usize, usize, usize) {
            match v["type"].as_str().unwrap_or_default() {
                "assistant.message" => (0, 0, 0),
                t @ ("tool.started" | "tool.finished") => {
                    let id = v["id"].as_str().unwrap_or_default();
                    let pos = order.iter().position(|o| o == id).unwrap_or(order.len());
                    (1, pos, usize::from(t == "tool.finished"))
                }
                _ => (2, 0, 0),
            }
        };
        stretch.sort_by_key(|(i, v, _)| (key(v), *i));
        for (_, _, l) in stretch.drain(..) {
            out.push(seq.replace(l, "\"seq\":<seq>").into_owned());
        }
    };
    let mut inside = false;
    for (i, (l, v)) in lines.iter().zip(&parsed).enumerate() {
        match v["type"].as_str().unwrap_or_default() {
            "turn.started" => {
                out.push(l.to_string());
                inside = true;
            }
            "turn.finished" => {
                flush(&mut stretch, &mut out);
                out.push(l.to_string());
                inside = false;
            }
            "tool.started" | "tool.finished" | "assistant.message" if inside => {
                stretch.push((i, v, l));
            }
            _ => {
                flush(&mut stretch, &mut out);
                out.push(l.to_string());
            }
        }
    }
    flush(&mut stretch, &mut out);
    out.join("\n") + if text.ends_with('\n') { "\n" } else { "" }
}

/// What one case produced: named outputs (masked text), compared or blessed together.
pub(crate) struct Outputs {
    case: &'static str,
    parts: Vec<(String, String)>,
}

impl Outputs {
    pub(crate) fn new(case: &'static str) -> Outputs {
        Outputs {
            case,
            parts: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, part: &str, text: String) {
        self.parts.push((part.to_string(), text));
    }

    /// Compares each part with `tests/fixtures/golden/<case>.<part>`, or writes it when
    /// `AGENT_BLESS=1`. Fails with a diff of every part that differs.
    pub(crate) fn check(self) {
        let dir = golden_dir();
        let bless = std::env::var_os("AGENT_BLESS").is_some_and(|v| v == "1");
        let mut failures = Vec::new();
        for (part, text) in &self.parts {
            let path = dir.join(format!("{}.{part}", self.case));
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, text).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (write the goldens with AGENT_BLESS=1 cargo test golden)",
                    path.display()
                )
            });
            if &want != text {
                failures.push(format!("{}:\n{}", path.display(), diff(&want, text)));
            }
        }
        assert!(
            failures.is_empty(),
            "output differs from the golden (- golden, + now; rewrite with AGENT_BLESS=1 \
             cargo test golden if the change is intended):\n{}",
            failures.join("\n")
        );
    }
}

/// A line diff: the common prefix and suffix are skipped, the lines between shown as
/// `-` (golden) and `+` (now), with two lines of context.
fn diff(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.split('\n').collect();
    let b: Vec<&str> = got.split('\n').collect();
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut out = String::new();
    let from = pre.saturating_sub(2);
    out.push_str(&format!("@@ line {} @@\n", from + 1));
    for l in &a[from..pre] {
        out.push_str(&format!("  {l}\n"));
    }
    for l in &a[pre..a.len() - suf] {
        out.push_str(&format!("- {l}\n"));
    }
    for l in &b[pre..b.len() - suf] {
        out.push_str(&format!("+ {l}\n"));
    }
    for l in a[a.len() - suf..].iter().take(2) {
        out.push_str(&format!("  {l}\n"));
    }
    out
}

/// The demo run (`demo.cassette.jsonl` fixing the demo project) with `flags`; returns
/// the env (for its paths) and the output.
fn demo_run(flags: &[&str]) -> (TestEnv, RunOutput) {
    demo_run_with("demo.cassette.jsonl", flags, "Fix the failing tests")
}

fn demo_run_with(cassette_name: &str, flags: &[&str], prompt: &str) -> (TestEnv, RunOutput) {
    let env = TestEnv::new(vec![]);
    lay_out_demo(&env);
    let c = cassette(cassette_name);
    let mut args = vec!["run", "--replay", &c, "--full-auto"];
    args.extend_from_slice(flags);
    args.push(prompt);
    let out = run(&env, &args);
    (env, out)
}

/// The demo run with `flags` and `-o <out>/t.json`; returns the `-o` file too.
fn demo_run_o(flags: &[&str]) -> (TestEnv, RunOutput, PathBuf) {
    let env = TestEnv::new(vec![]);
    lay_out_demo(&env);
    let file = env.out("t.json");
    let c = cassette("demo.cassette.jsonl");
    let mut args = vec!["run", "--replay", &c, "--full-auto"];
    args.extend_from_slice(flags);
    args.extend(["-o", s(&file), "Fix the failing tests"]);
    let out = run(&env, &args);
    (env, out, file)
}

/// The root of an env's temporary directory (the parent of its workspace).
fn root(env: &TestEnv) -> PathBuf {
    env.ws().parent().unwrap().to_path_buf()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn golden_json() {
    let (env, out) = demo_run(&["--json"]);
    out.assert_code(0);
    let mut o = Outputs::new("json");
    o.add("stdout.json", mask(&out.stdout, &root(&env)));
    o.check();
}

#[test]
fn golden_text_with_o() {
    let (env, out, file) = demo_run_o(&[]);
    out.assert_code(0);
    let r = root(&env);
    let mut o = Outputs::new("text_o");
    o.add("stdout.txt", mask(&out.stdout, &r));
    o.add("o.json", mask(&read(&file), &r));
    o.check();
}

#[test]
fn golden_jsonl() {
    let (env, out) = demo_run(&["--jsonl"]);
    out.assert_code(0);
    let mut o = Outputs::new("jsonl");
    o.add(
        "stdout.jsonl",
        mask(&canonical_jsonl(&out.stdout), &root(&env)),
    );
    o.check();
}

#[test]
fn golden_jsonl_with_o() {
    let (env, out, file) = demo_run_o(&["--jsonl"]);
    out.assert_code(0);
    let r = root(&env);
    let mut o = Outputs::new("jsonl_o");
    o.add("stdout.jsonl", mask(&canonical_jsonl(&out.stdout), &r));
    o.add("o.json", mask(&read(&file), &r));
    o.check();
}

#[test]
fn golden_verify_passing() {
    let (env, out) = demo_run(&["--verify", "sh tests/run.sh", "--json"]);
    out.assert_code(0);
    let mut o = Outputs::new("verify_pass");
    o.add("stdout.json", mask(&out.stdout, &root(&env)));
    o.check();
}

#[test]
fn golden_verify_failing_jsonl() {
    // The check fails after the model's last turn: the model is told, and the cassette
    // holds no further turn, so the run ends there.
    let (env, out) = demo_run(&["--verify", "sh tests/run.sh && false", "--jsonl"]);
    let r = root(&env);
    let mut o = Outputs::new("verify_fail");
    o.add("exit_code", format!("{:?}\n", out.code()));
    o.add("stdout.jsonl", mask(&canonical_jsonl(&out.stdout), &r));
    o.check();
}

#[test]
fn golden_output_schema_json() {
    let schema = s(&demo_dir().join("report.schema.json")).to_string();
    let (env, out) = demo_run_with(
        "structured.cassette.jsonl",
        &["--output-schema", &schema, "--json"],
        "Fix the failing tests and report what you did",
    );
    out.assert_code(0);
    let mut o = Outputs::new("output_schema");
    o.add("stdout.json", mask(&out.stdout, &root(&env)));
    o.check();
}

#[test]
fn golden_output_schema_jsonl() {
    let schema = s(&demo_dir().join("report.schema.json")).to_string();
    let (env, out) = demo_run_with(
        "structured.cassette.jsonl",
        &["--output-schema", &schema, "--jsonl"],
        "Fix the failing tests and report what you did",
    );
    out.assert_code(0);
    let mut o = Outputs::new("output_schema_jsonl");
    o.add(
        "stdout.jsonl",
        mask(&canonical_jsonl(&out.stdout), &root(&env)),
    );
    o.check();
}

#[test]
fn golden_resumed_run() {
    let env = TestEnv::new(vec![]);
    lay_out_demo(&env);
    let first = env.out("first.json");
    let demo = cassette("demo.cassette.jsonl");
    run(
        &env,
        &[
            "run",
            "--replay",
            &demo,
            "--full-auto",
            "--max-turns",
            "2",
            "-o",
            s(&first),
            "Fix the failing tests",
        ],
    )
    .assert_code(3);
    let resume = cassette("resume.cassette.jsonl");
    let out = run(
        &env,
        &[
            "run",
            "--resume",
            s(&first),
            "--replay",
            &resume,
            "--full-auto",
            "--json",
        ],
    );
    out.assert_code(0);
    let r = root(&env);
    // Both in one text, so that the resumed run's `resumed_from.session_id` is checked to
    // be the first run's id.
    let both = format!("{}\n---\n{}", read(&first), out.stdout);
    let mut o = Outputs::new("resume");
    o.add("first_o_and_resumed_stdout.json", mask(&both, &r));
    o.check();
}

#[test]
fn golden_batch() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = TestEnv::new(vec![]);
    let clone = env.out("clone");
    copy_tree(&repo.join("fixtures/demo"), &clone.join("fixtures/demo"));
    fix_mtimes(&clone.join("fixtures/demo/project"));
    let results = env.out("results");
    let mut c = env.command(&["batch", "fixtures/demo/tasks.jsonl", "--out", s(&results)]);
    c.env_remove("ANTHROPIC_API_KEY").current_dir(&clone);
    let out = env.spawn_command(c).wait();
    out.assert_code(0);
    let r = root(&env);
    let mut o = Outputs::new("batch");
    o.add("stdout.json", mask(&out.stdout, &r));
    o.add(
        "summary.json",
        mask(&read(&results.join("summary.json")), &r),
    );
    for id in ["fix-stats", "fix-stats-again"] {
        o.add(
            &format!("{id}.json"),
            mask(&read(&results.join(format!("{id}.json"))), &r),
        );
    }
    o.check();
}
