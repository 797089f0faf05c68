//! `--client-files`: the file tools' text through the process that drives the run (`agent
//! acp`, for its editor's buffers). A request is one line on stdout among the `--jsonl`
//! events, `{"type":"file.read","id":…,"path":…}` or `{"type":"file.write","id":…,
//! "path":…,"content":…}`, and its answer one line on stdin naming the id,
//! `{"type":"file.result","id":…,"content":…}` or `{"type":"file.error","id":…,
//! "message":…}`, read by the same thread as the permission answers (`run::ask`, whose
//! `StdinFiles` asks). The parent bounds the wait (`agent acp --acp-fs-timeout`) and
//! always answers; stdin's end fails every request still waiting. This module holds the
//! lines' types, which the run and `agent acp` share.

use serde::{Deserialize, Serialize};

/// Whether a line of the run's stdout is a file request rather than an event: its
/// `type` read as a field (the rest skipped), as the parent reads it.
pub(crate) fn is_request(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Tagged {
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    serde_json::from_str::<Tagged>(line)
        .is_ok_and(|t| matches!(t.kind.as_deref(), Some("file.read" | "file.write")))
}

/// A request to the parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum FileRequest {
    /// The whole text of the file at `path` (absolute).
    #[serde(rename = "file.read")]
    Read { id: String, path: String },
    /// `content` as the whole text of the file at `path` (absolute).
    #[serde(rename = "file.write")]
    Write {
        id: String,
        path: String,
        content: String,
    },
}

/// The parent's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum FileAnswer {
    /// Done: a read's text (a write's answer has none).
    #[serde(rename = "file.result")]
    Done {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
    },
    /// The client refused or did not answer in time: said to the model.
    #[serde(rename = "file.error")]
    Failed { id: String, message: String },
}

impl FileAnswer {
    pub(crate) fn id(&self) -> &str {
        match self {
            FileAnswer::Done { id, .. } | FileAnswer::Failed { id, .. } => id,
        }
    }
}

#[cfg(test)]
#[path = "client_files_tests.rs"]
mod tests;
