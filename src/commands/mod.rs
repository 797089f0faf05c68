//! One module per subcommand: `agent run`, `agent tools`, `agent summary`, `agent batch`.

pub(crate) mod batch;
pub(crate) mod run;
pub(crate) mod summary;
pub(crate) mod tools;
