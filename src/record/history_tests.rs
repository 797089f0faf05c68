use super::*;
use crate::model::protocol::Usage;
use crate::run::context::{ContextWindow, plan_clearing};
use serde_json::{Value, json};

fn serialised_here() -> u64 {
    crate::model::protocol::message_serialisations_here()
}

fn call(id: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text {
                text: format!("reading {id}"),
            },
            ContentBlock::ToolUse {
                id: id.into(),
                name: "ReadFile".into(),
                input: json!({"path": id}),
            },
        ],
    }
}

fn result(id: &str, bytes: usize) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: "x".repeat(bytes).into(),
            is_error: false,
        }],
    }
}

/// A task, then `n` turns of one call and its result each.
fn session(n: usize, bytes: usize) -> (Vec<Arc<Entry>>, History) {
    let mut originals = vec![Entry::new(Message::user_text("task"))];
    for i in 0..n {
        let id = format!("t{i}");
        originals.push(Entry::new(call(&id)));
        originals.push(Entry::new(result(&id, bytes)));
    }
    let mut h = History::new();
    for e in &originals {
        h.push(e.clone());
    }
    (originals, h)
}

fn sent(h: &History, breakpoint: bool) -> Value {
    let mut out = Vec::new();
    write_messages(h.entries(), breakpoint, &mut out);
    serde_json::from_slice(&out).expect("valid JSON")
}

#[test]
fn each_message_is_serialised_once_however_many_requests() {
    let before = serialised_here();
    let mut h = History::new();
    h.push(Entry::new(Message::user_text("task")));
    for i in 0..20 {
        let id = format!("t{i}");
        h.push(Entry::new(call(&id)));
        // A request per turn, as the loop makes them.
        let mut body = Vec::new();
        write_messages(h.entries(), true, &mut body);
        h.push(Entry::new(result(&id, 100)));
        let mut body = Vec::new();
        write_messages(h.entries(), true, &mut body);
    }
    assert_eq!(
        serialised_here() - before,
        41,
        "1 task + 20 calls + 20 results"
    );
}

#[test]
fn the_array_is_the_messages_with_a_breakpoint_on_the_newest_last_block() {
    let (originals, h) = session(2, 10);
    let v = sent(&h, true);
    let plain: Vec<Value> = originals
        .iter()
        .map(|e| serde_json::to_value(e.message()).unwrap())
        .collect();
    let mut expected = plain.clone();
    expected[4]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
    assert_eq!(v, Value::Array(expected));
    assert_eq!(sent(&h, false), Value::Array(plain));
    assert_eq!(
        h.json_bytes(),
        serde_json::to_vec(&sent(&h, false)).unwrap().len()
    );
}

#[test]
fn a_thinking_block_last_gets_no_breakpoint() {
    let mut h = History::new();
    h.push(Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::Thinking {
            thinking: "hmm".into(),
            signature: "sig".into(),
        }],
    }));
    assert!(
        sent(&h, true)[0]["content"][0]
            .get("cache_control")
            .is_none()
    );
    let mut empty = History::new();
    empty.push(Entry::new(Message {
        role: Role::User,
        content: vec![],
    }));
    assert_eq!(sent(&empty, true), json!([{"role": "user", "content": []}]));
}

#[test]
fn only_old_big_results_are_clearable_oldest_first() {
    let (_, mut h) = session(6, 1000);
    // A small result among the old ones is not worth clearing.
    h.sent[4] = Entry::new(result("t1", 10));
    let slots = h.clearable();
    let messages: Vec<usize> = slots.iter().map(|s| s.message).collect();
    // Results sit at 2, 4, 6, 8, 10, 12; the last three turns (8, 10, 12) are kept.
    assert_eq!(messages, vec![2, 6]);
    assert!(slots.iter().all(|s| s.block == 0 && s.bytes == 1000));
}

