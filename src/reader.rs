//! The native reader: opens a store directory and gathers records by index,
//! on the calling thread for small batches and across all cores for large ones.

use crate::batch::{Batch, DenseBatch, RaggedBatch};
use crate::codec::Dict;
use crate::format::decode::{self, AlignedBytes};
use crate::format::store_info::FileSizes;
use crate::format::{dtype::Element, Codec, Geometry, RecordLoc, StoreInfo, LOC_SIZE, PAGE_SIZE};
use crate::source::{mmap::MmapSource, pread::PreadSource, ByteSource};
use crate::{Error, Result};
use rayon::prelude::*;
use std::cell::RefCell;
use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

/// How a store's files are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// Memory-mapped (zero-copy); the default.
    #[default]
    Mmap,
    /// Positional reads (`pread`), for file systems where mapping is unwelcome.
    Pread,
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "mmap" => Ok(Backend::Mmap),
            "pread" => Ok(Backend::Pread),
            _ => Err(format!("unknown backend {s:?} (expected mmap or pread)")),
        }
    }
}

/// Options for [`Store::open_with`].
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// How to read the files.
    pub backend: Backend,
    /// Take loaderx's shared `flock` on `meta.zr` (default true).
    pub lock: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { backend: Backend::Mmap, lock: true }
    }
}

/// Location tables larger than this are read entry by entry instead of being
/// loaded at open (pread backend only; mmap reads them in place).
const MAX_OWNED_TABLE: u64 = 256 << 20;
/// Batches with at least this many decoded bytes fan out across threads
/// (raw copies are cheap, so they need more work to pay for the hand-off).
const PAR_BYTES_RAW: usize = 4 << 20;
const PAR_BYTES_ZSTD: usize = 128 << 10;
/// Rows whose locations a sequential Dense gather resolves ahead of copying.
const LOOKAHEAD: usize = 16;
/// Largest dictionary accepted from `dict.zr` (loaderx's largest tier is 1 MiB).
const MAX_DICT_BYTES: u64 = 64 << 20;

/// An open store, safe to share between threads (`&Store` gathers concurrently).
pub struct Store {
    info: StoreInfo,
    dir: PathBuf,
    meta: Box<dyn ByteSource>,
    data: Box<dyn ByteSource>,
    table: Option<Vec<u8>>,
    dict: Option<Dict>,
    dict_bytes: Option<Vec<u8>>,
    _lock: Option<File>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.dir)
            .field("len", &self.len())
            .field("dtype", &self.dtype().as_str())
            .field("codec", &self.codec())
            .finish()
    }
}

thread_local! {
    /// Per-thread buffer for compressed records read with pread.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Open one file of a store; `None` when it does not exist.
fn open_file(dir: &Path, name: &str) -> Result<Option<File>> {
    let path = dir.join(name);
    match File::open(&path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, "open", e)),
    }
}

