//! Fuzz target `paths`: the properties are asserted in `agent::fuzzing::paths`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::paths(data));