#[test]
fn a_loaded_skills_content_is_never_clearable() {
    let (_, mut h) = session(6, 1000);
    let mut skill = result("t0", 0);
    if let ContentBlock::ToolResult { content, .. } = &mut skill.content[0] {
        *content = format!(
            "<skill_content name=\"lint\">\n{}\n</skill_content>",
            "x".repeat(1000)
        )
        .into();
    }
    h.sent[2] = Entry::new(skill);
    let messages: Vec<usize> = h.clearable().iter().map(|s| s.message).collect();
    assert_eq!(messages, vec![4, 6], "the skill's result (message 2) stays");
}

#[test]
fn clearing_replaces_content_keeps_pairs_and_leaves_the_originals() {
    let (originals, mut h) = session(8, 4000);
    let mut ctx = ContextWindow::new("m", Some(10_000), false, 0.8);
    ctx.observe(
        &Usage {
            input_tokens: 9000,
            ..Default::default()
        },
        h.json_bytes(),
    );
    let before_bytes = h.json_bytes();
    let plan = plan_clearing(&h.clearable(), 9000, 5000, &ctx).unwrap();
    let (n_before, parsed_before) = (serialised_here(), parses_here());
    let cleared = h.apply(&plan);
    assert_eq!(cleared, plan.slots.len());
    assert_eq!(
        (serialised_here() - n_before, parses_here() - parsed_before),
        (0, 0),
        "a clearing copies the stored JSON: it neither parses nor serialises a message"
    );
    let v = sent(&h, true);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), originals.len(), "no message removed");
    for (i, m) in arr.iter().enumerate() {
        let orig = serde_json::to_value(originals[i].message()).unwrap();
        if m["role"] == "user" && i > 0 {
            // The pair survives: same id, same position.
            assert_eq!(
                m["content"][0]["tool_use_id"],
                orig["content"][0]["tool_use_id"]
            );
            let was_cleared = plan.slots.iter().any(|s| s.message == i);
            let text = m["content"][0]["content"].as_str().unwrap();
            assert_eq!(text == PLACEHOLDER, was_cleared, "message {i}");
        } else if i + 1 < arr.len() {
            assert_eq!(m, &orig, "message {i} untouched");
        }
    }
    // The oldest went first.
    assert_eq!(plan.slots[0].message, 2);
    assert!(plan.slots.windows(2).all(|w| w[0].message < w[1].message));
    // The record's originals still hold the content.
    for s in &plan.slots {
        match &originals[s.message].message().content[0] {
            ContentBlock::ToolResult { content, .. } => assert_eq!(content.len(), 4000),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        h.json_bytes(),
        serde_json::to_vec(&sent(&h, false)).unwrap().len()
    );
    assert!(h.json_bytes() < before_bytes);
    // Cleared results are not offered again.
    assert!(
        h.clearable()
            .iter()
            .all(|s| !plan.slots.iter().any(|p| p.message == s.message))
    );
}

#[test]
fn pop_keeps_the_byte_count_and_forgets_clearings_past_the_end() {
    let (_, mut h) = session(1, 10);
    let bytes = h.json_bytes();
    h.push(Entry::new(Message::user_text("more")));
    assert!(h.json_bytes() > bytes);
    assert!(h.pop().is_some());
    assert_eq!(h.json_bytes(), bytes);
}

#[test]
fn entries_serialise_verbatim_into_a_pretty_document() {
    let e = Entry::new(call("t1"));
    let doc = serde_json::to_string_pretty(&json!({"k": 1})).unwrap();
    assert!(doc.contains('\n'));
    let s = serde_json::to_string_pretty(&[&*e]).unwrap();
    assert_eq!(s, format!("[\n  {}\n]", e.json()));
    assert_eq!(e.transcript_json(), e.json());
    assert_eq!(e.wire(|m| format!("{}", m.content.len())), "2");
    assert_eq!(e.wire(|_| unreachable!("cached")), "2");
}

