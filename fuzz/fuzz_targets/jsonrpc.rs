//! Fuzz target `jsonrpc`: the properties are asserted in `agent::fuzzing::jsonrpc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::jsonrpc(data));
