//! Which tasks this machine runs: `--shard I/N` (1-based) keeps the tasks whose index
//! in the file (from 0) is I-1 modulo N, so N machines cover the file exactly once.
//! `--shard auto` takes I and N from the CI engine that started the job.

/// The engines `--shard auto` knows: (index variable, total variable, whether the
/// index counts from 1). Kubernetes gives only an index; see `K8S_INDEX`.
const ENGINES: &[(&str, &str, &str, bool)] = &[
    ("GitLab", "CI_NODE_INDEX", "CI_NODE_TOTAL", true),
    ("CircleCI", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", false),
    (
        "Buildkite",
        "BUILDKITE_PARALLEL_JOB",
        "BUILDKITE_PARALLEL_JOB_COUNT",
        false,
    ),
];
/// A Kubernetes Indexed Job's pod index (from 0); the total comes from `--shards` or
/// `SHARDS_VAR`, since the Job's `completions` is not in the pod's environment.
const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
const SHARDS_VAR: &str = "AGENT_SHARDS";

/// `--shard` (and `--shards`) as (I, N), 1 ≤ I ≤ N; `None` runs every task.
pub(crate) fn resolve(
    shard: Option<&str>,
    shards: Option<usize>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(usize, usize)>, String> {
    match shard {
        None if shards.is_some() => Err("--shards only goes with --shard auto".into()),
        None => Ok(None),
        Some("auto") => from_env(shards, env).map(Some),
        Some(s) if shards.is_some() => Err(format!(
            "--shards only goes with --shard auto (--shard {s} names its total)"
        )),
        Some(s) => parse_shard(s).map(Some),
    }
}

/// Whether the task at `index` (from 0) belongs to the shard.
pub(crate) fn keeps(shard: Option<(usize, usize)>, index: usize) -> bool {
    shard.is_none_or(|(i, n)| index % n == i - 1)
}

/// `I/N` with 1 ≤ I ≤ N.
pub(crate) fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("--shard {s:?}: expected I/N with 1 <= I <= N (e.g. 2/3), or auto");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

fn from_env(
    shards: Option<usize>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(usize, usize), String> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let number = |name: &str, v: String| -> Result<usize, String> {
        v.trim()
            .parse()
            .map_err(|_| format!("--shard auto: {name}={v:?} is not a number"))
    };
    for (engine, index_var, total_var, one_based) in ENGINES {
        let (Some(index), total) = (get(index_var), get(total_var)) else {
            continue;
        };
        let Some(total) = total else {
            return Err(format!(
                "--shard auto: {engine}'s {index_var} is set but {total_var} is not"
            ));
        };
        let (index, total) = (number(index_var, index)?, number(total_var, total)?);
        let i = if *one_based { index } else { index + 1 };
        return check(
            i,
            total,
            &format!("{engine}'s {index_var}={index}, {total_var}={total}"),
        );
    }
    if let Some(index) = get(K8S_INDEX) {
        let index = number(K8S_INDEX, index)?;
        let total = match (shards, get(SHARDS_VAR)) {
            (Some(n), _) => n,
            (None, Some(v)) => number(SHARDS_VAR, v)?,
            (None, None) => {
                return Err(format!(
                    "--shard auto: {K8S_INDEX} is set (a Kubernetes Indexed Job) but not the \
                     number of shards: pass --shards N or set {SHARDS_VAR} (the Job's \
                     completions)"
                ));
            }
        };
        return check(index + 1, total, &format!("{K8S_INDEX}={index} of {total}"));
    }
    let names: Vec<String> = ENGINES
        .iter()
        .map(|(e, i, t, _)| format!("{i}/{t} ({e})"))
        .chain([format!(
            "{K8S_INDEX} with --shards or {SHARDS_VAR} (Kubernetes)"
        )])
        .collect();
    Err(format!(
        "--shard auto: no CI engine's shard variables are set; looked for {}",
        names.join(", ")
    ))
}

fn check(i: usize, n: usize, what: &str) -> Result<(usize, usize), String> {
    if n == 0 || i == 0 || i > n {
        return Err(format!("--shard auto: {what} is not a shard of 1..={n}"));
    }
    Ok((i, n))
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
