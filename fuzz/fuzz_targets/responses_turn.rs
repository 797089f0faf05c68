//! Fuzz target `responses_turn`: the properties are asserted in `agent::fuzzing::responses_turn`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::responses_turn(data));
