//! Reading a body to its end after the stream's end marker, on a kept thread, so the
//! connection goes back to ureq's pool.

use std::io::{self, Read};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use crate::util::sync::Locked;

/// How long the end of a body is waited for after the stream's end marker: the rest is
/// normally the chunked terminator, already on its way.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes read after the end marker: a server that goes on sending is not worth its
/// connection.
const MAX_DRAIN_BYTES: u64 = 1024 * 1024;

/// Reads the body to its end after the decoder stopped at the stream's end marker, so
/// that ureq returns the connection to its pool and the next turn reuses it (no new TCP
/// and TLS handshake). A reader thread does it, waited for at most [`DRAIN_TIMEOUT`]: a
/// server that keeps the body open costs a new connection, never a hung turn. The thread
/// is kept for the next turn: a thread spawned per turn cost more than the drain.
pub(super) fn drain<R: io::Read + Send + 'static>(reader: R) {
    let idle = IDLE_DRAINER.locked().take();
    let Some(drainer) = idle.or_else(Drainer::spawn) else {
        return; // no thread to be had: the connection is closed instead
    };
    if drainer.jobs.send(Box::new(reader)).is_err() {
        return;
    }
    if drainer.done.recv_timeout(DRAIN_TIMEOUT).is_ok() {
        // Kept for the next turn. When another run of the process (`agent batch`) put
        // one back first, this one's thread ends as its channel closes.
        let mut slot = IDLE_DRAINER.locked();
        if slot.is_none() {
            *slot = Some(drainer);
        }
    }
    // On a timeout the thread is still reading: dropping its channel here ends it when
    // that read does, and the next turn gets a new one.
}

/// The drain thread between turns, if one is idle.
static IDLE_DRAINER: Mutex<Option<Drainer>> = Mutex::new(None);

/// A long-lived drain thread's ends: bodies in, one `()` out per body drained.
struct Drainer {
    jobs: mpsc::Sender<Box<dyn io::Read + Send>>,
    done: mpsc::Receiver<()>,
}

impl Drainer {
    /// A new drain thread, or `None` when the system has no thread to give.
    fn spawn() -> Option<Drainer> {
        let (jobs, inbox) = mpsc::channel::<Box<dyn io::Read + Send>>();
        let (finished, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("agent-drain".into())
            .spawn(move || {
                for mut reader in inbox {
                    let _ = io::copy(&mut (&mut reader).take(MAX_DRAIN_BYTES), &mut io::sink());
                    drop(reader); // the connection goes back to the pool here, or is closed
                    if finished.send(()).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Drainer { jobs, done })
    }
}