impl Store {
    /// Open a store directory with the default options (mmap, shared lock).
    ///
    /// # Errors
    /// `NotFound`, `Busy` (a writer holds the store), `BadFormat`,
    /// `Unpublished`, or `Io`.
    ///
    /// ```
    /// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/loaderx-2.0.1/dense-f32-zstd");
    /// let store = zrecord::Store::open(dir)?;
    /// let batch = store.gather(&[3, 0, 3])?;
    /// assert_eq!(batch.shape(), &[3, 2, 5]);
    /// let values: &[f32] = batch.as_slice()?;
    /// assert_eq!(values.len(), 30);
    /// # Ok::<(), zrecord::Error>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(dir, OpenOptions::default())
    }

    /// Open a store directory.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with(dir: impl AsRef<Path>, options: OpenOptions) -> Result<Store> {
        let dir = dir.as_ref().to_path_buf();
        let name = dir.display().to_string();
        if !dir.is_dir() {
            return Err(Error::NotFound { store: name, what: "no such store directory".into() });
        }
        let Some(meta_file) = open_file(&dir, "meta.zr")? else {
            return Err(Error::NotFound { store: name, what: "meta.zr is missing".into() });
        };
        if options.lock {
            match meta_file.try_lock_shared() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::Busy { store: name, why: "a writer holds it" })
                }
                Err(TryLockError::Error(e)) => return Err(Error::io(dir.join("meta.zr"), "lock", e)),
            }
        }
        let Some(data_file) = open_file(&dir, "data.zr")? else {
            return Err(Error::BadFormat { store: name, check: "data.zr is missing".into() });
        };
        let dict_file = open_file(&dir, "dict.zr")?;
        let source = |file: &File, which: &str| -> Result<Box<dyn ByteSource>> {
            let path = dir.join(which);
            Ok(match options.backend {
                Backend::Mmap => Box::new(MmapSource::new(file).map_err(|e| Error::io(&path, "mmap", e))?),
                Backend::Pread => Box::new(
                    PreadSource::new(file.try_clone().map_err(|e| Error::io(&path, "open", e))?)
                        .map_err(|e| Error::io(&path, "stat", e))?,
                ),
            })
        };
        let meta = source(&meta_file, "meta.zr")?;
        let data = source(&data_file, "data.zr")?;
        let dict_bytes = match &dict_file {
            Some(f) => {
                let path = dir.join("dict.zr");
                let size = f.metadata().map_err(|e| Error::io(&path, "stat", e))?.len();
                if size > MAX_DICT_BYTES {
                    return Err(Error::BadFormat {
                        store: name,
                        check: format!("dict.zr is {size} bytes (dictionaries are at most {MAX_DICT_BYTES})"),
                    });
                }
                let mut bytes = vec![0u8; size as usize];
                f.read_exact_at_start(&mut bytes).map_err(|e| Error::io(&path, "read", e))?;
                Some(bytes)
            }
            None => None,
        };
        let mut store = Store::from_sources(name, meta, data, dict_bytes)?;
        store.dir = dir;
        store._lock = options.lock.then_some(meta_file);
        Ok(store)
    }

    /// Open a store over any byte sources (in-memory bytes, custom backends).
    /// `name` is what errors call the store.
    ///
    /// # Errors
    /// `BadFormat`, `Unpublished` or `Io`, as [`Store::open`].
    pub fn from_sources(
        name: impl Into<String>,
        meta: Box<dyn ByteSource>,
        data: Box<dyn ByteSource>,
        dict_bytes: Option<Vec<u8>>,
    ) -> Result<Store> {
        let name = name.into();
        let sizes = FileSizes {
            meta: meta.size(),
            data: data.size(),
            dict: dict_bytes.as_ref().map(|d| d.len() as u64),
        };
        let mut head = vec![0u8; sizes.meta.min(PAGE_SIZE) as usize];
        meta.read_exact_at(0, &mut head).map_err(|e| Error::io(&name, "read meta.zr", e))?;
        let info = StoreInfo::parse(&name, &head, sizes)?;
        let dict = match (&dict_bytes, info.codec()) {
            (Some(bytes), Codec::ZstdDict) => {
                Some(Dict::new(bytes).map_err(|why| Error::BadFormat { store: name.clone(), check: why })?)
            }
            _ => None,
        };
        let table_len = info.len() * LOC_SIZE;
        let table = if meta.slice(PAGE_SIZE, table_len as usize).is_none() && table_len <= MAX_OWNED_TABLE {
            let mut t = vec![0u8; table_len as usize];
            meta.read_exact_at(PAGE_SIZE, &mut t).map_err(|e| Error::io(&name, "read meta.zr", e))?;
            Some(t)
        } else {
            None
        };
        Ok(Store { dir: PathBuf::from(&name), info, meta, data, table, dict, dict_bytes, _lock: None })
    }

    /// Validated Header, schema and sizes.
    pub fn info(&self) -> &StoreInfo {
        &self.info
    }
    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
    crate::format::store_info::info_accessors!();

    /// The dictionary bytes of a `zstd_dict` store.
    pub fn dict_bytes(&self) -> Option<&[u8]> {
        self.dict_bytes.as_deref()
    }

    /// Record `index`'s location, validated.
    ///
    /// # Errors
    /// `IndexOutOfRange`, `BadFormat` for a location breaking a rule, `Io`.
    pub fn loc(&self, index: u64) -> Result<RecordLoc> {
        self.info.check_indices(&[index])?;
        let loc = self.loc_unchecked(index)?;
        loc.validate(&self.info.name, index, self.codec(), self.info.header.tail_offset)?;
        Ok(loc)
    }

    fn loc_unchecked(&self, index: u64) -> Result<RecordLoc> {
        if let Some(t) = &self.table {
            return Ok(RecordLoc::from_table(t, index as usize));
        }
        let at = RecordLoc::position(index);
        if let Some(s) = self.meta.slice(at, 16) {
            return Ok(RecordLoc::decode(s.try_into().expect("16 bytes")));
        }
        let mut b = [0u8; 16];
        self.meta.read_exact_at(at, &mut b).map_err(|e| self.io_err("meta.zr", e))?;
        Ok(RecordLoc::decode(&b))
    }

    /// The location table and the published data bytes, borrowed once per
    /// gather when the backend holds them in memory (mmap), so the per-record
    /// path is plain slice indexing instead of a backend call per access.
    fn view(&self) -> View<'_> {
        let table = match &self.table {
            Some(t) => Some(t.as_slice()),
            None => usize::try_from(self.len() * LOC_SIZE).ok().and_then(|n| self.meta.slice(PAGE_SIZE, n)),
        };
        let data = usize::try_from(self.info.header.tail_offset).ok().and_then(|n| self.data.slice(0, n));
        View { table, data }
    }

    /// Record `index`'s location (not validated), from the view when it has the table.
    #[inline]
    fn loc_in(&self, view: &View<'_>, index: u64) -> Result<RecordLoc> {
        match view.table {
            Some(t) => Ok(RecordLoc::from_table(t, index as usize)),
            None => self.loc_unchecked(index),
        }
    }

    /// As [`Store::read_record`], slicing the view's data when it has it.
    #[inline]
    fn read_record_in(&self, view: &View<'_>, index: u64, loc: &RecordLoc, dst: &mut [u8]) -> Result<()> {
        match view.data {
            // The location is validated: `offset + phys_length <= tail_offset`.
            Some(d) => decode::decode_record(
                &self.info,
                index,
                self.dict.as_ref(),
                &d[loc.offset as usize..loc.end() as usize],
                dst,
            ),
            None => self.read_record(index, loc, dst),
        }
    }

    /// Before a big compressed record is allocated for, check that its frame
    /// declares the size its location claims (one small read).
    fn check_big_frame(&self, index: u64, loc: &RecordLoc) -> Result<()> {
        if !decode::is_big_claim(&self.info, loc) {
            return Ok(());
        }
        let len = (loc.phys_length as usize).min(decode::ZSTD_MAX_HEADER);
        let mut buf = [0u8; decode::ZSTD_MAX_HEADER];
        let head = match self.data.slice(loc.offset, len) {
            Some(s) => s,
            None => {
                self.data
                    .read_exact_at(loc.offset, &mut buf[..len])
                    .map_err(|e| self.io_err("data.zr", e))?;
                &buf[..len]
            }
        };
        decode::check_frame_header(&self.info, index, loc, head)
    }

    fn io_err(&self, file: &str, e: io::Error) -> Error {
        Error::io(self.dir.join(file), "read", e)
    }

    /// Read and decode one record whose location is validated into `dst`.
    fn read_record(&self, index: u64, loc: &RecordLoc, dst: &mut [u8]) -> Result<()> {
        let phys = loc.phys_length as usize;
        if let Some(src) = self.data.slice(loc.offset, phys) {
            return decode::decode_record(&self.info, index, self.dict.as_ref(), src, dst);
        }
        if self.codec() == Codec::Raw {
            return self.data.read_exact_at(loc.offset, dst).map_err(|e| self.io_err("data.zr", e));
        }
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            s.resize(phys, 0);
            self.data.read_exact_at(loc.offset, &mut s).map_err(|e| self.io_err("data.zr", e))?;
            decode::decode_record(&self.info, index, self.dict.as_ref(), &s, dst)
        })
    }

    fn invalid(&self, why: &str) -> Error {
        Error::InvalidArgument { store: self.info.name.clone(), why: why.to_string() }
    }

    fn parallel(&self, total_bytes: usize, n: usize) -> bool {
        let threshold = if self.codec() == Codec::Raw { PAR_BYTES_RAW } else { PAR_BYTES_ZSTD };
        n > 1 && total_bytes >= threshold && rayon::current_num_threads() > 1
    }

    /// Gather Dense records into `out`, which must hold exactly
    /// `indices.len() * row_bytes` bytes. Indices may repeat and come in any order.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), `InvalidArgument` for a Ragged
    /// store or a wrong buffer size, `BadFormat`/`CorruptRecord`, `Io`.
    pub fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let row = self.info.check_dense_gather(indices, out.len())?;
        if row == 0 || indices.is_empty() {
            return Ok(());
        }
        let view = self.view();
        let (codec, tail) = (self.codec(), self.info.header.tail_offset);
        // Random rows miss the cache one after the other, and each copy first
        // waits for its location. Resolving a block of locations (and touching
        // each row's first byte) before copying issues those misses together,
        // so they overlap instead of queueing.
        let block = |(outs, idx): (&mut [u8], &[u64])| -> Result<()> {
            let mut locs = [RecordLoc::default(); LOOKAHEAD];
            match (view.table, view.data) {
                (Some(table), Some(data)) => {
                    for (loc, &i) in locs.iter_mut().zip(idx) {
                        *loc = RecordLoc::from_table(table, i as usize);
                        if let Some(&b) = data.get(loc.offset as usize) {
                            std::hint::black_box(b);
                        }
                    }
                }
                _ => {
                    for (loc, &i) in locs.iter_mut().zip(idx) {
                        *loc = self.loc_in(&view, i)?;
                    }
                }
            }
            for ((dst, &index), loc) in outs.chunks_mut(row).zip(idx).zip(&locs) {
                if !loc.is_valid_row(codec, tail, row as u64) {
                    decode::check_dense_loc(&self.info, index, loc, row as u64)?;
                }
                self.read_record_in(&view, index, loc, dst)?;
            }
            Ok(())
        };
        let (outs, idx) = (LOOKAHEAD * row, LOOKAHEAD);
        if self.parallel(out.len(), indices.len()) {
            out.par_chunks_mut(outs).zip(indices.par_chunks(idx)).try_for_each(block)
        } else {
            out.chunks_mut(outs).zip(indices.chunks(idx)).try_for_each(block)
        }
    }

    /// Gather Dense records into a typed buffer of `indices.len() * prod(item_shape)` items.
    ///
    /// # Errors
    /// As [`Store::gather_into`], and `InvalidArgument` when `T` is not the dtype.
    pub fn gather_into_typed<T: Element>(&self, indices: &[u64], out: &mut [T]) -> Result<()> {
        if !self.dtype().matches::<T>() {
            return Err(self.invalid(&format!(
                "cannot gather {} items into [{}]",
                self.dtype(),
                std::any::type_name::<T>()
            )));
        }
        self.gather_into(indices, bytemuck::cast_slice_mut(out))
    }

    /// Gather Dense records into a new batch.
    ///
    /// # Errors
    /// As [`Store::gather_into`].
    pub fn gather(&self, indices: &[u64]) -> Result<DenseBatch> {
        let mut batch = DenseBatch::new(self.dtype().clone());
        self.gather_dense_batch(indices, &mut batch)?;
        Ok(batch)
    }

    /// Gather Dense records into `batch`, reusing its buffer.
    ///
    /// # Errors
    /// As [`Store::gather_into`].
    pub fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let row = self.info.dense_row()?;
        let item_shape = self.item_shape().unwrap_or(&[]);
        if indices.len().saturating_mul(row) > decode::PRECHECK_BYTES {
            // A big batch is only allocated once its records are known to
            // hold that much: a hostile schema alone cannot claim gigabytes.
            self.info.check_indices(indices)?;
            for &i in indices {
                let loc = self.loc_unchecked(i)?;
                decode::check_dense_loc(&self.info, i, &loc, row as u64)?;
                self.check_big_frame(i, &loc)?;
            }
        }
        batch.data.resize(indices.len() * row);
        batch.shape.clear();
        batch.shape.push(indices.len() as u64);
        batch.shape.extend_from_slice(item_shape);
        batch.dtype.clone_from(self.dtype());
        self.gather_into(indices, batch.data.as_mut_slice())
    }

    /// Gather Ragged records into a new packed batch.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), `InvalidArgument` for a Dense
    /// store, `BadFormat`/`CorruptRecord`, `Io`.
    pub fn gather_ragged(&self, indices: &[u64]) -> Result<RaggedBatch> {
        let mut batch = RaggedBatch::default();
        self.gather_ragged_into(indices, &mut batch)?;
        Ok(batch)
    }

    /// Gather Ragged records into `batch`, reusing its buffers.
    ///
    /// # Errors
    /// As [`Store::gather_ragged`].
    pub fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        if !matches!(self.geometry(), Geometry::Ragged) {
            return Err(self.invalid("this is a Dense store; use gather"));
        }
        self.info.check_indices(indices)?;
        let view = self.view();
        let codec = self.codec();
        // The batch's scratch vectors are reused, so a warm batch allocates nothing.
        let mut locs = std::mem::take(&mut batch.locs);
        let mut slots = std::mem::take(&mut batch.slots);
        let result = (|| {
            locs.clear();
            for &i in indices {
                let loc = self.loc_in(&view, i)?;
                // The batch buffer is sized from these lengths: check each
                // one fully (location rules, zstd's expansion bound, and a big
                // frame's declared size) before anything is allocated.
                decode::check_record_loc(&self.info, i, &loc)?;
                self.check_big_frame(i, &loc)?;
                locs.push(loc);
            }
            match view.data.filter(|_| codec == Codec::Raw) {
                Some(data) => self.gather_ragged_raw(data, indices, &locs, batch),
                None => self.gather_ragged_slots(&view, indices, &locs, &mut slots, batch),
            }
        })();
        batch.locs = locs;
        batch.slots = slots;
        result
    }

    /// Raw records in memory: parse each prefix where it lies and copy only
    /// the payload, once, to its final aligned place.
    fn gather_ragged_raw(
        &self,
        data: &[u8],
        indices: &[u64],
        locs: &[RecordLoc],
        batch: &mut RaggedBatch,
    ) -> Result<()> {
        let src = |loc: &RecordLoc| &data[loc.offset as usize..loc.end() as usize];
        decode::begin_ragged(batch);
        let mut at = 0;
        for (&index, loc) in indices.iter().zip(locs) {
            decode::place_ragged(&self.info, index, src(loc), &mut at, batch)?;
        }
        batch.data.resize(at);
        let spans = std::mem::take(&mut batch.spans);
        let copy = |k: usize, dst: &mut [u8]| {
            let record = src(&locs[k]);
            dst.copy_from_slice(&record[record.len() - dst.len()..]);
            Ok(())
        };
        let result =
            for_each_span(batch.data.as_mut_slice(), &spans, self.parallel(at, indices.len()), &copy);
        batch.spans = spans;
        result
    }

    /// Decode every record into a slot of the batch buffer, then compact.
    fn gather_ragged_slots(
        &self,
        view: &View<'_>,
        indices: &[u64],
        locs: &[RecordLoc],
        slots: &mut Vec<std::ops::Range<usize>>,
        batch: &mut RaggedBatch,
    ) -> Result<()> {
        let total = decode::ragged_slots_into(locs, slots).map_err(|why| self.invalid(&why))?;
        batch.data.resize(total);
        let decode = |k: usize, dst: &mut [u8]| self.read_record_in(view, indices[k], &locs[k], dst);
        for_each_span(batch.data.as_mut_slice(), slots, self.parallel(total, indices.len()), &decode)?;
        decode::compact_ragged(&self.info, indices, slots, batch)
    }

    /// Gather into either kind of batch (the loader's entry point).
    ///
    /// # Errors
    /// As [`Store::gather_into`] / [`Store::gather_ragged`].
    pub fn gather_batch_into(&self, indices: &[u64], batch: &mut Batch) -> Result<()> {
        match self.geometry() {
            Geometry::Dense { .. } => {
                if !matches!(batch, Batch::Dense(_)) {
                    *batch = Batch::Dense(DenseBatch::new(self.dtype().clone()));
                }
                let Batch::Dense(b) = batch else { unreachable!("set above") };
                self.gather_dense_batch(indices, b)
            }
            Geometry::Ragged => {
                if !matches!(batch, Batch::Ragged(_)) {
                    *batch = Batch::Ragged(RaggedBatch::default());
                }
                let Batch::Ragged(b) = batch else { unreachable!("set above") };
                self.gather_ragged_into(indices, b)
            }
        }
    }

    /// One record: its shape and payload bytes (no shape prefix).
    ///
    /// # Errors
    /// As the gathers.
    pub fn get(&self, index: u64) -> Result<(Vec<u64>, AlignedBytes)> {
        match self.geometry() {
            Geometry::Dense { item_shape } => {
                let b = self.gather(&[index])?;
                Ok((item_shape.clone(), b.data))
            }
            Geometry::Ragged => {
                let b = self.gather_ragged(&[index])?;
                let (shape, bytes) = b.record(0);
                let mut data = AlignedBytes::zeroed(bytes.len());
                data.as_mut_slice().copy_from_slice(bytes);
                Ok((shape.to_vec(), data))
            }
        }
    }

    /// Stored bytes of the published records (sum of `phys_length`), which
    /// equals `tail_offset` for stores written by loaderx and zrecord.
    pub fn stored_bytes(&self) -> u64 {
        self.info.header.tail_offset
    }

    /// Decoded bytes of every record (sum of `logic_length`), reading every location.
    ///
    /// # Errors
    /// `Io` on a failed read.
    pub fn logical_bytes(&self) -> Result<u64> {
        (0..self.len()).try_fold(0u64, |acc, i| Ok(acc + u64::from(self.loc_unchecked(i)?.logic_length)))
    }
}

