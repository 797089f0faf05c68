//! The JSON-RPC 2.0 side of `agent acp`: newline-delimited messages on stdout written by
//! one thread from a bounded queue, the error codes ACP uses, and the requests agent sends
//! the client (`session/request_permission`, `fs/read_text_file`, `fs/write_text_file`)
//! with their answers routed back by id.
//!
//! The queue is bounded in messages so that a client that stops reading cannot make agent
//! grow without bound: producers wait (the prompt's run waits on its own stdout in turn).
//! Once stdout is gone (the client closed it), every later message is dropped, so nothing
//! ever waits on a reader that will not come back.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::util::sync::Locked;

/// The ACP version spoken: the stable v1 schema that `@agentclientprotocol/sdk` 2.x and
/// `agent-client-protocol` 0.12 (Python) speak by default.
pub(crate) const PROTOCOL_VERSION: u64 = 1;

/// The longest line read from the client (a prompt with embedded files fits easily).
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Messages waiting for stdout at most (each is one JSON line).
const QUEUE_MESSAGES: usize = 256;

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
pub(crate) const AUTH_REQUIRED: i64 = -32000;
pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;

/// A JSON-RPC error to answer a request with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }
    pub(crate) fn params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }
}

/// What the client answered to one of agent's requests: its `result`, or its `error`.
pub(crate) type Answer = Result<Value, Value>;

/// The way out to the client; cheap to clone, shared by every thread.
#[derive(Clone)]
pub(crate) struct Out {
    tx: SyncSender<String>,
    next_id: Arc<AtomicU64>,
    pending: Arc<Mutex<HashMap<u64, std::sync::mpsc::Sender<Answer>>>>,
}

impl Out {
    /// The queue and the thread that writes it to `sink` (stdout), one line a message.
    pub(crate) fn start(
        mut sink: Box<dyn Write + Send>,
    ) -> std::io::Result<(Out, std::thread::JoinHandle<()>)> {
        let (tx, rx): (SyncSender<String>, Receiver<String>) = sync_channel(QUEUE_MESSAGES);
        // Stdout failed: the client is gone, and what is left is dropped.
        let c = Arc::new(AtomicBool::new(false));
        let writer = std::thread::Builder::new()
            .name("acp-writer".into())
            .spawn(move || {
                for line in rx {
                    if c.load(Ordering::SeqCst) {
                        continue; // drained, so that no producer waits on a gone reader
                    }
                    let ok = sink
                        .write_all(line.as_bytes())
                        .and_then(|()| sink.write_all(b"\n"))
                        .and_then(|()| sink.flush());
                    if ok.is_err() {
                        c.store(true, Ordering::SeqCst);
                    }
                }
            })?;
        Ok((
            Out {
                tx,
                next_id: Arc::new(AtomicU64::new(0)),
                pending: Arc::default(),
            },
            writer,
        ))
    }

    fn send(&self, msg: &Value) {
        // Secrets never leave in a message (the run's known values, as on every output).
        let line = crate::util::output::redact(&msg.to_string());
        let _ = self.tx.send(line);
    }

    pub(crate) fn result(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    pub(crate) fn error(&self, id: &Value, e: &RpcError) {
        self.send(&json!({"jsonrpc": "2.0", "id": id,
                          "error": {"code": e.code, "message": e.message}}));
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request to the client; its answer comes on the receiver (`route`).
    pub(crate) fn request(&self, method: &str, params: Value) -> (u64, Receiver<Answer>) {
        self.request_as(method, params, true)
    }

    /// `request` without redaction: `fs/write_text_file`, whose content is the file's own
    /// text (a secret in the file stays in it, as a disk write keeps it; decision 0105).
    pub(crate) fn request_verbatim(&self, method: &str, params: Value) -> (u64, Receiver<Answer>) {
        self.request_as(method, params, false)
    }

    fn request_as(&self, method: &str, params: Value, redact: bool) -> (u64, Receiver<Answer>) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = channel();
        self.pending.locked().insert(id, tx);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if redact {
            self.send(&msg);
        } else {
            let _ = self.tx.send(msg.to_string());
        }
        (id, rx)
    }

    /// Forgets a request nobody waits for any more (its answer, if it comes, is ignored).
    pub(crate) fn forget(&self, id: u64) {
        self.pending.locked().remove(&id);
    }

    /// Hands a response from the client to the request it answers. False: it answers
    /// no request agent is waiting on.
    pub(crate) fn route(&self, msg: &Value) -> bool {
        let Some(id) = msg.get("id").and_then(Value::as_u64) else {
            return false;
        };
        let Some(tx) = self.pending.locked().remove(&id) else {
            return false;
        };
        let answer = match msg.get("error") {
            Some(e) => Err(e.clone()),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(answer);
        true
    }
}
