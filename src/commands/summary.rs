//! `agent summary TRANSCRIPT`: renders a transcript as the Markdown step summary of the
//! GitHub Action (`ci/action/run.sh`), or with `--github-output` as the step's outputs.
//! TRANSCRIPT is a file written by `-o` or `--json` (a killed run's `-o` file is read
//! through the journal it names, `journal.rs`), the journal itself, a `--jsonl` capture
//! (its `run.finished` event carries the transcript), or `-` for either on stdin.
//! In Rust rather than jq in the script: one tested renderer, no tool to install on the
//! runner, and the same escaping everywhere.
//!
//! What it shows: status, turns, tokens, cost, a table of tool calls (name, a short input
//! summary, ok/error, duration), files changed, `git diff --stat`, and each verification
//! with only a short tail of its output. Never tool output, never the environment; the
//! transcript it reads was already redacted of secrets when it was written.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::config::cli::SummaryArgs;
use crate::error::ExitStatus;
use crate::record::Transcript;
use crate::util::output;

/// Rows of the tool-call table; a long run's summary stays readable (the transcript has all).
const MAX_TOOL_ROWS: usize = 50;
/// A tool input is summarised to one short line.
const INPUT_SUMMARY_CHARS: usize = 80;
/// The final answer shown in the summary.
const RESULT_CHARS: usize = 3_000;
/// The tail of a failing verification's output shown in the summary.
const VERIFY_TAIL_LINES: usize = 20;
const VERIFY_TAIL_CHARS: usize = 1_500;
/// Lines of `git diff --stat` shown.
const DIFF_STAT_LINES: usize = 40;
/// Files listed.
const MAX_FILE_ROWS: usize = 100;
/// Plan items shown: a long plan's first ones, then how many more.
const PLAN_ITEMS: usize = 50;
/// Largest input read (a transcript, or a `--jsonl` capture with every event, or the
/// journal a `running` transcript names): far above any real run, and a bound on memory
/// when stdin is something endless.
const MAX_INPUT_BYTES: u64 = 256 << 20;

pub(crate) fn summary_command(args: &SummaryArgs) -> ExitStatus {
    let t = match read_transcript(&args.transcript) {
        Ok(t) => t,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let text = if args.github_output {
        github_outputs(&t, &args.transcript)
    } else {
        markdown(&t)
    };
    output::print_stdout(&text);
    ExitStatus::Success
}

/// The transcript at `path` (or stdin for `-`), read as `agent summary` reads it; the
/// error names the file. Also `agent export`'s reader.
pub(crate) fn read_transcript(path: &Path) -> Result<Transcript, String> {
    use std::io::Read;
    let stdin = path == Path::new("-");
    let name = if stdin {
        "stdin".to_string()
    } else {
        path.display().to_string()
    };
    let mut bytes = Vec::new();
    let read = if stdin {
        std::io::stdin()
            .lock()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes))
    };
    read.map_err(|e| format!("cannot read the transcript {name}: {e}"))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "{name} is over {} MiB: not a transcript",
            MAX_INPUT_BYTES >> 20
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let t = if crate::record::journal::is_journal(&text) {
        crate::record::journal::read(&text).map_err(|e| format!("{name}: {e}"))?
    } else {
        let t = parse_transcript(&text, &name)?;
        // A running run's `-o` file names its journal, beside it (from stdin: in the cwd).
        let dir = if stdin {
            Path::new("")
        } else {
            path.parent().unwrap_or(Path::new(""))
        };
        crate::record::journal::follow(t, dir, MAX_INPUT_BYTES)
            .map_err(|e| format!("{name}: {e}"))?
    };
    Transcript::from_value(&t).map_err(|e| format!("{name}: {e}"))
}

