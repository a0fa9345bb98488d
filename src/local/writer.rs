//! The writer: create a store, append records (compressed in parallel, in
//! order, in bounded memory), and publish them with `close`.
//!
//! Until `close` succeeds the Header carries a building marker that loaderx
//! rejects as bad format and zrecord reports as an unpublished build, so a
//! build that dies midway never opens as a valid store anywhere.

use crate::codec::{compress_append, compress_bound, CompressDict};
use crate::format::dtype::Element;
use crate::format::files::{DATA, DICT, META};
use crate::format::schema::MAX_DENSE_RANK;
use crate::format::sums::{self, SumsHeader};
use crate::format::{
    ragged, Codec, DType, Geometry, Header, RecordLoc, Schema, DICT_MAGIC, HEADER_SIZE, MAX_RECORD_BYTES,
    MAX_SCHEMA_LEN, MAX_TAIL, PAGE_SIZE,
};
use crate::local::claim::{self, claim_directory, Held, Role};
use crate::local::sys::write_all_at;
use crate::local::work::lock;
use crate::{Error, Result};
use rayon::prelude::*;
use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// zstd level loaderx uses for the `zstd` codec.
pub const ZSTD_LEVEL: i32 = 3;
/// zstd level loaderx uses for the `zstd_dict` codec.
pub const ZSTD_DICT_LEVEL: i32 = 19;
/// Logical bytes compressed per round; bounds the writer's own memory.
const WINDOW_BYTES: usize = 32 << 20;
/// Records per round, at most: bounds the locations and checksums a round
/// holds (24 bytes a record) when records are tiny (a window of 32 Mi
/// one-byte labels held 768 MiB of them).
const WINDOW_RECORDS: usize = 1 << 20;
/// Target logical bytes per parallel encoding chunk of a window at fast zstd
/// levels (about 0.5 ms of work at level 3). Measured against 128 KiB (one
/// image a chunk) at load 3, 16 alternating writes: 0.96-1.01x loaderx on
/// 147 KiB images, against 0.94-0.95x; 1.10x on Ragged images, against 1.05x.
/// The last chunks of a window are smaller ([`Writer::chunk_parts`]).
const CHUNK_BYTES: usize = 512 << 10;
/// Chunks are not made smaller than this (unless one record is larger):
/// below it a chunk's lock and write cost more than the balance they buy.
const MIN_CHUNK_BYTES: usize = 16 << 10;
/// The same for raw Ragged records, which are only copied: chunks as large
/// as this are written with one allocating `pwrite` each ([`ALLOCATE_BYTES`])
/// (with 128 KiB chunks, raw Ragged images wrote at 0.94x loaderx, 1.14x
/// with these).
const RAW_CHUNK_BYTES: usize = 1 << 20;
/// The same for slow levels (at 19, 32 KiB of images or tokens take 3 to 10
/// ms): a chunk is what one thread may still be finishing while the other
/// idles at the end of an append.
const SLOW_CHUNK_BYTES: usize = 32 << 10;
/// Levels from which [`SLOW_CHUNK_BYTES`] applies.
const SLOW_LEVEL: i32 = 10;
/// Windows below this many logical bytes are encoded on the calling thread:
/// handing them to the pool costs more than it saves.
const PARALLEL_BYTES: usize = 64 << 10;
/// Raw Dense windows of at least this many bytes are checksummed on the pool
/// while the calling thread writes them (below it, waking a thread costs more
/// than hashing them after the write).
const HASH_ASIDE_BYTES: usize = 1 << 20;
/// Writes of at least this many bytes allocate their blocks first
/// ([`crate::local::sys::allocate`]); below it the extra call costs what it saves.
const ALLOCATE_BYTES: usize = 256 << 10;

/// How to create a store.
#[derive(Clone, Debug)]
pub struct CreateOptions {
    /// Record codec (default `zstd`, as loaderx).
    pub codec: Codec,
    /// Dictionary bytes for `zstd_dict` (see [`crate::training::dict`]).
    pub dict: Option<Vec<u8>>,
    /// Override the zstd level (default: loaderx's 3, or 19 with a dictionary).
    pub level: Option<i32>,
    /// `close` fsyncs data, locations, the sidecar, the header and the
    /// directory, in that order.
    pub durable: bool,
    /// Write the checksum sidecar `sums.zr` (default true), so silent
    /// corruption can be detected later; loaderx ignores the file.
    pub seal: bool,
    /// Replace a store already at the path (default false): an unpublished
    /// build a killed writer left, or a published store. A directory that
    /// holds anything but a store's files, or a store in use, is never
    /// replaced.
    pub overwrite: bool,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            codec: Codec::Zstd,
            dict: None,
            level: None,
            durable: false,
            seal: true,
            overwrite: false,
        }
    }
}

