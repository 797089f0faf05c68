//! Fuzz target `anthropic_turn`: the properties are asserted in `agent::fuzzing::anthropic_turn`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::anthropic_turn(data));
