//! Unit tests of the journal: written from a record, read back, torn and replaced lines.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use crate::model::protocol::{ContentBlock, Message, Role, Usage};
use crate::record::outcome::Status;
use crate::record::{RunRecord, ToolCallRecord};
use crate::run::budget::Prices;

fn record() -> RunRecord {
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec!["ReadFile".into()]);
    r.record_message(Entry::new(Message::user_text("the task")));
    r
}

/// A model turn answering `text`.
fn turn(r: &mut RunRecord, text: &str) {
    let (usage, prices) = (Usage::default(), Prices::default());
    r.record_turn("m", "end_turn", &usage, &prices, answer(text));
}

fn call(id: &str) -> ToolCallRecord {
    ToolCallRecord {
        id: id.into(),
        name: "ReadFile".into(),
        input: json!({"path": "a"}),
        is_error: false,
        batch: 1,
        duration_ms: 0,
        started_ms: 0,
        turn: 1,
        model: "m".into(),
        metadata: crate::record::CallMetadata::default(),
        changes: Vec::new(),
    }
}

fn answer(text: &str) -> Arc<Entry> {
    Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Text { text: text.into() }],
    })
}

fn checkpoint(j: &mut Journal, r: &RunRecord) {
    let pending = j.prepare(r, &|s| s.replace("secret", "[REDACTED]"));
    j.write(pending).unwrap();
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// What `to_json` makes of the record, but as the journal's reader gives it back: the
/// run's time fields differ between the two renders, so they are left out.
fn comparable(mut v: Value) -> Value {
    for k in ["duration_ms", "api_duration_ms"] {
        v.as_object_mut().unwrap().remove(k);
    }
    v
}

#[test]
fn the_journal_reads_back_as_the_whole_transcript() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.json.journal");
    let mut r = record();
    let mut j = Journal::create(&path, r.session_id()).unwrap();
    checkpoint(&mut j, &r);
    turn(&mut r, "reading");
    r.record_call(call("toolu_1"), None);
    checkpoint(&mut j, &r);
    r.record_message(Entry::new(Message::user_text("a secret result")));
    turn(&mut r, "done");
    checkpoint(&mut j, &r);
    let got = read(&text(&path)).unwrap();
    let whole: Value = serde_json::from_str(&r.to_json(Status::Running, None)).unwrap();
    assert_eq!(comparable(got.clone()), comparable(whole));
    assert_eq!(got["num_turns"], 2);
    assert_eq!(got["result"], "done");
    // Each message and call went in once: appended, never rewritten.
    let t = text(&path);
    assert_eq!(t.matches("\"type\":\"message\"").count(), 4, "{t}");
    assert_eq!(t.matches("\"type\":\"tool_call\"").count(), 1, "{t}");
    assert_eq!(t.matches("\"type\":\"checkpoint\"").count(), 3, "{t}");
    assert!(t.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()));
    // So is each billed response: a checkpoint line's size does not grow with the turns.
    assert_eq!(got["responses"].as_array().unwrap().len(), 2);
    assert_eq!(t.matches("\"type\":\"response\"").count(), 2, "{t}");
    for line in t.lines().filter(|l| l.starts_with(CHECKPOINT_PREFIX)) {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["transcript"]["responses"], json!([]), "{line}");
    }
}

/// A journal of an earlier release kept the responses in its checkpoint line (no
/// response lines): they are read from there.
#[test]
fn responses_in_an_older_checkpoint_line_are_kept() {
    let mut r = record();
    turn(&mut r, "done");
    let head: Value = serde_json::from_str(&r.to_json_line(Status::Running, None)).unwrap();
    let mut head = head;
    head["messages"] = json!([]);
    let text = format!(
        "{}\n{CHECKPOINT_PREFIX}\"transcript\":{head}}}\n",
        json!({"type": "journal", "version": 1, "session_id": r.session_id()}),
    );
    let got = read(&text).unwrap();
    assert_eq!(got["responses"].as_array().unwrap().len(), 1, "{got}");
    assert_eq!(got["responses"][0]["model"], "m");
}

#[test]
fn a_torn_or_unfinished_checkpoint_reads_as_the_one_before() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.json.journal");
    let mut r = record();
    let mut j = Journal::create(&path, r.session_id()).unwrap();
    checkpoint(&mut j, &r);
    let zero = text(&path);
    turn(&mut r, "one");
    checkpoint(&mut j, &r);
    let one = text(&path);
    r.record_message(Entry::new(Message::user_text("more")));
    turn(&mut r, "two");
    r.record_call(call("toolu_2"), None);
    checkpoint(&mut j, &r);
    let two = text(&path);
    // Cut at every byte of the second checkpoint: the first is read until the second's
    // checkpoint line is whole, with its newline.
    for cut in one.len()..=two.len() {
        let got = read(&two[..cut]).unwrap();
        let expect = if cut == two.len() { 2 } else { 1 };
        assert_eq!(got["num_turns"], expect, "cut at {cut}");
        assert_eq!(
            got["messages"].as_array().unwrap().len(),
            if expect == 2 { 4 } else { 2 },
            "cut at {cut}"
        );
        assert_eq!(got["tool_calls"].as_array().unwrap().len(), expect - 1);
    }
    // Before the first checkpoint is whole there is nothing to read.
    for cut in 0..zero.len() {
        assert_eq!(rebuild(&zero[..cut]).unwrap(), None, "cut at {cut}");
    }
    assert_eq!(read(&zero).unwrap()["num_turns"], 0);
    let e = read(&zero[..zero.len() - 1]).unwrap_err();
    assert!(e.contains("no complete checkpoint"), "{e}");
}

