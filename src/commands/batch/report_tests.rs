//! Tests of the batch report: its numbers, tables and escaping.

use super::*;
use crate::model::protocol::Usage;

fn row(id: &str, status: &str, turns: u64, ms: u64, cost: Option<f64>) -> TaskOutcome {
    TaskOutcome {
        id: id.into(),
        task_id: id.split('~').next().unwrap().into(),
        index: 0,
        status: status.into(),
        exit_code: Some(0),
        num_turns: turns,
        duration_ms: ms,
        cost_usd: cost,
        usage: Usage {
            input_tokens: 1000,
            output_tokens: 200,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            reasoning_output_tokens: 0,
            unknown: false,
        },
        transcript: Some(format!("{id}.json")),
        log: format!("{id}.log"),
        workspace: None,
        workspace_kind: None,
        error: None,
        skipped: false,
        note: None,
    }
}

#[test]
fn numbers_of_the_report() {
    let mut not_run = row("d", "not_run", 0, 0, None);
    not_run.usage = Usage::default();
    let rows = [
        row("a", "success", 2, 1_000, Some(0.01)),
        row("b", "success", 4, 3_000, Some(0.03)),
        row("c", "max_turns", 10, 9_000, Some(0.05)),
        not_run,
    ];
    let r = report(&rows);
    assert_eq!(r.runs, 4);
    assert_eq!(r.succeeded, 2);
    assert_eq!(r.pass_rate, Some(2.0 / 3.0), "not_run is not a run");
    assert_eq!(r.cost_usd.total, Some(0.09));
    assert_eq!(r.cost_usd.per_task, Some(0.0225));
    assert_eq!(r.cost_usd.unknown_runs, 1);
    assert_eq!(r.tokens.total, 3600);
    assert_eq!(r.turns.median, Some(4.0));
    assert_eq!(r.turns.p90, Some(10.0));
    assert_eq!(r.duration_ms.median, Some(3000.0));
    assert_eq!(r.status_counts["not_run"], 1);
    // The JSON document keeps the names and the sorted key order it always had.
    let doc = sorted_pretty(&r);
    let keys: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("  \"")?.split_once('"').map(|(k, _)| k))
        .collect();
    assert_eq!(
        keys,
        [
            "cost_usd",
            "duration_ms",
            "pass_at",
            "pass_rate",
            "per_task",
            "rows",
            "runs",
            "skipped",
            "status_counts",
            "succeeded",
            "tasks",
            "tokens",
            "turns"
        ]
    );
    assert!(
        doc.contains("\"pass_at\": {\n    \"1\": 0.6666666666666666\n  }"),
        "{doc}"
    );
    let md = markdown(&r);
    for needle in [
        "### agent batch: ⚠️ 2 of 4 runs succeeded",
        "| Pass rate | 66.7% |",
        "| Statuses | max_turns 1 · not_run 1 · success 2 |",
        "| Cost | $0.0900 total · $0.0225 per task (1 run without a price) |",
        "| Tokens | 3,600 total · 900 per task |",
        "| Turns | median 4 · p90 10 |",
        "| Duration | median 3.0 s · p90 9.0 s |",
        "| Task | Status | Turns | Cost | Tokens | Duration | Transcript |\n|---|---|---|---|---|---|---|\n",
        "| <code>a</code> | success | 2 | $0.0100 | 1,200 | 1.0 s | [<code>a.json</code>](a.json) |",
        "| <code>d</code> | not_run | 0 | unknown |",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
    assert!(
        !md.contains("Passes per task"),
        "no repeats, no pass@k table"
    );
}

#[test]
fn repeats_show_pass_at_k_and_passes_per_task() {
    let rows = [
        row("a~1", "success", 1, 1, None),
        row("a~2", "error", 1, 1, None),
        row("a~3", "success", 1, 1, None),
    ];
    let md = markdown(&report(&rows));
    assert!(
        md.contains("| pass@k | pass@1 0.667 · pass@2 1.000 · pass@3 1.000 |"),
        "{md}"
    );
    assert!(md.contains("#### Passes per task\n\n| Task | Passes | Runs |\n|---|---|---|\n| <code>a</code> | 2 | 3 |"), "{md}");
}

/// Every value read from summary.json is escaped: a hand-made (or hostile) file cannot
/// add table cells, HTML or headings, nor a link to another place.
#[test]
fn values_from_the_file_are_escaped() {
    let mut bad = row("x", "success", 1, 1, None);
    bad.id = "x|<script>alert(1)</script>\n### Heading".into();
    bad.status = "weird|status".into();
    bad.error = Some("boom | <b>bold</b>\nsecond line".into());
    bad.transcript = Some("a b)(javascript:x).json".into());
    let md = markdown(&report(&[bad]));
    assert!(!md.contains("<script>") && !md.contains("<b>"), "{md}");
    assert!(!md.contains("\n### Heading"), "{md}");
    assert!(
        md.contains("<code>x&#124;&lt;script&gt;alert(1)&lt;/script&gt; ### Heading</code>"),
        "{md}"
    );
    assert!(md.contains("<code>weird&#124;status</code>"), "{md}");
    assert!(md.contains("(a%20b%29%28javascript%3Ax%29.json)"), "{md}");
    // Each table row of the run table keeps its 7 cells: 8 unescaped pipes.
    let line = md.lines().find(|l| l.starts_with("| <code>x")).unwrap();
    assert_eq!(line.matches('|').count(), 8, "{line}");
}

#[test]
fn unknown_usage_is_not_counted_as_zero() {
    let mut quiet = row("q", "success", 1, 1, None);
    quiet.usage.unknown = true;
    quiet.usage.input_tokens = 0;
    quiet.usage.output_tokens = 0;
    let r = report(&[row("a", "success", 1, 1, None), quiet]);
    assert_eq!(r.tokens.total, 1200);
    assert_eq!(r.tokens.unknown_runs, 1);
    assert_eq!(r.rows[1].tokens, None);
    let md = markdown(&r);
    assert!(
        md.contains("| Tokens | 1,200 total · 600 per task (1 run without usage) |"),
        "{md}"
    );
    assert!(
        md.contains("| <code>q</code> | success | 1 | unknown | unknown |"),
        "{md}"
    );
}
