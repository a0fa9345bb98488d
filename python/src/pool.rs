//! Batches in recycled buffers.
//!
//! A fresh buffer of many MiB costs a page fault per page and the kernel
//! zeroes every page before the reader writes it: a second pass over memory
//! that a gather of 256 images (37 MiB) pays on every call (measured at 15%
//! of a Dense zstd image gather, 29% of a Ragged one); a fresh Rust buffer
//! of a smaller batch is zeroed by `calloc` from the heap. So a batch of at
//! least [`MIN_POOLED`] bytes is gathered into a buffer that a previous,
//! already dropped batch used: its pages are resident, nothing is zeroed. The arrays
//! NumPy gets own the buffer through a [`Pooled`] base object, whose drop puts
//! the buffer back. The pool keeps at most [`KEEP`] buffers and [`KEEP_BYTES`]
//! bytes; arrays a user keeps alive keep their buffer out of it, so memory is
//! what the user holds plus that bound.

use pyo3::prelude::*;
use std::sync::{Mutex, PoisonError};
use zrecord::format::batch::{zeroed_words, AllocFailed};

/// Buffers smaller than this are left to the allocator (zeroing a few KiB
/// costs less than the pool's lock).
pub const MIN_POOLED: usize = 64 << 10;
/// Buffers kept for reuse.
const KEEP: usize = 4;
/// Bytes kept for reuse, at most.
const KEEP_BYTES: usize = 1 << 30;

static POOL: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());

/// A kept buffer of at least `words` words and at most twice that (the
/// smallest such; its contents are stale, not zeroed), for batches of at
/// least [`MIN_POOLED`] bytes; `None` when there is none.
pub fn take(words: usize) -> Option<Vec<u64>> {
    if words.saturating_mul(8) < MIN_POOLED {
        return None;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    let fits = |len: usize| len >= words && len / 2 <= words;
    let best = (0..pool.len()).filter(|&i| fits(pool[i].len())).min_by_key(|&i| pool[i].len())?;
    Some(pool.swap_remove(best))
}

/// A buffer of at least `words` words: a kept one, or a fresh zeroed one
/// (calloc: its pages are faulted in by the gather itself).
///
/// # Errors
/// `AllocFailed` when a fresh one cannot be allocated (sizes come from the
/// caller: an error, never an abort).
pub fn take_or_new(words: usize) -> Result<Vec<u64>, AllocFailed> {
    match take(words) {
        Some(kept) => Ok(kept),
        None => zeroed_words(words),
    }
}

/// Return a buffer for reuse (dropping the smallest while the pool holds
/// more than [`KEEP`] buffers or [`KEEP_BYTES`] bytes).
pub fn give(words: Vec<u64>) {
    if words.len().saturating_mul(8) < MIN_POOLED {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    pool.push(words);
    let mut dropped = Vec::new();
    while pool.len() > KEEP || pool.iter().map(|w| w.len() * 8).sum::<usize>() > KEEP_BYTES {
        let smallest = (0..pool.len()).min_by_key(|&i| pool[i].len()).unwrap_or(0);
        dropped.push(pool.swap_remove(smallest));
    }
    drop(pool);
    drop(dropped); // freed outside the lock
}

/// Owns a buffer while NumPy arrays view it; gives it back to the pool on drop.
#[pyclass(frozen, module = "zrecord._native")]
pub struct Pooled {
    words: Vec<u64>,
}

impl Drop for Pooled {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.words));
    }
}

/// `words` in a [`Pooled`] owner, and the address of its first byte (the
/// heap buffer does not move with the `Vec`, and nothing touches it again
/// until the owner's drop).
pub fn owner(py: Python<'_>, mut words: Vec<u64>) -> PyResult<(Bound<'_, Pooled>, *mut u8)> {
    let ptr = words.as_mut_ptr().cast::<u8>();
    Ok((Bound::new(py, Pooled { words })?, ptr))
}