/// A transcript document, or the transcript in a `--jsonl` capture's `run.finished`.
pub(crate) fn parse_transcript(text: &str, name: &str) -> Result<Value, String> {
    let is_transcript = |v: &Value| v.is_object() && v.get("status").is_some();
    match serde_json::from_str::<Value>(text) {
        Ok(v) if is_transcript(&v) => return Ok(v),
        // One JSON value that is no transcript (a lone event is handled below).
        Ok(v) if v.get("type").is_none() => {
            return Err(format!("{name} is not an agent transcript"));
        }
        _ => {}
    }
    let mut events = 0;
    for line in text.lines().rev().filter(|l| !l.trim().is_empty()) {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if ev.get("type").is_none() {
            continue;
        }
        events += 1;
        if ev["type"] == "run.finished" {
            return if is_transcript(&ev["transcript"]) {
                Ok(ev["transcript"].clone())
            } else {
                Err(format!(
                    "{name}: its run.finished event holds no transcript"
                ))
            };
        }
    }
    if events > 0 {
        Err(format!(
            "{name} is a --jsonl capture without a run.finished event (the run did not \
             finish, or the capture was cut): no transcript to summarise"
        ))
    } else {
        Err(format!(
            "{name} is not a JSON transcript or a --jsonl capture"
        ))
    }
}

/// `name=value` lines for `$GITHUB_OUTPUT`; the multi-line result uses the heredoc form
/// with a delimiter that does not occur in it.
pub(crate) fn github_outputs(t: &Transcript, path: &Path) -> String {
    let status = t.status.as_str();
    let result = t.result.as_str();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut delim = format!("ghadelimiter_{nanos:x}");
    while result.contains(&delim) {
        delim.push('_');
    }
    // From stdin there is no file to point at.
    let abs = if path == Path::new("-") {
        std::path::PathBuf::new()
    } else {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    };
    format!(
        "status={}\nresult<<{delim}\n{result}\n{delim}\ntranscript={}\n",
        one_line(status),
        one_line(&abs.display().to_string())
    )
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// HTML-escaped inline code, safe inside a Markdown table cell.
pub(crate) fn code(s: &str) -> String {
    let flat = s.replace(['\n', '\r', '\t'], " ");
    let esc = flat
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('|', "&#124;");
    format!("<code>{esc}</code>")
}

/// A fenced block whose fence is longer than any backtick run inside.
fn fenced(lang: &str, body: &str) -> String {
    let mut run = 0;
    let mut longest = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", body.trim_end_matches('\n'))
}

pub(crate) fn cut(s: &str, max: usize) -> String {
    // `max` in all: one character of it is the marker.
    match crate::util::text::truncate(s, max) {
        (kept, 0) => kept.to_string(),
        _ => crate::util::text::ellipsis(s, max.saturating_sub(1)),
    }
}

fn tail_lines(s: &str, lines: usize, chars: usize) -> String {
    let all: Vec<&str> = s.trim_end_matches('\n').lines().collect();
    let kept = all[all.len().saturating_sub(lines)..].join("\n");
    crate::run::verify::tail(&kept, chars)
}

/// Dollars as people read them: 4 decimals from a cent up, else 3 significant digits
/// (`$0.000717`, not `$0.0007` or `0.0007170000000000002`).
pub(crate) fn usd(c: f64) -> String {
    if c == 0.0 || !c.is_finite() {
        return format!("${c}");
    }
    if c.abs() >= 0.01 {
        return format!("${c:.4}");
    }
    let decimals = (2 - c.abs().log10().floor() as i32).clamp(4, 12) as usize;
    let s = format!("{c:.decimals$}");
    format!("${}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// `1 turn`, `3 turns`: a count with its noun (plurals by `s`).
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(n))
    }
}

pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// One short line describing a call's input: its command, path or pattern.
fn input_summary(input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    let s = match (field("command"), field("pattern"), field("path")) {
        (Some(c), _, _) => c.to_string(),
        (None, Some(p), Some(path)) => format!("{p} in {path}"),
        (None, Some(p), None) => p.to_string(),
        (None, None, Some(path)) => path.to_string(),
        _ => input.to_string(),
    };
    cut(&s, INPUT_SUMMARY_CHARS)
}

