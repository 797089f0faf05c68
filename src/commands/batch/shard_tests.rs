//! Unit tests of `shard.rs`.

use super::*;
use std::collections::HashMap;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn explicit_shards() {
    let none = env(&[]);
    assert_eq!(resolve(Some("2/3"), None, &none), Ok(Some((2, 3))));
    assert_eq!(resolve(None, None, &none), Ok(None));
    for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
        assert!(resolve(Some(bad), None, &none).is_err(), "{bad}");
    }
    assert!(resolve(Some("1/2"), Some(2), &none).is_err());
    assert!(resolve(None, Some(2), &none).is_err());
}

#[test]
fn each_engine_s_variables() {
    let auto = |vars: &[(&str, &str)], shards| resolve(Some("auto"), shards, &env(vars));
    // GitLab counts from 1, the others from 0.
    assert_eq!(
        auto(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "4")], None),
        Ok(Some((2, 4)))
    );
    assert_eq!(
        auto(
            &[("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "3")],
            None
        ),
        Ok(Some((1, 3)))
    );
    assert_eq!(
        auto(
            &[
                ("BUILDKITE_PARALLEL_JOB", "4"),
                ("BUILDKITE_PARALLEL_JOB_COUNT", "5")
            ],
            None
        ),
        Ok(Some((5, 5)))
    );
    assert_eq!(
        auto(&[("JOB_COMPLETION_INDEX", "1")], Some(3)),
        Ok(Some((2, 3)))
    );
    assert_eq!(
        auto(
            &[("JOB_COMPLETION_INDEX", "0"), ("AGENT_SHARDS", "2")],
            None
        ),
        Ok(Some((1, 2)))
    );
}

#[test]
fn auto_errors_name_the_variables() {
    let e = resolve(Some("auto"), None, &env(&[])).unwrap_err();
    for var in [
        "CI_NODE_INDEX",
        "CI_NODE_TOTAL",
        "CIRCLE_NODE_INDEX",
        "BUILDKITE_PARALLEL_JOB",
        "JOB_COMPLETION_INDEX",
        "AGENT_SHARDS",
    ] {
        assert!(e.contains(var), "{var}: {e}");
    }
    let e = resolve(Some("auto"), None, &env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap_err();
    assert!(e.contains("--shards") && e.contains("AGENT_SHARDS"), "{e}");
    let e = resolve(Some("auto"), None, &env(&[("CI_NODE_INDEX", "1")])).unwrap_err();
    assert!(e.contains("CI_NODE_TOTAL"), "{e}");
    // GitLab's index is 1-based: 0 is out of range.
    let e = resolve(
        Some("auto"),
        None,
        &env(&[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "2")]),
    )
    .unwrap_err();
    assert!(e.contains("not a shard"), "{e}");
    let e = resolve(
        Some("auto"),
        None,
        &env(&[("CIRCLE_NODE_INDEX", "x"), ("CIRCLE_NODE_TOTAL", "2")]),
    )
    .unwrap_err();
    assert!(e.contains("not a number"), "{e}");
}

#[test]
fn shards_cover_every_task_once() {
    for n in 1..=5 {
        for index in 0..17 {
            let owners = (1..=n).filter(|&i| keeps(Some((i, n)), index)).count();
            assert_eq!(owners, 1, "task {index} of {n} shards");
        }
    }
}
