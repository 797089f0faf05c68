//! Fuzz target `transcript`: the properties are asserted in `agent::fuzzing::transcript`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::transcript(data));
