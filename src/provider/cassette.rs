//! Cassette record and replay (stub: being written).
