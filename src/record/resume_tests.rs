use super::*;
use serde_json::json;

/// A transcript as `agent run --json` writes it, ending with `last`.
fn transcript(status: &str, last: Value) -> Value {
    json!({
        "version": 1, "status": status, "session_id": "11111111-2222-4333-8444-555555555555",
        "model": "claude-sonnet-4-5-20250929", "num_turns": 2, "workspace": "/tmp/ws",
        "usage": {"input_tokens": 10, "output_tokens": 5}, "cost_usd": 0.5,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "toolu_a", "name": "ReadFile", "input": {"path": "a"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"}]},
            last
        ],
        "tool_calls": [{"id": "toolu_a", "name": "ReadFile", "input": {"path": "a"}}]
    })
}

fn calling(ids: &[&str]) -> Value {
    let mut content = vec![json!({"type": "text", "text": "running"})];
    for id in ids {
        content.push(
            json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "make"}}),
        );
    }
    json!({"role": "assistant", "content": content})
}

fn answer() -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
}

fn results_of(m: &Message) -> Vec<(String, String, bool)> {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.clone(), content.text.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

fn parse(doc: &Value) -> Result<Resumed, String> {
    from_document(PathBuf::from("/x/t.json"), doc)
}

#[test]
fn a_finished_transcript_is_read_as_it_is() {
    let r = parse(&transcript("success", answer())).unwrap();
    assert_eq!(r.messages.len(), 4);
    assert_eq!(r.answered_calls, 0);
    assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(r.workspace, Some(PathBuf::from("/tmp/ws")));
    let from = serde_json::to_value(r.resumed_from()).unwrap();
    assert_eq!(from["path"], "/x/t.json");
    assert_eq!(from["session_id"], "11111111-2222-4333-8444-555555555555");
    assert_eq!(from["num_turns"], 2);
    assert_eq!(from["status"], "success");
    assert_eq!(from["usage"]["input_tokens"], 10);
    assert_eq!(from["cost_usd"], 0.5);
}

#[test]
fn unanswered_calls_get_interrupted_results_in_order() {
    let r = parse(&transcript("running", calling(&["toolu_b", "toolu_c"]))).unwrap();
    assert_eq!(r.answered_calls, 2);
    let last = r.messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    let results = results_of(last);
    assert_eq!(
        results.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["toolu_b", "toolu_c"]
    );
    for (_, text, is_error) in &results {
        assert!(is_error);
        assert!(text.starts_with("interrupted: "), "{text}");
        assert!(text.contains("not run again"), "{text}");
        assert!(text.contains("may not have started"), "{text}");
    }
}

#[test]
fn the_interrupted_text_says_why_when_it_is_known() {
    let r = parse(&transcript("max_turns", calling(&["toolu_b"]))).unwrap();
    let (_, text, _) = &results_of(r.messages.last().unwrap())[0];
    assert!(
        text.contains("reached --max-turns before this call could run"),
        "{text}"
    );

    let mut doc = transcript("interrupted", calling(&["toolu_b", "toolu_c"]));
    doc["tool_calls"] = json!([{"id": "toolu_b", "name": "Bash", "input": {},
                                "metadata": {"unfinished": true}}]);
    let r = parse(&doc).unwrap();
    let results = results_of(r.messages.last().unwrap());
    assert!(
        results[0].1.contains("while this call was still running"),
        "{}",
        results[0].1
    );
    assert!(
        results[1].1.contains("may not have started"),
        "{}",
        results[1].1
    );
}

#[test]
fn a_trailing_empty_answer_is_dropped() {
    let empty = json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]});
    let r = parse(&transcript("error", empty)).unwrap();
    assert_eq!(r.messages.len(), 3, "the empty message is gone");
    assert_eq!(r.messages.last().unwrap().role, Role::User);
    assert_eq!(r.answered_calls, 0);
}

