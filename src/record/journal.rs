//! The `-o` checkpoint of a run that is still going: an append-only journal beside the
//! file (`FILE.journal`), so that a checkpoint costs what changed since the last one, not
//! a rewrite of the whole history. This file owns its format, its writer and its reader.
//!
//! The `-o` file is written whole once, at the first checkpoint (status `running`, naming
//! the journal), and again at the end, when the final transcript replaces it and the
//! journal is removed. In between, each checkpoint appends to the journal, in one write:
//!
//!     {"type":"journal","version":1,"session_id":"…"}     first line, once
//!     {"type":"message","message":{…}}                    a message that entered the history
//!     {"type":"tool_call","tool_call":{…}}                a finished (or refused) tool call
//!     {"type":"response","response":{…}}                  a billed response (`responses`)
//!     {"type":"truncate","messages":N,"tool_calls":M}     keep only the first N and M (the
//!                                                         last message was replaced)
//!     {"type":"checkpoint","transcript":{…}}              the rest of the transcript, with
//!                                                         empty messages, tool_calls and
//!                                                         responses
//!
//! A reader replays the lines up to the last complete `checkpoint` line: a SIGKILL in the
//! middle of a write leaves either a torn last line or whole lines of a checkpoint not yet
//! ended, and both are ignored, so what is read is always one checkpoint or the one
//! before. Like the rename it replaces, nothing is fsynced per turn: the page cache
//! outlives a killed process; only a power loss can lose the newest checkpoints.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::record::RunRecord;
use crate::record::history::Entry;

/// What follows the `-o` file's name to make the journal's.
pub(crate) const SUFFIX: &str = ".journal";
/// The journal format this agent writes and reads.
const VERSION: u64 = 1;
/// The start of every checkpoint line: the writer puts `type` first, so the reader finds
/// the last checkpoint without parsing the lines after it.
const CHECKPOINT_PREFIX: &str = "{\"type\":\"checkpoint\",";

