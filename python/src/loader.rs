//! `NativeSampler` (loaderx's index streams) and `NativeLoader` (the
//! prefetching, step-ordered loader over several streams).

use crate::arrays::{dense_out, ragged_out};
use crate::errors::{zrecord_error, IntoPy};
use crate::store::NativeStore;
use numpy::{PyArray1, PyArrayDescr, PyReadwriteArray1};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use zrecord::training::loader::{Loader, TimedOut, TRANSFORM_STREAM};
use zrecord::training::sampler::{Mode, Sampler};
use zrecord::training::state::LoaderState;
use zrecord::Batch;

fn mode(py: Python<'_>, code: u8) -> PyResult<Mode> {
    Mode::try_from(code).py_err(py)
}

/// loaderx's sampler, exactly: `fill` writes the next batch into a buffer.
#[pyclass(module = "zrecord._native")]
pub struct NativeSampler {
    sampler: Sampler,
    buf: Vec<u64>,
}

#[pymethods]
impl NativeSampler {
    #[new]
    #[pyo3(signature = (length, batch_size, mode_code, seed, rank=0, world=1))]
    fn new(
        py: Python<'_>,
        length: u64,
        batch_size: u64,
        mode_code: u8,
        seed: u64,
        rank: u64,
        world: u64,
    ) -> PyResult<Self> {
        let sampler = Sampler::new(length, batch_size, mode(py, mode_code)?, seed)
            .and_then(|s| s.shard(rank, world))
            .py_err(py)?;
        Ok(NativeSampler { sampler, buf: Vec::new() })
    }

    /// Draw the next batch into `out` (at least `batch_len` long); returns its length.
    fn fill(&mut self, py: Python<'_>, mut out: PyReadwriteArray1<'_, u64>) -> PyResult<usize> {
        self.sampler.try_fill_next(&mut self.buf).py_err(py)?;
        let out = out.as_slice_mut()?;
        let n = self.buf.len().min(out.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        Ok(n)
    }

    /// Position the stream so the next batch is step `step`.
    fn seek(&mut self, py: Python<'_>, step: u64) {
        let sampler = &mut self.sampler;
        py.detach(|| sampler.seek(step));
    }

    /// The step of the batch the next draw returns.
    #[getter]
    fn step(&self) -> u64 {
        self.sampler.step()
    }

    /// Indices per batch (after sharding).
    #[getter]
    fn batch_len(&self) -> u64 {
        self.sampler.batch_len()
    }
}

/// One delivered step: its number, its indices, one batch per store, and
/// (in a mixture) each record's source.
type Step = (u64, Vec<u64>, Vec<Batch>, Vec<u32>);

/// The loader: worker threads gather every stream at each step's indices
/// (drawn by loaderx's sampler) and the steps come out in order.
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeLoader {
    loader: Mutex<Option<Loader<Step>>>,
    /// Set by `close` before it takes the lock, so waiting `next` calls let go.
    closing: AtomicBool,
    pid: u32,
    /// Each stream's dtype, for its Ragged batches' arrays.
    descrs: Vec<Py<PyArrayDescr>>,
    /// Ragged batches as `(values, offsets, shapes)` instead of lists.
    packed: bool,
}

impl Drop for NativeLoader {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // Its worker threads were not copied by fork, and its lock may
            // have been held by one of them: never touch it in a child.
            if let Some(l) = self.loader.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
                std::mem::forget(l);
            }
        }
    }
}

/// How long one wait for a step lasts before Python checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(20);

/// A Python integer argument as the core takes it: a `TypeError` naming it
/// for what is not an integer (as `operator.index` decides), a `ValueError`
/// for an integer outside `0..=max`. Whether the value suits is the core's to
/// say (`LoaderBuilder::build`).
fn int_arg(obj: &Bound<'_, PyAny>, name: &str, max: u64) -> PyResult<u64> {
    let py = obj.py();
    let range = || {
        let max = if max == u64::MAX { "2^64-1".to_string() } else { max.to_string() };
        PyValueError::new_err(format!("{name} must be in 0..{max} (got {obj})"))
    };
    match obj.extract::<u64>() {
        Ok(v) if v <= max => Ok(v),
        Ok(_) => Err(range()),
        Err(e) if e.is_instance_of::<PyOverflowError>(py) => Err(range()),
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            Err(PyTypeError::new_err(format!("{name} must be an integer")))
        }
        Err(e) => Err(e),
    }
}

