//! Anthropic Messages API provider (stub: being written).
