//! Fuzz target `mcp_http`: the properties are asserted in `agent::fuzzing::mcp_http`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::mcp_http(data));
