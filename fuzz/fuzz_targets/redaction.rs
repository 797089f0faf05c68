//! Fuzz target `redaction`: the properties are asserted in `agent::fuzzing::redaction`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::redaction(data));
