//! Unit tests of `repeat.rs`.

use super::*;
use serde_json::json;

fn call(id: &str, name: &str, input: Value) -> PendingCall {
    PendingCall {
        id: id.into(),
        name: name.into(),
        input: Ok(input),
    }
}

#[test]
fn fifth_identical_call_in_a_row_is_refused_across_turns() {
    let g = RepeatGuard::default();
    let same = |i: u32| call(&format!("t{i}"), "Grep", json!({"pattern": "x"}));
    // Turn 1: three identical calls; turn 2: two more (the 5th is refused), then a 6th.
    g.sync(&[same(1), same(2), same(3)]);
    for i in 1..=3 {
        assert_eq!(g.refusal(&same(i)), None);
    }
    g.commit();
    g.sync(&[same(4), same(5), same(6)]);
    assert_eq!(g.refusal(&same(4)), None);
    assert_eq!(
        g.refusal(&same(5)).as_deref(),
        Some("you have made this exact call 5 times; change approach")
    );
    assert!(g.refusal(&same(6)).unwrap().contains("6 times"));
}

#[test]
fn a_different_call_resets_the_count() {
    let g = RepeatGuard::default();
    let a = |i: u32| call(&format!("a{i}"), "Bash", json!({"command": "make"}));
    let other = call("b", "Bash", json!({"command": "make test"}));
    g.sync(&[a(1), a(2), a(3), a(4), other.clone(), a(5), a(6)]);
    for c in [a(1), a(2), a(3), a(4), other, a(5), a(6)] {
        assert_eq!(g.refusal(&c), None, "{}", c.id);
    }
    // Same name, input keys in another order: the same call.
    let g = RepeatGuard::default();
    let v = |i: u32| {
        let input = if i.is_multiple_of(2) {
            json!({"pattern": "p", "path": "src"})
        } else {
            json!({"path": "src", "pattern": "p"})
        };
        call(&format!("v{i}"), "Glob", input)
    };
    g.sync(&(1..=5).map(v).collect::<Vec<_>>());
    assert!(g.refusal(&v(5)).is_some());
}

#[test]
fn streaming_order_decides_and_a_retry_forgets() {
    let g = RepeatGuard::default();
    let same = |i: u32| call(&format!("s{i}"), "ReadFile", json!({"path": "a"}));
    for i in 1..=4 {
        g.observe(&same(i));
    }
    g.restart(); // the attempt was dropped: its calls never happened
    for i in 1..=4 {
        g.observe(&same(i));
    }
    // Dispatched out of order (a parallel batch): verdicts follow the model's order.
    g.observe(&same(5));
    assert!(g.refusal(&same(5)).is_some());
    assert_eq!(g.refusal(&same(2)), None);
    g.sync(&(1..=5).map(same).collect::<Vec<_>>());
    assert!(g.refusal(&same(5)).is_some());
    assert_eq!(g.refusal(&same(4)), None);
}
