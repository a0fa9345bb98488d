//! Sharing one gather's parts between the calling thread and the pool.
//!
//! A gather of a few hundred small records is 50-200 µs of work. Handed to
//! rayon from outside its pool (`par_iter`, `join`), the calling thread
//! sleeps while pool threads wake, split the work, and wake it again: the
//! wake-ups sit on the critical path (a Python gather of Ragged tokens
//! reached 55% of the libzstd limit that way, 64% as done here). Here the
//! calling thread starts on the first part at once, one task per other pool
//! thread joins it when that thread wakes, and every thread takes the next
//! part not yet taken, in order. The pool's threads leave the last parts to
//! the calling thread, so that it is the one still working at the end:
//! when it finished first it slept until the last part was done, and waking
//! it cost more than the part.

use crate::Result;
use std::sync::{Mutex, PoisonError};

/// Parts the pool's threads leave for the calling thread.
const LEFT_TO_CALLER: usize = 1;

/// Call `work` on every part, on the calling thread and
/// `rayon::current_num_threads() - 1` pool tasks; the first error is
/// returned (parts not yet taken by then are still done).
pub(crate) fn share<T, F>(parts: impl ExactSizeIterator<Item = T> + Send, work: F) -> Result<()>
where
    T: Send,
    F: Fn(T) -> Result<()> + Sync,
{
    let parts = Mutex::new(parts);
    let first_error = Mutex::new(None);
    let drain = |leave: usize| loop {
        // (The queue's lock is released before the part is worked on.)
        let part = {
            let mut parts = parts.lock().unwrap_or_else(PoisonError::into_inner);
            if parts.len() <= leave {
                return;
            }
            parts.next()
        };
        let Some(part) = part else { return };
        if let Err(e) = work(part) {
            first_error.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
        }
    };
    rayon::in_place_scope(|scope| {
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(|_| drain(LEFT_TO_CALLER));
        }
        drain(0);
    });
    match first_error.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
