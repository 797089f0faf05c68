//! `agent batch report DIR [--format md|json]`: a batch's (or a merge's) summary.json
//! rendered for people: pass rate, pass@k, cost and tokens (total and per task), turns
//! and duration (median and p90, nearest rank), status counts, and a table of every run
//! with a link to its transcript. The Markdown uses `agent summary`'s escaping, so it can
//! go straight into `$GITHUB_STEP_SUMMARY`; every value from the file is escaped.

use std::path::Path;

use serde_json::{Value, json};

use super::{TaskOutcome, stats};
use crate::commands::summary::{code, count, cut, thousands};
use crate::config::cli::{BatchReportArgs, ReportFormat};
use crate::error::ExitStatus;
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
        ReportFormat::Json => serde_json::to_string_pretty(&report).unwrap_or_default(),
        ReportFormat::Md => markdown(&report),
    };
    output::print_stdout(&text);
    ExitStatus::Success
}

/// The report's numbers (the `--format json` document, which the Markdown renders).
pub(crate) fn read(dir: &Path) -> Result<Value, String> {
    let (_, rows) = read_summary(dir, "give an `agent batch --out` directory or a merged one")?;
    Ok(report(&rows))
}

/// A batch directory's `summary.json` and its task rows; `hint` says what `dir` should
/// have been when there is none.
pub(crate) fn read_summary(dir: &Path, hint: &str) -> Result<(Value, Vec<TaskOutcome>), String> {
    let path = dir.join("summary.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e} ({hint})", path.display()))?;
    let summary: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let rows: Vec<TaskOutcome> = serde_json::from_value(summary["tasks"].clone())
        .map_err(|e| format!("{}: its tasks are not batch rows: {e}", path.display()))?;
    Ok((summary, rows))
}

pub(crate) fn report(rows: &[TaskOutcome]) -> Value {
    let totals = stats::totals(rows);
    let ran: Vec<&TaskOutcome> = rows.iter().filter(|o| o.status != "not_run").collect();
    let succeeded = ran.iter().filter(|o| o.status == "success").count();
    let tasks = stats::per_task(rows);
    let priced: Vec<f64> = rows.iter().filter_map(|o| o.cost_usd).collect();
    let cost_total = totals["cost_usd"].as_f64();
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
    json!({
        "runs": rows.len(),
        "tasks": tasks.len(),
        "succeeded": succeeded,
        "pass_rate": (!ran.is_empty()).then(|| succeeded as f64 / ran.len() as f64),
        "pass_at": totals["pass_at"],
        "status_counts": totals["status_counts"],
        "skipped": totals["skipped"],
        "cost_usd": {
            "total": cost_total,
            "per_task": cost_total.and_then(per_task_mean).map(crate::run::budget::round_usd),
            "unknown_runs": rows.len() - priced.len(),
        },
        "tokens": {
            "total": token_total,
            "per_task": per_task_mean(token_total as f64),
            "unknown_runs": tokens_unknown,
            "usage": totals["usage"],
        },
        "turns": {
            "median": stats::percentile(&turns, 50.0),
            "p90": stats::percentile(&turns, 90.0),
        },
        "duration_ms": {
            "median": stats::percentile(&durations, 50.0),
            "p90": stats::percentile(&durations, 90.0),
        },
        "per_task": totals["per_task"],
        "rows": rows.iter().map(|o| json!({
            "id": o.id,
            "status": o.status,
            "num_turns": o.num_turns,
            "cost_usd": o.cost_usd,
            "tokens": (!o.usage.unknown).then(|| tokens(o)),
            "duration_ms": o.duration_ms,
            "transcript": o.transcript,
            "skipped": o.skipped,
            "error": o.error,
        })).collect::<Vec<_>>(),
    })
}

fn usd(v: &Value) -> String {
    match v.as_f64() {
        Some(c) => format!("${c:.4}"),
        None => "unknown".to_string(),
    }
}

fn secs(v: &Value) -> String {
    match v.as_f64() {
        Some(ms) => format!("{:.1} s", ms / 1000.0),
        None => "—".to_string(),
    }
}

