//! `NativeWriter`: a store being built.

use crate::errors::{zrecord_error, IntoPy};
use crate::fork::forked;
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyReadonlyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use zrecord::dataset::ShardWriter;
use zrecord::local::writer::{CreateOptions, RecordRef, Writer};
use zrecord::Codec;

/// loaderx's limit on one encoded record (shape prefix and payload).
const MAX_RECORD_LEN: usize = 1 << 31;

/// Bytes an append copies out of the caller's arrays at a time, at most (a
/// round; more when one record is larger). The first round is copied under
/// the GIL the call holds anyway; each further one takes the GIL back, which
/// may wait for another Python thread, so rounds are large. They bound the
/// copy's memory for very large appends.
const ROUND_BYTES: usize = 256 << 20;
/// Rounds when the caller asked for progress: a report every 32 MiB.
const PROGRESS_ROUND_BYTES: usize = 32 << 20;

/// How many records a round (a range of spans) holds.
type RoundRecords<'a> = &'a (dyn Fn(&Range<usize>) -> usize + Sync);
/// A progress callback, called with each written round's records.
type Progress<'a> = Option<(Py<PyAny>, RoundRecords<'a>)>;

/// The round size for an append that reports `progress` or not.
fn round_bytes(progress: &Option<Py<PyAny>>) -> usize {
    if progress.is_some() {
        PROGRESS_ROUND_BYTES
    } else {
        ROUND_BYTES
    }
}

/// A store being built; `close` publishes it. Appends release the GIL.
///
/// The writer's lock is only ever waited for without the GIL: an append
/// holds it while it takes the GIL back to copy (see [`NativeWriter::append_rounds`]).
#[pyclass(frozen, module = "zrecord._native")]
pub struct NativeWriter {
    target: Target,
    /// Bytes per Dense row (`None` for a Ragged store).
    row: Option<usize>,
    name: String,
    pid: u32,
    /// Held through a whole append, so appends from several threads do not
    /// interleave, while the writer itself is locked one round at a time
    /// (a progress callback may read the store between rounds).
    appending: Mutex<()>,
}

/// What a [`NativeWriter`] appends to.
enum Target {
    /// A store of its own, published by `close` (boxed: a `Writer` is large).
    Store(Box<Mutex<Option<Writer>>>),
    /// Column `name` of a shard, closed with the shard by its `finish`.
    Column(SharedShard, String),
}

/// A shard being written, shared by its columns' writers (`None` once finished).
pub(crate) type SharedShard = Arc<Mutex<Option<ShardWriter>>>;

impl Target {
    /// Run `f` on the open writer, `None` when it is closed.
    fn with<T>(&self, f: impl FnOnce(&mut Writer) -> zrecord::Result<T>) -> Option<zrecord::Result<T>> {
        match self {
            Target::Store(w) => w.lock().unwrap_or_else(PoisonError::into_inner).as_mut().map(f),
            Target::Column(shard, name) => {
                let mut guard = shard.lock().unwrap_or_else(PoisonError::into_inner);
                guard.as_mut().map(|s| s.column(name).and_then(f))
            }
        }
    }
}

/// The bytes of a caller's NumPy array, by address. Read only while the GIL
/// is held: a `&[u8]` over them would promise Rust that they do not change
/// while it lives, and any Python thread may change them once the GIL is released.
#[derive(Clone, Copy)]
struct Span {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a `Span` is an address and a length; it is dereferenced only in
// `Span::copy_to`, whose callers hold the GIL (see there), on whichever thread.
#[allow(unsafe_code)]
unsafe impl Send for Span {}
#[allow(unsafe_code)]
unsafe impl Sync for Span {}

impl Span {
    /// Copy the span's bytes to `out` (exactly as long); `_gil` proves the
    /// GIL is held.
    fn copy_to(self, _gil: Python<'_>, out: &mut [u8]) {
        // SAFETY: `ptr` is the data pointer of a C-contiguous array of at least
        // `len` bytes (checked where the span was made), and the caller keeps a
        // reference to that array until the append returns, so the memory is
        // allocated. (NumPy frees an array's memory only with its owner, or in
        // `resize(refcheck=False)`, which NumPy documents as unsafe while any
        // view exists.) The GIL is held: no Python code runs during the copy,
        // so none writes to the array. Native code that writes to it having
        // released the GIL (a NumPy loop on another thread) would race with
        // every reader of the array, NumPy's own too: such a program has a data
        // race without zrecord. Rust writers (our own `gather(..., out=)`) are
        // kept off a Dense batch by rust-numpy's borrow flag, held for the call.
        #[allow(unsafe_code)]
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
        out.copy_from_slice(bytes);
    }
}

/// Copy `spans` back to back to the start of `buf`; `ends[k]`: where span `k` ends.
fn copy_round(gil: Python<'_>, spans: &[Span], buf: &mut [u8], ends: &mut Vec<usize>) {
    ends.clear();
    let mut at = 0;
    for span in spans {
        span.copy_to(gil, &mut buf[at..at + span.len]);
        at += span.len;
        ends.push(at);
    }
}

/// Bytes of a Dense row of `item_shape` items of `itemsize` bytes.
fn row_bytes(itemsize: usize, item_shape: &[u64]) -> usize {
    item_shape.iter().fold(itemsize, |n, &d| n.saturating_mul(d as usize))
}

impl NativeWriter {
    /// The writer of column `name` of `shard` (created in this process),
    /// Dense when `item_shape` is given.
    pub(crate) fn column(
        shard: SharedShard,
        name: String,
        itemsize: usize,
        item_shape: Option<&[u64]>,
    ) -> Self {
        let row = item_shape.map(|shape| row_bytes(itemsize, shape));
        NativeWriter {
            target: Target::Column(shard, name.clone()),
            row,
            name,
            pid: std::process::id(),
            appending: Mutex::new(()),
        }
    }

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
        let result = py.detach(|| self.target.with(f));
        match result {
            Some(r) => r.py_err(py),
            None => Err(PyRuntimeError::new_err("Container is closed")),
        }
    }

