//! `NativeStore`: an open store (local directory or `http(s)://` URL) and its gathers.

use crate::arrays::{dense_out, ragged_copy_out, RaggedParts};
use crate::errors::IntoPy;
use crate::fork::ForkSafe;
use numpy::{PyArray1, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, Mutex};
use zrecord::{Geometry, RaggedBatch, Records};

/// Whether `path` names a remote store.
pub fn is_url(path: &str) -> bool {
    path.starts_with("http://") || path.starts_with("https://")
}

/// An open, read-only store. Gathers release the GIL.
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeStore {
    pub(crate) store: Arc<ForkSafe>,
    /// Ragged gathers fill this batch (its buffers grow once and are reused)
    /// and copy out; a concurrent gather finds it taken and uses a fresh one.
    ragged: Mutex<RaggedBatch>,
}

#[pymethods]
impl NativeStore {
    /// Open the store at `path` (a directory, or an `http(s)://` URL).
    #[staticmethod]
    fn open(py: Python<'_>, path: String) -> PyResult<NativeStore> {
        let opened = py.detach(|| -> zrecord::Result<ForkSafe> {
            if is_url(&path) {
                let store = zrecord::remote::RemoteStore::open_blocking(&path)?;
                Ok(ForkSafe::new(Arc::new(store), Some(path.clone())))
            } else {
                Ok(ForkSafe::new(Arc::new(zrecord::Store::open(&path)?), None))
            }
        });
        Ok(NativeStore { store: Arc::new(opened.py_err(py)?), ragged: Mutex::default() })
    }

    /// The name errors give the store (its path or URL).
    #[getter]
    fn name(&self) -> &str {
        self.store.name()
    }
    /// `"dense"` or `"ragged"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.store.geometry() {
            Geometry::Dense { .. } => "dense",
            Geometry::Ragged => "ragged",
        }
    }
    /// The dtype string as stored (`"<f4"`, `"|u1"`, ...).
    #[getter]
    fn dtype(&self) -> String {
        self.store.dtype().as_str().to_string()
    }
    /// `item_shape` of a Dense store, `None` for a Ragged one.
    #[getter]
    fn item_shape(&self) -> Option<Vec<u64>> {
        self.store.item_shape().map(<[u64]>::to_vec)
    }
    /// `"raw"`, `"zstd"` or `"zstd_dict"`.
    #[getter]
    fn codec(&self) -> &'static str {
        self.store.codec().name()
    }
    /// The schema's MsgPack bytes as stored.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.store.schema_bytes())
    }
    /// `dict.zr`'s bytes, for a `zstd_dict` store.
    #[getter]
    fn dict_bytes<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.store.dict_bytes().map(|d| PyBytes::new(py, d))
    }
    fn __len__(&self) -> usize {
        self.store.len() as usize
    }

    /// Gather Dense records into a new buffer that NumPy will own: returns
    /// `(words, nbytes)`, a `uint64` array over the Rust allocation whose
    /// first `nbytes` bytes are the records.
    fn gather_dense<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(Bound<'py, PyArray1<u64>>, usize)> {
        let indices = indices.as_slice()?;
        let store = &self.store;
        let batch = py.detach(|| store.gather(indices)).py_err(py)?;
        Ok(dense_out(py, batch))
    }

    /// Gather Dense records into `out`, the caller's bytes (exactly
    /// `len(indices) * row_bytes`).
    fn gather_dense_into<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, u64>,
        mut out: PyReadwriteArray1<'py, u8>,
    ) -> PyResult<()> {
        let indices = indices.as_slice()?;
        let out = out.as_slice_mut()?;
        let store = &self.store;
        py.detach(|| store.gather_into(indices, out)).py_err(py)
    }

    /// Gather Ragged records: `(words, nbytes, spans, dims, dim_starts)`,
    /// see `arrays::RaggedParts`.
    fn gather_ragged<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<RaggedParts<'py>> {
        let indices = indices.as_slice()?;
        let store = &self.store;
        let scratch = &self.ragged;
        let batch = py
            .detach(|| {
                let mut batch = scratch.try_lock().map(|mut b| std::mem::take(&mut *b)).unwrap_or_default();
                store.gather_ragged_into(indices, &mut batch).map(|()| batch)
            })
            .py_err(py)?;
        let parts = ragged_copy_out(py, &batch, crate::fork::parallelism());
        if let Ok(mut kept) = scratch.try_lock() {
            *kept = batch;
        }
        Ok(parts)
    }

    fn __repr__(&self) -> String {
        format!("NativeStore({:?}, {}, {} records)", self.store.name(), self.kind(), self.store.len())
    }
}
