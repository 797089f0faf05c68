//! Fuzz target `jwt`: the properties are asserted in `agent::fuzzing::jwt`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::jwt(data));
