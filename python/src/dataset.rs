//! Datasets: `NativeDataset` (an open version and its columns, each a
//! [`NativeStore`] so every gather of stores serves it), `NativeShardWriter`
//! (a shard's columns, each a [`NativeWriter`]), `commit` and `upload_shard`.
//!
//! A shard info crosses to Python as its JSON: small, and picklable as a string.

use crate::errors::{zrecord_error, IntoPy};
use crate::fork::ForkSafe;
use crate::store::NativeStore;
use crate::writer::{NativeWriter, SharedShard};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use zrecord::dataset::writer::ColumnDef;
use zrecord::dataset::{CommitMode, Dataset, DatasetOptions, ShardInfo, ShardWriter};
use zrecord::format::Verify;
use zrecord::{Codec, CreateOptions, Geometry};

/// An open version of a dataset (local, `http(s)://` or in a bucket).
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeDataset {
    ds: Arc<Dataset>,
    target: String,
    /// As opened, with the version read pinned: columns made later, and
    /// their reopening in a forked child, read the same records.
    options: DatasetOptions,
}

impl Drop for NativeDataset {
    fn drop(&mut self) {
        if crate::fork::forked() {
            // The parent's dataset, copied by fork: its remote columns' HTTP
            // workers are the parent's (as in `ForkSafe`).
            std::mem::forget(Arc::clone(&self.ds));
        }
    }
}

#[pymethods]
impl NativeDataset {
    /// Open version `version` (`None`: the newest) of the dataset at
    /// `target`; `verify`, `cache`, `cache_limit` and `cold_reads` as for
    /// stores (a local dataset's column decides `auto` by its total size).
    #[staticmethod]
    #[pyo3(signature = (target, version = None, verify = false, cache = None, cache_limit = None, cold_reads = "auto"))]
    fn open(
        py: Python<'_>,
        target: String,
        version: Option<u64>,
        verify: bool,
        cache: Option<std::path::PathBuf>,
        cache_limit: Option<u64>,
        cold_reads: &str,
    ) -> PyResult<NativeDataset> {
        let verify = if verify { Verify::Always } else { Verify::Off };
        let mut open = zrecord::open::Options::default().verify(verify);
        open.cache = crate::store::cache_options(cache, cache_limit);
        open.local.cold_reads = cold_reads.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
        let mut options = DatasetOptions { version, open };
        let ds = py.detach(|| Dataset::open_with(&target, &options)).py_err(py)?;
        options.version = Some(ds.version());
        Ok(NativeDataset { ds: Arc::new(ds), target, options })
    }

    fn __len__(&self) -> usize {
        self.ds.len() as usize
    }
    /// The version read.
    #[getter]
    fn version(&self) -> u64 {
        self.ds.version()
    }
    /// The column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.ds.specs().iter().map(|c| c.name.clone()).collect()
    }
    /// Each column's Arrow type, for the columns written from Arrow.
    #[getter]
    fn arrow_types(&self) -> HashMap<String, String> {
        self.ds.specs().iter().filter_map(|c| Some((c.name.clone(), c.arrow.clone()?))).collect()
    }
    /// Each shard's path (relative to the dataset) and length, in order.
    #[getter]
    fn shards(&self) -> Vec<(String, u64)> {
        self.ds.manifest().shards.iter().map(|s| (s.path.clone(), s.length)).collect()
    }
    /// The shard holding record `index` and that shard's first global index.
    fn shard_of(&self, index: u64) -> Option<(usize, u64)> {
        self.ds.shard_of(index)
    }
    /// Column `name` as a store reader.
    fn column(&self, py: Python<'_>, name: &str) -> PyResult<NativeStore> {
        self.ds.column(name).py_err(py)?;
        let index = self.ds.specs().iter().position(|c| c.name == name).unwrap_or_default();
        Ok(NativeStore::new(ForkSafe::column(self.ds.clone(), index, &self.target, self.options.clone())))
    }
    fn __repr__(&self) -> String {
        format!("NativeDataset({:?}, version {}, {} records)", self.target, self.ds.version(), self.ds.len())
    }
}

/// A shard being written into a local dataset directory (or a staging one).
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeShardWriter {
    shard: SharedShard,
    /// Each column's name, item size and Dense item shape.
    columns: Vec<(String, usize, Option<Vec<u64>>)>,
    pid: u32,
}

impl Drop for NativeShardWriter {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // The parent's shard, copied by fork: its files are the parent's.
            if let Some(s) = self.shard.lock().unwrap_or_else(PoisonError::into_inner).take() {
                std::mem::forget(s);
            }
        }
    }
}

/// One column to create: name, dtype, Dense item shape (`None`: Ragged),
/// codec, dictionary.
type ColumnArg = (String, String, Option<Vec<u64>>, String, Option<Vec<u8>>);

