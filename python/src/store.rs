//! `NativeStore`: an open store (local directory or `http(s)://` URL) and its gathers.

use crate::arrays::{ragged_out, Payload};
use crate::errors::IntoPy;
use crate::fork::ForkSafe;
use numpy::{PyArrayDescr, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use zrecord::format::batch::AllocFailed;
use zrecord::format::Verify;
use zrecord::{AlignedBytes, Geometry, RaggedBatch, Records};

/// The URL `path` names, or `None` for a local path: the core's one scheme
/// table decides (`zrecord::location`), so Python and the CLI agree.
///
/// Raises `ValueError` for a scheme no reader takes.
#[pyfunction]
pub fn store_url(path: &str) -> PyResult<Option<&str>> {
    zrecord::location::Location::parse(path)
        .map(|l| l.url())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// An open, read-only store. Gathers release the GIL.
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeStore {
    pub(crate) store: Arc<ForkSafe>,
    /// The store's dtype as NumPy's, made once.
    descr: PyOnceLock<Py<PyArrayDescr>>,
    /// Bytes of the last Ragged batch: the size a recycled buffer is taken
    /// for (a batch that needs more grows it, see `AlignedBytes::reuse`).
    last_ragged: AtomicUsize,
}

#[pymethods]
impl NativeStore {
    /// Open the store at `path` (a directory, or a URL of any scheme
    /// `zrecord::location::SCHEMES` lists); with `verify`, every record read is checked
    /// against the store's checksum sidecar (an unsealed store fails to open);
    /// `backend` (`mmap` or `pread`) for a local store.
    /// `cache` (a directory) reads a remote store through the node-local
    /// cache, holding at most `cache_limit` bytes. `cold_reads` (`auto`,
    /// `buffered` or `direct`): how a local store's batches found out of
    /// memory are read (`zrecord::ColdReads`).
    #[staticmethod]
    #[pyo3(signature = (path, verify = false, backend = "mmap", cache = None, cache_limit = None, cold_reads = "auto"))]
    fn open(
        py: Python<'_>,
        path: String,
        verify: bool,
        backend: &str,
        cache: Option<std::path::PathBuf>,
        cache_limit: Option<u64>,
        cold_reads: &str,
    ) -> PyResult<NativeStore> {
        let verify = if verify { Verify::Always } else { Verify::Off };
        let mut options = zrecord::open::Options::default().verify(verify);
        options.local.backend = backend.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
        options.local.cold_reads = cold_reads.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
        options.cache = cache_options(cache, cache_limit);
        let opened = py.detach(|| ForkSafe::open(&path, options));
        Ok(NativeStore::new(opened.py_err(py)?))
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

    /// Gather Dense records into a recycled buffer (see `pool`): an array of
    /// the store's dtype, `(len(indices), *item_shape)`, that owns it.
    fn gather_dense_pooled<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let indices = indices.as_slice()?;
        let row = self.store.info().row_bytes().unwrap_or(0) as usize;
        let nbytes = indices.len().saturating_mul(row);
        let oom = |e: AllocFailed| {
            let what = format!("a Dense batch of {} records", indices.len());
            crate::errors::to_py(py, e.error(self.store.name(), what))
        };
        let words = crate::pool::take_or_new(nbytes.div_ceil(8)).map_err(oom)?;
        let mut bytes = AlignedBytes::from_words(words);
        bytes.reuse(nbytes).map_err(oom)?;
        let store = &self.store;
        if let Err(e) = py.detach(|| store.gather_into(indices, bytes.as_mut_slice())) {
            crate::pool::give(bytes.into_words().0);
            return Err(crate::errors::to_py(py, e));
        }
        let mut shape = vec![indices.len() as u64];
        shape.extend_from_slice(self.store.item_shape().unwrap_or(&[]));
        Payload::new(py, bytes)?.view(self.descr(py)?, &shape, 0..nbytes)
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

    /// Gather Ragged records: loaderx's list of arrays, one per record, or
    /// with `packed` the `(values, offsets, shapes)` tuple (see
    /// `arrays::Payload`). Each record is written once, into a recycled
    /// buffer (see `pool`) that the returned arrays own; in the list form the
    /// records may lie apart, each compressed one where it was decoded.
    fn gather_ragged<'py>(
        &self,
        py: Python<'py>,
        indices: PyReadonlyArray1<'py, u64>,
        packed: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let indices = indices.as_slice()?;
        let hint = self.last_ragged.load(Ordering::Relaxed);
        let recycled = crate::pool::take(hint.div_ceil(8)).map(AlignedBytes::from_words);
        let mut batch = RaggedBatch::with_buffer(recycled.unwrap_or_default());
        batch.set_packed(packed);
        let store = &self.store;
        if let Err(e) = py.detach(|| store.gather_ragged_into(indices, &mut batch)) {
            crate::pool::give(batch.take_values().into_words().0);
            return Err(crate::errors::to_py(py, e));
        }
        self.last_ragged.store(batch.values().len(), Ordering::Relaxed);
        ragged_out(py, batch, self.descr(py)?, packed)
    }

    fn __repr__(&self) -> String {
        format!("NativeStore({:?}, {}, {} records)", self.store.name(), self.kind(), self.store.len())
    }
}

impl NativeStore {
    /// The reader of `store` (a store, or a dataset's column).
    pub(crate) fn new(store: ForkSafe) -> NativeStore {
        NativeStore { store: Arc::new(store), descr: PyOnceLock::new(), last_ragged: AtomicUsize::new(0) }
    }

    /// The store's dtype as NumPy's.
    pub(crate) fn descr<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyArrayDescr>> {
        let descr = self
            .descr
            .get_or_try_init(py, || PyArrayDescr::new(py, self.store.dtype().as_str()).map(Bound::unbind))?;
        Ok(descr.bind(py))
    }
}

/// The node-local cache `cache` names, holding at most `limit` bytes.
pub(crate) fn cache_options(
    cache: Option<std::path::PathBuf>,
    limit: Option<u64>,
) -> Option<zrecord::remote::cache::CacheOptions> {
    cache.map(|dir| zrecord::remote::cache::CacheOptions::new(dir).limit(limit.unwrap_or(u64::MAX)))
}

/// What the node-local caches of this process have cost and saved so far:
/// requests sent, bytes fetched, block hits and misses, bytes evicted and
/// reads served straight from the remote.
#[pyfunction]
pub fn cache_stats() -> std::collections::BTreeMap<&'static str, u64> {
    zrecord::remote::cache::stats().fields().into_iter().collect()
}