impl CreateOptions {
    /// Options for `codec` with no dictionary.
    pub fn codec(codec: Codec) -> Self {
        CreateOptions { codec, ..Default::default() }
    }
    /// Options for `zstd_dict` with the given dictionary.
    pub fn with_dict(dict: Vec<u8>) -> Self {
        CreateOptions { codec: Codec::ZstdDict, dict: Some(dict), ..Default::default() }
    }
}

/// A store being built. Drop without [`Writer::close`] leaves an unpublished build.
pub struct Writer {
    dir: PathBuf,
    name: String,
    meta: File,
    data: File,
    schema: Schema,
    row_bytes: Option<usize>,
    codec: Codec,
    level: i32,
    cdict: Option<CompressDict>,
    schema_length: u32,
    length: u64,
    tail: u64,
    durable: bool,
    /// The sidecar being built (`sums.zr.partial`): record checksums are
    /// written as their records are, the header at close.
    sums: Option<File>,
    dict_sum: u64,
    /// Encoding buffers reused from window to window.
    chunk_bufs: Vec<Mutex<EncodedChunk>>,
    /// Counts the store as being written by this process (for "store busy").
    _held: Held,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("path", &self.dir).field("len", &self.length).finish()
    }
}

/// One encoded chunk of a window: its stored bytes, and per record its
/// stored and decoded lengths and the checksum of its stored bytes.
type EncodedChunk = (Vec<u8>, Vec<Encoded>);

/// One encoded record of a chunk.
#[derive(Clone, Copy, Debug)]
struct Encoded {
    phys: u32,
    logic: u32,
    sum: u64,
}

/// The chunks of a window encoded but not yet written ([`Writer::encode_in_order`]).
struct InOrder {
    /// Which chunks are encoded, by chunk number.
    done: Vec<bool>,
    /// The chunk due next, and where in `data.zr` it goes.
    next: usize,
    at: u64,
    /// Whether a thread is writing (it writes every chunk that comes due).
    writing: bool,
}

