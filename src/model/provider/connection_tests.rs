use std::time::{Duration, Instant};

use ureq::unversioned::transport::{Buffers, LazyBuffers, NextTimeout, Transport, time};

use super::*;

/// A transport that counts its probes and keeps the timeouts its reads were given.
#[derive(Debug)]
struct Fake {
    buffers: LazyBuffers,
    probes: usize,
    reads: Vec<NextTimeout>,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            buffers: LazyBuffers::new(64, 64),
            probes: 0,
            reads: Vec::new(),
        }
    }
}

impl Transport for Fake {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }
    fn transmit_output(&mut self, _: usize, _: NextTimeout) -> Result<(), ureq::Error> {
        Ok(())
    }
    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.reads.push(timeout);
        Ok(false)
    }
    fn is_open(&mut self) -> bool {
        self.probes += 1;
        true
    }
}

fn probed() -> Probed<Fake> {
    Probed {
        inner: Fake::new(),
        used: false,
    }
}

fn idle(per_read: u64) -> NextTimeout {
    NextTimeout {
        per_read: Some(time::Duration::from_secs(per_read)),
        ..NextTimeout::default()
    }
}

#[test]
fn a_connection_is_probed_when_taken_from_the_pool_not_when_returned() {
    let mut t = probed();
    // A fresh connection's first take: probed.
    assert!(t.is_open());
    assert_eq!(t.inner.probes, 1);
    // A request and its response, then the return to the pool: not probed.
    t.transmit_output(0, idle(60)).unwrap();
    t.await_input(idle(60)).unwrap();
    assert!(t.is_open());
    assert_eq!(t.inner.probes, 1);
    // The next take: probed, and every take after it with no I/O between.
    assert!(t.is_open());
    assert!(t.is_open());
    assert_eq!(t.inner.probes, 3);
    // A write alone counts as use too.
    t.transmit_output(0, idle(60)).unwrap();
    assert!(t.is_open());
    assert_eq!(t.inner.probes, 3);
}

#[test]
fn a_closed_connection_found_at_the_take_is_not_reused() {
    #[derive(Debug)]
    struct Closed(LazyBuffers);
    impl Transport for Closed {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.0
        }
        fn transmit_output(&mut self, _: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            Ok(())
        }
        fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
            Ok(false)
        }
        fn is_open(&mut self) -> bool {
            false
        }
    }
    let mut t = Probed {
        inner: Closed(LazyBuffers::new(8, 8)),
        used: false,
    };
    t.await_input(idle(60)).unwrap();
    assert!(t.is_open(), "the return is not probed");
    assert!(!t.is_open(), "the take is, and sees the close");
}

#[test]
fn reads_under_a_drain_bound_end_by_its_deadline_and_only_then() {
    let mut t = probed();
    t.await_input(idle(600)).unwrap();
    {
        let _bound = DrainBound::new(Duration::from_secs(2));
        t.await_input(idle(600)).unwrap();
    }
    t.await_input(idle(600)).unwrap();
    let reads = &t.inner.reads;
    assert_eq!(reads[0].per_read, Some(time::Duration::from_secs(600)));
    assert_eq!(reads[2].per_read, Some(time::Duration::from_secs(600)));
    let bounded = reads[1];
    let two = time::Duration::from_secs(2);
    assert!(bounded.per_read.unwrap() <= two, "{bounded:?}");
    assert!(bounded.after <= two, "{bounded:?}");
    assert!(matches!(bounded.reason, ureq::Timeout::RecvBody));
}

#[test]
fn a_read_after_the_drain_deadline_fails_at_once_with_a_timeout() {
    let mut t = probed();
    let _bound = DrainBound::new(Duration::ZERO);
    let e = t.await_input(idle(600)).unwrap_err();
    assert!(
        matches!(e, ureq::Error::Timeout(ureq::Timeout::RecvBody)),
        "{e:?}"
    );
    assert!(t.inner.reads.is_empty(), "the transport was not read");
}

#[test]
fn a_bound_never_lengthens_a_shorter_timeout() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let short = NextTimeout {
        after: time::Duration::from_secs(1),
        reason: ureq::Timeout::Global,
        per_read: Some(time::Duration::from_secs(1)),
        per_write: None,
    };
    let b = bounded(short, deadline).unwrap();
    assert_eq!(b.after, time::Duration::from_secs(1));
    assert!(matches!(b.reason, ureq::Timeout::Global));
    assert_eq!(b.per_read, Some(time::Duration::from_secs(1)));
}