/// The journal beside `output`: `FILE.journal`.
pub(crate) fn path_for(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_os_string();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// An open journal and what it already holds.
pub(crate) struct Journal {
    file: File,
    path: PathBuf,
    /// Bytes of whole checkpoints written: a failed write is cut back to this.
    len: u64,
    /// The record's messages already in the journal (shared, not copied), so a replaced
    /// one is noticed by pointer.
    messages: Vec<Arc<Entry>>,
    /// How many of the record's tool calls are in the journal.
    tool_calls: usize,
    /// How many of the record's responses are in the journal (they are only appended).
    responses: usize,
}

/// A checkpoint's bytes, made under the record's lock and written after it is released.
pub(crate) struct Pending {
    bytes: Vec<u8>,
    messages: Vec<Arc<Entry>>,
    /// How many of the journal's messages stay (the rest were replaced).
    keep: usize,
    tool_calls: usize,
    responses: usize,
}

impl Journal {
    /// Creates (or empties) the journal at `path` with its first line.
    pub(crate) fn create(path: &Path, session_id: &str) -> std::io::Result<Journal> {
        let mut file = File::create(path)?;
        let header =
            serde_json::json!({"type": "journal", "version": VERSION, "session_id": session_id});
        let line = format!("{header}\n");
        file.write_all(line.as_bytes())?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
            len: line.len() as u64,
            messages: Vec::new(),
            tool_calls: 0,
            responses: 0,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What `record` adds to the journal: its new messages, tool calls and responses
    /// (messages copied from their stored, redacted bytes; only each new call and
    /// response is serialised), and the checkpoint line. The cost is what changed, plus
    /// the rest of the transcript, whose size does not grow with the turns.
    pub(crate) fn prepare(&self, record: &RunRecord, redact: &dyn Fn(&str) -> String) -> Pending {
        let keep = self
            .messages
            .iter()
            .zip(record.messages())
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .count();
        let calls_kept = self.tool_calls.min(record.tool_calls().len());
        let new_messages = &record.messages()[keep..];
        let mut bytes = Vec::with_capacity(
            new_messages
                .iter()
                .map(|e| e.transcript_json().len() + 32)
                .sum::<usize>()
                + 4096,
        );
        if keep < self.messages.len() || calls_kept < self.tool_calls {
            let line = format!(
                "{{\"type\":\"truncate\",\"messages\":{keep},\"tool_calls\":{calls_kept}}}\n"
            );
            bytes.extend_from_slice(line.as_bytes());
        }
        for e in new_messages {
            bytes.extend_from_slice(b"{\"type\":\"message\",\"message\":");
            bytes.extend_from_slice(e.transcript_json().as_bytes());
            bytes.extend_from_slice(b"}\n");
        }
        for call in &record.tool_calls()[calls_kept..] {
            // A call record is plain data: serialising it cannot fail.
            let json = serde_json::to_string(call).unwrap_or_else(|_| "{}".to_string());
            bytes.extend_from_slice(b"{\"type\":\"tool_call\",\"tool_call\":");
            bytes.extend_from_slice(redact(&json).as_bytes());
            bytes.extend_from_slice(b"}\n");
        }
        let responses = record.responses();
        for response in &responses[self.responses.min(responses.len())..] {
            let json = serde_json::to_string(response).unwrap_or_else(|_| "{}".to_string());
            bytes.extend_from_slice(b"{\"type\":\"response\",\"response\":");
            bytes.extend_from_slice(redact(&json).as_bytes());
            bytes.extend_from_slice(b"}\n");
        }
        bytes.extend_from_slice(CHECKPOINT_PREFIX.as_bytes());
        bytes.extend_from_slice(b"\"transcript\":");
        bytes.extend_from_slice(record.to_json_head(redact).as_bytes());
        bytes.extend_from_slice(b"}\n");
        Pending {
            bytes,
            messages: new_messages.to_vec(),
            keep,
            tool_calls: record.tool_calls().len(),
            responses: responses.len(),
        }
    }

    /// Appends a prepared checkpoint in one write. On failure the file is cut back to its
    /// last whole checkpoint, and the next checkpoint carries this one's lines again.
    pub(crate) fn write(&mut self, pending: Pending) -> std::io::Result<()> {
        if let Err(e) = self.file.write_all(&pending.bytes) {
            let _ = self.file.set_len(self.len);
            let _ = self.file.seek(SeekFrom::Start(self.len));
            return Err(e);
        }
        self.len += pending.bytes.len() as u64;
        self.messages.truncate(pending.keep);
        self.messages.extend(pending.messages);
        self.tool_calls = pending.tool_calls;
        self.responses = pending.responses;
        Ok(())
    }
}

/// Whether `text` is a journal (its first line is the journal's header).
pub(crate) fn is_journal(text: &str) -> bool {
    let first = text.split('\n').next().unwrap_or_default();
    serde_json::from_str::<Value>(first).is_ok_and(|v| v["type"] == "journal")
}

/// The transcript of a journal's last complete checkpoint, or None when it holds none yet
/// (the run was killed before its first one was written). Only whole lines count (a torn
/// last line is ignored), and lines after the last checkpoint line belong to a checkpoint
/// that was not finished: ignored too.
pub(crate) fn rebuild(text: &str) -> Result<Option<Value>, String> {
    // Everything after the last newline is a line cut short by a kill.
    let whole = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    let lines: Vec<&str> = whole.split('\n').collect();
    let Some(last) = lines.iter().rposition(|l| l.starts_with(CHECKPOINT_PREFIX)) else {
        return Ok(None);
    };
    let header: Value = serde_json::from_str(lines[0])
        .map_err(|_| "not an agent journal: its first line is not JSON".to_string())?;
    if header["type"] != "journal" {
        return Err("not an agent journal: it does not start with a journal line".into());
    }
    if header["version"] != VERSION {
        return Err(format!(
            "journal version {} is not supported (this agent reads version {VERSION})",
            header["version"]
        ));
    }
    let mut messages = Vec::new();
    let mut tool_calls = Vec::new();
    let mut responses = Vec::new();
    let mut transcript = Value::Null;
    for (i, line) in lines.iter().enumerate().take(last + 1).skip(1) {
        let damaged = |what: &str| format!("the journal is damaged: line {} {what}", i + 1);
        let mut v: Value =
            serde_json::from_str(line).map_err(|e| damaged(&format!("is not JSON ({e})")))?;
        match v["type"].as_str() {
            Some("message") => messages.push(v["message"].take()),
            Some("tool_call") => tool_calls.push(v["tool_call"].take()),
            Some("response") => responses.push(v["response"].take()),
            Some("truncate") => {
                let len = |k: &str| v[k].as_u64().map(|n| n as usize);
                let (Some(m), Some(c)) = (len("messages"), len("tool_calls")) else {
                    return Err(damaged("is a truncate line without its lengths"));
                };
                messages.truncate(m);
                tool_calls.truncate(c);
            }
            Some("checkpoint") => transcript = v["transcript"].take(),
            _ => return Err(damaged("is not a journal line")),
        }
    }
    let Value::Object(mut t) = transcript else {
        return Err("the journal's last checkpoint holds no transcript".into());
    };
    t.insert("messages".into(), Value::Array(messages));
    t.insert("tool_calls".into(), Value::Array(tool_calls));
    // A journal written before responses had lines of their own holds them in its
    // checkpoint line: kept there when no response line says otherwise.
    if !responses.is_empty() {
        t.insert("responses".into(), Value::Array(responses));
    }
    Ok(Some(Value::Object(t)))
}

/// A journal read on its own (`agent summary FILE.journal`, `--resume FILE.journal`).
pub(crate) fn read(text: &str) -> Result<Value, String> {
    rebuild(text)?.ok_or_else(|| {
        "the journal holds no complete checkpoint (the run was killed before its first one): \
         read the -o file beside it"
            .to_string()
    })
}

/// What a transcript document stands for, as `follow` finds it.
pub(crate) enum Followed {
    /// The transcript: the journal's last checkpoint, or the document itself.
    Found(Value),
    /// The document is a `running` `-o` file whose journal (this path) is not there: the
    /// document is only the run's first checkpoint, written before the first turn.
    JournalMissing(Value, PathBuf),
}

/// What a transcript document stands for. An `-o` file of a run still going (or killed)
/// names its journal: the journal's last checkpoint, when the journal is there, belongs
/// to the same run and holds one; otherwise the file itself, which is the run's first
/// checkpoint (with a warning when the journal is missing). Any other document is
/// itself. `dir` is where the file is; `max_bytes` bounds the journal read.
pub(crate) fn follow(doc: Value, dir: &Path, max_bytes: u64) -> Result<Value, String> {
    match follow_journal(doc, dir, max_bytes)? {
        Followed::Found(t) => Ok(t),
        Followed::JournalMissing(doc, path) => {
            crate::util::output::warn(&format!(
                "the checkpoint's journal {} is missing: the run is shown as it was at its \
                 first checkpoint",
                path.display()
            ));
            Ok(doc)
        }
    }
}

/// `follow`, telling a missing journal apart. The journal is opened only as a regular
/// file beside the document, named by a plain file name, bounded by `max_bytes`: the
/// name comes from the file, which may be anyone's, and a FIFO, a device or a symlink
/// to one must neither block the reader nor fill its memory.
pub(crate) fn follow_journal(doc: Value, dir: &Path, max_bytes: u64) -> Result<Followed, String> {
    let Some(name) = doc.get("journal").and_then(Value::as_str) else {
        return Ok(Followed::Found(doc));
    };
    if doc["status"] != "running" {
        return Ok(Followed::Found(doc));
    }
    if !is_plain_name(name) {
        return Err(format!(
            "it names its journal {name:?}, which is not a file name: a journal is always \
             FILE{SUFFIX} beside the -o file FILE, so it is not read"
        ));
    }
    let path = dir.join(name);
    let text = match read_journal_file(&path, max_bytes) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(Followed::JournalMissing(doc, path)),
        Err(e) => return Err(format!("its journal {}: {e}", path.display())),
    };
    match rebuild(&text) {
        Ok(Some(t)) if t.get("session_id") == doc.get("session_id") => Ok(Followed::Found(t)),
        // Killed before the journal's first checkpoint, or before this run's journal
        // replaced an earlier run's: the file itself is the newest checkpoint.
        Ok(_) => Ok(Followed::Found(doc)),
        Err(e) => Err(format!("its journal {}: {e}", path.display())),
    }
}

/// A name the writer could have given: one path component, not `.` or `..`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// The journal's text, or None when there is no file at `path`. Opened without following
/// a symlink and without blocking (a FIFO opens at once, then is refused by its type);
/// the size is checked on the open file before anything is read.
fn read_journal_file(path: &Path, max_bytes: u64) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(
                "is a symbolic link: a journal is a regular file, so it is not read".into(),
            );
        }
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a special file"
        };
        return Err(format!(
            "is {what}: a journal is a regular file, so it is not read"
        ));
    }
    let too_big = |n: u64| {
        format!(
            "is {n} bytes, more than the {max_bytes} a journal read here may have: not a journal"
        )
    };
    if meta.len() > max_bytes {
        return Err(too_big(meta.len()));
    }
    // The file may grow after the check: the read is bounded too.
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