/// The Markdown step summary.
pub(crate) fn markdown(t: &Transcript) -> String {
    let status = t.status.as_str();
    let icon = match status {
        "success" => "✅",
        "verify_failed" | "max_turns" | "budget" | "timeout" => "⚠️",
        _ => "❌",
    };
    // A status is a plain word; anything else (a hand-made transcript) is shown as inline
    // code, so that it cannot add headings or tables of its own.
    let shown = if status.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        status.to_string()
    } else {
        code(status)
    };
    let calls = t.tool_calls.len() as u64;
    let mut md = format!(
        "### agent: {icon} {shown}\n\n{} · {}{}\n\n| | |\n|---|---|\n",
        count(u64::from(t.num_turns), "turn"),
        count(calls, "tool call"),
        t.cost_usd
            .map(|c| format!(" · {}", usd(c)))
            .unwrap_or_default()
    );
    let mut row = |k: &str, v: String| md.push_str(&format!("| {k} | {v} |\n"));
    row("Status", code(status));
    if !t.model.is_empty() {
        row("Model", code(&t.model));
    }
    // More than one model answered (`--fallback-model` took over): each with its share.
    if t.models_used.len() > 1 {
        let each: Vec<String> = t
            .models_used
            .iter()
            .map(|u| {
                let cost = u.cost_usd.map_or_else(|| "cost unknown".to_string(), usd);
                format!(
                    "{} ({}, {cost})",
                    code(&u.model),
                    count(u64::from(u.turns), "turn")
                )
            })
            .collect();
        row("Models used", each.join(" → "));
    }
    row("Turns", t.num_turns.to_string());
    let u = &t.usage;
    row(
        "Tokens",
        // Unknown counts: the server reported no usage (they are unknown, not zero).
        if u.unknown {
            "unknown (the server reported no usage)".to_string()
        } else {
            format!(
                "{} input ({} cache read, {} cache write) · {} output",
                thousands(u.input_tokens),
                thousands(u.cache_read_input_tokens),
                thousands(u.cache_creation_input_tokens),
                thousands(u.output_tokens)
            )
        },
    );
    row(
        "Cost",
        match t.cost_usd {
            Some(c) => usd(c),
            None => "unknown (no price for this model)".to_string(),
        },
    );
    row(
        "Duration",
        format!("{} (API {})", secs(t.duration_ms), secs(t.api_duration_ms)),
    );
    if t.retries > 0 {
        row("API retries", t.retries.to_string());
    }
    if !t.permission_denials.is_empty() {
        row("Denied calls", t.permission_denials.len().to_string());
    }
    md.push('\n');
    if let Some(e) = &t.error {
        md.push_str(&format!(
            "**Error** {}: {}\n\n",
            code(&e.kind),
            code(&cut(&e.message, 500))
        ));
    }
    verification_section(t, &mut md);
    plan_section(t, &mut md);
    tool_section(t, &mut md);
    files_section(t, &mut md);
    if !t.result.trim().is_empty() {
        md.push_str("#### Result\n\n");
        md.push_str(&fenced("text", &cut(&t.result, RESULT_CHARS)));
        md.push('\n');
    }
    md
}

fn verification_section(t: &Transcript, md: &mut String) {
    let vs = &t.verifications;
    if vs.is_empty() {
        return;
    }
    md.push_str("#### Verification\n\n| Round | Command | Exit | Result | Duration |\n|---|---|---|---|---|\n");
    for v in vs {
        let exit = match (v.exit_code, v.timed_out) {
            (_, true) => "timeout".to_string(),
            (Some(c), _) => c.to_string(),
            (None, _) => "—".to_string(),
        };
        md.push_str(&format!(
            "| {} | {} | {exit} | {} | {} |\n",
            v.round,
            code(&cut(&v.command, INPUT_SUMMARY_CHARS)),
            if v.passed { "✅ passed" } else { "❌ failed" },
            secs(v.duration_ms)
        ));
    }
    md.push('\n');
    if let Some(last) = vs.last().filter(|v| !v.passed) {
        let tail = tail_lines(&last.output_tail, VERIFY_TAIL_LINES, VERIFY_TAIL_CHARS);
        md.push_str("<details><summary>Output of the last verification (tail)</summary>\n\n");
        md.push_str(&fenced("text", &tail));
        md.push_str("\n</details>\n\n");
    }
}