#[test]
fn the_prompt_joins_a_final_user_message_or_starts_one() {
    let mut r = parse(&transcript("max_turns", calling(&["toolu_b"]))).unwrap();
    append_prompt(&mut r.messages, Some("go on")).unwrap();
    assert_eq!(r.messages.len(), 5);
    let last = r.messages.last().unwrap();
    assert!(matches!(&last.content[0], ContentBlock::ToolResult { .. }));
    assert_eq!(
        last.content[1],
        ContentBlock::Text {
            text: "go on".into()
        }
    );

    let mut r = parse(&transcript("success", answer())).unwrap();
    append_prompt(&mut r.messages, Some("now the changelog")).unwrap();
    assert_eq!(r.messages.len(), 5);
    assert_eq!(r.messages[4], Message::user_text("now the changelog"));

    // Without a prompt: fine after tool results, an error after an answer.
    let mut r = parse(&transcript("running", calling(&["toolu_b"]))).unwrap();
    assert!(append_prompt(&mut r.messages, None).is_ok());
    assert_eq!(r.messages.len(), 5);
    let mut r = parse(&transcript("success", answer())).unwrap();
    let e = append_prompt(&mut r.messages, None).unwrap_err();
    assert!(e.contains("give a PROMPT"), "{e}");
}

#[test]
fn the_transcript_is_found_in_each_kind_of_file() {
    let doc = transcript("success", answer());
    // A --json document or an -o file.
    assert_eq!(
        find_transcript(&serde_json::to_string_pretty(&doc).unwrap()).unwrap(),
        doc
    );
    // One run.finished event (e.g. cut out with jq).
    let event = json!({"version": 1, "type": "run.finished", "seq": 9, "elapsed_ms": 1,
                       "status": "success", "exit_code": 0, "transcript": doc});
    assert_eq!(find_transcript(&event.to_string()).unwrap(), doc);
    // A whole --jsonl capture: the last run.finished, a half-written last line ignored.
    let mut older = doc.clone();
    older["num_turns"] = json!(1);
    let capture = [
        json!({"version": 1, "type": "run.started", "seq": 1, "elapsed_ms": 0}).to_string(),
        json!({"version": 1, "type": "run.finished", "seq": 2, "elapsed_ms": 1, "transcript": older})
            .to_string(),
        event.to_string(),
        "{\"version\":1,\"type\":\"tool.star".to_string(),
    ]
    .join("\n");
    assert_eq!(find_transcript(&capture).unwrap(), doc);
}

#[test]
fn corrupt_and_foreign_files_say_what_they_are() {
    let started =
        json!({"version": 1, "type": "run.started", "seq": 1, "elapsed_ms": 0}).to_string();
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "empty"),
        ("hello world\nsecond line".into(), "line 1 is not JSON"),
        (format!("{started}\n{started}"), "no run.finished line"),
        (
            "{\"type\":\"header\",\"format\":1,\"provider\":\"anthropic\"}\n{\"type\":\"turn\"}"
                .into(),
            "this is a cassette",
        ),
        (
            "{\"a\":1}\n{\"b\":2}".into(),
            "line 1 is not a --jsonl event",
        ),
    ];
    for (text, needle) in cases {
        let e = find_transcript(&text).unwrap_err();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
    let docs = [
        (json!([1, 2]), "not a JSON object"),
        (json!({"messages": []}), "no \"version\""),
        (
            json!({"version": 2, "messages": []}),
            "version 2 is not supported",
        ),
        (json!({"version": 1}), "no \"messages\" array"),
        (
            json!({"version": 1, "messages": []}),
            "do not start with the user's task",
        ),
        (
            json!({"version": 1, "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]},
                                              {"role": "robot", "content": []}]}),
            "message 2 cannot be read",
        ),
    ];
    for (doc, needle) in docs {
        let e = parse(&doc).unwrap_err();
        assert!(e.contains(needle), "{doc}: {e}");
    }
}

