//! Fuzz target `shell_words`: the properties are asserted in `agent::fuzzing::shell_words`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::shell_words(data));
