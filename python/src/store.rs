//! `NativeStore`: an open store (local directory or `http(s)://` URL) and its gathers.

use crate::arrays::{ragged_copy_out, RaggedParts};
use crate::errors::IntoPy;
use crate::fork::ForkSafe;
use numpy::{PyArray1, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, Mutex};
use zrecord::format::Verify;
use zrecord::remote::{HttpOptions, RemoteOptions, RemoteStore};
use zrecord::{Geometry, RaggedBatch, Records};

/// Whether `path` names a remote store (HTTP or a bucket).
pub fn is_url(path: &str) -> bool {
    ["http://", "https://", "s3://", "gs://", "az://"].iter().any(|s| path.starts_with(s))
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
    /// Open the store at `path` (a directory, or an `http(s)://`, `s3://`,
    /// `gs://` or `az://` URL); with `verify`, every record read is checked
    /// against the store's checksum sidecar (an unsealed store fails to open).
    #[staticmethod]
    #[pyo3(signature = (path, verify = false))]
    fn open(py: Python<'_>, path: String, verify: bool) -> PyResult<NativeStore> {
        let verify = if verify { Verify::Always } else { Verify::Off };
        let opened = py.detach(|| -> zrecord::Result<ForkSafe> {
            if is_url(&path) {
                let options = RemoteOptions { verify, ..Default::default() };
                let store = RemoteStore::open_blocking_with(&path, options.clone(), HttpOptions::default())?;
                Ok(ForkSafe::new(Arc::new(store), Some((path.clone(), options))))
            } else {
                let options = zrecord::OpenOptions { verify, ..Default::default() };
                Ok(ForkSafe::new(Arc::new(zrecord::Store::open_with(&path, options)?), None))
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

    /// Gather Dense records into a recycled buffer (see `pool`): a `uint8`
    /// array of `len(indices) * row_bytes` bytes that owns it.
    fn gather_dense_pooled<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let indices = indices.as_slice()?;
        let row = self.store.info().row_bytes().unwrap_or(0) as usize;
        let nbytes = indices.len().saturating_mul(row);
        let mut words = crate::pool::take(nbytes.div_ceil(8));
        let store = &self.store;
        let out = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..nbytes];
        match py.detach(|| store.gather_into(indices, out)) {
            Ok(()) => crate::pool::into_array(py, words, nbytes),
            Err(e) => {
                crate::pool::give(words);
                Err(crate::errors::to_py(py, e))
            }
        }
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
