//! Sharing one gather's (or one append's) parts between the calling thread
//! and the pool.
//!
//! A gather of a few hundred small records is 50-200 µs of work. Handed to
//! rayon from outside its pool (`par_iter`, `join`), the calling thread
//! sleeps while pool threads wake, split the work, and wake it again: the
//! wake-ups sit on the critical path (a Python gather of Ragged tokens
//! reached 55-57% of the libzstd limit that way, 63-66% this way,
//! interleaved in one process). Here the calling thread starts on the first
//! part at once, one task per other pool thread joins it when that thread
//! wakes, and every thread takes the next part not yet taken, in order.
//! Parts shrink towards the end ([`guided`]), so no thread idles long while
//! another finishes a big one (fixed counts of 147 KiB images a part left
//! one thread idle for up to 20 images). The pool's threads leave the last
//! part to the calling thread, so that it is the one still working at the
//! end: when it finished first it slept until the last part was done, and
//! waking it cost more than the part.

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

/// Where the parts of `n` items (`bytes` in all, item `k` being `len(k)`
/// bytes) start, and where the last one ends (guided scheduling): each part
/// about half of what is left per thread, at most `most` and at least
/// `least` bytes (or one item), so parts taken in order end small.
pub(crate) fn guided(
    n: usize,
    bytes: usize,
    len: impl Fn(usize) -> usize,
    most: usize,
    least: usize,
) -> Vec<usize> {
    let threads = rayon::current_num_threads();
    let mut bounds = vec![0];
    let (mut k, mut rest) = (0, bytes);
    while k < n {
        let want = most.min(rest / (2 * threads)).max(least);
        let mut got = len(k);
        k += 1;
        while k < n && got + len(k) <= want {
            got += len(k);
            k += 1;
        }
        rest = rest.saturating_sub(got);
        bounds.push(k);
    }
    bounds
}
