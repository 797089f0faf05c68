//! Pure, incremental SSE decoder over BufRead (stub: being written).
