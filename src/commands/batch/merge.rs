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

use super::summary::{BatchSummary, MergeInfo, MergedShards};
use super::{BATCH_SUMMARY_VERSION, TaskOutcome, stats};
use crate::config::cli::BatchMergeArgs;
use crate::error::ExitStatus;
use crate::util::output;

/// One shard's summary.json, read.
struct ShardDir {
    dir: PathBuf,
    summary: BatchSummary,
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

/// The merged rows, each with the directory it came from, and the merged summary.
pub(crate) struct Merged {
    pub rows: Vec<(TaskOutcome, PathBuf)>,
    pub summary: BatchSummary,
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
        if let Some(shard) = s.summary.shard {
            totals.insert(shard.count);
            seen.insert(shard.index);
        }
    }
    let shard_info = match totals.len() {
        0 => None,
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
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            Some(MergedShards {
                count: n,
                merged: seen.into_iter().collect(),
            })
        }
        _ => {
            return Err(format!(
                "the directories are shards of different totals ({}): not one batch",
                totals
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
    };
    let mut by_id: BTreeMap<String, (TaskOutcome, PathBuf)> = BTreeMap::new();
    for s in &shards {
        for row in &s.summary.tasks {
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
    let summary = BatchSummary {
        version: BATCH_SUMMARY_VERSION,
        tasks_file: shards.first().and_then(|s| s.summary.tasks_file.clone()),
        tasks_sha256,
        shard: None,
        merge: Some(MergeInfo {
            merged_from: dirs.iter().map(|d| d.display().to_string()).collect(),
            shards: shard_info,
        }),
        parallel: None,
        repeat: shards.iter().map(|s| s.summary.repeat).max().unwrap_or(1),
        totals: stats::totals(&outcomes),
        // The shards ran side by side: the merged batch took as long as the longest.
        wall_time_ms: shards.iter().filter_map(|s| s.summary.wall_time_ms).max(),
        tasks: outcomes,
    };
    Ok(Merged { rows, summary })
}

/// Every DIR ran one tasks file: two summaries' `tasks_sha256` agree, and a summary
/// without one (an older agent's) names the same `tasks_file` as the others. The digest
/// decides when both have one: the same file may sit at another path on another
/// machine. Returns the digest, or none when no summary has one.
fn same_tasks_file(shards: &[ShardDir]) -> Result<Option<String>, String> {
    let digest = |s: &ShardDir| s.summary.tasks_sha256.clone();
    let ran = |s: &ShardDir| {
        let file = match &s.summary.tasks_file {
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
                _ => a.summary.tasks_file == b.summary.tasks_file,
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
    Ok(shards.iter().find_map(digest))
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
    let summary = BatchSummary::read(
        dir,
        "not an `agent batch --out` directory, or its batch never finished",
    )?;
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        summary,
    })
}

/// Writes OUT/summary.json and copies each row's transcript and log into OUT.
fn write(out: &Path, merged: &Merged) -> Result<String, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (row, dir) in &merged.rows {
        // The trajectory beside the transcript (`ID.trajectory.json`), when there is one.
        let trajectory = row.transcript.as_ref().map(|t| {
            super::run::trajectory_path(Path::new(t))
                .to_string_lossy()
                .into_owned()
        });
        for name in row
            .transcript
            .iter()
            .chain([&row.log])
            .chain(trajectory.as_ref())
        {
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
    let text = merged.summary.to_json();
    output::write_file_atomic(&out.join("summary.json"), text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", out.join("summary.json").display()))?;
    Ok(text)
}