/// Call `f(k, &mut buf[spans[k]])` for every span (sorted, disjoint), across
/// threads when `parallel`, by splitting the buffer in halves at span
/// boundaries: no per-gather list of sub-slices is allocated.
fn for_each_span<F>(buf: &mut [u8], spans: &[std::ops::Range<usize>], parallel: bool, f: &F) -> Result<()>
where
    F: Fn(usize, &mut [u8]) -> Result<()> + Sync,
{
    fn go<F>(
        buf: &mut [u8],
        base: usize,
        first: usize,
        spans: &[std::ops::Range<usize>],
        par: bool,
        f: &F,
    ) -> Result<()>
    where
        F: Fn(usize, &mut [u8]) -> Result<()> + Sync,
    {
        if !par || spans.len() <= 4 {
            return spans
                .iter()
                .enumerate()
                .try_for_each(|(k, s)| f(first + k, &mut buf[s.start - base..s.end - base]));
        }
        let mid = spans.len() / 2;
        let cut = spans[mid].start;
        let (left, right) = buf.split_at_mut(cut - base);
        let (a, b) = rayon::join(
            || go(left, base, first, &spans[..mid], par, f),
            || go(right, cut, first + mid, &spans[mid..], par, f),
        );
        a.and(b)
    }
    go(buf, 0, 0, spans, parallel, f)
}

/// Borrowed in-memory views of a store's files (see [`Store::view`]).
struct View<'a> {
    table: Option<&'a [u8]>,
    data: Option<&'a [u8]>,
}

/// `read_exact` from the start of a file without moving a shared cursor.
trait ReadAtStart {
    fn read_exact_at_start(&self, buf: &mut [u8]) -> io::Result<()>;
}

impl ReadAtStart for File {
    fn read_exact_at_start(&self, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, 0)
    }
}
