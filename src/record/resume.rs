//! `--resume TRANSCRIPT` and `--continue`: the transcript file is the session. This file
//! owns reading one (a `--json` document, an `-o` file — a `running` checkpoint of a
//! killed run included, read through its journal — or the `run.finished` line of a
//! `--jsonl` capture), making its
//! history well-formed again (each unanswered `tool_use` gets an error result; the call
//! is never re-run, since its side effects are unknown), appending the new prompt, and
//! the small per-workspace index that `--continue` reads (written only for `-o` runs).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::protocol::{ContentBlock, Message, Role};
use crate::record::says_nothing;
use crate::record::transcript::{ResumedFrom, Transcript};

/// The transcript version this agent writes and resumes.
const RESUMABLE_VERSION: u64 = 1;

/// A transcript bigger than this is refused: the whole history is re-sent anyway, and a
/// file this size is not a conversation any model context holds. It bounds the journal a
/// `running` file names too: the journal holds that same history, once.
const MAX_TRANSCRIPT_BYTES: u64 = 512 * 1024 * 1024;

/// `--continue`'s index, relative to the workspace root.
pub(crate) const INDEX_PATH: &str = ".agent/sessions.json";

/// Runs remembered in the index; older ones are dropped (it only has to find the newest).
const MAX_INDEX_ENTRIES: usize = 20;

/// A transcript read for resuming.
#[derive(Debug, Clone)]
pub(crate) struct Resumed {
    /// The file, made absolute.
    pub path: PathBuf,
    pub session_id: Option<String>,
    pub num_turns: u64,
    pub status: String,
    pub model: Option<String>,
    pub workspace: Option<PathBuf>,
    /// The old run's totals, kept in `resumed_from` (the new run counts only its own).
    usage: Value,
    cost_usd: Option<f64>,
    /// The history to continue, unanswered calls answered.
    pub messages: Vec<Message>,
    /// How many unanswered calls got an error result.
    pub answered_calls: usize,
}

impl Resumed {
    /// The transcript's `resumed_from` object.
    pub(crate) fn resumed_from(&self) -> ResumedFrom {
        ResumedFrom {
            path: self.path.display().to_string(),
            session_id: self.session_id.clone(),
            num_turns: self.num_turns,
            status: self.status.clone(),
            usage: self.usage.clone(),
            cost_usd: self.cost_usd,
        }
    }
}

