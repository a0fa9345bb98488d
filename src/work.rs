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
use std::iter::Peekable;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Lock a mutex whose holder may have panicked (what it guards stays whole:
/// its users leave it consistent between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Call `work` on every part, on the calling thread and
/// `rayon::current_num_threads() - 1` pool tasks; after the first error no
/// part is taken any more, and that error is returned. Parts are made as
/// they are taken: nothing is allocated per part.
pub(crate) fn share<T, F>(parts: impl Iterator<Item = T> + Send, work: F) -> Result<()>
where
    T: Send,
    F: Fn(T) -> Result<()> + Sync,
{
    // The next part, made ahead so that a pool thread can see whether it is
    // the last one (which it leaves to the calling thread), and the rest.
    let queue: Mutex<(Option<T>, Peekable<_>)> = Mutex::new((None, parts.peekable()));
    let first_error = Mutex::new(None);
    let failed = AtomicBool::new(false);
    let drain = |leave_last: bool| loop {
        if failed.load(Ordering::Relaxed) {
            return;
        }
        // (The queue's lock is released before the part is worked on.)
        let part = {
            let mut queue = lock(&queue);
            let (next, rest) = &mut *queue;
            if next.is_none() {
                *next = rest.next();
            }
            if next.is_none() || (leave_last && rest.peek().is_none()) {
                return;
            }
            next.take()
        };
        let Some(part) = part else { return };
        if let Err(e) = work(part) {
            lock(&first_error).get_or_insert(e);
            failed.store(true, Ordering::Relaxed);
        }
    };
    rayon::in_place_scope(|scope| {
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(|_| drain(true));
        }
        drain(false);
    });
    match first_error.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The parts of `n` items (`bytes` in all, item `k` being `len(k)` bytes),
/// as ranges of items, made as they are taken (guided scheduling): each
/// part about half of what is left per thread, at most `most` and at least
/// `least` bytes (or one item), so parts taken in order end small.
pub(crate) fn guided(
    n: usize,
    bytes: usize,
    len: impl Fn(usize) -> usize,
    most: usize,
    least: usize,
) -> impl Iterator<Item = Range<usize>> {
    let threads = rayon::current_num_threads();
    let (mut k, mut rest) = (0, bytes);
    std::iter::from_fn(move || {
        if k >= n {
            return None;
        }
        let start = k;
        let want = most.min(rest / (2 * threads)).max(least);
        let mut got = len(k);
        k += 1;
        while k < n && got + len(k) <= want {
            got += len(k);
            k += 1;
        }
        rest = rest.saturating_sub(got);
        Some(start..k)
    })
}
