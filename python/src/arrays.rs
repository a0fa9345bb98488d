//! Gathered batches handed to NumPy without copying the payload:
//! `PyArray1::from_vec` makes NumPy the owner of the Rust allocation, and the
//! Python side views it as the store's dtype and shape.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use zrecord::{DenseBatch, RaggedBatch};

/// `(words, nbytes)`: the batch's allocation as a `uint64` array and how many
/// of its bytes are records.
pub fn dense_out(py: Python<'_>, batch: DenseBatch) -> (Bound<'_, PyArray1<u64>>, usize) {
    let (words, len) = batch.into_bytes().into_words();
    (PyArray1::from_vec(py, words), len)
}

/// A Ragged batch for Python: `(words, nbytes, spans, dims, dim_starts)` —
/// the payload allocation (as `dense_out`), each record's byte range
/// (`(n, 2)` as a flat `[start0, end0, start1, ...]`), every record's shape
/// concatenated, and where each record's shape starts in `dims` (`n + 1`).
pub type RaggedParts<'py> = (
    Bound<'py, PyArray1<u64>>,
    usize,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
);

/// A Ragged batch's layout as flat arrays: each record's payload span
/// (start, end pairs), every shape's dimensions back to back, and where each
/// record's shape starts in them.
fn layout(batch: &RaggedBatch) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let spans = batch.spans().iter().flat_map(|s| [s.start as u64, s.end as u64]).collect();
    let mut dims = Vec::new();
    let mut starts = Vec::with_capacity(batch.len() + 1);
    starts.push(0u64);
    for i in 0..batch.len() {
        dims.extend_from_slice(batch.shape(i));
        starts.push(dims.len() as u64);
    }
    (spans, dims, starts)
}

/// [`RaggedParts`] of a batch the caller keeps (a gather buffer it reuses):
/// the payload is copied into a NumPy-allocated array (for big batches NumPy
/// hints huge pages; a fresh Rust allocation of the same size costs a page
/// fault per 4 KiB, zeroing and unmapping per call, measured at ~80% of a
/// 38 MB image batch's time), on `threads` threads, without the GIL.
pub fn ragged_copy_out<'py>(py: Python<'py>, batch: &RaggedBatch, threads: usize) -> RaggedParts<'py> {
    let (spans, dims, starts) = layout(batch);
    let src = batch.values();
    let len = src.len();
    let words = PyArray1::<u64>::zeros(py, len.div_ceil(8), false);
    {
        let mut rw = words.readwrite();
        let dst = rw.as_slice_mut().expect("a new array is contiguous");
        let dst = &mut bytemuck::cast_slice_mut::<u64, u8>(dst)[..len];
        py.detach(|| {
            if threads > 1 && len >= 4 << 20 {
                let chunk = len.div_ceil(threads);
                crate::fork::run(|| {
                    use rayon::prelude::*;
                    dst.par_chunks_mut(chunk)
                        .zip(src.par_chunks(chunk))
                        .for_each(|(d, s)| d.copy_from_slice(s));
                });
            } else {
                dst.copy_from_slice(src);
            }
        });
    }
    (words, len, PyArray1::from_vec(py, spans), PyArray1::from_vec(py, dims), PyArray1::from_vec(py, starts))
}

/// Split a Ragged batch into [`RaggedParts`].
pub fn ragged_out(py: Python<'_>, batch: RaggedBatch) -> RaggedParts<'_> {
    let (spans, dims, starts) = layout(&batch);
    let (words, len) = batch.into_values().into_words();
    (
        PyArray1::from_vec(py, words),
        len,
        PyArray1::from_vec(py, spans),
        PyArray1::from_vec(py, dims),
        PyArray1::from_vec(py, starts),
    )
}
