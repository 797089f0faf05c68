//! `agent batch report DIR [--format md|json]`: a batch's (or a merge's) summary.json
//! rendered for people: pass rate, pass@k, cost and tokens (total and per task), turns
//! and duration (median and p90, nearest rank), status counts, and a table of every run
//! with a link to its transcript. The Markdown uses `agent summary`'s escaping, so it can
//! go straight into `$GITHUB_STEP_SUMMARY`; every value from the file is escaped.

use std::path::Path;

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::{BatchSummary, TaskPasses, sorted_pretty};
use super::{TaskOutcome, stats};
use crate::commands::summary::{code, count, cut, thousands};
use crate::config::cli::{BatchReportArgs, ReportFormat};
use crate::error::ExitStatus;
use crate::model::protocol::Usage;
use crate::util::output;

/// Rows of the per-run table; a huge batch's report stays readable (summary.json has all).
const MAX_TASK_ROWS: usize = 500;
/// An error message in the table is cut to one short line.
const ERROR_CHARS: usize = 120;

pub(crate) fn report_command(args: &BatchReportArgs) -> ExitStatus {
    let report = match read(&args.dir) {
        Ok(r) => r,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let text = match args.format {
        ReportFormat::Json => sorted_pretty(&report),
        ReportFormat::Md => markdown(&report),
    };
    output::print_stdout(&text);
    ExitStatus::Success
}

/// The report's numbers (the `--format json` document, which the Markdown renders).
pub(crate) fn read(dir: &Path) -> Result<Report, String> {
    let summary = BatchSummary::read(dir, "give an `agent batch --out` directory or a merged one")?;
    Ok(report(&summary.tasks))
}

/// `agent batch report --format json`: the numbers of a batch's rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Report {
    pub runs: usize,
    /// Distinct tasks (repeats of one task count once).
    pub tasks: usize,
    pub succeeded: usize,
    /// Successes over runs that ran (`not_run` is not a run); null when none ran.
    pub pass_rate: Option<f64>,
    pub pass_at: BTreeMap<usize, f64>,
    pub status_counts: BTreeMap<String, usize>,
    pub skipped: usize,
    pub cost_usd: CostNumbers,
    pub tokens: TokenNumbers,
    pub turns: Spread,
    pub duration_ms: Spread,
    pub per_task: Vec<TaskPasses>,
    pub rows: Vec<ReportRow>,
}

/// The report's cost: total, mean per task, runs without a price.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CostNumbers {
    pub total: Option<f64>,
    pub per_task: Option<f64>,
    pub unknown_runs: usize,
}

/// The report's tokens: total, mean per task, runs without usage, and the summed usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TokenNumbers {
    pub total: u64,
    pub per_task: Option<f64>,
    pub unknown_runs: usize,
    pub usage: Usage,
}

/// Nearest-rank median and 90th percentile (null with no runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Spread {
    pub median: Option<f64>,
    pub p90: Option<f64>,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        Spread {
            median: stats::percentile(values, 50.0),
            p90: stats::percentile(values, 90.0),
        }
    }
}

/// One run in the report's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ReportRow {
    pub id: String,
    pub status: String,
    pub num_turns: u64,
    pub cost_usd: Option<f64>,
    /// Null when the server reported no usage.
    pub tokens: Option<u64>,
    pub duration_ms: u64,
    pub transcript: Option<String>,
    pub skipped: bool,
    pub error: Option<String>,
}

pub(crate) fn report(rows: &[TaskOutcome]) -> Report {
    let totals = stats::totals(rows);
    let ran: Vec<&TaskOutcome> = rows.iter().filter(|o| o.status != "not_run").collect();
    let succeeded = ran.iter().filter(|o| o.status == "success").count();
    let tasks = stats::per_task(rows);
    let priced = rows.iter().filter(|o| o.cost_usd.is_some()).count();
    let cost_total = totals.cost_usd;
    let tokens = |o: &TaskOutcome| {
        o.usage.input_tokens
            + o.usage.output_tokens
            + o.usage.cache_read_input_tokens
            + o.usage.cache_creation_input_tokens
    };
    // Rows whose server reported no usage add nothing and are counted apart.
    let token_total: u64 = rows.iter().filter(|o| !o.usage.unknown).map(tokens).sum();
    let tokens_unknown = rows.iter().filter(|o| o.usage.unknown).count();
    let turns: Vec<f64> = ran.iter().map(|o| o.num_turns as f64).collect();
    let durations: Vec<f64> = ran.iter().map(|o| o.duration_ms as f64).collect();
    let per_task_mean = |total: f64| (!tasks.is_empty()).then(|| total / tasks.len() as f64);
    Report {
        runs: rows.len(),
        tasks: tasks.len(),
        succeeded,
        pass_rate: (!ran.is_empty()).then(|| succeeded as f64 / ran.len() as f64),
        pass_at: totals.pass_at,
        status_counts: totals.status_counts,
        skipped: totals.skipped,
        cost_usd: CostNumbers {
            total: cost_total,
            per_task: cost_total
                .and_then(per_task_mean)
                .map(crate::run::budget::round_usd),
            unknown_runs: rows.len() - priced,
        },
        tokens: TokenNumbers {
            total: token_total,
            per_task: per_task_mean(token_total as f64),
            unknown_runs: tokens_unknown,
            usage: totals.usage,
        },
        turns: Spread::of(&turns),
        duration_ms: Spread::of(&durations),
        per_task: totals.per_task,
        rows: rows
            .iter()
            .map(|o| ReportRow {
                id: o.id.clone(),
                status: o.status.clone(),
                num_turns: o.num_turns,
                cost_usd: o.cost_usd,
                tokens: (!o.usage.unknown).then(|| tokens(o)),
                duration_ms: o.duration_ms,
                transcript: o.transcript.clone(),
                skipped: o.skipped,
                error: o.error.clone(),
            })
            .collect(),
    }
}

