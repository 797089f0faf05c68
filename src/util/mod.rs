//! Utilities every layer may use: the stdout/stderr writers and secret redaction.

pub(crate) mod duration;
pub(crate) mod jwt;
pub(crate) mod output;
pub(crate) mod secrets;
pub(crate) mod sync;
pub(crate) mod text;
