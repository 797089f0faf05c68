//! Fuzz target `html`: the properties are asserted in `agent::fuzzing::html`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::html(data));
