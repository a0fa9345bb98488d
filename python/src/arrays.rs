//! Gathered batches handed to NumPy without copying the payload.
//!
//! A batch's buffer goes into a [`Payload`]: a [`Pooled`] owner (whose drop
//! recycles big buffers, see `pool`) and the arrays that view it, made here
//! with the store's dtype and each record's shape. A Ragged batch becomes
//! loaderx's list of per-record arrays in one loop of NumPy C-API calls (one
//! Python object per record; the loop in Python made three and cost more
//! than decoding token frames), or the packed `(values, offsets, shapes)`.

use crate::pool::{self, Pooled};
use numpy::npyffi::{self, npy_intp, NpyTypes, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArray1, PyArrayDescr, PyArrayDescrMethods, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::ops::Range;
use zrecord::{AlignedBytes, DenseBatch, RaggedBatch};

/// Most dimensions an array can have (NumPy 2's limit; NumPy 1 refuses
/// more than 32 itself).
const MAX_DIMS: usize = 64;

/// `(words, nbytes)`: a Dense batch's allocation as a `uint64` array and how
/// many of its bytes are records (the loader's form).
pub fn dense_out(py: Python<'_>, batch: DenseBatch) -> (Bound<'_, PyArray1<u64>>, usize) {
    let (words, len) = batch.into_bytes().into_words();
    (PyArray1::from_vec(py, words), len)
}

/// A gathered buffer owned by Python, and the arrays that view it.
pub struct Payload<'py> {
    owner: Bound<'py, Pooled>,
    ptr: *mut u8,
    len: usize,
}

impl<'py> Payload<'py> {
    /// Hand `bytes` (a batch's buffer) to a new [`Pooled`] owner.
    pub fn new(py: Python<'py>, bytes: AlignedBytes) -> PyResult<Self> {
        let (words, len) = bytes.into_words();
        let (owner, ptr) = pool::owner(py, words)?;
        Ok(Payload { owner, ptr, len })
    }

    /// Bytes `range` of the payload as an array of `descr` in `shape` (C
    /// order, writable), whose base keeps the payload alive.
    ///
    /// # Errors
    /// `ValueError` when the range is outside the payload or does not hold
    /// exactly `shape` items (never for a batch the reader checked), or
    /// NumPy's error for more dimensions than it supports.
    pub fn view(
        &self,
        descr: &Bound<'py, PyArrayDescr>,
        shape: &[u64],
        range: Range<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.owner.py();
        let items = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        let fits = range.start <= range.end
            && range.end <= self.len
            && items.and_then(|n| n.checked_mul(descr.itemsize() as u64)) == Some(range.len() as u64);
        if !fits || shape.len() > MAX_DIMS {
            return Err(PyValueError::new_err(format!(
                "record bytes {range:?} of a {}-byte batch cannot hold shape {shape:?} of {} bytes per item",
                self.len,
                descr.itemsize()
            )));
        }
        let mut dims = [0 as npy_intp; MAX_DIMS];
        for (d, &s) in dims.iter_mut().zip(shape) {
            // Each dimension divides the range's length, so it fits.
            *d = s as npy_intp;
        }
        // SAFETY: `range` lies inside the payload (checked above), which the
        // `Pooled` owner keeps alive and never touches until its drop; the
        // owner becomes the array's base object, so the array never outlives
        // it. NumPy steals one reference to `descr` and one to the owner
        // (released even when setting the base fails); the array holds
        // exactly `shape` items of `descr` (checked above), and NumPy
        // computes C-order strides and the contiguity and alignment flags.
        #[allow(unsafe_code)]
        unsafe {
            let array = PY_ARRAY_API.PyArray_NewFromDescr(
                py,
                npyffi::get_type_object(py, NpyTypes::PyArray_Type),
                descr.clone().into_dtype_ptr(),
                shape.len() as std::os::raw::c_int,
                dims.as_mut_ptr(),
                std::ptr::null_mut(),
                self.ptr.add(range.start).cast(),
                NPY_ARRAY_WRITEABLE,
                std::ptr::null_mut(),
            );
            let array = Bound::from_owned_ptr_or_err(py, array)?;
            let base = self.owner.clone().into_any().into_ptr();
            if PY_ARRAY_API.PyArray_SetBaseObject(py, array.as_ptr().cast(), base) < 0 {
                return Err(PyErr::fetch(py));
            }
            Ok(array)
        }
    }
}

/// A gathered Ragged batch as loaderx's list of arrays, one per record, each
/// its own shape, or when `packed` as `(values, offsets, shapes)`: `values`
/// every record's items back to back (a view when the records are, a copy
/// when the dtype's alignment padded them), `offsets` int64 `(n + 1,)` in
/// items, `shapes` int64 `(n, max_rank)` padded with -1.
pub fn ragged_out<'py>(
    py: Python<'py>,
    mut batch: RaggedBatch,
    descr: &Bound<'py, PyArrayDescr>,
    packed: bool,
) -> PyResult<Bound<'py, PyAny>> {
    if !packed {
        let payload = Payload::new(py, batch.take_values())?;
        let arrays = (0..batch.len())
            .map(|k| payload.view(descr, batch.shape(k), batch.spans()[k].clone()))
            .collect::<PyResult<Vec<_>>>()?;
        return PyList::new(py, arrays).map(Bound::into_any);
    }
    let itemsize = descr.itemsize().max(1);
    let packed = batch.packed(itemsize);
    let items = *packed.offsets.last().unwrap_or(&0);
    let values = match packed.contiguous {
        Some(all) => Payload::new(py, batch.take_values())?.view(descr, &[items], all)?,
        None => {
            let bytes = (items as usize).saturating_mul(itemsize);
            let mut together = AlignedBytes::try_zeroed(bytes).map_err(|e| {
                crate::errors::to_py(py, e.error("ragged batch", format!("{} packed records", batch.len())))
            })?;
            batch.copy_values(together.as_mut_slice());
            Payload::new(py, together)?.view(descr, &[items], 0..items as usize * itemsize)?
        }
    };
    let offsets: Vec<i64> = packed.offsets.iter().map(|&o| o as i64).collect();
    let (rank, shapes) = (packed.rank, packed.shapes);
    let shapes = PyArray1::from_vec(py, shapes).reshape([batch.len(), rank])?;
    (values, PyArray1::from_vec(py, offsets), shapes).into_pyobject(py).map(Bound::into_any)
}
