//! `NativeWriter`: a store being built.

use crate::errors::{zrecord_error, IntoPy};
use crate::fork::forked;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyReadonlyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::{Mutex, PoisonError};
use zrecord::writer::{CreateOptions, RecordRef, Writer};

/// loaderx's limit on one encoded record (shape prefix and payload).
const MAX_RECORD_LEN: usize = 1 << 31;
use zrecord::Codec;

/// A store being built; `close` publishes it. Appends release the GIL.
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeWriter {
    writer: Mutex<Option<Writer>>,
    name: String,
    pid: u32,
}

impl NativeWriter {
    /// Run `f` on the open writer, refusing a closed one and a forked child.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Writer) -> zrecord::Result<T> + Send,
    ) -> PyResult<T> {
        if std::process::id() != self.pid {
            return Err(zrecord_error(
                py,
                -13,
                format!(
                    "{}: this store was created in process {} and cannot be written from a forked \
                     child (process {}); write it in one process",
                    self.name,
                    self.pid,
                    std::process::id()
                ),
            ));
        }
        // Appends from several Python threads serialize here, without the GIL.
        let result = py.detach(|| {
            let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
            guard.as_mut().map(f)
        });
        match result {
            Some(r) => r.py_err(py),
            None => Err(PyRuntimeError::new_err("Container is closed")),
        }
    }
}

impl Drop for NativeWriter {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // The parent's writer, copied by fork: its lock and files are the
            // parent's, so the child neither unlocks nor touches them.
            if let Some(w) = self.writer.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
                std::mem::forget(w);
            }
        }
    }
}

#[pymethods]
impl NativeWriter {
    /// Create a store: `item_shape` for a Dense one, `None` for a Ragged one.
    #[staticmethod]
    #[pyo3(signature = (path, dtype, item_shape, codec, dict_bytes=None))]
    fn create(
        py: Python<'_>,
        path: String,
        dtype: String,
        item_shape: Option<Vec<u64>>,
        codec: &str,
        dict_bytes: Option<Vec<u8>>,
    ) -> PyResult<NativeWriter> {
        let codec: Codec = codec.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
        let options = CreateOptions { codec, dict: dict_bytes, ..Default::default() };
        let writer = py
            .detach(|| match &item_shape {
                Some(shape) => Writer::create_dense(&path, &dtype, shape, options),
                None => Writer::create_ragged(&path, &dtype, options),
            })
            .py_err(py)?;
        Ok(NativeWriter { writer: Mutex::new(Some(writer)), name: path, pid: std::process::id() })
    }

    /// Append Dense rows (C-order bytes, whole rows).
    fn append_dense(&self, py: Python<'_>, rows: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        let rows = rows.as_slice()?;
        self.with(py, |w| w.append(rows))
    }

    /// Append Ragged records given as NumPy arrays of `dtype`, checked here
    /// as loaderx checks them (all of them before anything is written), then
    /// written straight from the arrays' memory without the GIL.
    fn append_ragged(
        &self,
        py: Python<'_>,
        records: &Bound<'_, PyList>,
        dtype: &Bound<'_, PyArrayDescr>,
    ) -> PyResult<()> {
        let itemsize = dtype.itemsize();
        let mut keep: Vec<Bound<'_, PyUntypedArray>> = Vec::with_capacity(records.len());
        for item in records.iter() {
            let Ok(arr) = item.cast_into::<PyUntypedArray>() else {
                return Err(PyTypeError::new_err("ragged records must be numpy arrays"));
            };
            if !arr.dtype().is_equiv_to(dtype) {
                return Err(PyValueError::new_err(format!(
                    "ragged record dtype {} != store dtype {}",
                    arr.dtype().str()?,
                    dtype.str()?
                )));
            }
            let nbytes = arr.len() * itemsize;
            if nbytes == 0 {
                return Err(PyValueError::new_err(
                    "empty records are not stored — a record must be non-empty",
                ));
            }
            let encoded = 1 + 8 * arr.ndim() + nbytes;
            if encoded > MAX_RECORD_LEN {
                return Err(PyValueError::new_err(format!(
                    "encoded record of {encoded} bytes exceeds the {MAX_RECORD_LEN} byte record limit"
                )));
            }
            let arr = if arr.is_c_contiguous() {
                arr
            } else {
                // Strided views (rare) are packed once, by NumPy.
                py.import("numpy")?
                    .call_method1("ascontiguousarray", (arr,))?
                    .cast_into::<PyUntypedArray>()?
            };
            keep.push(arr);
        }
        if keep.is_empty() {
            return Err(PyValueError::new_err("append needs at least one record"));
        }
        let shapes: Vec<Vec<u64>> =
            keep.iter().map(|a| a.shape().iter().map(|&d| d as u64).collect()).collect();
        let payloads: Vec<&[u8]> = keep
            .iter()
            .map(|a| {
                let len = a.len() * itemsize;
                // SAFETY: `a` is a C-contiguous array of `len` bytes at its data
                // pointer (checked above), and `keep` holds a reference to each
                // array until this function returns, so the memory stays
                // allocated while the GIL is released. Another thread may still
                // write to the array meanwhile, which changes only which bytes
                // are written, as for any buffer shared across threads.
                #[allow(unsafe_code)]
                unsafe {
                    std::slice::from_raw_parts((*a.as_array_ptr()).fields.data as *const u8, len)
                }
            })
            .collect();
        let batch: Vec<RecordRef<'_>> =
            shapes.iter().map(Vec::as_slice).zip(payloads.iter().copied()).collect();
        self.with(py, |w| w.append_ragged(&batch))
    }

    /// Records appended so far.
    fn __len__(&self) -> usize {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map_or(0, |w| w.len() as usize)
    }

    /// Publish the store (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if forked() && std::process::id() != self.pid {
            // A child's copy of the parent's writer: never publish from here.
            return Ok(());
        }
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner).take();
        match writer {
            Some(w) => py.detach(|| w.close()).py_err(py),
            None => Ok(()),
        }
    }
}