#[pymethods]
impl NativeShardWriter {
    /// Start a shard of `columns` under a new unique name in `root`.
    #[staticmethod]
    fn create(py: Python<'_>, root: String, columns: Vec<ColumnArg>) -> PyResult<NativeShardWriter> {
        let mut defs = Vec::with_capacity(columns.len());
        let mut shapes = Vec::with_capacity(columns.len());
        for (name, dtype, item_shape, codec, dict) in columns {
            let codec: Codec = codec.parse().map_err(PyValueError::new_err)?;
            let geometry = match &item_shape {
                Some(s) => Geometry::Dense { item_shape: s.clone() },
                None => Geometry::Ragged,
            };
            let options = CreateOptions { codec, dict, ..Default::default() };
            shapes.push((name.clone(), item_shape));
            defs.push(ColumnDef { name, dtype, geometry, options });
        }
        let mut shard = py.detach(|| ShardWriter::create(Path::new(&root), defs)).py_err(py)?;
        let mut columns = Vec::with_capacity(shapes.len());
        for (name, shape) in shapes {
            let itemsize = shard.column(&name).py_err(py)?.dtype().itemsize();
            columns.push((name, itemsize, shape));
        }
        Ok(NativeShardWriter { shard: Arc::new(Mutex::new(Some(shard))), columns, pid: std::process::id() })
    }

    /// The shard's path relative to the dataset.
    #[getter]
    fn path(&self) -> PyResult<String> {
        let guard = self.shard.lock().unwrap_or_else(PoisonError::into_inner);
        guard
            .as_ref()
            .map(|s| s.path().to_string())
            .ok_or_else(|| PyRuntimeError::new_err("shard is finished"))
    }

    /// Column `name`'s writer (its appends as a store's; `close` does nothing).
    fn column(&self, name: &str) -> PyResult<NativeWriter> {
        let Some((name, itemsize, shape)) = self.columns.iter().find(|(n, ..)| n == name) else {
            return Err(PyValueError::new_err(format!("the shard has no column {name:?}")));
        };
        Ok(NativeWriter::column(self.shard.clone(), name.clone(), *itemsize, shape.as_deref()))
    }

    /// Close every column and return the shard's info as JSON, each column
    /// named in `arrow` carrying that Arrow type (see `ColumnSpec::arrow`).
    #[pyo3(signature = (arrow = None))]
    fn finish(&self, py: Python<'_>, arrow: Option<HashMap<String, String>>) -> PyResult<String> {
        if std::process::id() != self.pid {
            return Err(zrecord_error(
                py,
                -13,
                format!("this shard was created in process {} and cannot be finished in another", self.pid),
            ));
        }
        let shard = py.detach(|| self.shard.lock().unwrap_or_else(PoisonError::into_inner).take());
        let shard = shard.ok_or_else(|| PyRuntimeError::new_err("shard is finished"))?;
        let mut info = py.detach(|| shard.finish()).py_err(py)?;
        for c in &mut info.columns {
            c.arrow = arrow.as_ref().and_then(|a| a.get(&c.name)).cloned();
            c.check_arrow().map_err(|e| PyValueError::new_err(format!("column {:?}: {e}", c.name)))?;
        }
        Ok(info.to_json())
    }
}

/// Commit the shards (infos as JSON) as the next version of the dataset at
/// `target`, in `mode` (`create`, `append` or `overwrite`); returns that version.
#[pyfunction]
pub fn commit(py: Python<'_>, target: String, shards: Vec<String>, mode: &str) -> PyResult<u64> {
    let mode: CommitMode = mode.parse().map_err(PyValueError::new_err)?;
    let infos =
        shards.iter().map(|s| ShardInfo::from_json(s)).collect::<zrecord::Result<Vec<_>>>().py_err(py)?;
    py.detach(|| zrecord::dataset::commit(&target, &infos, mode)).py_err(py).map(|m| m.version)
}

/// Upload the shard `info` (JSON) written under `staging_root` to the
/// dataset at the bucket prefix `url`.
#[pyfunction]
pub fn upload_shard(py: Python<'_>, staging_root: String, info: String, url: String) -> PyResult<()> {
    let info = ShardInfo::from_json(&info).py_err(py)?;
    py.detach(|| zrecord::dataset::writer::upload_shard(Path::new(&staging_root), &info, &url)).py_err(py)
}

/// Remove the shards of the dataset at `target` that no version names and
/// that are older than `older_than` seconds (only list them when `dry_run`);
/// returns their paths.
#[pyfunction]
pub fn gc(py: Python<'_>, target: String, older_than: f64, dry_run: bool) -> PyResult<Vec<String>> {
    let age = std::time::Duration::try_from_secs_f64(older_than)
        .map_err(|_| PyValueError::new_err(format!("older_than must be seconds >= 0, not {older_than}")))?;
    py.detach(|| zrecord::dataset::writer::gc(&target, age, dry_run)).py_err(py)
}
