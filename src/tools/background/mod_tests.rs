//! Unit tests of the background commands' table, and of BashOutput and KillBash on it.

use super::bash_output::BashOutput;
use super::kill_bash::KillBash;
use super::*;
use crate::tools::bash::Bash;
use crate::tools::test_support::{call, call_err, ctx};
use crate::tools::{Tool, ToolContext};
use serde_json::{Value, json};

fn start(c: &ToolContext, command: &str) -> (String, i32) {
    let r = call(
        &Bash::default(),
        c,
        &json!({"command": command, "run_in_background": true}),
    )
    .unwrap();
    assert!(!r.is_error, "{}", r.content);
    (
        r.metadata["bash_id"].as_str().unwrap().to_string(),
        r.metadata["pid"].as_i64().unwrap() as i32,
    )
}

fn output(c: &ToolContext, input: Value) -> String {
    call(&BashOutput, c, &input).unwrap().content
}

/// Polls BashOutput until the status is not running (bounded: a hang guard only).
fn until_ended(c: &ToolContext, id: &str) -> String {
    let mut all = String::new();
    for _ in 0..1000 {
        let out = output(c, json!({"bash_id": id}));
        all.push_str(&out);
        if !out.contains("<status>running</status>") {
            return all;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{id} never ended: {all}");
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'))
}

#[test]
fn unread_keeps_head_and_tail_and_says_what_it_dropped() {
    let mut u = Unread::default();
    u.push(&"a".repeat(OUTPUT_HEAD_CHARS));
    for _ in 0..5 {
        u.push(&"b".repeat(OUTPUT_TAIL_CHARS));
    }
    u.push("END");
    let (text, skipped) = u.take();
    assert_eq!(skipped, 4 * OUTPUT_TAIL_CHARS as u64 + 3);
    assert!(text.starts_with(&"a".repeat(OUTPUT_HEAD_CHARS)));
    assert!(text.ends_with("END"), "{}", &text[text.len() - 20..]);
    assert!(text.contains(&format!("{skipped} characters not shown")));
    // Everything was taken: the next read starts empty.
    assert_eq!(u.take(), (String::new(), 0));
    u.push("é new");
    assert_eq!(u.take().0, "é new");
}

#[test]
fn output_since_the_last_read_then_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let (id, pid) = start(
        &c,
        "echo one; while [ ! -e go ]; do sleep 0.01; done; echo two; exit 3",
    );
    assert_eq!(id, "bash_1");
    assert!(pid > 1);
    let first = loop {
        let o = output(&c, json!({"bash_id": id}));
        if o.contains("one") {
            break o;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // It waits for `go`: still running, and nothing new since the last read.
    assert!(first.contains("<status>running</status>"), "{first}");
    let again = output(&c, json!({"bash_id": id}));
    assert!(again.starts_with("<output></output>"), "{again}");
    std::fs::write(dir.path().join("go"), "").unwrap();
    let rest = until_ended(&c, &id);
    assert!(rest.contains("two") && !rest.contains("one"), "{rest}");
    assert!(
        rest.contains("<status>exited with code 3</status>"),
        "{rest}"
    );
    let snap = c.background.snapshot().1;
    assert_eq!(snap[0].exit_code, Some(3));
    assert_eq!(snap[0].pid, pid);
    assert!(snap[0].ended_ms.is_some());
    assert!(!snap[0].killed_at_end && !snap[0].killed);
}

#[test]
fn filter_keeps_matching_lines_and_drops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let (id, _) = start(&c, "printf 'GET /a 200\\nnoise\\nGET /b 404\\n'");
    let mut text = String::new();
    for _ in 0..1000 {
        let o = output(&c, json!({"bash_id": id, "filter": "^GET"}));
        text.push_str(&o);
        if !o.contains("running") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(text.contains("GET /a 200\nGET /b 404"), "{text}");
    assert!(!text.contains("noise"), "{text}");
    let bad = call_err(&BashOutput, &c, &json!({"bash_id": id, "filter": "("}));
    assert!(bad.contains("not a valid regular expression"), "{bad}");
}

#[test]
fn kill_bash_kills_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    // A child in the group and one that left it with setsid.
    let (id, pid) = start(
        &c,
        "sleep 1201 & echo $! > in.pid; setsid sh -c 'echo $$ > out.pid; exec sleep 1202' & wait",
    );
    let read = |f: &str| loop {
        let t = std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
        if t.ends_with('\n') {
            break t.trim().parse::<i32>().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let (inner, outer) = (read("in.pid"), read("out.pid"));
    assert!(alive(pid) && alive(inner) && alive(outer));
    let r = call(&KillBash, &c, &json!({"bash_id": id})).unwrap();
    assert!(r.content.contains("status: killed"), "{}", r.content);
    let gone = |p| {
        (0..500).any(|_| {
            if alive(p) {
                std::thread::sleep(std::time::Duration::from_millis(10));
                false
            } else {
                true
            }
        })
    };
    assert!(gone(pid) && gone(inner) && gone(outer));
    let again = call_err(&KillBash, &c, &json!({"bash_id": id}));
    assert!(again.contains("is not running"), "{again}");
    let status = output(&c, json!({"bash_id": id}));
    assert!(status.contains("<status>killed</status>"), "{status}");
}

#[test]
fn at_most_max_at_once_and_none_after_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    c.background = Arc::new(Jobs::new(1, Instant::now()));
    let (id, pid) = start(&c, "sleep 1203");
    let refused = call_err(
        &Bash::default(),
        &c,
        &json!({"command": "true", "run_in_background": true}),
    );
    assert!(refused.contains("--max-background 1"), "{refused}");
    assert!(refused.contains(&id), "{refused}");
    assert_eq!(c.background.end_all(), 1);
    crate::process::kill_command_tree(pid);
    let snap = c.background.snapshot().1;
    assert!(snap[0].killed_at_end && snap[0].ended_ms.is_some());
    let closed = call_err(
        &Bash::default(),
        &c,
        &json!({"command": "true", "run_in_background": true}),
    );
    assert!(closed.contains("the run is ending"), "{closed}");
    let unknown = call_err(&BashOutput, &c, &json!({"bash_id": "bash_9"}));
    assert!(unknown.contains("bash_1"), "{unknown}");

    // --max-background 0: none at all.
    c.background = Arc::new(Jobs::new(0, Instant::now()));
    let off = call_err(
        &Bash::default(),
        &c,
        &json!({"command": "true", "run_in_background": true}),
    );
    assert!(
        off.contains("off in this run (--max-background 0)"),
        "{off}"
    );
    assert!(c.background.snapshot().1.is_empty());
}

#[test]
fn schemas_name_their_inputs() {
    for (tool, fields) in [
        (&BashOutput as &dyn Tool, vec!["bash_id", "filter"]),
        (&KillBash, vec!["bash_id"]),
    ] {
        let s = tool.input_schema();
        let mut props: Vec<&str> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        props.sort();
        assert_eq!(props, fields);
        assert_eq!(s["required"], json!(["bash_id"]));
        // Unknown fields are refused by serde too.
        let e = call_err(
            tool,
            &ctx(std::env::temp_dir().as_path()),
            &json!({"bash_id": "x", "zzz": 1}),
        );
        assert!(e.contains("unknown field"), "{e}");
    }
}
