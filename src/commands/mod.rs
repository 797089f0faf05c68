//! One module per subcommand: `agent run`, `agent tools`, `agent summary`, `agent batch`,
//! `agent github`, `agent gitlab` (the last two on the conversation core in `forge`),
//! `agent skills`, `agent export`.

pub(crate) mod batch;
pub(crate) mod export;
pub(crate) mod forge;
pub(crate) mod github;
pub(crate) mod gitlab;
pub(crate) mod run;
pub(crate) mod skills;
pub(crate) mod summary;
pub(crate) mod tools;
