//! The connections of the HTTP agents: ureq's own, wrapped so that a pooled connection is
//! probed once per reuse instead of twice, and so that reading a body's end after the
//! stream's end marker is bounded in time (`http::drain`, on the turn's own thread).

use std::cell::Cell;
use std::time::{Duration, Instant};

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, NextTimeout, Transport, time,
};

/// The last link of the agents' connector chain (after ureq's `DefaultConnector`): wraps
/// whatever transport the chain made, plain TCP or TLS, in a [`Probed`].
#[derive(Debug)]
pub(crate) struct ProbeOnTake;

impl<In: Transport> Connector<In> for ProbeOnTake {
    type Out = Probed<In>;

    fn connect(
        &self,
        _details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| Probed { inner, used: false }))
    }
}

/// A transport whose liveness probe runs when it is taken from the pool, not also when it
/// goes back. ureq asks `is_open` at both: each probe is three syscalls on a TCP socket
/// (non-blocking on, a 1-byte read, off), six a turn. The probe at the return follows
/// the connection's own I/O at once; whatever it would find (bytes after the body, or
/// the peer's close) is still there for the probe at the take, which also covers the
/// idle time between: so the first is skipped, and a bad connection is still never reused.
#[derive(Debug)]
pub(crate) struct Probed<T> {
    inner: T,
    /// I/O happened since the last `is_open`: the next one is the return to the pool.
    used: bool,
}

impl<T: Transport> Transport for Probed<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.used = true;
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.used = true;
        let timeout = match DRAIN_DEADLINE.get() {
            Some(deadline) => bounded(timeout, deadline)?,
            None => timeout,
        };
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        if std::mem::take(&mut self.used) {
            return true; // the return to the pool: the take's probe decides
        }
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

/// `timeout` cut to end at `deadline` (a read then fails with a timeout, which closes the
/// connection instead of returning it to the pool).
fn bounded(mut timeout: NextTimeout, deadline: Instant) -> Result<NextTimeout, ureq::Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ureq::Error::Timeout(ureq::Timeout::RecvBody));
    }
    let left = time::Duration::Exact(left);
    if left < timeout.after {
        timeout.after = left;
        timeout.reason = ureq::Timeout::RecvBody;
    }
    timeout.per_read = Some(timeout.per_read.map_or(left, |p| p.min(left)));
    Ok(timeout)
}

thread_local! {
    /// While a body's end is drained on this thread: when its reads must have ended.
    static DRAIN_DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Bounds every read of this thread's connections to end within `within`, until dropped.
pub(crate) struct DrainBound(());

impl DrainBound {
    pub(crate) fn new(within: Duration) -> DrainBound {
        DRAIN_DEADLINE.set(Some(Instant::now() + within));
        DrainBound(())
    }
}

impl Drop for DrainBound {
    fn drop(&mut self) {
        DRAIN_DEADLINE.set(None);
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
