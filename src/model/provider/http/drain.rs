//! Reading a body to its end after the stream's end marker, so the connection goes back
//! to ureq's pool.

use std::io::{self, Read};
use std::time::Duration;

use crate::model::provider::connection::DrainBound;

/// How long the end of a body is waited for after the stream's end marker: the rest is
/// normally the chunked terminator, already on its way.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes read after the end marker: a server that goes on sending is not worth its
/// connection.
const MAX_DRAIN_BYTES: u64 = 1024 * 1024;

/// Reads the body to its end after the decoder stopped at the stream's end marker, so
/// that ureq returns the connection to its pool and the next turn reuses it (no new TCP
/// and TLS handshake). On the turn's own thread: the rest is normally already in ureq's
/// buffer or the socket's, and handing it to another thread cost more (two wake-ups and
/// two waits a turn) than reading it. Every read is bounded to end within
/// [`DRAIN_TIMEOUT`] of the start ([`DrainBound`]): a server that keeps the body open
/// costs a new connection (the read fails, the connection is closed), never a hung turn.
pub(super) fn drain<R: Read>(reader: R) {
    let _bound = DrainBound::new(DRAIN_TIMEOUT);
    let mut reader = reader.take(MAX_DRAIN_BYTES);
    let _ = io::copy(&mut reader, &mut io::sink());
    // Dropped while the bound holds: at the body's end the connection goes back to the
    // pool here, anywhere else it is closed.
    drop(reader);
}
