//! Fuzz target `aws_credentials`: the properties are asserted in `agent::fuzzing::aws_credentials`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::aws_credentials(data));