    /// Append from the caller's arrays (`spans`, kept alive by the caller
    /// until this returns) in `rounds` (ranges of spans): copy a round's
    /// spans, back to back, into a buffer of ours while the GIL is held
    /// (`ends[k]`: where span `k` of the round ends), then `write` the buffer
    /// without the GIL. Appends from several threads do not interleave (one
    /// waits for the other's rounds); other Python threads run between
    /// rounds, and may read the store then. So the records written are the arrays' bytes as they
    /// were when their round was copied (a record is copied at one moment).
    ///
    /// `progress(n)` is called with the GIL after each round, `n` the
    /// records it wrote (`records(round)`); an exception it raises stops the
    /// append there and propagates.
    fn append_rounds(
        &self,
        py: Python<'_>,
        spans: &[Span],
        rounds: &[Range<usize>],
        progress: Progress<'_>,
        write: impl Fn(&mut Writer, Range<usize>, &[u8], &[usize]) -> zrecord::Result<()> + Send + Sync,
    ) -> PyResult<()> {
        let bytes = |round: &Range<usize>| spans[round.clone()].iter().map(|s| s.len).sum::<usize>();
        let most = rounds.iter().map(bytes).max().unwrap_or(0);
        // A recycled buffer (see `pool`): no page to fault in on later appends.
        let mut words = crate::pool::take_or_new(most.div_ceil(8))
            .map_err(|e| crate::errors::to_py(py, e.error(&self.name, "the append's copy buffer")))?;
        let buf: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        let mut ends = Vec::new();
        if let Some(first) = rounds.first() {
            copy_round(py, &spans[first.clone()], buf, &mut ends);
        }
        // The writer's lock is held for each round's write alone: the
        // callback may use the store (`len(ds)`) without deadlocking on it.
        // Another thread's append waits for the whole of this one (without
        // the GIL, which this one needs between rounds).
        let _appending = loop {
            match self.appending.try_lock() {
                Ok(guard) => break guard,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    py.detach(|| std::thread::sleep(std::time::Duration::from_micros(200)))
                }
            }
        };
        let mut result = Ok(());
        for (k, round) in rounds.iter().enumerate() {
            if k > 0 {
                copy_round(py, &spans[round.clone()], buf, &mut ends);
            }
            let (written, ends) = (&buf[..bytes(round)], &ends);
            result = self.with(py, |w| write(w, round.clone(), written, ends));
            if result.is_err() {
                break;
            }
            if let Some((report, records)) = &progress {
                if let Err(e) = report.call1(py, (records(round),)) {
                    result = Err(e);
                    break;
                }
            }
        }
        crate::pool::give(words);
        result
    }
}

impl Drop for NativeWriter {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // The parent's writer, copied by fork: its lock and files are the
            // parent's, so the child neither unlocks nor touches them.
            match &mut self.target {
                Target::Store(w) => {
                    if let Some(w) = w.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
                        std::mem::forget(w);
                    }
                }
                // The shard's own handle forgets it (see `dataset.rs`).
                Target::Column(..) => {}
            }
        }
    }
}

