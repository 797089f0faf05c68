//! `summary.json` as one owned type, `BatchSummary`: what `agent batch` and `agent batch
//! merge` write and what `merge` and `report` read back (no `serde_json::Value` indexing).
//! Fields are only ever added within `BATCH_SUMMARY_VERSION`; a field an older summary
//! lacks reads as its default (only `tasks` is required: the rows are the summary), so a
//! summary written by an earlier release still merges and reports.
//! `docs/reference/batch-summary.schema.json` is generated from these types.
//!
//! The text is written with its keys sorted (`to_json`): every release wrote
//! `summary.json` through `serde_json::Value`, whose map sorts its keys, and the goldens
//! hold that order byte for byte.

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TaskOutcome;
use crate::model::protocol::Usage;

/// The whole `summary.json` of a batch (or of a merge of batches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct BatchSummary {
    #[serde(default)]
    pub version: u32,
    /// The tasks file as it was named on the command line.
    #[serde(default)]
    pub tasks_file: Option<String>,
    /// Its SHA-256 (lowercase hex); none in a summary of an older agent.
    #[serde(default)]
    pub tasks_sha256: Option<String>,
    /// `--shard I/N` of the batch that wrote it; null in a merge.
    #[serde(default)]
    pub shard: Option<ShardOf>,
    /// Only in a merge: where its rows came from and the shards it joined.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeInfo>,
    /// `--parallel`; not in a merge (the shards may have differed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<usize>,
    #[serde(default = "one")]
    pub repeat: usize,
    #[serde(flatten)]
    pub totals: Totals,
    /// The batch's wall time; a merge's is its longest shard's (null when none said).
    #[serde(default)]
    pub wall_time_ms: Option<u64>,
    /// One row per run, in the tasks file's order (repeats together).
    pub tasks: Vec<TaskOutcome>,
}

fn one() -> usize {
    1
}

/// `--shard I/N`: this summary's shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ShardOf {
    pub index: usize,
    pub count: usize,
}

/// What a merged summary adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct MergeInfo {
    /// The directories merged, as given.
    pub merged_from: Vec<String>,
    /// The shards joined (null when the directories were not shards).
    #[serde(default)]
    pub shards: Option<MergedShards>,
}

/// The shards of one batch that a merge joined: all `count` of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct MergedShards {
    pub count: usize,
    pub merged: Vec<usize>,
}

/// The fields summed over the rows (`stats::totals`; also in the report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct Totals {
    pub total: usize,
    pub succeeded: usize,
    pub all_succeeded: bool,
    /// Rows `--resume` found finished and did not run again.
    pub skipped: usize,
    /// Rows per status.
    pub status_counts: BTreeMap<String, usize>,
    pub usage: Usage,
    /// Null when no row has a price.
    pub cost_usd: Option<f64>,
    pub cost_unknown_tasks: usize,
    /// Per task, in order of first appearance: runs that ran, and passes among them.
    pub per_task: Vec<TaskPasses>,
    /// pass@k for each k up to the most runs of a task (unbiased estimator).
    #[serde(deserialize_with = "pass_at_keys")]
    pub pass_at: BTreeMap<usize, f64>,
}

/// `pass_at`'s keys are numbers written as strings. Read through `#[serde(flatten)]`,
/// serde hands the map over already parsed, where a string does not become a number by
/// itself (serde-rs/serde#1183): parse them here.
fn pass_at_keys<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<usize, f64>, D::Error> {
    BTreeMap::<String, f64>::deserialize(d)?
        .into_iter()
        .map(|(k, p)| match k.parse() {
            Ok(k) => Ok((k, p)),
            Err(_) => Err(serde::de::Error::custom(format!(
                "pass_at: {k:?} is not a number of runs"
            ))),
        })
        .collect()
}

/// One task's runs and passes (over its `--repeat` runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct TaskPasses {
    pub id: String,
    pub runs: usize,
    pub passes: usize,
}

impl BatchSummary {
    /// The file's text: pretty, keys sorted (see the module's note).
    pub(crate) fn to_json(&self) -> String {
        sorted_pretty(self)
    }

    /// `dir`'s `summary.json`; `hint` says what `dir` should have been when there is none.
    pub(crate) fn read(dir: &Path, hint: &str) -> Result<BatchSummary, String> {
        let path = dir.join("summary.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} ({hint})", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a batch summary: {e}", path.display()))
    }
}

/// `v` as pretty JSON with every object's keys sorted, as `serde_json::Value` (without
/// `preserve_order`) writes them: the order summary.json and the report always had.
pub(crate) fn sorted_pretty<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_default()
}

/// The JSON Schema of `summary.json` (`docs/reference/batch-summary.schema.json`).
#[cfg(test)]
pub(crate) fn summary_schema() -> String {
    crate::record::transcript::schema_text::<BatchSummary>()
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
