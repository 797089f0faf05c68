//! What a run records: the run's record and its transcript, how the run ended, the
//! message history, the `-o` journal, resuming from a transcript, the session id and the
//! files changed.

pub(crate) mod atif;
pub(crate) mod changes;
pub(crate) mod history;
pub(crate) mod journal;
pub(crate) mod outcome;
// The folder's owner shares its name: callers write `record::RunRecord` (re-exported).
#[allow(clippy::module_inception)]
mod record;
pub(crate) mod resume;
pub(crate) mod session;
pub(crate) mod transcript;

pub(crate) use record::{InFlight, RunRecord, message_text, says_nothing};
#[allow(unused_imports)]
// `Transcript`: read by `agent summary`, `agent batch` and `--resume` next
pub(crate) use transcript::{
    CallMetadata, DenialRecord, SubagentRecord, TRANSCRIPT_VERSION, ToolCallRecord, Transcript,
    VerificationRecord,
};
