//! Big Dense batches in recycled buffers.
//!
//! A fresh buffer of many MiB costs a page fault per page and the kernel
//! zeroes every page before the reader writes it: a second pass over memory
//! that a gather of 256 images (37 MiB) pays on every call. So a batch of at
//! least [`MIN_POOLED`] bytes is gathered into a buffer that a previous,
//! already dropped batch used: its pages are resident, nothing is zeroed. The
//! array NumPy gets owns the buffer through a [`Pooled`] base object, whose
//! drop puts the buffer back (at most [`KEEP`] are kept).

use numpy::ndarray::ArrayView1;
use numpy::PyArray1;
use pyo3::prelude::*;
use std::sync::{Mutex, PoisonError};

/// Batches smaller than this use NumPy's allocator (its heap reuses memory).
pub const MIN_POOLED: usize = 4 << 20;
/// Buffers kept for reuse.
const KEEP: usize = 4;

static POOL: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());

/// A buffer of at least `words` words (its contents are stale, not zeroed).
pub fn take(words: usize) -> Vec<u64> {
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    let best = (0..pool.len()).filter(|&i| pool[i].len() >= words).min_by_key(|&i| pool[i].len());
    match best {
        Some(i) => pool.swap_remove(i),
        None => {
            drop(pool);
            vec![0u64; words] // calloc: pages are faulted in by the gather itself
        }
    }
}

/// Return a buffer for reuse (dropping the smallest when the pool is full).
pub fn give(words: Vec<u64>) {
    if words.len() * 8 < MIN_POOLED {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    pool.push(words);
    if pool.len() > KEEP {
        let smallest = (0..pool.len()).min_by_key(|&i| pool[i].len()).unwrap_or(0);
        let dropped = pool.swap_remove(smallest);
        drop(pool);
        drop(dropped);
    }
}

/// Owns a pooled buffer while NumPy arrays view it; gives it back on drop.
#[pyclass(frozen, module = "zrecord._native")]
pub struct Pooled {
    words: Vec<u64>,
}

impl Drop for Pooled {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.words));
    }
}

/// The first `nbytes` of `words` as a `uint8` array owned by a [`Pooled`].
pub fn into_array(py: Python<'_>, words: Vec<u64>, nbytes: usize) -> PyResult<Bound<'_, PyArray1<u8>>> {
    let owner = Bound::new(py, Pooled { words })?;
    let view = ArrayView1::from(&bytemuck::cast_slice::<u64, u8>(&owner.get().words)[..nbytes]);
    // SAFETY: `owner` becomes the array's base object, so it (and the Vec's
    // heap memory) lives as long as the array; the Vec is never resized or
    // moved out while it is alive (only its drop takes it).
    #[allow(unsafe_code)]
    let array = unsafe { PyArray1::borrow_from_array(&view, owner.clone().into_any()) };
    Ok(array)
}
