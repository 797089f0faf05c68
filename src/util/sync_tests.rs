//! Unit tests of `sync.rs`.

use super::*;

#[test]
fn a_poisoned_lock_still_gives_its_data() {
    let m = std::sync::Arc::new(Mutex::new(1));
    let m2 = m.clone();
    let _ = std::thread::spawn(move || {
        let _g = m2.locked();
        panic!("poison it");
    })
    .join();
    assert!(m.is_poisoned());
    *m.locked() += 1;
    assert_eq!(*m.locked(), 2);
    let m = std::sync::Arc::try_unwrap(m).expect("the only owner");
    assert_eq!(m.into_inner().unpoisoned(), 2);
}
