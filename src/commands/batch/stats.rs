//! The numbers of `summary.json` and of `agent batch report`: totals, status counts,
//! per-task passes and runs, pass@k, and nearest-rank medians and 90th percentiles.
//!
//! pass@k is the unbiased estimator of Chen et al. (2021, "Evaluating Large Language
//! Models Trained on Code"): for a task run n times with c successes, the chance that at
//! least one of k runs drawn without replacement succeeds is 1 - C(n-c, k) / C(n, k);
//! the batch's pass@k is its mean over the tasks with at least k runs. A run counts when
//! it ran (any status but `not_run`); `success` is a pass.

use std::collections::BTreeMap;
use std::time::Duration;

use super::summary::{BatchSummary, ShardOf, TaskPasses, Totals};
use super::{BATCH_SUMMARY_VERSION, Plan, TaskOutcome};
use crate::model::protocol::Usage;
use crate::run::budget::round_usd;

/// `summary.json` of a batch run.
pub(crate) fn batch_summary(plan: &Plan, outcomes: &[TaskOutcome], wall: Duration) -> BatchSummary {
    BatchSummary {
        version: BATCH_SUMMARY_VERSION,
        tasks_file: Some(plan.tasks_file.display().to_string()),
        tasks_sha256: Some(plan.tasks_sha256.clone()),
        shard: plan.shard.map(|(index, count)| ShardOf { index, count }),
        merge: None,
        parallel: Some(plan.parallel),
        repeat: plan.repeat,
        totals: totals(outcomes),
        wall_time_ms: Some(wall.as_millis() as u64),
        tasks: outcomes.to_vec(),
    }
}

/// The fields summed over the rows (shared by `batch`, `merge` and `report`).
pub(crate) fn totals(outcomes: &[TaskOutcome]) -> Totals {
    let mut status_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut cost = 0.0;
    let mut priced = 0;
    for o in outcomes {
        *status_counts.entry(o.status.clone()).or_default() += 1;
        usage.add(&o.usage);
        if let Some(c) = o.cost_usd {
            cost += c;
            priced += 1;
        }
    }
    let per_task = per_task(outcomes);
    let max_runs = per_task.iter().map(|t| t.runs).max().unwrap_or(0);
    let pass_at = (1..=max_runs)
        .filter_map(|k| pass_at_k(&per_task, k).map(|p| (k, p)))
        .collect();
    Totals {
        total: outcomes.len(),
        succeeded: outcomes.iter().filter(|o| o.status == "success").count(),
        all_succeeded: outcomes.iter().all(|o| o.status == "success"),
        skipped: outcomes.iter().filter(|o| o.skipped).count(),
        status_counts,
        usage,
        cost_usd: (priced > 0).then(|| round_usd(cost)),
        cost_unknown_tasks: outcomes.len() - priced,
        per_task,
        pass_at,
    }
}

/// Per task (in order of first appearance): runs that ran, and successes among them.
pub(crate) fn per_task(outcomes: &[TaskOutcome]) -> Vec<TaskPasses> {
    let mut out: Vec<TaskPasses> = Vec::new();
    for o in outcomes {
        let id = if o.task_id.is_empty() {
            &o.id
        } else {
            &o.task_id
        };
        let i = match out.iter().position(|t| &t.id == id) {
            Some(i) => i,
            None => {
                out.push(TaskPasses {
                    id: id.clone(),
                    runs: 0,
                    passes: 0,
                });
                out.len() - 1
            }
        };
        if o.status != "not_run" {
            out[i].runs += 1;
            out[i].passes += usize::from(o.status == "success");
        }
    }
    out
}

/// 1 - C(n-c, k) / C(n, k) for one task; `None` when it has fewer than k runs.
pub(crate) fn task_pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || n < k {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // C(n-c, k) / C(n, k) = prod over i < k of (n-c-i) / (n-i): no big binomials.
    let fail_all: f64 = (0..k)
        .map(|i| (n - c - i) as f64 / (n - i) as f64)
        .product();
    Some(1.0 - fail_all)
}

/// The mean of `task_pass_at_k` over the tasks with at least k runs.
pub(crate) fn pass_at_k(tasks: &[TaskPasses], k: usize) -> Option<f64> {
    let vals: Vec<f64> = tasks
        .iter()
        .filter_map(|t| task_pass_at_k(t.runs, t.passes, k))
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
}

/// The nearest-rank percentile (`p` in 0..=100) of `values`: an actual value, the
/// smallest one with at least p% of the values at or below it.
pub(crate) fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