fn num(v: &Value) -> String {
    match v.as_f64() {
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
pub(crate) fn markdown(r: &Value) -> String {
    let runs = r["runs"].as_u64().unwrap_or(0);
    let ok = r["succeeded"].as_u64().unwrap_or(0);
    let icon = if runs > 0 && ok == runs {
        "✅"
    } else if ok > 0 {
        "⚠️"
    } else {
        "❌"
    };
    let mut md = format!(
        "### agent batch: {icon} {ok} of {} succeeded\n\n| | |\n|---|---|\n",
        count(runs, "run")
    );
    let mut row = |k: &str, v: String| md.push_str(&format!("| {k} | {v} |\n"));
    row(
        "Pass rate",
        match r["pass_rate"].as_f64() {
            Some(p) => format!("{:.1}%", p * 100.0),
            None => "—".to_string(),
        },
    );
    if let Some(pass_at) = r["pass_at"].as_object() {
        let mut ks: Vec<(u64, f64)> = pass_at
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, v.as_f64()?)))
            .collect();
        ks.sort_by_key(|(k, _)| *k);
        if ks.len() > 1 {
            row(
                "pass@k",
                ks.iter()
                    .map(|(k, p)| format!("pass@{k} {p:.3}"))
                    .collect::<Vec<_>>()
                    .join(" · "),
            );
        }
    }
    let counts = r["status_counts"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{} {}", status_cell(k), v.as_u64().unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(" · ")
        })
        .unwrap_or_default();
    row("Statuses", counts);
    if let Some(s) = r["skipped"].as_u64().filter(|s| *s > 0) {
        row("Skipped (finished earlier)", s.to_string());
    }
    row(
        "Cost",
        format!(
            "{} total · {} per task{}",
            usd(&r["cost_usd"]["total"]),
            usd(&r["cost_usd"]["per_task"]),
            match r["cost_usd"]["unknown_runs"].as_u64() {
                Some(n) if n > 0 => format!(" ({} without a price)", count(n, "run")),
                _ => String::new(),
            }
        ),
    );
    row(
        "Tokens",
        format!(
            "{} total · {} per task{}",
            thousands(r["tokens"]["total"].as_u64().unwrap_or(0)),
            thousands(r["tokens"]["per_task"].as_f64().unwrap_or(0.0).round() as u64),
            match r["tokens"]["unknown_runs"].as_u64() {
                Some(n) if n > 0 => format!(" ({} without usage)", count(n, "run")),
                _ => String::new(),
            }
        ),
    );
    row(
        "Turns",
        format!(
            "median {} · p90 {}",
            num(&r["turns"]["median"]),
            num(&r["turns"]["p90"])
        ),
    );
    row(
        "Duration",
        format!(
            "median {} · p90 {}",
            secs(&r["duration_ms"]["median"]),
            secs(&r["duration_ms"]["p90"])
        ),
    );
    md.push('\n');
    let per_task = r["per_task"].as_array().cloned().unwrap_or_default();
    if per_task.iter().any(|t| t["runs"].as_u64().unwrap_or(0) > 1) {
        md.push_str("#### Passes per task\n\n| Task | Passes | Runs |\n|---|---|---|\n");
        for t in &per_task {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                code(t["id"].as_str().unwrap_or("")),
                t["passes"].as_u64().unwrap_or(0),
                t["runs"].as_u64().unwrap_or(0)
            ));
        }
        md.push('\n');
    }
    let rows = r["rows"].as_array().cloned().unwrap_or_default();
    md.push_str(&format!(
        "#### Runs ({})\n\n| Task | Status | Turns | Cost | Tokens | Duration | Transcript |\n\
         |---|---|---|---|---|---|---|\n",
        rows.len()
    ));
    for t in rows.iter().take(MAX_TASK_ROWS) {
        let mut status = status_cell(t["status"].as_str().unwrap_or(""));
        if t["skipped"] == true {
            status.push_str(" (earlier)");
        }
        if let Some(e) = t["error"].as_str().filter(|_| t["status"] != "success") {
            status.push_str(&format!(": {}", code(&cut(e, ERROR_CHARS))));
        }
        let link = match t["transcript"].as_str() {
            Some(name) => format!("[{}]({})", code(name), href(name)),
            None => "—".to_string(),
        };
        md.push_str(&format!(
            "| {} | {status} | {} | {} | {} | {} | {link} |\n",
            code(t["id"].as_str().unwrap_or("")),
            t["num_turns"].as_u64().unwrap_or(0),
            usd(&t["cost_usd"]),
            t["tokens"]
                .as_u64()
                .map_or_else(|| "unknown".to_string(), thousands),
            secs(&t["duration_ms"]),
        ));
    }
    if rows.len() > MAX_TASK_ROWS {
        md.push_str(&format!(
            "\n… and {} more runs (see summary.json).\n",
            rows.len() - MAX_TASK_ROWS
        ));
    }
    md
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
