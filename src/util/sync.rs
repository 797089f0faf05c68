//! The one way the crate takes a lock: poisoning is ignored.
//!
//! A panic while a lock is held is caught (tool panics become error results), and every
//! guarded value here stays consistent between statements, so a poisoned lock's data is
//! still the best there is: the way out must still write the transcript.

use std::sync::{LockResult, Mutex, MutexGuard};

/// `.locked()`: the guard, whether or not a panic poisoned the mutex.
pub(crate) trait Locked<T: ?Sized> {
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unpoisoned()
    }
}

/// `.unpoisoned()`: what a lock operation gives (a condvar wait, `Mutex::into_inner`),
/// whether or not a panic poisoned it.
pub(crate) trait Unpoisoned<G> {
    fn unpoisoned(self) -> G;
}

impl<G> Unpoisoned<G> for LockResult<G> {
    fn unpoisoned(self) -> G {
        self.unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
