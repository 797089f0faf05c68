//! Unit tests of `fuzzing.rs`: every committed corpus input (the seeds and every input
//! that once crashed) replayed through its target on stable, so a regression fails
//! `cargo test` without the nightly toolchain.

use std::path::Path;

use super::TARGETS;

#[test]
fn every_target_replays_its_committed_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{name}: no corpus in {}", dir.display());
        for input in inputs {
            let data = std::fs::read(&input).unwrap();
            let r = std::panic::catch_unwind(|| target(&data));
            assert!(r.is_ok(), "{name}: {} fails", input.display());
        }
    }
}

#[test]
fn every_target_has_a_cargo_fuzz_target() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    for (name, _) in TARGETS {
        let file = dir.join(format!("{name}.rs"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            text.contains(&format!("fuzzing::{name}(")),
            "{}",
            file.display()
        );
    }
}
