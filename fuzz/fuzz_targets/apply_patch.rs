//! Fuzz target `apply_patch`: the properties are asserted in `agent::fuzzing::apply_patch`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::apply_patch(data));
