//! Fuzz target `settings`: the properties are asserted in `agent::fuzzing::settings`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::settings(data));