#[pymethods]
impl NativeLoader {
    /// A loader over `stores` (named `names` in errors), checked by the core:
    /// the stores' lengths (equal, not zero), the sampler's arguments
    /// (`batch_size`, `mode`, `rank` and `world`), `workers` and `prefetch`.
    #[new]
    #[pyo3(signature = (stores, names, batch_size, mode, seed, rank, world, workers, prefetch, start_step, packed, more=Vec::new(), weights=None, schedule=Vec::new(), modes=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        stores: Vec<PyRef<'_, NativeStore>>,
        names: Vec<String>,
        batch_size: &Bound<'_, PyAny>,
        mode: &Bound<'_, PyAny>,
        seed: &Bound<'_, PyAny>,
        rank: &Bound<'_, PyAny>,
        world: &Bound<'_, PyAny>,
        workers: usize,
        prefetch: usize,
        start_step: &Bound<'_, PyAny>,
        packed: bool,
        more: Vec<Vec<PyRef<'_, NativeStore>>>,
        weights: Option<Vec<f64>>,
        schedule: Vec<(u64, Vec<f64>)>,
        modes: Option<Vec<u8>>,
    ) -> PyResult<Self> {
        let code = int_arg(mode, "mode", u8::MAX.into())? as u8;
        let descrs =
            stores.iter().map(|s| s.descr(py).map(|d| d.clone().unbind())).collect::<PyResult<_>>()?;
        let mut builder = Loader::builder()
            .batch_size(int_arg(batch_size, "batch_size", u64::MAX)?)
            .mode(self::mode(py, code)?)
            .seed(int_arg(seed, "seed", u64::MAX)?)
            .shard(int_arg(rank, "rank", u64::MAX)?, int_arg(world, "world", u64::MAX)?)
            .workers(workers)
            .prefetch(prefetch)
            .seek(int_arg(start_step, "start_step", u64::MAX)?);
        // The callers' names, unless two are alike or one is the core's own
        // (`<transform>`): then their positions.
        let usable = names.len() == stores.len()
            && names.iter().enumerate().all(|(k, n)| n != TRANSFORM_STREAM && !names[..k].contains(n));
        let names: Arc<[String]> =
            if usable { names.into() } else { (0..stores.len()).map(|k| k.to_string()).collect() };
        let source = |stores: &[PyRef<'_, NativeStore>]| -> Vec<(String, Arc<dyn zrecord::Records>)> {
            names
                .iter()
                .zip(stores)
                .map(|(n, s)| (n.clone(), s.store.clone() as Arc<dyn zrecord::Records>))
                .collect()
        };
        // With weights: a mixture of `stores` (source 0) and `more`, by the same names.
        if let Some(weights) = weights {
            builder = builder.source(source(&stores)).weights(&weights);
            for other in &more {
                builder = builder.source(source(other));
            }
            for (step, w) in &schedule {
                builder = builder.schedule(*step, w);
            }
            if let Some(codes) = modes {
                let modes = codes.iter().map(|&c| self::mode(py, c)).collect::<PyResult<Vec<_>>>()?;
                builder = builder.modes(&modes);
            }
        } else {
            for (name, store) in source(&stores) {
                builder = builder.stream(name, store);
            }
        }
        let streams = Arc::clone(&names);
        let builder = builder.transform(move |mut step| {
            let batches = streams.iter().map(|n| step.take(n).expect("every stream")).collect();
            Ok((step.step(), step.indices().to_vec(), batches, step.sources().to_vec()))
        });
        let loader = py.detach(|| builder.build()).py_err(py)?;
        Ok(NativeLoader {
            loader: Mutex::new(Some(loader)),
            closing: AtomicBool::new(false),
            pid: std::process::id(),
            descrs,
            packed,
        })
    }

    /// The next step: `(step, indices, batches)`, one batch per store in
    /// order, a Dense one as `(words, nbytes)` and a Ragged one as a list of
    /// arrays (or `(values, offsets, shapes)` when the loader is `packed`). Waits without the GIL,
    /// checking for signals (Ctrl-C) every few milliseconds. `None` once closed.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if std::process::id() != self.pid {
            return Err(zrecord_error(
                py,
                -13,
                format!(
                    "this DataLoader was created in process {} and its worker threads do not exist \
                     in the forked process {}; create the DataLoader in the process that iterates it \
                     (stores opened before the fork can be used there)",
                    self.pid,
                    std::process::id()
                ),
            ));
        }
        loop {
            if self.closing.load(Ordering::Acquire) {
                return Ok(None);
            }
            let got = py.detach(|| {
                let mut guard = self.loader.lock().unwrap_or_else(PoisonError::into_inner);
                match guard.as_mut() {
                    Some(loader) => loader.next_timeout(POLL),
                    None => Ok(None),
                }
            });
            match got {
                Err(TimedOut) => py.check_signals()?,
                Ok(None) => return Ok(None),
                Ok(Some(item)) => {
                    let (step, indices, batches, sources) = item.py_err(py)?;
                    let out = PyList::empty(py);
                    for (batch, descr) in batches.into_iter().zip(&self.descrs) {
                        match batch {
                            Batch::Dense(b) => out.append(dense_out(py, b))?,
                            Batch::Ragged(b) => {
                                out.append(ragged_out(py, b, descr.bind(py), self.packed)?)?
                            }
                        }
                    }
                    let indices = PyArray1::from_vec(py, indices);
                    let sources = if sources.is_empty() {
                        py.None().into_bound(py)
                    } else {
                        PyArray1::from_vec(py, sources).into_any()
                    };
                    let parts =
                        [step.into_pyobject(py)?.into_any(), indices.into_any(), out.into_any(), sources];
                    return Ok(Some(PyTuple::new(py, parts)?));
                }
            }
        }
    }

    /// The step the next call of `next` returns (after a failure, the failed step).
    #[getter]
    fn step(&self) -> Option<u64> {
        self.loader.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(|l| l.step())
    }

    /// Bytes the look-ahead has fetched ahead of the gathers (a node-local
    /// cache's blocks for the coming steps; 0 for local stores).
    #[getter]
    fn fetched_ahead(&self) -> u64 {
        self.loader.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map_or(0, |l| l.fetched_ahead())
    }

    /// The loader's state (as JSON text) with the consumer at `step`.
    fn state_json(&self, py: Python<'_>, step: u64) -> PyResult<String> {
        let guard = self.loader.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(l) => Ok(l.state_at(step).to_json()),
            None => Err(zrecord::Error::Cancelled).py_err(py),
        }
    }

    /// Check a state (JSON text) against this loader: its step, or a
    /// `ValueError` naming what differs.
    fn check_state(&self, py: Python<'_>, state: &str) -> PyResult<u64> {
        let saved = LoaderState::from_json(state).py_err(py)?;
        let guard = self.loader.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(l) => l.state_at(0).check(&saved).map(|()| saved.step).py_err(py),
            None => Err(zrecord::Error::Cancelled).py_err(py),
        }
    }

    /// Stop the workers and join them (at most the step each is gathering).
    fn close(&self, py: Python<'_>) {
        if std::process::id() != self.pid {
            return;
        }
        self.closing.store(true, Ordering::Release);
        let loader = py.detach(|| self.loader.lock().unwrap_or_else(PoisonError::into_inner).take());
        if let Some(mut loader) = loader {
            py.detach(|| loader.close());
        }
    }
}
