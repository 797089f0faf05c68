//! `agent batch merge OUT DIR…`: the `--out` directories of several shards (or of
//! several batches) into one: OUT/summary.json over every row, and each row's
//! transcript and log copied beside it, so that OUT is what `agent batch report` and an
//! artifact upload need.
//!
//! It refuses (exit 2, writing nothing) a DIR without a summary.json, the same id with
//! different results in two DIRs (the same result twice is kept once: a re-uploaded
//! shard), shards of different tasks files (`same_tasks_file`), shards of different
//! totals, and missing shards when the shard totals say how many there should be.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{BATCH_SUMMARY_VERSION, TaskOutcome, stats};
use crate::config::cli::BatchMergeArgs;
use crate::error::ExitStatus;
use crate::util::output;

/// One shard's summary.json, read.
struct ShardDir {
    dir: PathBuf,
    summary: Value,
    rows: Vec<TaskOutcome>,
}

pub(crate) fn merge_command(args: &BatchMergeArgs) -> ExitStatus {
    let merged = match merge(&args.dirs) {
        Ok(m) => m,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    match write(&args.out, &merged) {
        Ok(text) => {
            output::print_stdout(&text);
            output::info(&format!(
                "batch merge: {} tasks from {} directories into {}",
                merged.rows.len(),
                args.dirs.len(),
                args.out.join("summary.json").display()
            ));
            ExitStatus::Success
        }
        Err(e) => {
            output::error(&e);
            ExitStatus::Failure
        }
    }
}

/// The merged rows, each with the directory it came from, and the summary fields.
pub(crate) struct Merged {
    pub rows: Vec<(TaskOutcome, PathBuf)>,
    pub doc: Map<String, Value>,
}

pub(crate) fn merge(dirs: &[PathBuf]) -> Result<Merged, String> {
    let shards = dirs
        .iter()
        .map(|d| read_dir(d))
        .collect::<Result<Vec<_>, _>>()?;
    let tasks_sha256 = same_tasks_file(&shards)?;
    // Shards: every DIR that ran a shard must agree on the total, and all of them must
    // be here.
    let mut totals = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for s in &shards {
        if let (Some(i), Some(n)) = (
            s.summary["shard"]["index"].as_u64(),
            s.summary["shard"]["count"].as_u64(),
        ) {
            totals.insert(n);
            seen.insert(i);
        }
    }
    let shard_info = match totals.len() {
        0 => Value::Null,
        1 => {
            let n = *totals.first().unwrap_or(&0);
            let missing: Vec<String> = (1..=n)
                .filter(|i| !seen.contains(i))
                .map(|i| i.to_string())
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "missing shard(s) {} of {n}: the directories given hold shards {}",
                    missing.join(", "),
                    seen.iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            json!({"count": n, "merged": seen})
        }
        _ => {
            return Err(format!(
                "the directories are shards of different totals ({}): not one batch",
                totals
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
    };
    let mut by_id: BTreeMap<String, (TaskOutcome, PathBuf)> = BTreeMap::new();
    for s in &shards {
        for row in &s.rows {
            match by_id.get(&row.id) {
                Some((prev, prev_dir)) if !same_result(prev, row) => {
                    return Err(format!(
                        "task {:?} is in {} ({}) and in {} ({}) with different results: \
                         merge one of them",
                        row.id,
                        prev_dir.display(),
                        prev.status,
                        s.dir.display(),
                        row.status
                    ));
                }
                Some(_) => {}
                None => {
                    by_id.insert(row.id.clone(), (row.clone(), s.dir.clone()));
                }
            }
        }
    }
    let mut rows: Vec<(TaskOutcome, PathBuf)> = by_id.into_values().collect();
    // File order, repeats in order (`<id>~2` before `<id>~10`).
    rows.sort_by_key(|(o, _)| (o.index, repeat_number(&o.id), o.id.clone()));
    let outcomes: Vec<TaskOutcome> = rows.iter().map(|(o, _)| o.clone()).collect();
    let mut doc = Map::new();
    doc.insert("version".into(), json!(BATCH_SUMMARY_VERSION));
    doc.insert(
        "tasks_file".into(),
        shards
            .first()
            .map(|s| s.summary["tasks_file"].clone())
            .unwrap_or(Value::Null),
    );
    doc.insert("tasks_sha256".into(), tasks_sha256);
    doc.insert("shard".into(), Value::Null);
    doc.insert("shards".into(), shard_info);
    doc.insert(
        "merged_from".into(),
        json!(
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
        ),
    );
    doc.insert(
        "repeat".into(),
        json!(
            shards
                .iter()
                .filter_map(|s| s.summary["repeat"].as_u64())
                .max()
                .unwrap_or(1)
        ),
    );
    doc.extend(stats::totals(&outcomes));
    // The shards ran side by side: the merged batch took as long as the longest.
    doc.insert(
        "wall_time_ms".into(),
        json!(
            shards
                .iter()
                .filter_map(|s| s.summary["wall_time_ms"].as_u64())
                .max()
        ),
    );
    doc.insert("tasks".into(), json!(outcomes));
    Ok(Merged { rows, doc })
}

/// Every DIR ran one tasks file: two summaries' `tasks_sha256` agree, and a summary
/// without one (an older agent's) names the same `tasks_file` as the others. The digest
/// decides when both have one: the same file may sit at another path on another
/// machine. Returns the digest, or null when no summary has one.
fn same_tasks_file(shards: &[ShardDir]) -> Result<Value, String> {
    let digest = |s: &ShardDir| s.summary["tasks_sha256"].as_str().map(str::to_string);
    let ran = |s: &ShardDir| {
        let file = match s.summary["tasks_file"].as_str() {
            Some(f) => format!("{f:?}"),
            None => "an unnamed tasks file".to_string(),
        };
        match digest(s) {
            Some(d) => format!("{} ran {file} (sha256 {d})", s.dir.display()),
            None => format!("{} ran {file} (no digest: an older agent)", s.dir.display()),
        }
    };
    for (i, a) in shards.iter().enumerate() {
        for b in &shards[..i] {
            let same = match (digest(a), digest(b)) {
                (Some(x), Some(y)) => x == y,
                _ => a.summary["tasks_file"] == b.summary["tasks_file"],
            };
            if !same {
                return Err(format!(
                    "the directories ran different tasks files: {} and {}: not one batch",
                    ran(b),
                    ran(a)
                ));
            }
        }
    }
    Ok(shards
        .iter()
        .find_map(digest)
        .map_or(Value::Null, Value::String))
}

fn repeat_number(id: &str) -> u64 {
    id.rsplit_once(super::REPEAT_SEP)
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
}

/// Two rows report the same result (paths may differ between machines).
fn same_result(a: &TaskOutcome, b: &TaskOutcome) -> bool {
    (
        &a.status,
        a.exit_code,
        a.num_turns,
        a.cost_usd,
        a.usage,
        &a.error,
    ) == (
        &b.status,
        b.exit_code,
        b.num_turns,
        b.cost_usd,
        b.usage,
        &b.error,
    )
}

fn read_dir(dir: &Path) -> Result<ShardDir, String> {
    let (summary, rows) = super::report::read_summary(
        dir,
        "not an `agent batch --out` directory, or its batch never finished",
    )?;
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        summary,
        rows,
    })
}

/// Writes OUT/summary.json and copies each row's transcript and log into OUT.
fn write(out: &Path, merged: &Merged) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (row, dir) in &merged.rows {
        for name in row.transcript.iter().chain([&row.log]) {
            // Names come from a summary file: only plain file names are copied.
            if Path::new(name).file_name() != Some(std::ffi::OsStr::new(name)) {
                continue;
            }
            let (from, to) = (dir.join(name), out.join(name));
            let same = matches!(
                (from.canonicalize(), to.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            );
            if from.is_file() && !same {
                std::fs::copy(&from, &to)
                    .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
            }
        }
    }
    let text = serde_json::to_string_pretty(&Value::Object(merged.doc.clone())).unwrap_or_default();
    output::write_file_atomic(&out.join("summary.json"), text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", out.join("summary.json").display()))?;
    Ok(text)
}
