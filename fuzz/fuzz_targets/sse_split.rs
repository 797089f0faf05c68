//! Fuzz target `sse_split`: the properties are asserted in `agent::fuzzing::sse_split`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::sse_split(data));
