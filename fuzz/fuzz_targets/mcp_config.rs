//! Fuzz target `mcp_config`: the properties are asserted in `agent::fuzzing::mcp_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::mcp_config(data));
