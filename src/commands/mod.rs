//! One module per subcommand: `agent run`, `agent tools`, `agent summary`, `agent batch`, `agent github`,
//! `agent skills`.

pub(crate) mod batch;
pub(crate) mod github;
pub(crate) mod run;
pub(crate) mod skills;
pub(crate) mod summary;
pub(crate) mod tools;
