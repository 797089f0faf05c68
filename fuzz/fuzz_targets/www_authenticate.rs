//! Fuzz target `www_authenticate`: the properties are asserted in `agent::fuzzing::www_authenticate`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::www_authenticate(data));
