//! Tests of pass@k, per-task counts and percentiles.

use super::*;

fn row(id: &str, task: &str, status: &str) -> TaskOutcome {
    TaskOutcome {
        id: id.into(),
        task_id: task.into(),
        index: 0,
        status: status.into(),
        exit_code: None,
        num_turns: 1,
        duration_ms: 0,
        cost_usd: None,
        usage: Usage::default(),
        transcript: None,
        log: String::new(),
        workspace: None,
        workspace_kind: None,
        error: None,
        skipped: false,
        note: None,
    }
}

#[test]
fn the_unbiased_estimator_by_hand() {
    // n = 3, c = 2: any 1 of 3 passes with 2/3; any 2 of 3 always include a pass.
    assert!((task_pass_at_k(3, 2, 1).unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(task_pass_at_k(3, 2, 2), Some(1.0));
    // n = 3, c = 1: pass@2 = 1 - C(2,2)/C(3,2) = 1 - 1/3.
    assert!((task_pass_at_k(3, 1, 2).unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(task_pass_at_k(3, 1, 3), Some(1.0));
    assert_eq!(task_pass_at_k(3, 0, 3), Some(0.0));
    // n = 10, c = 3, k = 5: 1 - C(7,5)/C(10,5) = 1 - 21/252.
    assert!((task_pass_at_k(10, 3, 5).unwrap() - (1.0 - 21.0 / 252.0)).abs() < 1e-12);
    // Fewer runs than k: undefined.
    assert_eq!(task_pass_at_k(2, 1, 3), None);
    assert_eq!(task_pass_at_k(2, 1, 0), None);
}

#[test]
fn per_task_groups_repeats_and_skips_not_run() {
    let rows = [
        row("a~1", "a", "success"),
        row("a~2", "a", "max_turns"),
        row("b~1", "b", "success"),
        row("a~3", "a", "success"),
        row("b~2", "b", "not_run"),
    ];
    let t = per_task(&rows);
    assert_eq!(
        t,
        [
            TaskPasses {
                id: "a".into(),
                runs: 3,
                passes: 2
            },
            TaskPasses {
                id: "b".into(),
                runs: 1,
                passes: 1
            },
        ]
    );
    // pass@1 over both tasks: (2/3 + 1) / 2; pass@2 only over a (b has 1 run).
    assert!((pass_at_k(&t, 1).unwrap() - (2.0 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
    assert_eq!(pass_at_k(&t, 2), Some(1.0));
    assert_eq!(pass_at_k(&t, 4), None);
    let m = totals(&rows);
    assert_eq!(m.pass_at[&1], pass_at_k(&t, 1).unwrap());
    assert!(m.pass_at.contains_key(&3));
    assert_eq!(m.per_task, t);
}

#[test]
fn nearest_rank_percentiles() {
    let v = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 9.0, 8.0, 7.0, 6.0];
    assert_eq!(percentile(&v, 50.0), Some(5.0));
    assert_eq!(percentile(&v, 90.0), Some(9.0));
    assert_eq!(percentile(&[7.0], 90.0), Some(7.0));
    assert_eq!(percentile(&[], 50.0), None);
    assert_eq!(percentile(&[1.0, 2.0, 3.0], 50.0), Some(2.0));
}

#[test]
fn costs_are_rounded() {
    assert_eq!(round_usd(0.000_717_000_000_000_000_2), 0.000717);
    let mut a = row("a", "a", "success");
    a.cost_usd = Some(0.1);
    let mut b = row("b", "b", "success");
    b.cost_usd = Some(0.2);
    assert_eq!(totals(&[a, b]).cost_usd, Some(0.3));
}
