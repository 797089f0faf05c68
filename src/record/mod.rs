//! What a run records: the run's record and its transcript, how the run ended, the
//! message history, the `-o` journal, resuming from a transcript, the session id and the
//! files changed.

pub(crate) mod changes;
pub(crate) mod history;
pub(crate) mod journal;
pub(crate) mod outcome;
// The folder's owner shares its name: callers write `record::RunRecord` (re-exported).
#[allow(clippy::module_inception)]
mod record;
pub(crate) mod resume;
pub(crate) mod session;

pub(crate) use record::SubagentRecord;
pub(crate) use record::{
    DenialRecord, InFlight, RunRecord, TRANSCRIPT_VERSION, ToolCallRecord, VerificationRecord,
    message_text, says_nothing,
};
