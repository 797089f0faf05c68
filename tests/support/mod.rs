//! Test support: the loopback mock Anthropic server, SSE builders and `TestEnv` (stub).

pub mod openai;
