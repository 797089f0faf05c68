//! What a run records: the transcript, the message history, the `-o` journal, resuming
//! from a transcript, the session id and the files changed.

pub(crate) mod changes;
pub(crate) mod history;
pub(crate) mod journal;
pub(crate) mod resume;
pub(crate) mod session;
pub(crate) mod transcript;