#[test]
fn load_names_the_file_in_every_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = load(dir.path()).unwrap_err();
    assert!(e.contains("is a directory"), "{e}");
    let missing = dir.path().join("nope.json");
    let e = load(&missing).unwrap_err();
    assert!(
        e.starts_with(&format!("--resume {}: ", missing.display())),
        "{e}"
    );
    let f = dir.path().join("t.json");
    std::fs::write(&f, "{\"version\": 1}").unwrap();
    let e = load(&f).unwrap_err();
    assert!(e.starts_with(&format!("--resume {}: ", f.display())), "{e}");
    std::fs::write(&f, transcript("running", calling(&["toolu_b"])).to_string()).unwrap();
    let r = load(&f).unwrap();
    assert_eq!(r.path, f);
    assert_eq!(r.answered_calls, 1);
}

#[test]
fn the_index_finds_the_newest_existing_transcript() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let e = latest_in_index(ws.path()).unwrap_err();
    assert!(e.contains("run with -o FILE first"), "{e}");

    let a = out.path().join("a.json");
    let b = out.path().join("b.json");
    std::fs::write(&a, "{}").unwrap();
    note_in_index(ws.path(), &a, "id-a").unwrap();
    note_in_index(ws.path(), &b, "id-b").unwrap();
    // b is listed but was never written (or was deleted): a is the newest that exists.
    assert_eq!(latest_in_index(ws.path()).unwrap(), a);
    std::fs::write(&b, "{}").unwrap();
    assert_eq!(latest_in_index(ws.path()).unwrap(), b);
    // Writing a again moves it to the end instead of listing it twice.
    note_in_index(ws.path(), &a, "id-a2").unwrap();
    assert_eq!(latest_in_index(ws.path()).unwrap(), a);
    let index: Index =
        serde_json::from_str(&std::fs::read_to_string(ws.path().join(INDEX_PATH)).unwrap())
            .unwrap();
    assert_eq!(index.sessions.len(), 2);
    assert_eq!(index.sessions[1].session_id, "id-a2");

    for i in 0..MAX_INDEX_ENTRIES + 5 {
        note_in_index(ws.path(), &out.path().join(format!("{i}.json")), "x").unwrap();
    }
    let index: Index =
        serde_json::from_str(&std::fs::read_to_string(ws.path().join(INDEX_PATH)).unwrap())
            .unwrap();
    assert_eq!(index.sessions.len(), MAX_INDEX_ENTRIES);
    assert!(
        index
            .sessions
            .last()
            .unwrap()
            .path
            .ends_with(&format!("{}.json", MAX_INDEX_ENTRIES + 4))
    );

    std::fs::write(ws.path().join(INDEX_PATH), "{oops").unwrap();
    let e = latest_in_index(ws.path()).unwrap_err();
    assert!(e.contains("is damaged"), "{e}");
    // A damaged index is replaced by the next -o run rather than failing it.
    note_in_index(ws.path(), &a, "id-a3").unwrap();
    assert_eq!(latest_in_index(ws.path()).unwrap(), a);
}

/// Runs noting themselves at once (parallel CI steps in one checkout) all get in: the
/// index is read, changed and replaced under a lock, so no one's entry is lost.
#[test]
fn runs_noted_at_once_are_all_in_the_index() {
    let ws = tempfile::tempdir().unwrap();
    let threads = 8;
    let each = 2; // 16 entries: under MAX_INDEX_ENTRIES, so none is dropped for age
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (ws, barrier) = (ws.path(), &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..each {
                    let out = ws.join(format!("run-{t}-{i}.json"));
                    note_in_index(ws, &out, &format!("id-{t}-{i}")).unwrap();
                }
            });
        }
    });
    let index: Index =
        serde_json::from_str(&std::fs::read_to_string(ws.path().join(INDEX_PATH)).unwrap())
            .unwrap();
    let mut ids: Vec<&str> = index
        .sessions
        .iter()
        .map(|e| e.session_id.as_str())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), threads * each, "{ids:?}");
}

/// The transcript of `transcript()` with its messages replaced.
fn with_messages(messages: Value) -> Value {
    let mut t = transcript("success", answer());
    t["messages"] = messages;
    t
}

fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn results(ids: &[&str]) -> Value {
    let content: Vec<Value> = ids
        .iter()
        .map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"}))
        .collect();
    json!({"role": "user", "content": content})
}

fn refusal(messages: Value) -> String {
    let e = parse(&with_messages(messages)).unwrap_err();
    assert!(e.starts_with("its history is one the API refuses: "), "{e}");
    e
}