thread_local! {
    /// A Ragged record's prefix and payload, together, for the compressor;
    /// kept per thread so that no record allocates (and faults in) its own.
    static STAGED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The sidecar while a writer builds it; renamed to `sums.zr` at close.
pub(crate) const SUMS_PARTIAL: &str = "sums.zr.partial";

/// One Ragged record to append: its shape and payload bytes (C order, the dtype's byte order).
pub type RecordRef<'a> = (&'a [u64], &'a [u8]);

impl Writer {
    /// Create a Dense store: every record one item of `item_shape`.
    ///
    /// # Errors
    /// `AlreadyExists`, `Busy`, `InvalidArgument` (bad dtype, empty rows,
    /// missing dictionary), `RecordTooLarge`, `Io`.
    ///
    /// ```
    /// use zrecord::{Codec, CreateOptions, Records, Store, Writer};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("labels");
    /// let mut w = Writer::create_dense(&path, "<i8", &[], CreateOptions::codec(Codec::Zstd))?;
    /// w.append_typed(&[3i64, 1, 4, 1, 5])?;
    /// w.close()?;
    /// let store = Store::open(&path)?;
    /// assert_eq!(store.gather(&[2])?.as_slice::<i64>()?, &[4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_dense(
        dir: impl AsRef<Path>,
        dtype: &str,
        item_shape: &[u64],
        options: CreateOptions,
    ) -> Result<Writer> {
        let geometry = Geometry::Dense { item_shape: item_shape.to_vec() };
        Writer::create(dir.as_ref(), dtype, geometry, options)
    }

    /// Create a Ragged store: each record carries its own shape.
    ///
    /// # Errors
    /// As [`Writer::create_dense`].
    pub fn create_ragged(dir: impl AsRef<Path>, dtype: &str, options: CreateOptions) -> Result<Writer> {
        Writer::create(dir.as_ref(), dtype, Geometry::Ragged, options)
    }

    fn create(dir: &Path, dtype: &str, geometry: Geometry, options: CreateOptions) -> Result<Writer> {
        let name = dir.display().to_string();
        let invalid = |why: String| Error::InvalidArgument { store: name.clone(), why };
        let dtype = DType::parse(dtype).map_err(invalid)?;
        let schema = Schema { dtype, geometry };
        let row_bytes = match schema.geometry {
            Geometry::Dense { ref item_shape } => {
                if item_shape.len() > MAX_DENSE_RANK {
                    return Err(invalid(format!(
                        "item_shape has {} dimensions (at most {MAX_DENSE_RANK}, as loaderx)",
                        item_shape.len()
                    )));
                }
                let row = schema.row_bytes().unwrap_or(u64::MAX);
                if row == 0 {
                    return Err(invalid("item_shape holds no bytes; records are never empty".into()));
                }
                if row > MAX_RECORD_BYTES {
                    return Err(Error::RecordTooLarge {
                        store: name,
                        index: 0,
                        bytes: row,
                        max: MAX_RECORD_BYTES,
                    });
                }
                Some(row as usize)
            }
            Geometry::Ragged => None,
        };
        let schema_bytes = schema.encode();
        if schema_bytes.len() > MAX_SCHEMA_LEN as usize {
            return Err(invalid(format!(
                "schema is {} bytes (at most {MAX_SCHEMA_LEN})",
                schema_bytes.len()
            )));
        }
        let level = options.level.unwrap_or(if options.codec == Codec::ZstdDict {
            ZSTD_DICT_LEVEL
        } else {
            ZSTD_LEVEL
        });
        let cdict = match (options.codec, &options.dict) {
            (Codec::ZstdDict, Some(d)) => {
                if !d.starts_with(&DICT_MAGIC) {
                    return Err(invalid(
                        "dictionary does not start with the zstd dictionary magic 37 A4 30 EC".into(),
                    ));
                }
                Some(CompressDict::new(d, level).map_err(invalid)?)
            }
            (Codec::ZstdDict, None) => {
                return Err(invalid("codec zstd_dict needs a dictionary (train one with train_dict)".into()))
            }
            (_, Some(_)) => {
                return Err(invalid(format!("a dictionary was given but the codec is {}", options.codec)))
            }
            _ => None,
        };

        let (meta, data) = claim_directory(dir, &name, options.overwrite)?;
        let header = Header {
            length: 0,
            tail_offset: 0,
            schema_length: schema_bytes.len() as u32,
            codec: options.codec,
        };
        let mut page = vec![0u8; PAGE_SIZE as usize];
        page[..HEADER_SIZE].copy_from_slice(&header.encode_building());
        page[HEADER_SIZE..HEADER_SIZE + schema_bytes.len()].copy_from_slice(&schema_bytes);
        write_all_at(&meta, &page, 0).map_err(|e| Error::io(dir.join(META), "write", e))?;
        if let Some(d) = &options.dict {
            write_new(&dir.join(DICT), d)?;
        }
        let sums_file = if options.seal {
            let path = dir.join(SUMS_PARTIAL);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(|e| Error::io(&path, "create", e))?;
            Some(f)
        } else {
            None
        };
        Ok(Writer {
            dir: dir.to_path_buf(),
            name,
            meta,
            data,
            schema,
            row_bytes,
            codec: options.codec,
            level,
            cdict,
            schema_length: header.schema_length,
            length: 0,
            tail: 0,
            durable: options.durable,
            sums: sums_file,
            dict_sum: options.dict.as_deref().map_or(0, sums::checksum),
            chunk_bufs: Vec::new(),
            _held: claim::hold(dir, Role::Writer),
        })
    }

    /// Records appended so far.
    pub fn len(&self) -> u64 {
        self.length
    }
    /// Whether nothing was appended yet.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }
    /// Stored bytes written so far.
    pub fn data_bytes(&self) -> u64 {
        self.tail
    }
    /// The store's dtype.
    pub fn dtype(&self) -> &DType {
        &self.schema.dtype
    }

    /// Append `n` Dense rows given as bytes (`n * row_bytes`, C order, the dtype's byte order).
    ///
    /// # Errors
    /// `InvalidArgument` for a Ragged store or a length that is not whole rows;
    /// `StoreFull`; `Io`. Nothing is recorded when an error is returned.
    pub fn append(&mut self, rows: &[u8]) -> Result<()> {
        let Some(row) = self.row_bytes else {
            return Err(self.invalid("this is a Ragged store; use append_ragged".into()));
        };
        if !rows.len().is_multiple_of(row) {
            return Err(self.invalid(format!("{} bytes are not whole rows of {row} bytes", rows.len())));
        }
        let per_window = (WINDOW_BYTES / row).clamp(1, WINDOW_RECORDS);
        for window in rows.chunks(per_window * row) {
            if self.codec == Codec::Raw {
                self.write_raw_rows(window, row)?;
            } else {
                let records: Vec<&[u8]> = window.chunks(row).collect();
                self.write_window(&records, None)?;
            }
        }
        Ok(())
    }

    /// Append Dense rows given as typed items (`T` must be the store's dtype).
    ///
    /// # Errors
    /// As [`Writer::append`], and `InvalidArgument` when `T` is not the dtype.
    pub fn append_typed<T: Element>(&mut self, items: &[T]) -> Result<()> {
        if !self.schema.dtype.matches::<T>() {
            return Err(self.invalid(format!(
                "cannot append [{}] to a {} store",
                std::any::type_name::<T>(),
                self.schema.dtype
            )));
        }
        self.append(bytemuck::cast_slice(items))
    }

    /// Append Ragged records, each `(shape, payload bytes)`; the shape prefix is built here.
    ///
    /// # Errors
    /// `InvalidArgument` for a Dense store, a payload that does not match its
    /// shape, or an empty record; `RecordTooLarge`; `StoreFull`; `Io`.
    /// Records are validated before anything is written.
    pub fn append_ragged(&mut self, records: &[RecordRef<'_>]) -> Result<()> {
        if self.row_bytes.is_some() {
            return Err(self.invalid("this is a Dense store; use append".into()));
        }
        for (k, (shape, bytes)) in records.iter().enumerate() {
            let index = self.length + k as u64;
            if shape.len() > ragged::MAX_RANK {
                return Err(self.invalid(format!("record {index}: rank {} exceeds 255", shape.len())));
            }
            let want = ragged::payload_len(shape, &self.schema.dtype);
            if want != Some(bytes.len() as u64) {
                return Err(self.invalid(format!(
                    "record {index}: shape {shape:?} of {} needs {} bytes, got {}",
                    self.schema.dtype,
                    want.map_or("more than 2^64".into(), |w| w.to_string()),
                    bytes.len()
                )));
            }
            if bytes.is_empty() {
                return Err(
                    self.invalid(format!("record {index}: empty records cannot be stored (shape {shape:?})"))
                );
            }
            let logic = (ragged::prefix_len(shape.len()) + bytes.len()) as u64;
            if logic > MAX_RECORD_BYTES {
                return Err(Error::RecordTooLarge {
                    store: self.name.clone(),
                    index,
                    bytes: logic,
                    max: MAX_RECORD_BYTES,
                });
            }
        }
        let mut start = 0;
        while start < records.len() {
            let mut bytes = 0usize;
            let mut end = start;
            while end < records.len()
                && (end == start || (bytes < WINDOW_BYTES && end - start < WINDOW_RECORDS))
            {
                bytes += records[end].1.len();
                end += 1;
            }
            self.write_window(&[], Some(&records[start..end]))?;
            start = end;
        }
        Ok(())
    }

    /// Encode one window of records (Dense rows or Ragged records) in
    /// parallel chunks, then write data and locations in order.
    fn write_window(&mut self, rows: &[&[u8]], ragged_records: Option<&[RecordRef<'_>]>) -> Result<()> {
        let n = ragged_records.map_or(rows.len(), <[_]>::len);
        if n == 0 {
            return Ok(());
        }
        let logical_len = |k: usize| match ragged_records {
            Some(recs) => ragged::prefix_len(recs[k].0.len()) + recs[k].1.len(),
            None => rows[k].len(),
        };
        let window_bytes: usize = (0..n).map(logical_len).sum();
        let parts = self.chunk_parts(n, window_bytes, logical_len);
        let chunks = parts.len();
        // Chunk buffers are kept between windows: no fresh pages to fault in
        // and zero for every window, and one reservation per chunk instead of
        // a Vec regrowing (and copying) as frames are appended.
        let sealed = self.sums.is_some();
        let mut encoded = std::mem::take(&mut self.chunk_bufs);
        encoded.resize_with(chunks, Default::default);
        encoded.truncate(chunks);
        let encode_chunk = |c: usize, (out, lens): &mut EncodedChunk| -> Result<()> {
            let range = parts[c].clone();
            out.clear();
            lens.clear();
            out.reserve(range.clone().map(|k| compress_bound(logical_len(k))).sum());
            for k in range {
                let start = out.len();
                let logical = match (ragged_records, self.codec) {
                    (Some(recs), Codec::Raw) => {
                        ragged::write_prefix(recs[k].0, out);
                        out.extend_from_slice(recs[k].1);
                        out.len() - start
                    }
                    (Some(recs), _) => STAGED.with_borrow_mut(|staged| {
                        staged.clear();
                        ragged::write_prefix(recs[k].0, staged);
                        staged.extend_from_slice(recs[k].1);
                        self.compress(staged, out).map(|()| staged.len())
                    })?,
                    (None, Codec::Raw) => {
                        out.extend_from_slice(rows[k]);
                        rows[k].len()
                    }
                    (None, _) => self.compress(rows[k], out).map(|()| rows[k].len())?,
                };
                let sum = if sealed { sums::checksum(&out[start..]) } else { 0 };
                lens.push(Encoded { phys: (out.len() - start) as u32, logic: logical as u32, sum });
            }
            Ok(())
        };
        let result = if chunks > 1 {
            self.encode_in_order(&encoded, &encode_chunk)
        } else {
            let chunk = encoded[0].get_mut().unwrap_or_else(PoisonError::into_inner);
            encode_chunk(0, chunk).and_then(|()| self.write_data_checked(self.tail, &chunk.0))
        }
        .and_then(|()| self.write_locs_of(n, &encoded));
        self.chunk_bufs = encoded;
        result
    }

    /// Compress one record as a frame appended to `out`.
    fn compress(&self, logical: &[u8], out: &mut Vec<u8>) -> Result<()> {
        compress_append(logical, self.level, self.cdict.as_ref(), out)
            .map(drop)
            .map_err(|why| self.invalid(why))
    }

    /// The records of each chunk of a window of `n` records (`bytes` logical
    /// bytes): one chunk for small windows;
    /// otherwise chunks of at most [`CHUNK_BYTES`] ([`RAW_CHUNK_BYTES`] raw,
    /// [`SLOW_CHUNK_BYTES`] at slow levels), shrinking towards the end of the
    /// window ([`crate::local::work::guided`]). (Against fixed chunks split by
    /// rayon, level-3 image writes measured the same within this machine's
    /// noise, ±3%; chunks now also finish in order, so writes follow the
    /// encoding instead of waiting for the first half.)
    fn chunk_parts(&self, n: usize, bytes: usize, logical_len: impl Fn(usize) -> usize) -> Vec<Range<usize>> {
        if n < 2 || bytes < PARALLEL_BYTES {
            return std::iter::once(0..n).collect();
        }
        let target = match self.codec {
            Codec::Raw => RAW_CHUNK_BYTES,
            _ if self.level >= SLOW_LEVEL => SLOW_CHUNK_BYTES,
            _ => CHUNK_BYTES,
        };
        crate::local::work::guided(n, bytes, logical_len, target, MIN_CHUNK_BYTES).collect()
    }

    /// Encode chunks on the calling thread and the pool ([`crate::local::work::share`])
    /// and write them at the data tail in order as they finish. Threads take
    /// chunks in order, so chunks finish nearly in order and the small last
    /// ones last; the thread that finishes the chunk due writes it, and every
    /// later one already done (as loaderx's lanes each write their own
    /// frames). No writer thread: handing each chunk to one cost a thread
    /// wake-up per chunk (4% of level-3 image writes in perf, in context
    /// switches). Nothing is recorded here; on error the bytes past the tail
    /// are garbage that the next append overwrites.
    fn encode_in_order<F>(&self, encoded: &[Mutex<EncodedChunk>], encode_chunk: &F) -> Result<()>
    where
        F: Fn(usize, &mut EncodedChunk) -> Result<()> + Sync,
    {
        let order =
            Mutex::new(InOrder { done: vec![false; encoded.len()], next: 0, at: self.tail, writing: false });
        crate::local::work::share(0..encoded.len(), |c| {
            // (The chunk's lock is released before `write_due` takes it.)
            let encoded_c = encode_chunk(c, &mut lock(&encoded[c]));
            encoded_c.and_then(|()| self.write_due(&order, encoded, c))
        })
    }

    /// Mark chunk `c` encoded; unless another thread is writing, write every
    /// chunk now due.
    fn write_due(&self, order: &Mutex<InOrder>, encoded: &[Mutex<EncodedChunk>], c: usize) -> Result<()> {
        let mut state = lock(order);
        state.done[c] = true;
        if state.writing {
            return Ok(()); // the writing thread takes it when it is due
        }
        state.writing = true;
        while state.next < encoded.len() && state.done[state.next] {
            let (due, at) = (state.next, state.at);
            drop(state);
            let chunk = lock(&encoded[due]);
            let written = self.write_data_checked(at, &chunk.0);
            let len = chunk.0.len() as u64;
            drop(chunk);
            state = lock(order);
            if let Err(e) = written {
                state.writing = false;
                return Err(e);
            }
            state.at += len;
            state.next += 1;
        }
        state.writing = false;
        Ok(())
    }

    /// Write the locations of encoded chunks already written at the data tail.
    fn write_locs_of(&mut self, n: usize, encoded: &[Mutex<EncodedChunk>]) -> Result<()> {
        let mut at = self.tail;
        let mut locs = Vec::with_capacity(n * 16);
        let mut sums = Vec::with_capacity(n * 8);
        for chunk in encoded {
            for e in &lock(chunk).1 {
                locs.extend_from_slice(
                    &RecordLoc { offset: at, phys_length: e.phys, logic_length: e.logic }.encode(),
                );
                sums.extend_from_slice(&e.sum.to_le_bytes());
                at += u64::from(e.phys);
            }
        }
        self.write_sums(&sums)?;
        self.write_locs(n, &locs, at)
    }

    /// Raw Dense rows are stored as they are, back to back: one write for the
    /// whole window (not one per row), then its locations.
    ///
    /// The rows' checksums are computed on the pool while this thread
    /// writes: the write is the kernel copying into the page cache, which
    /// takes one core, and hashing after it added 8% to raw writes (perf, 2
    /// KiB token rows and 147 KiB images alike).
    fn write_raw_rows(&mut self, window: &[u8], row: usize) -> Result<()> {
        self.check_room(window.len() as u64)?;
        let n = window.len() / row;
        let mut locs = Vec::with_capacity(n * 16);
        for k in 0..n as u64 {
            let loc = RecordLoc {
                offset: self.tail + k * row as u64,
                phys_length: row as u32,
                logic_length: row as u32,
            };
            locs.extend_from_slice(&loc.encode());
        }
        let mut sums = vec![0u8; if self.sums.is_some() { n * 8 } else { 0 }];
        let hash = |sums: &mut [u8], parallel: bool| {
            let each =
                |(dst, row): (&mut [u8], &[u8])| dst.copy_from_slice(&sums::checksum(row).to_le_bytes());
            if parallel {
                sums.par_chunks_mut(8).zip(window.par_chunks(row)).for_each(each);
            } else {
                sums.chunks_mut(8).zip(window.chunks(row)).for_each(each);
            }
        };
        let pool =
            crate::local::work::pool().filter(|_| !sums.is_empty() && window.len() >= HASH_ASIDE_BYTES);
        if let Some(pool) = pool {
            // In place: the calling thread writes (`rayon::join` from outside
            // the pool would hand both halves to the pool and sleep, two
            // thread hand-offs per append), the pool hashes.
            pool.threads.in_place_scope(|scope| {
                scope.spawn(|_| hash(&mut sums, true));
                self.write_data(self.tail, window)
            })?;
        } else {
            self.write_data(self.tail, window)?;
            hash(&mut sums, false);
        }
        self.write_sums(&sums)?;
        self.write_locs(n, &locs, self.tail + window.len() as u64)
    }

    /// Write the checksums of the records about to be recorded (after the
    /// ones recorded so far) to the sidecar being built.
    fn write_sums(&self, sums: &[u8]) -> Result<()> {
        match &self.sums {
            Some(f) => write_all_at(f, sums, sums::entry_range(self.length).start)
                .map_err(|e| Error::io(self.dir.join(SUMS_PARTIAL), "write", e)),
            None => Ok(()),
        }
    }

    /// Finish the sidecar for the header about to be published: its header
    /// (with the checksum of `meta.zr`'s table as published), then its name.
    fn finish_sums(&self, header: &Header) -> Result<()> {
        let Some(f) = &self.sums else { return Ok(()) };
        let partial = self.dir.join(SUMS_PARTIAL);
        let io = |op: &'static str| move |e| Error::io(self.dir.join(SUMS_PARTIAL), op, e);
        // The table as it will read once published: the final header over
        // the static page, then the locations written so far.
        let span = sums::table_span(self.length);
        let mut table = vec![0u8; (span.end - span.start) as usize];
        crate::local::sys::read_exact_at(&self.meta, &mut table, 0)
            .map_err(|e| Error::io(self.dir.join(META), "read", e))?;
        table[..HEADER_SIZE].copy_from_slice(&header.encode());
        let mut file = vec![0u8; sums::entry_range(self.length).start as usize];
        crate::local::sys::read_exact_at(f, &mut file[sums::HEADER_LEN as usize..], sums::HEADER_LEN)
            .map_err(io("read"))?;
        let head =
            SumsHeader { records: self.length, table: sums::checksum(&table), dict: self.dict_sum, own: 0 };
        head.seal(&mut file);
        write_all_at(f, &file[..sums::HEADER_LEN as usize], 0).map_err(io("write"))?;
        f.set_len(sums::entry_range(self.length).start).map_err(io("truncate"))?;
        if self.durable {
            f.sync_all().map_err(io("fsync"))?;
        }
        std::fs::rename(&partial, self.dir.join(sums::SUMS)).map_err(io("rename"))
    }

    /// Fail with `StoreFull` unless `bytes` more fit under `MAX_TAIL`.
    fn check_room(&self, bytes: u64) -> Result<()> {
        self.check_room_at(self.tail, bytes)
    }

    /// As [`Writer::check_room`] for bytes written at `at`.
    fn check_room_at(&self, at: u64, bytes: u64) -> Result<()> {
        if at.checked_add(bytes).is_none_or(|t| t > MAX_TAIL) {
            return Err(Error::StoreFull {
                store: self.name.clone(),
                why: format!("data.zr would pass 2^63-1 bytes (at {})", self.tail),
            });
        }
        Ok(())
    }

    /// Write the locations of `n` records just written and advance to `tail`.
    fn write_locs(&mut self, n: usize, locs: &[u8], tail: u64) -> Result<()> {
        write_all_at(&self.meta, locs, RecordLoc::position(self.length))
            .map_err(|e| Error::io(self.dir.join(META), "write", e))?;
        self.length += n as u64;
        self.tail = tail;
        Ok(())
    }

    /// [`Writer::write_data`] after checking the bytes fit under `MAX_TAIL`.
    fn write_data_checked(&self, at: u64, bytes: &[u8]) -> Result<()> {
        self.check_room_at(at, bytes.len() as u64)?;
        self.write_data(at, bytes)
    }

    fn write_data(&self, at: u64, bytes: &[u8]) -> Result<()> {
        if bytes.len() >= ALLOCATE_BYTES {
            crate::local::sys::allocate(&self.data, at, bytes.len() as u64);
        }
        write_all_at(&self.data, bytes, at).map_err(|e| Error::io(self.dir.join(DATA), "write", e))
    }

    fn invalid(&self, why: String) -> Error {
        Error::InvalidArgument { store: self.name.clone(), why }
    }

    /// Publish every appended record: write the final Header. With
    /// `durable`, data, locations, the header and the directory are fsynced
    /// in that order, so a crash never publishes bytes that are not on disk.
    ///
    /// # Errors
    /// `Io`; the store then stays an unpublished build.
    pub fn close(self) -> Result<()> {
        let meta_path = self.dir.join(META);
        let sync = |f: &File, path: PathBuf| f.sync_all().map_err(|e| Error::io(path, "fsync", e));
        if self.durable {
            sync(&self.data, self.dir.join(DATA))?;
            sync(&self.meta, meta_path.clone())?;
        }
        let header = Header {
            length: self.length,
            tail_offset: self.tail,
            schema_length: self.schema_length,
            codec: self.codec,
        };
        // The sidecar first: a crash before the header is published leaves a
        // sidecar that disagrees with the store, which readers report.
        self.finish_sums(&header)?;
        write_all_at(&self.meta, &header.encode(), 0).map_err(|e| Error::io(&meta_path, "write", e))?;
        if self.durable {
            sync(&self.meta, meta_path)?;
            let dir = File::open(&self.dir).map_err(|e| Error::io(&self.dir, "open", e))?;
            sync(&dir, self.dir.clone())?;
        }
        Ok(())
    }
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, "create", e))?;
    write_all_at(&f, bytes, 0).map_err(|e| Error::io(path, "write", e))
}
