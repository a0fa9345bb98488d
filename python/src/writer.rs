//! `NativeWriter` (a store being built) and dictionary training.

use crate::errors::{zrecord_error, IntoPy};
use crate::fork::forked;
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Mutex, PoisonError};
use zrecord::train::{train_from_samples, Tier};
use zrecord::writer::{CreateOptions, Writer};
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

    /// Append Ragged records: `payload` holds every record's bytes in turn,
    /// `nbytes[i]` of them for record `i`, whose shape is
    /// `dims[dim_starts[i]..dim_starts[i + 1]]`.
    fn append_ragged(
        &self,
        py: Python<'_>,
        payload: PyReadonlyArray1<'_, u8>,
        nbytes: PyReadonlyArray1<'_, u64>,
        dims: PyReadonlyArray1<'_, u64>,
        dim_starts: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<()> {
        let (payload, nbytes, dims, dim_starts) =
            (payload.as_slice()?, nbytes.as_slice()?, dims.as_slice()?, dim_starts.as_slice()?);
        let bad = || pyo3::exceptions::PyValueError::new_err("inconsistent ragged append buffers");
        if dim_starts.len() != nbytes.len() + 1 || nbytes.iter().sum::<u64>() != payload.len() as u64 {
            return Err(bad());
        }
        let mut records = Vec::with_capacity(nbytes.len());
        let mut at = 0usize;
        for (i, &n) in nbytes.iter().enumerate() {
            let (d0, d1) = (dim_starts[i] as usize, dim_starts[i + 1] as usize);
            if d0 > d1 || d1 > dims.len() {
                return Err(bad());
            }
            records.push((&dims[d0..d1], &payload[at..at + n as usize]));
            at += n as usize;
        }
        self.with(py, |w| w.append_ragged(&records))
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

/// Train a `zstd_dict` dictionary on `samples` (records back to back,
/// `sizes[i]` bytes each) for `tier`; the GIL is released while zstd trains.
#[pyfunction]
pub fn train_dict_native<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray1<'py, u8>,
    sizes: PyReadonlyArray1<'py, u64>,
    tier: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let tier: Tier = tier.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
    let (samples, sizes) = (samples.as_slice()?, sizes.as_slice()?);
    if sizes.iter().sum::<u64>() != samples.len() as u64 {
        return Err(pyo3::exceptions::PyValueError::new_err("sample sizes do not add up to the samples"));
    }
    let dict = py
        .detach(|| {
            let mut at = 0usize;
            let parts = sizes.iter().map(|&n| {
                let s = &samples[at..at + n as usize];
                at += n as usize;
                s
            });
            crate::fork::run(|| train_from_samples(parts, tier))
        })
        .py_err(py)?;
    Ok(PyBytes::new(py, &dict))
}
