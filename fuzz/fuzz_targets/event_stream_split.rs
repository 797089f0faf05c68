//! Fuzz target `event_stream_split`: the properties are asserted in `agent::fuzzing::event_stream_split`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent::fuzzing::event_stream_split(data));
