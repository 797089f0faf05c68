//! Fuzz target `openai_chat_turn`: the properties are asserted in `agent::fuzzing::openai_chat_turn`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::openai_chat_turn(data));