#[pymethods]
impl NativeWriter {
    /// Create a store: `item_shape` for a Dense one, `None` for a Ragged one;
    /// `overwrite` replaces a store already at `path` (see `CreateOptions`).
    #[staticmethod]
    #[pyo3(signature = (path, dtype, item_shape, codec, dict_bytes=None, overwrite=false))]
    fn create(
        py: Python<'_>,
        path: String,
        dtype: String,
        item_shape: Option<Vec<u64>>,
        codec: &str,
        dict_bytes: Option<Vec<u8>>,
        overwrite: bool,
    ) -> PyResult<NativeWriter> {
        let codec: Codec = codec.parse().map_err(pyo3::exceptions::PyValueError::new_err)?;
        let options = CreateOptions { codec, dict: dict_bytes, overwrite, ..Default::default() };
        let writer = py
            .detach(|| match &item_shape {
                Some(shape) => Writer::create_dense(&path, &dtype, shape, options),
                None => Writer::create_ragged(&path, &dtype, options),
            })
            .py_err(py)?;
        let row = item_shape.map(|shape| row_bytes(writer.dtype().itemsize(), &shape));
        Ok(NativeWriter {
            target: Target::Store(Box::new(Mutex::new(Some(writer)))),
            row,
            name: path,
            pid: std::process::id(),
            appending: Mutex::new(()),
        })
    }

    /// Append Dense rows (C-order bytes, whole rows), copied out of `rows`
    /// in rounds of whole rows (see `append_rounds`).
    /// `progress(n)`, when given, is called as each round's `n` rows are written.
    #[pyo3(signature = (rows, progress=None))]
    fn append_dense(
        &self,
        py: Python<'_>,
        rows: PyReadonlyArray1<'_, u8>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let bytes = rows.as_slice()?;
        let round = round_bytes(&progress);
        // Rounds of whole rows; otherwise one round, which the core refuses whole.
        let (per, row) = match self.row {
            Some(row) if row > 0 && bytes.len().is_multiple_of(row) => ((round / row).max(1) * row, row),
            _ => (bytes.len().max(1), bytes.len().max(1)),
        };
        let spans: Vec<Span> = bytes.chunks(per).map(|c| Span { ptr: c.as_ptr(), len: c.len() }).collect();
        let rounds: Vec<Range<usize>> = (0..spans.len()).map(|k| k..k + 1).collect();
        let records = |r: &Range<usize>| spans[r.clone()].iter().map(|s| s.len / row).sum();
        // `rows` (and its borrow flag) lives until this returns.
        let progress = progress.map(|p| (p, &records as RoundRecords<'_>));
        self.append_rounds(py, &spans, &rounds, progress, |w, _, buf, _| w.append(buf))
    }

    /// Append Ragged records given as NumPy arrays of `dtype`, checked here
    /// as loaderx checks them (all of them before anything is written), then
    /// copied out of the arrays and written in rounds (see `append_rounds`).
    #[pyo3(signature = (records, dtype, progress=None))]
    fn append_ragged(
        &self,
        py: Python<'_>,
        records: &Bound<'_, PyList>,
        dtype: &Bound<'_, PyArrayDescr>,
        progress: Option<Py<PyAny>>,
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
        let spans: Vec<Span> = keep
            .iter()
            .map(|a| {
                // SAFETY: `a` is a live NumPy array (we hold it) and the GIL is
                // held: its object can be read. Only its data pointer is read.
                #[allow(unsafe_code)]
                let ptr = unsafe { (*a.as_array_ptr()).fields.data }.cast::<u8>().cast_const();
                Span { ptr, len: a.len() * itemsize }
            })
            .collect();
        // Rounds of at most `round` bytes, or of one larger record.
        let round = round_bytes(&progress);
        let mut rounds = Vec::new();
        let (mut start, mut bytes) = (0, 0);
        for (k, span) in spans.iter().enumerate() {
            if k > start && bytes + span.len > round {
                rounds.push(start..k);
                (start, bytes) = (k, 0);
            }
            bytes += span.len;
        }
        if start < spans.len() {
            rounds.push(start..spans.len());
        }
        // `keep` holds every array until this returns.
        let records = |r: &Range<usize>| r.len();
        let progress = progress.map(|p| (p, &records as RoundRecords<'_>));
        self.append_rounds(py, &spans, &rounds, progress, |w, round, buf, ends| {
            let mut at = 0;
            let batch: Vec<RecordRef<'_>> = shapes[round]
                .iter()
                .zip(ends)
                .map(|(shape, &end)| {
                    let record = (shape.as_slice(), &buf[at..end]);
                    at = end;
                    record
                })
                .collect();
            w.append_ragged(&batch)
        })
    }

    /// Records appended so far.
    fn __len__(&self, py: Python<'_>) -> usize {
        py.detach(|| self.target.with(|w| Ok(w.len() as usize)).and_then(Result::ok).unwrap_or(0))
    }

    /// Publish the store (idempotent).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if forked() && std::process::id() != self.pid {
            // A child's copy of the parent's writer: never publish from here.
            return Ok(());
        }
        let Target::Store(writer) = &self.target else {
            return Ok(()); // a shard's column: the shard's `finish` closes it
        };
        let writer = py.detach(|| writer.lock().unwrap_or_else(PoisonError::into_inner).take());
        match writer {
            Some(w) => py.detach(|| w.close()).py_err(py),
            None => Ok(()),
        }
    }
}