#[test]
fn thinking_goes_to_the_api_as_received_and_unsigned_thinking_only_to_the_record() {
    let thinking = "Quote \"x\", back\\slash, tab\t, é, 🦀, \u{2028}, </script>";
    let signature = "EqQBCgIYAhIM+/=";
    let signed = ContentBlock::Thinking {
        thinking: thinking.into(),
        signature: signature.into(),
    };
    let unsigned = ContentBlock::Thinking {
        thinking: "a server's reasoning".into(),
        signature: String::new(),
    };
    let redacted = ContentBlock::RedactedThinking {
        data: "opaque+/==".into(),
    };
    let text = ContentBlock::Text { text: "ok".into() };
    let entry = Entry::new(Message {
        role: Role::Assistant,
        content: vec![signed, redacted.clone(), text.clone()],
    });
    let expected = format!(
        "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"thinking\",\"thinking\":{},\
         \"signature\":{}}},{{\"type\":\"redacted_thinking\",\"data\":\"opaque+/==\"}},\
         {{\"type\":\"text\",\"text\":\"ok\"}}]}}",
        serde_json::to_string(thinking).unwrap(),
        serde_json::to_string(signature).unwrap()
    );
    assert_eq!(entry.json(), expected);
    assert_eq!(entry.transcript_json(), expected);
    let mut h = History::new();
    h.push(entry);
    let mut out = Vec::new();
    write_messages(h.entries(), false, &mut out);
    assert_eq!(String::from_utf8(out).unwrap(), format!("[{expected}]"));

    let from_server = Entry::new(Message {
        role: Role::Assistant,
        content: vec![unsigned, text],
    });
    assert_eq!(
        from_server.json(),
        r#"{"role":"assistant","content":[{"type":"text","text":"ok"}]}"#
    );
    let record: Value = serde_json::from_str(from_server.transcript_json()).unwrap();
    assert_eq!(
        record["content"][0],
        json!({"type": "thinking", "thinking": "a server's reasoning", "signature": ""})
    );
    assert_eq!(serde_json::to_value(&*from_server).unwrap(), record);
}

#[test]
fn an_entry_holds_only_json_and_parses_back_to_the_same_message() {
    let input: Value = serde_json::from_str(
        r#"{"path":"é/🦀\u2028\"q\"","float":0.30000000000000004,"tiny":5e-324,
            "big":1.7976931348623157e308,"neg":-0.0,"u":18446744073709551615,
            "i":-9223372036854775808,"exp":1e20,"int_as_float":3.0,"nested":[{"a":null}]}"#,
    )
    .unwrap();
    let messages = [
        Message::user_text("task: fix \"it\" \\ now é 🦀"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hmm \t\n".into(),
                    signature: "EqQBCgIYAhIM+/=".into(),
                },
                ContentBlock::RedactedThinking {
                    data: "opaque+/==".into(),
                },
                ContentBlock::Text { text: "ok".into() },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "ReadFile".into(),
                    input: input.clone(),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: "line\n\u{0}\u{1f}".into(),
                    is_error: true,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "toolu_2".into(),
                    content: String::new().into(),
                    is_error: false,
                },
            ],
        },
        // Unsigned thinking (a server's reasoning): not in the API form, still in the
        // message parsed back.
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "a server's reasoning".into(),
                    signature: String::new(),
                },
                ContentBlock::Text { text: "ok".into() },
            ],
        },
    ];
    for m in messages {
        let e = Entry::new(m.clone());
        assert_eq!(e.message(), m);
    }
    // Each number kept its type and every digit.
    let ContentBlock::ToolUse { input: back, .. } = &Entry::new(call("x")).message().content[1]
    else {
        panic!("tool_use expected")
    };
    assert_eq!(back, &json!({"path": "x"}));
    let e = Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: "t".into(),
            name: "n".into(),
            input: input.clone(),
        }],
    });
    let ContentBlock::ToolUse { input: back, .. } = &e.message().content[0] else {
        panic!("tool_use expected")
    };
    assert_eq!(back["float"].as_f64(), Some(0.30000000000000004));
    assert_eq!(back["tiny"].as_f64(), Some(5e-324));
    assert_eq!(back["u"].as_u64(), Some(u64::MAX));
    assert_eq!(back["i"].as_i64(), Some(i64::MIN));
    assert!(back["int_as_float"].is_f64());
    assert_eq!(back.to_string(), input.to_string());
}

