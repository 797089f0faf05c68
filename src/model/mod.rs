//! Talking to the model: wire types, the loop's view of a turn, and the providers.

pub(crate) mod media;
pub(crate) mod protocol;
pub(crate) mod provider;
pub(crate) mod turn;