/// Reads `path` for `--resume`; the error says what is wrong with the file.
pub(crate) fn load(path: &Path) -> Result<Resumed, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--resume {shown}: {e}"))?;
    if meta.is_dir() {
        return Err(format!(
            "--resume {shown}: is a directory, not a transcript"
        ));
    }
    if meta.len() > MAX_TRANSCRIPT_BYTES {
        return Err(format!(
            "--resume {shown}: {} bytes is more than the {MAX_TRANSCRIPT_BYTES} a transcript may have",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("--resume {shown}: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let doc = if crate::record::journal::is_journal(&text) {
        crate::record::journal::read(&text)
    } else {
        find_transcript(&text).and_then(|doc| follow_journal(doc, dir))
    }
    .map_err(|e| format!("--resume {shown}: {e}"))?;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    from_document(abs, &doc).map_err(|e| format!("--resume {shown}: {e}"))
}

/// The transcript a `running` `-o` file stands for, through its journal. Without the
/// journal, the file is the run's first checkpoint: taken before the first turn, it holds
/// no history of this run, so resuming it would lose every turn (or fail as a history
/// without the task). A file that holds a history (a resumed run's) is resumed with a
/// warning, as `agent summary` shows it.
fn follow_journal(doc: Value, dir: &Path) -> Result<Value, String> {
    use crate::record::journal::{Followed, follow_journal};
    match follow_journal(doc, dir, MAX_TRANSCRIPT_BYTES)? {
        Followed::Found(t) => Ok(t),
        Followed::JournalMissing(doc, path) => {
            let empty = doc["messages"].as_array().is_none_or(Vec::is_empty);
            if empty {
                return Err(missing_journal(&path));
            }
            crate::util::output::warn(&format!(
                "the checkpoint's journal {} is missing: the run is resumed as it was at its \
                 first checkpoint",
                path.display()
            ));
            Ok(doc)
        }
    }
}

/// Why a `running` `-o` file without its journal cannot be resumed.
fn missing_journal(path: &Path) -> String {
    format!(
        "the run's journal {} is missing. This file is a run that was still going (or was \
         killed): it is only the run's first checkpoint, and the journal beside it holds \
         every checkpoint after the first, so it must be kept beside the transcript (e.g. \
         uploaded with it as one artifact)",
        path.display()
    )
}

/// The transcript object in a file: the document itself, a `run.finished` event, or the
/// last `run.finished` line of a `--jsonl` capture.
fn find_transcript(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Err("the file is empty".into());
    }
    if let Ok(doc) = serde_json::from_str::<Value>(text) {
        return match doc.get("type").and_then(Value::as_str) {
            Some("run.finished") => doc
                .get("transcript")
                .cloned()
                .ok_or_else(|| "the run.finished event has no transcript".to_string()),
            _ => Ok(doc),
        };
    }
    // JSON lines: a `--jsonl` capture (or something else that is not ours).
    let mut last_finished = None;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for (i, line) in lines.iter().enumerate() {
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            // A capture cut by a kill may end in half a line; anywhere else it is damage.
            Err(_) if i + 1 == lines.len() && i > 0 => break,
            Err(e) => {
                return Err(format!(
                    "not an agent transcript: line {} is not JSON ({e})",
                    i + 1
                ));
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some("header") if i == 0 && value.get("format").is_some() => {
                return Err(
                    "this is a cassette (--record), not a transcript: resume from \
                            the run's -o file or its --json / --jsonl output"
                        .into(),
                );
            }
            Some("run.finished") => last_finished = value.get("transcript").cloned(),
            Some(_) if value.get("seq").is_some() => {}
            _ => {
                return Err(format!(
                    "not an agent transcript: line {} is not a --jsonl event",
                    i + 1
                ));
            }
        }
    }
    last_finished.ok_or_else(|| {
        "the --jsonl capture has no run.finished line (was the run killed?): resume from \
         the run's -o file, which is written after every model response"
            .into()
    })
}

fn from_document(path: PathBuf, doc: &Value) -> Result<Resumed, String> {
    let Some(obj) = doc.as_object() else {
        return Err("not an agent transcript: not a JSON object".into());
    };
    match obj.get("version").and_then(Value::as_u64) {
        Some(RESUMABLE_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "transcript version {v} is not supported (this agent resumes version \
                 {RESUMABLE_VERSION})"
            ));
        }
        None => {
            return Err(
                "not an agent transcript: it has no \"version\" (expected the output of \
                 agent run --json, -o FILE or --jsonl)"
                    .into(),
            );
        }
    }
    if !obj.get("messages").is_some_and(Value::is_array) {
        return Err("not an agent transcript: it has no \"messages\" array".into());
    }
    let t = Transcript::from_value(doc)?;
    let mut messages = Vec::with_capacity(t.messages.len());
    for (i, m) in t.messages.iter().enumerate() {
        let mut msg: Message = serde_json::from_str(m.get())
            .map_err(|e| format!("message {} cannot be read: {e}", i + 1))?;
        crate::model::media::reload(&mut msg)
            .map_err(|e| format!("message {} cannot be resumed: {e}", i + 1))?;
        messages.push(msg);
    }
    if messages.first().is_none_or(|m| m.role != Role::User) {
        return Err("the transcript's messages do not start with the user's task".into());
    }
    let non_empty = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    let status = non_empty(&t.status).unwrap_or_else(|| "unknown".to_string());
    let unfinished: HashSet<String> = t
        .tool_calls
        .iter()
        .filter(|c| c.unfinished())
        .map(|c| c.id.clone())
        .collect();
    let answered_calls = answer_open_calls(&mut messages, &status, &unfinished);
    check_tool_pairing(&messages)
        .map_err(|e| format!("its history is one the API refuses: {e}"))?;
    Ok(Resumed {
        path,
        session_id: non_empty(&t.session_id),
        num_turns: u64::from(t.num_turns),
        status,
        model: non_empty(&t.model),
        workspace: non_empty(&t.workspace).map(PathBuf::from),
        // Kept as the old transcript wrote it (`resumed_from.usage`), not re-serialised.
        usage: obj.get("usage").cloned().unwrap_or(Value::Null),
        cost_usd: t.cost_usd,
        messages,
        answered_calls,
    })
}