#[test]
fn the_cache_breakpoint_needs_no_parse() {
    let before = parses_here();
    let (_, h) = session(3, 10);
    let with = sent(&h, true);
    assert_eq!(
        with[6]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let mut h = History::new();
    h.push(Entry::new(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::RedactedThinking { data: "x".into() }],
    }));
    assert!(!sent(&h, true).to_string().contains("cache_control"));
    assert_eq!(parses_here() - before, 0);
}

#[test]
fn parsing_on_demand_grows_with_the_turns_not_their_square() {
    // The loop's use over N turns: the newest message each turn, requests from the
    // stored bytes, a clearing check when over the threshold (every turn here).
    let parses = |n: usize| {
        let before = parses_here();
        let mut h = History::new();
        h.push(Entry::new(Message::user_text("task")));
        for i in 0..n {
            let id = format!("t{i}");
            h.push(Entry::new(call(&id)));
            assert!(h.last().is_some());
            let mut body = Vec::new();
            write_messages(h.entries(), true, &mut body);
            h.push(Entry::new(result(&id, 10)));
            assert!(h.clearable().is_empty(), "results too small to clear");
        }
        parses_here() - before
    };
    assert_eq!(parses(10), 10);
    assert_eq!(parses(40), 40, "one parse a turn");
}

#[test]
fn a_cleared_copy_is_byte_for_byte_what_parsing_and_serialising_would_make() {
    let message = Message {
        role: Role::User,
        content: vec![
            ContentBlock::ToolResult {
                tool_use_id: "a".into(),
                content: "quotes \" and \\ and \u{1} and é and \n lines "
                    .repeat(40)
                    .into(),
                is_error: false,
            },
            ContentBlock::Text {
                text: "between, with \"content\": \"not this\"".into(),
            },
            ContentBlock::ToolResult {
                tool_use_id: "b\"c".into(),
                content: "{\"content\":\"nested\"}".repeat(50).into(),
                is_error: true,
            },
            ContentBlock::ToolResult {
                tool_use_id: "d".into(),
                content: "kept".into(),
                is_error: false,
            },
        ],
    };
    let entry = Entry::new(message);
    for blocks in [vec![0], vec![2], vec![0, 2], vec![0, 2, 3]] {
        let spliced = entry.cleared(&blocks);
        let parsed = entry.cleared_by_parsing(&blocks);
        assert_eq!(spliced.json(), parsed.json(), "blocks {blocks:?}");
        assert_eq!(spliced.transcript_json(), parsed.transcript_json());
        assert_eq!(spliced.results, parsed.results, "blocks {blocks:?}");
        assert_eq!(spliced.last_block_cacheable, parsed.last_block_cacheable);
    }
    // Not a tool result (the text block): the copy is made by parsing, and is the same.
    assert_eq!(
        entry.cleared(&[1]).json(),
        entry.cleared_by_parsing(&[1]).json()
    );
}

#[test]
fn a_cleared_copy_is_redacted_like_any_entry() {
    // A value only this test uses: registering it redacts it everywhere from now on.
    let secret = "cleared-copy-secret-4b1d9e0c7a";
    crate::util::output::add_secret(secret);
    let message = Message {
        role: Role::User,
        content: vec![
            ContentBlock::ToolResult {
                tool_use_id: "a".into(),
                content: format!("old output {secret}").into(),
                is_error: false,
            },
            ContentBlock::ToolResult {
                tool_use_id: "b".into(),
                content: format!("newer output {secret}").into(),
                is_error: false,
            },
        ],
    };
    let entry = Entry::new(message);
    let copy = entry.cleared(&[0]);
    assert!(copy.json().contains(PLACEHOLDER));
    assert!(
        copy.json().contains(secret),
        "the API form is the conversation as it is"
    );
    assert!(!copy.transcript_json().contains(secret));
    assert_eq!(
        copy.transcript_json(),
        entry.cleared_by_parsing(&[0]).transcript_json()
    );
}