fn usd(v: Option<f64>) -> String {
    match v {
        Some(c) => format!("${c:.4}"),
        None => "unknown".to_string(),
    }
}

fn secs(v: Option<f64>) -> String {
    match v {
        Some(ms) => format!("{:.1} s", ms / 1000.0),
        None => "—".to_string(),
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.fract() == 0.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
        None => "—".to_string(),
    }
}

/// A status word as `agent summary` shows it: plain when it is one, else inline code.
fn status_cell(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        s.to_string()
    } else {
        code(s)
    }
}

/// A link target made of safe characters only (the name comes from a file).
fn href(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The Markdown report.
pub(crate) fn markdown(r: &Report) -> String {
    let (runs, ok) = (r.runs, r.succeeded);
    let icon = if runs > 0 && ok == runs {
        "✅"
    } else if ok > 0 {
        "⚠️"
    } else {
        "❌"
    };
    let mut md = format!(
        "### agent batch: {icon} {ok} of {} succeeded\n\n| | |\n|---|---|\n",
        count(runs as u64, "run")
    );
    let mut row = |k: &str, v: String| md.push_str(&format!("| {k} | {v} |\n"));
    row(
        "Pass rate",
        match r.pass_rate {
            Some(p) => format!("{:.1}%", p * 100.0),
            None => "—".to_string(),
        },
    );
    if r.pass_at.len() > 1 {
        row(
            "pass@k",
            r.pass_at
                .iter()
                .map(|(k, p)| format!("pass@{k} {p:.3}"))
                .collect::<Vec<_>>()
                .join(" · "),
        );
    }
    let counts = r
        .status_counts
        .iter()
        .map(|(k, v)| format!("{} {v}", status_cell(k)))
        .collect::<Vec<_>>()
        .join(" · ");
    row("Statuses", counts);
    if r.skipped > 0 {
        row("Skipped (finished earlier)", r.skipped.to_string());
    }
    let cost = &r.cost_usd;
    row(
        "Cost",
        format!(
            "{} total · {} per task{}",
            usd(cost.total),
            usd(cost.per_task),
            match cost.unknown_runs {
                0 => String::new(),
                n => format!(" ({} without a price)", count(n as u64, "run")),
            }
        ),
    );
    let tokens = &r.tokens;
    row(
        "Tokens",
        format!(
            "{} total · {} per task{}",
            thousands(tokens.total),
            thousands(tokens.per_task.unwrap_or(0.0).round() as u64),
            match tokens.unknown_runs {
                0 => String::new(),
                n => format!(" ({} without usage)", count(n as u64, "run")),
            }
        ),
    );
    row(
        "Turns",
        format!("median {} · p90 {}", num(r.turns.median), num(r.turns.p90)),
    );
    row(
        "Duration",
        format!(
            "median {} · p90 {}",
            secs(r.duration_ms.median),
            secs(r.duration_ms.p90)
        ),
    );
    md.push('\n');
    if r.per_task.iter().any(|t| t.runs > 1) {
        md.push_str("#### Passes per task\n\n| Task | Passes | Runs |\n|---|---|---|\n");
        for t in &r.per_task {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                code(&t.id),
                t.passes,
                t.runs
            ));
        }
        md.push('\n');
    }
    md.push_str(&format!(
        "#### Runs ({})\n\n| Task | Status | Turns | Cost | Tokens | Duration | Transcript |\n\
         |---|---|---|---|---|---|---|\n",
        r.rows.len()
    ));
    for t in r.rows.iter().take(MAX_TASK_ROWS) {
        let mut status = status_cell(&t.status);
        if t.skipped {
            status.push_str(" (earlier)");
        }
        if let Some(e) = t.error.as_deref().filter(|_| t.status != "success") {
            status.push_str(&format!(": {}", code(&cut(e, ERROR_CHARS))));
        }
        let link = match &t.transcript {
            Some(name) => format!("[{}]({})", code(name), href(name)),
            None => "—".to_string(),
        };
        md.push_str(&format!(
            "| {} | {status} | {} | {} | {} | {} | {link} |\n",
            code(&t.id),
            t.num_turns,
            usd(t.cost_usd),
            t.tokens.map_or_else(|| "unknown".to_string(), thousands),
            secs(Some(t.duration_ms as f64)),
        ));
    }
    if r.rows.len() > MAX_TASK_ROWS {
        md.push_str(&format!(
            "\n… and {} more runs (see summary.json).\n",
            r.rows.len() - MAX_TASK_ROWS
        ));
    }
    md
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