/// The model's last plan (TodoWrite) as a checklist: done items ticked, the one in
/// progress marked so.
fn plan_section(t: &Transcript, md: &mut String) {
    use crate::tools::todo_write::TodoStatus;
    let todos = &t.plan;
    if todos.is_empty() {
        return;
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    md.push_str(&format!("#### Plan ({done}/{} done)\n\n", todos.len()));
    for item in todos.iter().take(PLAN_ITEMS) {
        let text = plain(&cut(&item.content, INPUT_SUMMARY_CHARS));
        md.push_str(&match item.status {
            TodoStatus::Completed => format!("- [x] {text}\n"),
            TodoStatus::InProgress => format!("- [ ] {text} *(in progress)*\n"),
            TodoStatus::Pending => format!("- [ ] {text}\n"),
        });
    }
    if todos.len() > PLAN_ITEMS {
        md.push_str(&format!("- … {} more\n", todos.len() - PLAN_ITEMS));
    }
    md.push('\n');
}

/// The model's text as plain Markdown: one line, every character that could start
/// markup (links, emphasis, HTML, tables, headings) escaped.
fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in one_line(s).chars() {
        if "\\`*_{}[]()<>#+-.!|~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn tool_section(t: &Transcript, md: &mut String) {
    let calls = &t.tool_calls;
    md.push_str(&format!("#### Tool calls ({})\n\n", calls.len()));
    if calls.is_empty() {
        md.push_str("None.\n\n");
        return;
    }
    md.push_str("| # | Turn | Tool | Input | Result | Duration |\n|---|---|---|---|---|---|\n");
    for (i, c) in calls.iter().take(MAX_TOOL_ROWS).enumerate() {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} ms |\n",
            i + 1,
            c.turn,
            code(&c.name),
            code(&input_summary(&c.input)),
            if c.is_error { "error" } else { "ok" },
            c.duration_ms
        ));
    }
    if calls.len() > MAX_TOOL_ROWS {
        md.push_str(&format!(
            "\n… and {} more (see the transcript).\n",
            calls.len() - MAX_TOOL_ROWS
        ));
    }
    md.push('\n');
}

fn files_section(t: &Transcript, md: &mut String) {
    let files = &t.files_changed;
    md.push_str(&format!("#### Files changed ({})\n\n", files.len()));
    if files.is_empty() {
        md.push_str("None.\n\n");
    }
    for f in files.iter().take(MAX_FILE_ROWS) {
        md.push_str(&format!("- {} {}\n", f.change, code(&f.path)));
    }
    if files.len() > MAX_FILE_ROWS {
        md.push_str(&format!("- … and {} more\n", files.len() - MAX_FILE_ROWS));
    }
    if !files.is_empty() {
        md.push('\n');
    }
    if let Some(stat) = t.git_diff_stat.as_deref().filter(|s| !s.trim().is_empty()) {
        let lines: Vec<&str> = stat.lines().collect();
        let shown = if lines.len() > DIFF_STAT_LINES {
            let mut v = lines[..DIFF_STAT_LINES - 1].to_vec();
            v.push(lines[lines.len() - 1]); // the totals line
            v.join("\n")
        } else {
            lines.join("\n")
        };
        md.push_str("<details><summary>git diff --stat</summary>\n\n");
        md.push_str(&fenced("text", &shown));
        md.push_str("\n</details>\n\n");
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