/// The error result an unanswered call gets.
fn interrupted_result(status: &str, was_running: bool) -> String {
    let what = if status == "max_turns" {
        "the earlier run reached --max-turns before this call could run"
    } else if was_running {
        "the earlier run ended while this call was still running"
    } else {
        "the earlier run ended before this call finished (it may not have started, or \
         may have stopped part way)"
    };
    format!(
        "interrupted: {what}. It was not run again, because its effects are unknown: check \
         the current state before repeating it."
    )
}

/// Answers the `tool_use` blocks of a final assistant message with error results, and
/// drops a trailing assistant message with nothing in it (the API refuses one that is
/// not last). Returns how many calls were answered.
fn answer_open_calls(
    messages: &mut Vec<Message>,
    status: &str,
    running: &HashSet<String>,
) -> usize {
    while messages.last().is_some_and(says_nothing) {
        messages.pop();
    }
    let Some(last) = messages.last() else {
        return 0;
    };
    if last.role != Role::Assistant {
        return 0;
    }
    let content: Vec<ContentBlock> = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(ContentBlock::ToolResult {
                tool_use_id: id.clone(),
                content: interrupted_result(status, running.contains(id)).into(),
                is_error: true,
            }),
            _ => None,
        })
        .collect();
    let n = content.len();
    if n > 0 {
        messages.push(Message {
            role: Role::User,
            content,
        });
    }
    n
}

/// The API's rules for tool calls in a history, checked before anything is sent (a
/// history that breaks one is answered 400, on every retry): each `tool_use` id is used
/// once; each `tool_use`, in an assistant message, is answered in the next message, a
/// user message; each `tool_result` answers a `tool_use` of the message just before it,
/// once. Checked after the last message's calls were answered (`answer_open_calls`), so
/// only a damaged or hand-made history fails. Messages are numbered from 1.
fn check_tool_pairing(messages: &[Message]) -> Result<(), String> {
    let mut first_use: std::collections::HashMap<&str, usize> = Default::default();
    for (i, m) in messages.iter().enumerate() {
        let n = i + 1;
        let called = tool_use_ids(m);
        for id in &called {
            if m.role != Role::Assistant {
                return Err(format!(
                    "message {n} is the user's, yet holds a tool_use ({id})"
                ));
            }
            if let Some(k) = first_use.insert(id, n) {
                return Err(format!(
                    "message {n} holds a tool_use with the id {id}, which message {k} used \
                     already (ids must be unique)"
                ));
            }
        }
        let asked: HashSet<&str> = match i.checked_sub(1).map(|p| &messages[p]) {
            Some(prev) if prev.role == Role::Assistant => tool_use_ids(prev).into_iter().collect(),
            _ => HashSet::new(),
        };
        let mut answered = HashSet::new();
        for b in &m.content {
            let ContentBlock::ToolResult {
                tool_use_id: id, ..
            } = b
            else {
                continue;
            };
            if m.role != Role::User {
                return Err(format!(
                    "message {n} is the model's, yet holds a tool_result (for {id})"
                ));
            }
            if !asked.contains(id.as_str()) {
                return Err(format!(
                    "message {n} holds a tool_result for {id}, which answers no tool_use of \
                     the message before it"
                ));
            }
            if !answered.insert(id.as_str()) {
                return Err(format!("message {n} answers the tool_use {id} twice"));
            }
        }
        if i > 0
            && let Some(id) = tool_use_ids(&messages[i - 1])
                .into_iter()
                .find(|id| !answered.contains(id))
        {
            return Err(format!(
                "message {i} holds a tool_use ({id}) that message {n} does not answer"
            ));
        }
    }
    if let Some(id) = messages
        .last()
        .and_then(|m| tool_use_ids(m).first().copied())
    {
        return Err(format!(
            "message {} holds a tool_use ({id}) that no message answers",
            messages.len()
        ));
    }
    Ok(())
}

