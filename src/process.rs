//! Child processes (stub: being written).
