//! `--client-files`: the file tools' text through the process that drives the run (`agent
//! acp`, for its editor's buffers). A request is one line on stdout among the `--jsonl`
//! events, `{"type":"file.read","id":…,"path":…}` or `{"type":"file.write","id":…,
//! "path":…,"content":…}`, and its answer one line on stdin naming the id,
//! `{"type":"file.result","id":…,"content":…}` or `{"type":"file.error","id":…,
//! "message":…}`, read by the same thread as the permission answers (`run::ask`). The
//! parent bounds the wait (`agent acp --acp-fs-timeout`) and always answers; stdin's end
//! fails every request still waiting.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::run::ask::{Waiting, stdin_answers};
use crate::tools::files::ClientFs;
use crate::util::sync::Locked;

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

/// The client's file system as the run sees it: requests on stdout, answers on stdin.
pub(crate) struct StdinFiles {
    next: AtomicU64,
    waiting: Arc<Mutex<Waiting>>,
}

impl StdinFiles {
    pub(crate) fn start() -> StdinFiles {
        StdinFiles {
            next: AtomicU64::new(1),
            waiting: stdin_answers(),
        }
    }

    fn ask(&self, request: impl FnOnce(String) -> FileRequest) -> Result<FileAnswer, String> {
        let id = format!("file_{}", self.next.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = channel();
        {
            let mut w = self.waiting.locked();
            if w.closed {
                return Err("stdin, where the client's answer comes from, has ended".into());
            }
            w.files.insert(id.clone(), tx);
        }
        let line = serde_json::to_string(&request(id.clone())).map_err(|e| e.to_string())?;
        // Not redacted: a write's content is the file's own text (a secret in it stays in
        // the file, as a disk write keeps it); the model's view of it is redacted.
        if !crate::util::output::print_stdout(&line) {
            self.waiting.locked().files.remove(&id);
            return Err("the request could not be written to stdout".into());
        }
        rx.recv()
            .map_err(|_| "no answer came: stdin, where it comes from, ended".to_string())
    }
}

fn utf8_path(path: &Path) -> Result<String, String> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| "the path is not UTF-8, and the client takes UTF-8 paths".to_string())
}

impl ClientFs for StdinFiles {
    fn read_text(&self, path: &Path) -> Result<String, String> {
        let path = utf8_path(path)?;
        match self.ask(|id| FileRequest::Read { id, path })? {
            FileAnswer::Done {
                content: Some(c), ..
            } => Ok(c),
            FileAnswer::Done { content: None, .. } => Err("the answer had no content".into()),
            FileAnswer::Failed { message, .. } => Err(message),
        }
    }

    fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        let path = utf8_path(path)?;
        let content = content.to_string();
        match self.ask(|id| FileRequest::Write { id, path, content })? {
            FileAnswer::Done { .. } => Ok(()),
            FileAnswer::Failed { message, .. } => Err(message),
        }
    }
}

#[cfg(test)]
#[path = "client_files_tests.rs"]
mod tests;
