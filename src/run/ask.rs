//! `--permission-prompt stdin`: a call an `ask` rule leaves to a person is announced as a
//! `permission.requested` event (the `--jsonl` stream) and waits for one JSON line on stdin
//! naming it, `{"id": …, "decision": "allow"|"deny", "message": …}`. Calls of a parallel
//! batch may wait at once: one reader thread hands each answer to the call it names. `agent
//! acp` drives its runs this way; an orchestrator reading `--jsonl` can too. The same
//! reader hands `--client-files` answers (`file.result`, `file.error`, with a `type`) to
//! the file request waiting for them (`StdinFiles`, the `--client-files` requester; the
//! lines are `run::client_files`').

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::run::client_files::{FileAnswer, FileRequest};
use crate::run::event::{PermissionRequested, RunEvent};
use crate::run::events::Events;
use crate::tools::files::ClientFs;
use crate::tools::gate::{Asker, Denial, GateCall};
use crate::util::output;
use crate::util::sync::Locked;

/// The longest answer line read (a line longer than this is refused and skipped): a
/// file's text from the client fits (the client's own messages are capped at 16 MiB).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// One answer line.
#[derive(Debug, Deserialize)]
pub(crate) struct Answer {
    pub id: String,
    pub decision: Decision,
    /// Said to the model with a denial.
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Decision {
    Allow,
    Deny,
}

#[derive(Default)]
struct Waiting {
    calls: HashMap<String, Sender<Answer>>,
    /// `--client-files` requests by id.
    files: HashMap<String, Sender<FileAnswer>>,
    /// Stdin ended: no answer will come.
    closed: bool,
}

/// The asker of `--permission-prompt stdin`.
pub(crate) struct StdinAsker {
    events: Arc<Events>,
    waiting: Arc<Mutex<Waiting>>,
}

impl StdinAsker {
    /// The asker, answered by the process's stdin reader (`stdin_answers`).
    pub(crate) fn start(events: Arc<Events>) -> Arc<StdinAsker> {
        Arc::new(StdinAsker {
            events,
            waiting: stdin_answers(),
        })
    }
}

/// The answers that come on stdin, read by one thread started at the first call (the
/// permission asker and the client's files share it).
fn stdin_answers() -> Arc<Mutex<Waiting>> {
    static WAITING: std::sync::OnceLock<Arc<Mutex<Waiting>>> = std::sync::OnceLock::new();
    WAITING
        .get_or_init(|| {
            let waiting = Arc::new(Mutex::new(Waiting::default()));
            let w = waiting.clone();
            let _ = std::thread::Builder::new()
                .name("stdin-answers".into())
                .spawn(move || read_answers(std::io::stdin().lock(), &w));
            waiting
        })
        .clone()
}

/// Reads answer lines until stdin ends, handing each to the call it names.
fn read_answers(mut input: impl BufRead, waiting: &Mutex<Waiting>) {
    use crate::util::text::{LineRead, read_line_capped};
    let mut line = Vec::new();
    loop {
        match read_line_capped(&mut input, &mut line, MAX_ANSWER_BYTES) {
            Ok(LineRead::End) | Err(_) => break,
            Ok(LineRead::TooLong) => {
                output::warn(&format!(
                    "--permission-prompt: an answer line longer than {MAX_ANSWER_BYTES} bytes was skipped"
                ));
                continue;
            }
            Ok(LineRead::Line) => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if is_file_answer(&line) {
            match serde_json::from_slice::<FileAnswer>(&line) {
                Ok(a) => match waiting.locked().files.remove(a.id()) {
                    Some(tx) => {
                        let _ = tx.send(a);
                    }
                    None => output::warn(&format!(
                        "--client-files: an answer for {:?}, which is not waiting",
                        a.id()
                    )),
                },
                Err(e) => output::warn(&format!("--client-files: not a file answer ({e})")),
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        match parse_answer(&text) {
            Ok(a) => match waiting.locked().calls.remove(&a.id) {
                Some(tx) => {
                    let _ = tx.send(a);
                }
                None => output::warn(&format!(
                    "--permission-prompt: an answer for {:?}, which is not waiting",
                    a.id
                )),
            },
            Err(e) => output::warn(&format!("--permission-prompt: {e}")),
        }
    }
    let mut w = waiting.locked();
    w.closed = true;
    // Dropping the senders denies every call still waiting, and fails every file request.
    w.calls.clear();
    w.files.clear();
}

/// Whether a line is a file answer: it has a `type` (a permission answer has none).
fn is_file_answer(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Tagged {
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    serde_json::from_slice::<Tagged>(line).is_ok_and(|t| t.kind.is_some())
}

/// One answer line, or what is wrong with it.
fn parse_answer(text: &str) -> Result<Answer, String> {
    serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "not an answer ({e}); expected {{\"id\": TOOL_USE_ID, \"decision\": \"allow\"|\"deny\"}}"
        )
    })
}

impl Asker for StdinAsker {
    fn ask(&self, call: &GateCall<'_>, why: &str) -> Result<(), Denial> {
        let (tx, rx) = channel();
        {
            let mut w = self.waiting.locked();
            if w.closed {
                return Err(Denial {
                    reason: format!(
                        "denied: the call needs a person's approval ({why}) and stdin, where \
                         the answer comes from, has ended"
                    ),
                });
            }
            w.calls.insert(call.id.to_string(), tx);
        }
        self.events
            .emit(RunEvent::PermissionRequested(PermissionRequested {
                id: call.id.to_string(),
                name: call.tool.name().to_string(),
                input: call.input.clone(),
                reason: why.to_string(),
            }));
        match rx.recv() {
            Ok(Answer {
                decision: Decision::Allow,
                ..
            }) => Ok(()),
            Ok(Answer { message, .. }) => Err(Denial {
                reason: match message {
                    Some(m) if !m.trim().is_empty() => format!("denied by the user: {m}"),
                    _ => format!("denied by the user ({why})"),
                },
            }),
            Err(_) => Err(Denial {
                reason: format!("denied: no answer came ({why}); stdin ended"),
            }),
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
#[path = "ask_tests.rs"]
mod tests;
