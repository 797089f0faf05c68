//! Fuzz target `sigv4`: the properties are asserted in `agent::fuzzing::sigv4`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::sigv4(data));
