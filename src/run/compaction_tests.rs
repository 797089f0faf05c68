//! What a compaction keeps, cuts and asks for.

use super::*;

fn msgs(spec: &[(bool, usize)]) -> Vec<Msg> {
    spec.iter()
        .map(|&(assistant, bytes)| Msg { assistant, bytes })
        .collect()
}

/// task, then `turns` pairs of (assistant, user) of `bytes` each.
fn history(turns: usize, bytes: usize) -> Vec<Msg> {
    let mut v = vec![Msg {
        assistant: false,
        bytes,
    }];
    for _ in 0..turns {
        v.push(Msg {
            assistant: true,
            bytes,
        });
        v.push(Msg {
            assistant: false,
            bytes,
        });
    }
    v
}

#[test]
fn the_tail_starts_at_an_assistant_message_and_fits_its_budget() {
    let h = history(10, 100); // 21 messages
    // 400 bytes: the last two turns (4 messages).
    assert_eq!(split_point(&h, 400), Some(17));
    assert_eq!(split_point(&h, 450), Some(17));
    assert_eq!(split_point(&h, 600), Some(15));
    for keep in [0, 10, 199] {
        // Not even the last turn fits: it is kept anyway.
        assert_eq!(split_point(&h, keep), Some(19), "{keep}");
    }
    // Something is always left to summarise: at most everything after the first turn.
    assert_eq!(split_point(&h, usize::MAX), Some(3));
    assert!(h[split_point(&h, 400).unwrap()].assistant);
}

#[test]
fn nothing_to_summarise_when_the_history_is_the_task_and_one_turn() {
    assert_eq!(split_point(&history(0, 10), 0), None);
    assert_eq!(split_point(&history(1, 10), 0), None);
    assert_eq!(split_point(&history(2, 10), 0), Some(3));
    // Two user messages in a row (a verification failure after an answer) are no start.
    let h = msgs(&[
        (false, 1),
        (true, 1),
        (false, 1),
        (false, 1),
        (true, 1),
        (false, 1),
    ]);
    assert_eq!(split_point(&h, 0), Some(4));
}

#[test]
fn the_summary_request_is_cut_at_an_assistant_message_to_fit() {
    let h = history(10, 100);
    let split = 17;
    // Everything fits: nothing left out.
    assert_eq!(cut_point(&h, split, 10_000, 0), Some(1));
    // Head 100 + extra 50 + messages 1..17 (1600) = 1750.
    assert_eq!(cut_point(&h, split, 1750, 50), Some(1));
    assert_eq!(cut_point(&h, split, 1749, 50), Some(3));
    // Just the last pair before the split, with the head: 100 + 50 + 200.
    assert_eq!(cut_point(&h, split, 350, 50), Some(15));
    assert_eq!(cut_point(&h, split, 349, 50), None);
    for b in [400, 700, 1000] {
        let c = cut_point(&h, split, b, 50).unwrap();
        assert!(h[c].assistant);
        let size: usize = 150 + h[c..split].iter().map(|m| m.bytes).sum::<usize>();
        assert!(size <= b, "{b}: {size}");
    }
}

#[test]
fn the_request_text_carries_the_record_and_the_instructions() {
    let facts = RecordFacts {
        files_changed: vec![("src/lib.rs".into(), "modified".into())],
        commands: vec!["`cargo test` (exit 101, turn 4)".into()],
        plan: vec!["[x] read".into(), "[>] fix".into()],
    };
    let t = request_text(&facts, Some("  Keep the API names.  "), 3);
    assert!(t.contains("- src/lib.rs (modified)\n"), "{t}");
    assert!(t.contains("- `cargo test` (exit 101, turn 4)\n"), "{t}");
    assert!(t.contains("[x] read\n[>] fix\n"), "{t}");
    assert!(t.contains("3 earlier messages were left out"), "{t}");
    assert!(
        t.ends_with("Additional instructions:\nKeep the API names.\n"),
        "{t}"
    );
    let empty = request_text(&RecordFacts::default(), None, 0);
    assert!(empty.contains("Files changed:\n(none)\n"), "{empty}");
    assert!(!empty.contains("left out"));
    assert!(!empty.contains("Additional"));
}

#[test]
fn the_first_message_keeps_the_summary_plan_and_skills_in_order() {
    let blocks = head_texts(
        2,
        "  the summary  ",
        &["[ ] next".to_string()],
        &["SKILL BODY".to_string()],
    );
    assert_eq!(blocks.len(), 3);
    assert!(blocks[0].contains("(compaction 2)"));
    assert!(blocks[0].ends_with("Summary:]\n\nthe summary"));
    assert_eq!(
        blocks[1],
        "[The current plan (TodoWrite), as last written:]\n[ ] next"
    );
    assert_eq!(
        blocks[2],
        "[An activated skill, kept verbatim:]\nSKILL BODY"
    );
    assert_eq!(head_texts(1, "s", &[], &[]).len(), 1);
}

#[test]
fn the_notes_say_what_happened() {
    let c = Compaction {
        turn: 7,
        reason: Reason::Threshold,
        model: "m".into(),
        tokens_before: 17_000,
        tokens_after_estimate: 3_000,
        messages_summarized: 9,
        messages_kept: 4,
        messages_left_out: 0,
        summary: Some("abc".into()),
        usage: Usage::default(),
        cost_usd: Some(0.0123),
        error: None,
    };
    assert_eq!(
        compacted_note(&c),
        "turn 7: compacted the conversation: 9 messages summarised, 4 kept (17000 → about \
         3000 tokens; a summary of 3 characters, $0.0123)"
    );
    assert_eq!(
        compacting_note(7, Reason::Wall, 21_000, Some(20_000), "m"),
        "turn 7: compacting the conversation (21000 tokens of a 20000-token window, at the \
         window's wall): asking m for a summary"
    );
}
