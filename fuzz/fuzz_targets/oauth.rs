//! Fuzz target `oauth`: the properties are asserted in `agent::fuzzing::oauth`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::oauth(data));
