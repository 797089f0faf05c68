//! Unit tests of `record.rs`.

use super::*;
use crate::record::outcome::Status;
use serde_json::json;

#[test]
fn each_response_is_priced_by_its_own_model() {
    let mut r = RunRecord::new("claude-sonnet-4-5", PathBuf::from("/w"), vec![]);
    let prices = Prices::default();
    let million_in = Usage {
        input_tokens: 1_000_000,
        ..Usage::default()
    };
    r.add_response("claude-sonnet-4-5", &million_in, &prices, true);
    r.add_response("claude-haiku-4-5", &million_in, &prices, true);
    r.add_response("claude-haiku-4-5", &million_in, &prices, false);
    // Sonnet 3 $/MTok once, Haiku 1 $/MTok twice: not 9 (all at one price).
    assert_eq!(r.cost_usd, Some(5.0));
    assert_eq!(r.usage.input_tokens, 3_000_000);
    let v: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
    assert_eq!(
        v["models_used"],
        json!([{"model": "claude-sonnet-4-5", "turns": 1, "cost_usd": 3.0},
                   {"model": "claude-haiku-4-5", "turns": 1, "cost_usd": 2.0}])
    );
    assert_eq!(r.unpriced_model(), None);
    r.add_response("local-model", &million_in, &prices, true);
    assert_eq!(
        r.cost_usd, None,
        "one unpriced model makes the total unknown"
    );
    assert_eq!(r.unpriced_model(), Some("local-model"));
    assert_eq!(
        r.models_used[0].cost_usd,
        Some(3.0),
        "the others keep theirs"
    );
}

#[test]
fn costs_add_up_without_float_noise() {
    let mut r = RunRecord::new("claude-haiku-4-5", PathBuf::from("/w"), vec![]);
    let hundred_in = Usage {
        input_tokens: 100,
        ..Usage::default()
    };
    for _ in 0..3 {
        r.add_response("claude-haiku-4-5", &hundred_in, &Prices::default(), true);
    }
    // 0.0001 three times is 0.00030000000000000003 in floats.
    let v: Value = serde_json::from_str(&r.to_json(Status::Success, None)).unwrap();
    assert_eq!(v["cost_usd"].to_string(), "0.0003");
    assert_eq!(v["models_used"][0]["cost_usd"].to_string(), "0.0003");
}

#[test]
fn file_changes_merge() {
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
    use crate::tools::paths::ChangeKind::{Created, Deleted, Modified};
    r.note_change("a", Created);
    r.note_change("a", Modified);
    r.note_change("b", Modified);
    r.note_change("c", Created);
    r.note_change("c", Deleted);
    let v: Vec<_> = r
        .files_changed
        .iter()
        .map(|(p, c)| format!("{p}:{c}"))
        .collect();
    assert_eq!(v, vec!["a:created", "b:modified"]);
}

#[test]
fn each_billed_response_names_the_message_it_gave() {
    use crate::model::protocol::{ContentBlock, Message, Role};
    use crate::record::history::Entry;
    let said = |t: &str| {
        Entry::new(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: t.into() }],
        })
    };
    let mut r = RunRecord::new("m", PathBuf::from("/w"), vec![]);
    let prices = Prices::default();
    let u = Usage {
        input_tokens: 10,
        ..Usage::default()
    };
    r.record_message(Entry::new(Message::user_text("task")));
    r.record_turn("m", "tool_use", &u, &prices, said("one"));
    // Cut off at the window twice (silent, then with a partial answer), then answered:
    // the partial is replaced, so the answer has the index the partial had.
    r.record_wall("m", "max_tokens", &u, &prices, None);
    r.record_wall("m", "max_tokens", &u, &prices, Some(said("part")));
    r.record_turn("m", "end_turn", &u, &prices, said("two"));
    let at: Vec<Option<u64>> = r.responses().iter().map(|x| x.message).collect();
    assert_eq!(at, [Some(1), None, Some(2), Some(2)]);
    assert_eq!(r.messages().len(), 3);
    let total: u64 = r.responses().iter().map(|x| x.usage.input_tokens).sum();
    assert_eq!(total, r.usage().input_tokens);
}
