//! A run's lifecycle: the loop, what it calls at fixed points (CI events, budgets,
//! `--verify`), the context window, structured output, and the ways out.

pub(crate) mod agent;
pub(crate) mod ask;
pub(crate) mod budget;
pub(crate) mod ci;
pub(crate) mod client_files;
pub(crate) mod compaction;
pub(crate) mod context;
pub(crate) mod event;
pub(crate) mod events;
pub(crate) mod finish;
pub(crate) mod signals;
pub(crate) mod structured;
pub(crate) mod telemetry;
pub(crate) mod verify;
