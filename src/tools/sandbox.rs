//! Workspace confinement for file tools (stub: being written).