/// The ids of a message's `tool_use` blocks, in order.
fn tool_use_ids(m: &Message) -> Vec<&str> {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect()
}

/// Appends the new prompt: to the last user message (after its tool results) when the
/// history ends with one, else as a new user message. Without a prompt, a history that
/// ends with the model's answer has nothing to continue.
pub(crate) fn append_prompt(
    messages: &mut Vec<Message>,
    prompt: Option<&str>,
) -> Result<(), String> {
    let ends_with_user = messages.last().is_some_and(|m| m.role == Role::User);
    match prompt {
        Some(p) if ends_with_user => {
            if let Some(last) = messages.last_mut() {
                last.content.push(ContentBlock::Text {
                    text: p.to_string(),
                });
            }
        }
        Some(p) => messages.push(Message::user_text(p)),
        None if ends_with_user => {}
        None => {
            return Err(
                "the transcript ends with the model's answer: give a PROMPT saying \
                        how to continue"
                    .into(),
            );
        }
    }
    Ok(())
}

/// `--continue`'s index: the `-o` files of the runs in this workspace, newest last.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    version: u32,
    sessions: Vec<IndexEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct IndexEntry {
    /// The `-o` file, absolute.
    path: String,
    session_id: String,
}

/// An exclusive lock on the index's lock file (`File::lock`: `flock(LOCK_EX)` on Unix),
/// released when dropped (or when the process dies, so a killed run never leaves it held).
struct IndexLock(std::fs::File);

impl IndexLock {
    fn take(path: &Path) -> std::io::Result<Self> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        loop {
            // Blocks until the other run is done; a signal handled meanwhile is no failure.
            match f.lock() {
                Ok(()) => return Ok(IndexLock(f)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for IndexLock {
    fn drop(&mut self) {
        // Unlocked explicitly, as before, not only by the close: the lock belongs to the
        // open file, which a child forked meanwhile (before its exec) shares.
        let _ = self.0.unlock();
    }
}

/// Records an `-o` run in the workspace's index (created with its `.agent/` directory).
/// An index that cannot be read is replaced: it only serves `--continue`.
pub(crate) fn note_in_index(
    workspace: &Path,
    output: &Path,
    session_id: &str,
) -> std::io::Result<()> {
    let file = workspace.join(INDEX_PATH);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Runs in one workspace (a batch without worktrees, parallel CI steps) each read,
    // add to and replace the index: without a lock, one's entry is lost to the other.
    let _lock = IndexLock::take(&file.with_extension("lock"))?;
    let mut index: Index = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let path = std::path::absolute(output)?.display().to_string();
    index.version = 1;
    index.sessions.retain(|e| e.path != path);
    index.sessions.push(IndexEntry {
        path,
        session_id: session_id.to_string(),
    });
    let excess = index.sessions.len().saturating_sub(MAX_INDEX_ENTRIES);
    index.sessions.drain(..excess);
    let text = serde_json::to_string_pretty(&index).map_err(std::io::Error::other)?;
    crate::util::output::write_file_atomic(&file, text.as_bytes())
}

/// The newest transcript in the workspace's index that still exists, for `--continue`.
pub(crate) fn latest_in_index(workspace: &Path) -> Result<PathBuf, String> {
    let file = workspace.join(INDEX_PATH);
    let none = || {
        format!(
            "--continue: no earlier run with -o in {} (its index {} does not exist); run with \
             -o FILE first, or use --resume FILE",
            workspace.display(),
            INDEX_PATH
        )
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(none()),
        Err(e) => return Err(format!("--continue: {}: {e}", file.display())),
    };
    let index: Index = serde_json::from_str(&text)
        .map_err(|e| format!("--continue: {} is damaged ({e}); delete it", file.display()))?;
    index
        .sessions
        .iter()
        .rev()
        .map(|e| PathBuf::from(&e.path))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "--continue: none of the transcripts listed in {} exists any more",
                file.display()
            )
        })
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