#[test]
fn a_replaced_last_message_is_truncated_then_appended() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.json.journal");
    let mut r = record();
    let mut j = Journal::create(&path, r.session_id()).unwrap();
    r.record_message(answer("answer"));
    r.record_message(Entry::new(Message::user_text("results")));
    checkpoint(&mut j, &r);
    // The last user message is extended (a verification failure joins it).
    r.replace_last_message(Entry::new(Message::user_text(
        "results, and the tests fail",
    )));
    checkpoint(&mut j, &r);
    let t = text(&path);
    assert!(
        t.contains("{\"type\":\"truncate\",\"messages\":2,\"tool_calls\":0}"),
        "{t}"
    );
    let got = read(&t).unwrap();
    let msgs = got["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[2]["content"][0]["text"], "results, and the tests fail");
    // Unchanged: nothing but the checkpoint line is written again.
    let before = t.len();
    checkpoint(&mut j, &r);
    let t = text(&path);
    assert_eq!(t[before..].lines().count(), 1);
    assert!(t[before..].starts_with(CHECKPOINT_PREFIX));
}

#[test]
fn damage_before_the_last_checkpoint_is_an_error_and_foreign_files_are_not_journals() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.json.journal");
    let mut r = record();
    let mut j = Journal::create(&path, r.session_id()).unwrap();
    checkpoint(&mut j, &r);
    r.record_message(answer("one"));
    checkpoint(&mut j, &r);
    let t = text(&path);
    let broken = t.replacen("{\"type\":\"message\"", "{\"type\":\"message\" oops", 1);
    let e = read(&broken).unwrap_err();
    assert!(e.contains("damaged: line 2"), "{e}");
    assert!(!is_journal("{\n  \"version\": 1\n}"));
    assert!(!is_journal("{\"type\":\"run.started\",\"seq\":1}\n"));
    assert!(is_journal(&t));
    let future = t.replace("\"version\":1", "\"version\":9");
    assert!(read(&future).unwrap_err().contains("version 9"));
}

#[test]
fn follow_takes_the_journal_of_the_same_run_else_the_file() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("t.json");
    let jpath = path_for(&out);
    assert_eq!(jpath, d.path().join("t.json.journal"));
    let mut r = record();
    let stub: Value =
        serde_json::from_str(&r.to_json_journaled("t.json.journal", &|s| s.to_string())).unwrap();
    assert_eq!(stub["journal"], "t.json.journal");
    assert_eq!(stub["status"], "running");
    // No journal yet: the file itself (with a warning).
    assert_eq!(follow(stub.clone(), d.path(), 1 << 20).unwrap(), stub);
    let mut j = Journal::create(&jpath, r.session_id()).unwrap();
    // Only the header: killed before the first checkpoint.
    assert_eq!(follow(stub.clone(), d.path(), 1 << 20).unwrap(), stub);
    checkpoint(&mut j, &r);
    turn(&mut r, "one");
    checkpoint(&mut j, &r);
    let got = follow(stub.clone(), d.path(), 1 << 20).unwrap();
    assert_eq!(got["num_turns"], 1);
    assert_eq!(got["messages"].as_array().unwrap().len(), 2);
    assert!(got.get("journal").is_none());
    // An earlier run's journal, not yet replaced by this one's: the file itself.
    let other = RunRecord::new("m", PathBuf::from("/w"), vec![]);
    let other_stub: Value =
        serde_json::from_str(&other.to_json_journaled("t.json.journal", &|s| s.to_string()))
            .unwrap();
    assert_eq!(
        follow(other_stub.clone(), d.path(), 1 << 20).unwrap(),
        other_stub
    );
    // A final transcript is itself, whatever lies beside it.
    let done: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
    assert_eq!(follow(done.clone(), d.path(), 1 << 20).unwrap(), done);
    // Too big to be a journal.
    assert!(
        follow(stub, d.path(), 10)
            .unwrap_err()
            .contains("not a journal")
    );
}

/// Only a plain name beside the document is followed, and only a regular file is read.
#[test]
fn follow_reads_only_a_regular_file_beside_the_document() {
    let d = tempfile::tempdir().unwrap();
    let r = record();
    let stub = |name: &str| -> Value {
        serde_json::from_str(&r.to_json_journaled(name, &|s| s.to_string())).unwrap()
    };
    for name in ["", ".", "..", "../t.json.journal", "/etc/passwd", "a/b"] {
        let e = follow(stub(name), d.path(), 1 << 20).unwrap_err();
        assert!(e.contains("which is not a file name"), "{name}: {e}");
    }
    std::fs::create_dir(d.path().join("dir.journal")).unwrap();
    let e = follow(stub("dir.journal"), d.path(), 1 << 20).unwrap_err();
    assert!(e.contains("is a directory"), "{e}");
    std::os::unix::fs::symlink("/dev/null", d.path().join("null.journal")).unwrap();
    let e = follow(stub("null.journal"), d.path(), 1 << 20).unwrap_err();
    assert!(e.contains("is a symbolic link"), "{e}");
    let missing = follow_journal(stub("gone.journal"), d.path(), 1 << 20).unwrap();
    assert!(
        matches!(missing, Followed::JournalMissing(_, ref p) if p == &d.path().join("gone.journal"))
    );
}