#[test]
fn an_orphan_tool_result_is_refused_naming_its_message() {
    // After a plain answer: nothing asked for it.
    let e = refusal(json!([user_text("go"), answer(), results(&["toolu_x"])]));
    assert!(
        e.contains("message 3 holds a tool_result for toolu_x, which answers no tool_use"),
        "{e}"
    );
    // Two user messages in a row: the result is not after its call.
    let e = refusal(json!([
        user_text("go"),
        calling(&["toolu_a"]),
        results(&["toolu_a"]),
        results(&["toolu_a"]),
        answer()
    ]));
    assert!(
        e.contains("message 4 holds a tool_result for toolu_a"),
        "{e}"
    );
    // One call answered twice in one message.
    let e = refusal(json!([
        user_text("go"),
        calling(&["toolu_a"]),
        results(&["toolu_a", "toolu_a"]),
        answer()
    ]));
    assert!(
        e.contains("message 3 answers the tool_use toolu_a twice"),
        "{e}"
    );
}

#[test]
fn a_call_unanswered_in_mid_history_is_refused_naming_its_message() {
    // The next message answers only one of the two calls.
    let e = refusal(json!([
        user_text("go"),
        calling(&["toolu_a", "toolu_b"]),
        results(&["toolu_a"]),
        answer()
    ]));
    assert!(
        e.contains("message 2 holds a tool_use (toolu_b) that message 3 does not answer"),
        "{e}"
    );
    // The next message is the model's again.
    let e = refusal(json!([
        user_text("go"),
        calling(&["toolu_a"]),
        answer(),
        user_text("more")
    ]));
    assert!(
        e.contains("message 2 holds a tool_use (toolu_a) that message 3 does not answer"),
        "{e}"
    );
    // A call in the last message is still answered, as before.
    let r = parse(&with_messages(json!([
        user_text("go"),
        calling(&["toolu_a"])
    ])))
    .unwrap();
    assert_eq!(r.answered_calls, 1);
}

#[test]
fn a_tool_use_id_used_twice_is_refused_naming_both_messages() {
    let e = refusal(json!([
        user_text("go"),
        calling(&["toolu_a"]),
        results(&["toolu_a"]),
        calling(&["toolu_a"]),
        results(&["toolu_a"]),
        answer()
    ]));
    assert!(
        e.contains("message 4 holds a tool_use with the id toolu_a, which message 2 used"),
        "{e}"
    );
    // Twice in the last message: answering both would not make it valid.
    let e = refusal(json!([user_text("go"), calling(&["toolu_a", "toolu_a"])]));
    assert!(
        e.contains("message 2 holds a tool_use with the id toolu_a, which message 2"),
        "{e}"
    );
    // A call in a user message.
    let mut wrong = calling(&["toolu_u"]);
    wrong["role"] = json!("user");
    let e = refusal(json!([wrong, answer()]));
    assert!(
        e.contains("message 1 is the user's, yet holds a tool_use (toolu_u)"),
        "{e}"
    );
}

/// A `running` -o file whose journal was not kept: the error says what the journal is.
#[test]
fn a_running_file_without_its_journal_names_the_missing_journal() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.json");
    let mut stub = with_messages(json!([]));
    stub["status"] = json!("running");
    stub["journal"] = json!("t.json.journal");
    std::fs::write(&f, stub.to_string()).unwrap();
    let e = load(&f).unwrap_err();
    let journal = dir.path().join("t.json.journal");
    assert!(
        e.contains(&format!("journal {} is missing", journal.display())),
        "{e}"
    );
    assert!(e.contains("every checkpoint after the first"), "{e}");
    assert!(e.contains("kept beside the transcript"), "{e}");
    // A first checkpoint with a history (a resumed run's) is still resumed, warned.
    let mut resumed = transcript("running", calling(&["toolu_b"]));
    resumed["journal"] = json!("t.json.journal");
    std::fs::write(&f, resumed.to_string()).unwrap();
    assert_eq!(load(&f).unwrap().answered_calls, 1);
}
