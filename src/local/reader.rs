//! The native reader: opens a store directory and walks gather plans over
//! its files, on the calling thread for small batches and across all cores
//! for large ones. It only knows how to get bytes (mmap or pread); every rule
//! of a gather lives in [`crate::format::plan`].

mod parts;

pub(crate) use parts::{Part, Parts};

use super::residency::Residency;
use super::{sys, work};
use crate::format::batch::{try_room, DenseBatch, RaggedBatch};
use crate::format::decode::slot_parts;
use crate::format::files::{DATA, DICT, META};
use crate::format::plan::Expected;
use crate::format::store_core::check_dict_size;
use crate::format::sums::{self, Sums, SumsHeader, SUMS};
use crate::format::{
    Codec, FileSizes, GatherPlan, RecordLoc, StoreCore, StoreFile, StoreInfo, Verify, LOC_SIZE, PAGE_SIZE,
};
use crate::local::claim::{self, Held, Role};
use crate::records::Records;
use crate::source::{direct::DirectSource, mmap::MmapSource, pread::PreadSource, ByteSource};
use crate::{Error, Result};
use rayon::prelude::*;
use std::cell::RefCell;
use std::fs::{File, TryLockError};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How a store's files are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// Memory-mapped (zero-copy while the records are in memory; a batch
    /// found cold is read with pread, many reads in flight: `cold.rs`); the
    /// default.
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

/// How a batch found out of memory reads its records ([`OpenOptions::cold_reads`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColdReads {
    /// `Direct` for a store more than [`DIRECT_BEYOND`] times the memory
    /// this process can fill with page cache (its cgroup's limit or the
    /// system's available memory, at open), else `Buffered`.
    #[default]
    Auto,
    /// Through the page cache (`pread`), which keeps what it read.
    Buffered,
    /// Past the page cache (`O_DIRECT`, see `source/direct.rs`), where the
    /// file system allows it (else buffered).
    Direct,
}

impl std::str::FromStr for ColdReads {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(ColdReads::Auto),
            "buffered" => Ok(ColdReads::Buffered),
            "direct" => Ok(ColdReads::Direct),
            _ => Err(format!("unknown cold reads {s:?} (expected auto, buffered or direct)")),
        }
    }
}

/// How many times the memory left for page cache a store's `data.zr` must
/// be for [`ColdReads::Auto`] to read it past the page cache. Buffered,
/// a store that fits turns warm after its first epoch, and one `k` times
/// memory still finds about `1/k` of each later epoch's records in memory
/// (an epoch reads every record once, in an order unrelated to the last
/// one's); direct reads skip the cache's work (inserting, reclaiming: 5-14%
/// of a cold 64 KiB read on this VM, `source/direct.rs`) but find nothing
/// there. Beyond 8 times, the hits are worth less than that work, and the
/// store no longer pushes everything else out of the page cache.
pub const DIRECT_BEYOND: u64 = 8;

/// Options for [`Store::open_with`].
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// How to read the files.
    pub backend: Backend,
    /// Take loaderx's shared `flock` on `meta.zr` (default true). Without
    /// it no writer is kept out, so the files are read with `pread`
    /// whatever `backend` says: a map is only sound over bytes no other
    /// process may change while it lives (see `source/mmap.rs`).
    pub lock: bool,
    /// Check every gathered record against the `sums.zr` sidecar (default
    /// off). Opening checks the sidecar itself, the location table and the
    /// dictionary first.
    pub verify: Verify,
    /// How batches found out of memory are read (mmap backend; default
    /// `Auto`).
    pub cold_reads: ColdReads,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { backend: Backend::Mmap, lock: true, verify: Verify::Off, cold_reads: ColdReads::Auto }
    }
}

/// Location tables larger than this are read entry by entry instead of being
/// loaded at open (pread backend only; mmap reads them in place).
const MAX_OWNED_TABLE: u64 = 256 << 20;
/// Batches with at least this many decoded bytes fan out across threads
/// ([`Store::parallel`]), by the smallest batches that gained (interleaved,
/// from Python, 2 cores): compressed Dense rows from 16 KiB (8 token
/// blocks: 1.07-1.24x; 4 lost 16-34%), compressed Ragged records from 8
/// KiB (their parts start on the calling thread at once, see `work.rs`; 16
/// token records: 1.07-1.15x), raw Dense rows from 1 MiB (1-2 MiB:
/// 1.2-1.4x), raw Ragged records from 4 MiB (2 MiB lost 8%). (One 128 KiB
/// threshold for every compressed batch left batches of 16 to 48 token
/// blocks, or 32 to 128 token records, on one thread: 1.3-1.7x slower.)
const PAR_BYTES_DENSE_ZSTD: usize = 16 << 10;
const PAR_BYTES_RAGGED_ZSTD: usize = 8 << 10;
const PAR_BYTES_DENSE_RAW: usize = 1 << 20;
const PAR_BYTES_RAGGED_RAW: usize = 4 << 20;
/// The smallest part a parallel gather is cut into ([`work::guided`], unless
/// one record is larger): about 8 token records, 5 µs of decoding.
/// (Fixed counts of 12 to 24 parts of 256 token records did best; 32 and 64
/// lost 10-20% to taking parts.)
const MIN_PART_BYTES: usize = 4 << 10;
/// How far ahead of its copy a Dense row's bytes are asked for (see
/// `Parts::prefetch_ahead` in `reader/parts.rs`).
const PREFETCH_ROWS: usize = 8;
/// Bytes of each record (and its checksum) asked for ahead of the copy: all
/// of a small record; the hardware prefetcher follows a long one's stream.
const PREFETCH_BYTES: u32 = 4096;

/// An open store, safe to share between threads (`&Store` gathers concurrently).
///
/// Reading goes through the [`Records`] trait (`use zrecord::Records`).
pub struct Store {
    core: StoreCore,
    dir: PathBuf,
    meta: Box<dyn ByteSource>,
    data: Box<dyn ByteSource>,
    table: Option<Vec<u8>>,
    /// The sidecar's record checksums, for checked gathers.
    sums: Option<Vec<u8>>,
    /// How the files are read (for [`Store::from_sources`]: as the sources do).
    backend: Backend,
    /// `data.zr` read with pread or direct I/O, for batches whose records
    /// are not in memory (mmap backend only): see [`Store::access`].
    cold_data: Option<Box<dyn ByteSource>>,
    /// Whether `cold_data` reads past the page cache.
    cold_direct: bool,
    /// What the last residency probes found ([`Store::access`]).
    residency: Residency,
    /// Gathers that read cold so far.
    cold_gathers: AtomicU64,
    /// The shared lock on `meta.zr`, and the store counted as open in this process.
    _lock: Option<(File, Held)>,
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

/// Per-thread buffers reused by every gather, so a warm gather allocates
/// nothing (one spread across threads, rayon's 16-byte task for the pool).
#[derive(Default)]
struct Scratch {
    /// Compressed records read with pread.
    stored: Vec<u8>,
    /// A Ragged gather's locations and decode slots.
    locs: Vec<RecordLoc>,
    slots: Vec<Range<usize>>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Take loaderx's shared lock on `meta.zr`. A lock that is held is asked for
/// again for up to 50 ms before the store is called busy: a writer that
/// has just closed can still hold it through a child process forked
/// meanwhile (its copy of the descriptor lives until the child's `exec`),
/// which a test suite spawning processes next to a writer met once.
fn lock_shared(meta: &File, name: &str, dir: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    loop {
        match meta.try_lock_shared() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(TryLockError::WouldBlock) => return Err(claim::busy(dir, name)),
            Err(TryLockError::Error(e)) => return Err(Error::io(dir.join(META), "lock", e)),
        }
    }
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
    /// use zrecord::{Records, Store};
    /// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loaderx-2.0.1/dense-f32-zstd");
    /// let store = Store::open(dir)?;
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
            if dir.exists() {
                let check = "not a store directory: it is a file (a store is a directory holding meta.zr and data.zr)";
                return Err(Error::BadFormat { store: name, check: check.into() });
            }
            return Err(Error::NotFound { store: name, what: "no such store directory".into() });
        }
        let Some(meta_file) = open_file(&dir, META)? else {
            return Err(Error::NotFound { store: name, what: "meta.zr is missing".into() });
        };
        if options.lock {
            lock_shared(&meta_file, &name, &dir)?;
        }
        let Some(data_file) = open_file(&dir, DATA)? else {
            return Err(Error::BadFormat { store: name, check: "data.zr is missing".into() });
        };
        let backend = if options.lock { options.backend } else { Backend::Pread };
        let source = |file: &File, which: &str| -> Result<Box<dyn ByteSource>> {
            let path = dir.join(which);
            Ok(match backend {
                Backend::Mmap => {
                    // SAFETY: `backend` is Mmap only with the shared lock held
                    // for the store's life (see `MmapSource::new`).
                    #[allow(unsafe_code)]
                    let map = unsafe { MmapSource::new(file) }.map_err(|e| Error::io(&path, "mmap", e))?;
                    if which == DATA {
                        map.advise_random();
                    }
                    Box::new(map)
                }
                Backend::Pread => Box::new(
                    PreadSource::new(file.try_clone().map_err(|e| Error::io(&path, "open", e))?)
                        .map_err(|e| Error::io(&path, "stat", e))?,
                ),
            })
        };
        let meta = source(&meta_file, META)?;
        // Records are read at random: no readahead window around each miss
        // (8 MiB on this VM's disk: one cold 64 KiB record read 8 MiB, a
        // batch of 256 records 1.5 GiB). Cold batches ask for exactly their
        // records instead (`Store::read_ahead`). The location table keeps
        // the default: reading it ahead is what a gather wants.
        sys::advise_random(&data_file);
        let data = source(&data_file, DATA)?;
        let dict_bytes = match open_file(&dir, DICT)? {
            Some(f) => {
                let path = dir.join(DICT);
                let size = f.metadata().map_err(|e| Error::io(&path, "stat", e))?.len();
                check_dict_size(&name, size)?;
                let mut bytes = vec![0u8; size as usize];
                crate::local::sys::read_exact_at(&f, &mut bytes, 0)
                    .map_err(|e| Error::io(&path, "read", e))?;
                Some(bytes)
            }
            None => None,
        };
        let mut store = Store::from_sources(name, meta, data, dict_bytes)?;
        if options.verify != Verify::Off {
            match open_file(&dir, SUMS)? {
                Some(f) => {
                    let sidecar = read_sidecar(store.info(), &dir, &f)?;
                    store = store.with_sums(sidecar)?;
                }
                None if options.verify == Verify::Always => return Err(sums::not_sealed(&store.info().name)),
                None => {}
            }
        }
        if backend == Backend::Mmap {
            let direct = match options.cold_reads {
                ColdReads::Auto => bigger_than_memory(store.info().sizes.data),
                c => c == ColdReads::Direct,
            };
            store.read_cold(&data_file, &dir.join(DATA), direct)?;
        }
        // Counted as open in this process while locked (for "store busy").
        store._lock = options.lock.then(|| (meta_file, claim::hold(&dir, Role::Reader)));
        store.dir = dir;
        store.backend = backend;
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
        let sizes = FileSizes { meta: meta.size(), data: data.size(), dict: None };
        let mut head = vec![0u8; sizes.meta.min(PAGE_SIZE) as usize];
        meta.read_exact_at(0, &mut head).map_err(|e| Error::io(&name, "read meta.zr", e))?;
        let core = StoreCore::open(&name, &head, sizes, dict_bytes)?;
        let table_len = core.info().len() * LOC_SIZE;
        let table = if meta.slice(PAGE_SIZE, table_len as usize).is_none() && table_len <= MAX_OWNED_TABLE {
            let mut t = vec![0u8; table_len as usize];
            meta.read_exact_at(PAGE_SIZE, &mut t).map_err(|e| Error::io(&name, "read meta.zr", e))?;
            Some(t)
        } else {
            None
        };
        let backend = if meta.slice(0, 0).is_some() { Backend::Mmap } else { Backend::Pread };
        Ok(Store {
            dir: PathBuf::from(&name),
            core,
            meta,
            data,
            table,
            sums: None,
            backend,
            cold_data: None,
            cold_direct: false,
            residency: Residency::default(),
            cold_gathers: AtomicU64::new(0),
            _lock: None,
        })
    }

    /// Check every later gather against a checksum sidecar (`sums.zr`'s
    /// bytes), after checking the sidecar itself: its own checksum, that it
    /// covers exactly this store's records, and `meta.zr`'s table and
    /// `dict.zr` against it.
    ///
    /// # Errors
    /// `BadFormat` for a broken sidecar, `ChecksumMismatch` naming the file
    /// that does not match, `Io`.
    pub fn with_sums(mut self, sidecar: Vec<u8>) -> Result<Store> {
        let name = self.info().name.clone();
        let parsed = Sums::parse(&name, &sidecar)?;
        let span = sums::table_span(self.len());
        let len = (span.end - span.start) as usize;
        let table_ok = match self.meta.slice(0, len) {
            Some(t) => sums::check_store(&name, &parsed.header, self.len(), Some(t), self.dict_bytes()),
            None => {
                let mut t = vec![0u8; len];
                self.meta.read_exact_at(0, &mut t).map_err(|e| self.io_err(StoreFile::Meta, e))?;
                sums::check_store(&name, &parsed.header, self.len(), Some(&t), self.dict_bytes())
            }
        };
        table_ok?;
        self.sums = Some(sidecar[sums::HEADER_LEN as usize..].to_vec());
        Ok(self)
    }

    /// The checksum sidecar (`sums.zr`'s bytes) of the store as it is now:
    /// every record's stored bytes, the location table and the dictionary,
    /// hashed across all cores.
    ///
    /// # Errors
    /// `BadFormat` for a location breaking a rule (a broken store is not
    /// sealed), `Io`.
    pub fn sidecar(&self) -> Result<Vec<u8>> {
        let info = self.info();
        let tail = info.header.tail_offset;
        let mut records = Vec::with_capacity(self.len() as usize);
        // In runs of records, each asked for as a whole first: data.zr is
        // read at random, so a cold store would otherwise fault in one page
        // at a time.
        const RUN: u64 = 4096;
        for start in (0..self.len()).step_by(RUN as usize) {
            let run = start..self.len().min(start + RUN);
            let (first, last) = (self.loc_at(run.start)?, self.loc_at(run.end - 1)?);
            let (from, to) =
                (first.offset.min(tail), last.offset.saturating_add(last.phys_length.into()).min(tail));
            // (Bounded: locations are not validated yet.)
            self.data.will_need(from, to.saturating_sub(from).min(256 << 20));
            let sums = run
                .into_par_iter()
                .map(|i| {
                    let loc = self.loc_at(i)?;
                    loc.validate(&info.name, i, info.codec(), tail)?;
                    self.with_stored(&*self.data, loc.offset..loc.end(), |b| Ok(sums::checksum(b)))
                })
                .collect::<Result<Vec<u64>>>()?;
            records.extend(sums);
        }
        let span = sums::table_span(self.len());
        let mut table = vec![0u8; (span.end - span.start) as usize];
        self.meta.read_exact_at(0, &mut table).map_err(|e| self.io_err(StoreFile::Meta, e))?;
        Ok(Sums::new(&table, self.dict_bytes(), records).encode())
    }

    /// Whether gathers check records against a checksum sidecar.
    pub fn is_checked(&self) -> bool {
        self.sums.is_some()
    }

    /// The checksums gathers compare stored bytes with, when checked.
    fn expected(&self) -> Option<Expected<'_>> {
        self.sums.as_deref().map(Expected::ByIndex)
    }

    /// How the store's files are read: `Pread` when it was opened without
    /// the lock, or from sources that hold no bytes in memory.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Gathers so far that found their records out of memory and read them
    /// cold (see `docs/ARCHITECTURE.md`, "How a gather runs").
    pub fn cold_gathers(&self) -> u64 {
        self.cold_gathers.load(Ordering::Relaxed)
    }

    /// Whether batches found out of memory read past the page cache
    /// ([`ColdReads`]).
    pub fn reads_cold_direct(&self) -> bool {
        self.cold_direct
    }

    /// Read cold batches of `data` (`data.zr` at `path`) with direct I/O
    /// (`direct`, where the file system has it) or buffered.
    fn read_cold(&mut self, data: &File, path: &Path, direct: bool) -> Result<()> {
        let file = || data.try_clone().map_err(|e| Error::io(path, "open", e));
        // Where the file system has no direct I/O, buffered.
        let direct = if direct { DirectSource::new(file()?).ok() } else { None };
        self.cold_direct = direct.is_some();
        self.cold_data = Some(match direct {
            Some(d) => Box::new(d),
            None => Box::new(PreadSource::new(file()?).map_err(|e| Error::io(path, "stat", e))?),
        });
        Ok(())
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Record `index`'s location as stored (not validated), after `index`
    /// was checked to be in range.
    fn loc_at(&self, index: u64) -> Result<RecordLoc> {
        if let Some(t) = &self.table {
            return Ok(RecordLoc::from_table(t, index as usize));
        }
        let at = RecordLoc::position(index);
        if let Some(s) = self.meta.slice(at, LOC_SIZE as usize) {
            return Ok(RecordLoc::decode(s.try_into().expect("16 bytes")));
        }
        let mut b = [0u8; LOC_SIZE as usize];
        self.meta.read_exact_at(at, &mut b).map_err(|e| self.io_err(StoreFile::Meta, e))?;
        Ok(RecordLoc::decode(&b))
    }

    /// The location table and the published data bytes, borrowed once per
    /// gather when the backend holds them in memory (mmap), so the per-record
    /// path is plain slice indexing instead of a backend call per access.
    fn in_memory(&self) -> InMemory<'_> {
        let table = match &self.table {
            Some(t) => Some(t.as_slice()),
            None => usize::try_from(self.len() * LOC_SIZE).ok().and_then(|n| self.meta.slice(PAGE_SIZE, n)),
        };
        let data = usize::try_from(self.info().header.tail_offset).ok().and_then(|n| self.data.slice(0, n));
        InMemory { table, data, src: &*self.data, cold: false }
    }

    /// How `plan`'s records are read: from memory ([`Store::in_memory`])
    /// while they are resident, else cold. A cold batch first asks the OS
    /// for its location entries, then reads every record at once with
    /// pread ([`Parts::read_cold`]) so the device works on all of them
    /// together: no map of cold pages, so the process's resident memory
    /// stays its batches, not the store. Which: see [`Residency::is_cold`].
    fn access(&self, plan: &GatherPlan<'_>) -> InMemory<'_> {
        let idx = plan.indices();
        let cold = self.residency.is_cold(idx.len(), |j| self.out_of_memory(idx[j]));
        self.read_as(plan, cold)
    }

    /// How `plan` reads, cold or not as decided: a cold one counted, and
    /// its location entries asked for.
    fn read_as(&self, plan: &GatherPlan<'_>, cold: bool) -> InMemory<'_> {
        if cold {
            self.cold_gathers.fetch_add(1, Ordering::Relaxed);
            self.read_ahead(plan);
        }
        self.memory(cold)
    }

    /// How a gather reads: from memory, or (`cold`) with pread.
    fn memory(&self, cold: bool) -> InMemory<'_> {
        let warm = self.in_memory();
        if !cold {
            return warm;
        }
        let src: &dyn ByteSource = match &self.cold_data {
            Some(cold) => &**cold,
            None => &*self.data,
        };
        InMemory { table: warm.table, data: None, src, cold: true }
    }

    /// Whether record `index`'s first page is (known to be) out of memory.
    pub(crate) fn out_of_memory(&self, index: u64) -> bool {
        let loc = self.loc_at(index);
        loc.is_ok_and(|loc| self.data.is_resident(loc.offset) == Some(false))
    }

    /// Ask the OS for every location entry of `plan` without waiting,
    /// unless the table is owned or its first entry of the batch is in
    /// memory. (The records themselves are read by [`Parts::read_cold`]:
    /// asking for them with `POSIX_FADV_WILLNEED` first, as before, waited
    /// for the reads here, one at a time.)
    fn read_ahead(&self, plan: &GatherPlan<'_>) {
        let first = RecordLoc::position(plan.indices()[0]);
        if self.table.is_none() && self.meta.is_resident(first) != Some(true) {
            for &i in plan.indices() {
                self.meta.will_need(RecordLoc::position(i), LOC_SIZE);
            }
        }
    }

    pub(super) fn io_err(&self, file: StoreFile, e: io::Error) -> Error {
        Error::io(self.dir.join(file.name()), "read", e)
    }

    /// Read `data.zr` bytes `range` (within `tail_offset`) from `src` and
    /// hand them to `f`.
    fn with_stored<T>(
        &self,
        src: &dyn ByteSource,
        range: Range<u64>,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let len = (range.end - range.start) as usize;
        if let Some(bytes) = src.slice(range.start, len) {
            return f(bytes);
        }
        SCRATCH.with(|s| {
            let stored = &mut s.borrow_mut().stored;
            stored.resize(len, 0);
            src.read_exact_at(range.start, stored).map_err(|e| self.io_err(StoreFile::Data, e))?;
            f(stored)
        })
    }

    /// Decode record `k` of `plan`, at checked `loc`, into `dst` (`ahead`:
    /// see [`GatherPlan::decode_ahead`]).
    #[inline(always)]
    fn read_record(
        &self,
        mem: &InMemory<'_>,
        plan: &GatherPlan<'_>,
        k: usize,
        loc: &RecordLoc,
        dst: &mut [u8],
        ahead: &[u8],
    ) -> Result<()> {
        match mem.data {
            // The location is checked: `offset + phys_length <= tail_offset`.
            Some(d) => plan.decode_ahead(k, &d[loc.offset as usize..loc.end() as usize], dst, ahead),
            None if self.codec() == Codec::Raw && !plan.fetches_ahead() => {
                mem.src.read_exact_at(loc.offset, dst).map_err(|e| self.io_err(StoreFile::Data, e))
            }
            None => self.with_stored(mem.src, loc.offset..loc.end(), |src| plan.decode(k, src, dst)),
        }
    }

    /// Check every location of `plan` (and big frames' headers) before its
    /// batch is sized, collecting them into `locs`.
    fn check_first(
        &self,
        mem: &InMemory<'_>,
        plan: &GatherPlan<'_>,
        locs: &mut Vec<RecordLoc>,
    ) -> Result<()> {
        Parts::one(&Part::new(self, *mem, *plan)).check_locs(locs)
    }

    /// Whether a batch of `n` records, `total_bytes` decoded, fans out
    /// across threads. Raw records cost about a copy, checked or not (a
    /// checked gather hashes while it copies, see `checksum.rs`), so they
    /// need more work to pay for the hand-off.
    pub(crate) fn parallel(&self, total_bytes: usize, n: usize) -> bool {
        let threshold = match (self.codec() == Codec::Raw, self.info().item_shape().is_some()) {
            (false, true) => PAR_BYTES_DENSE_ZSTD,
            (false, false) => PAR_BYTES_RAGGED_ZSTD,
            (true, true) => PAR_BYTES_DENSE_RAW,
            (true, false) => PAR_BYTES_RAGGED_RAW,
        };
        n > 1 && total_bytes >= threshold && work::threads() > 1
    }

    /// Fill `out` with the rows of a Dense `plan`.
    fn fill_dense(&self, mem: &InMemory<'_>, plan: &GatherPlan<'_>, out: &mut [u8]) -> Result<()> {
        let row = plan.row().expect("a Dense plan");
        if row == 0 || plan.is_empty() {
            return Ok(());
        }
        let mut rows: Vec<&mut [u8]> = out.chunks_mut(row).collect();
        self.fill_rows(mem, plan, &mut rows)
    }

    /// Fill `rows[k]` with row `k` of a Dense `plan` (rows of a batch in
    /// any order: a dataset's shard fills its rows of a batch in place).
    fn fill_rows(&self, mem: &InMemory<'_>, plan: &GatherPlan<'_>, rows: &mut [&mut [u8]]) -> Result<()> {
        let row = plan.row().expect("a Dense plan");
        if row == 0 || plan.is_empty() {
            return Ok(());
        }
        let part = Part::new(self, *mem, *plan);
        let records = Parts::one(&part);
        match mem.cold {
            true => records.fill_rows_cold(rows),
            false => records.fill_rows(row, rows),
        }
    }

    /// Gather Dense records `indices` into `rows` (one row's bytes each, in
    /// the gather's order): a mixture's sources, or a dataset's batch held
    /// by one shard, gather their rows of a batch straight into their places.
    ///
    /// # Errors
    /// As [`Records::gather_into`].
    pub(crate) fn gather_rows(&self, indices: &[u64], rows: &mut [&mut [u8]]) -> Result<()> {
        let plan = GatherPlan::dense(&self.core, indices)?.checked(self.expected());
        let row = plan.row().expect("a Dense plan");
        crate::records::check_rows(self.core.info(), indices, rows, row)?;
        self.fill_rows(&self.access(&plan), &plan, rows)
    }

    /// This store's part of a dataset's Dense gather: records `indices`,
    /// read cold or not as the dataset's column decided for the batch.
    ///
    /// # Errors
    /// As [`Records::gather_into`] before it reads.
    pub(crate) fn dense_part<'a>(&'a self, indices: &'a [u64], cold: bool) -> Result<Part<'a>> {
        let plan = GatherPlan::dense(&self.core, indices)?.checked(self.expected());
        Ok(Part::new(self, self.read_as(&plan, cold), plan))
    }

    /// This store's part of a dataset's Ragged gather (as [`Store::dense_part`]).
    ///
    /// # Errors
    /// As [`Records::gather_ragged_into`] before it reads.
    pub(crate) fn ragged_part<'a>(&'a self, indices: &'a [u64], cold: bool) -> Result<Part<'a>> {
        let plan = GatherPlan::ragged(&self.core, indices)?.checked(self.expected());
        Ok(Part::new(self, self.read_as(&plan, cold), plan))
    }

    /// Raw Ragged records in memory: parse each prefix where it lies and copy
    /// only the payload, once, to its final aligned place.
    fn ragged_from_memory(
        &self,
        data: &[u8],
        plan: &GatherPlan<'_>,
        locs: &[RecordLoc],
        batch: &mut RaggedBatch,
    ) -> Result<()> {
        let src = |loc: &RecordLoc| &data[loc.offset as usize..loc.end() as usize];
        plan.begin_ragged(batch);
        try_room(&mut batch.spans, locs.len()).map_err(|e| plan.out_of_memory(e, "the spans"))?;
        let mut at = 0;
        for (k, loc) in locs.iter().enumerate() {
            plan.place_ragged(k, src(loc), &mut at, batch)?;
        }
        batch.data.reuse(at).map_err(|e| plan.out_of_memory(e, "a Ragged batch"))?;
        let spans = std::mem::take(&mut batch.spans);
        // A checked gather hashes each record as it copies it.
        let copy = |k: usize, dst: &mut [u8]| plan.copy_raw(k, src(&locs[k]), dst);
        let result = for_each_span(batch.data.as_mut_slice(), &spans, self.parallel(at, plan.len()), &copy);
        batch.spans = spans;
        result
    }

    /// Decode every record into its slot of the batch buffer, then pack.
    fn ragged_by_slots(
        &self,
        mem: &InMemory<'_>,
        plan: &GatherPlan<'_>,
        locs: &[RecordLoc],
        slots: &mut Vec<Range<usize>>,
        batch: &mut RaggedBatch,
    ) -> Result<()> {
        let part = Part::new(self, *mem, *plan);
        plan.fill_ragged(locs, slots, batch, |buf, slots| Parts::one(&part).decode_slots(locs, buf, slots))
    }
}

impl Records for Store {
    fn core(&self) -> &StoreCore {
        &self.core
    }

    fn local_dir(&self) -> Option<&Path> {
        Some(&self.dir)
    }

    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        self.info().check_indices(indices)?;
        indices.iter().map(|&i| self.loc_at(i)).collect()
    }

    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let plan = GatherPlan::dense_into(&self.core, indices, out.len())?.checked(self.expected());
        self.fill_dense(&self.access(&plan), &plan, out)
    }

    fn gather_rows(&self, indices: &[u64], rows: &mut [&mut [u8]]) -> Result<()> {
        Store::gather_rows(self, indices, rows)
    }

    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let plan = GatherPlan::dense(&self.core, indices)?.checked(self.expected());
        let mem = self.access(&plan);
        if plan.checks_first() {
            with_scratch_locs(|locs, _| self.check_first(&mem, &plan, locs))?;
        }
        plan.size_dense(batch)?;
        self.fill_dense(&mem, &plan, batch.data.as_mut_slice())
    }

    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        let plan = GatherPlan::ragged(&self.core, indices)?.checked(self.expected());
        let mem = self.access(&plan);
        with_scratch_locs(|locs, slots| {
            self.check_first(&mem, &plan, locs)?;
            if mem.cold {
                // Laid out from the checked locations, then each record
                // decoded into its slot by the thread that read it.
                return plan.fill_ragged(locs, slots, batch, |buf, slots| {
                    Parts::one(&Part::new(self, mem, plan)).read_cold(locs, &mut slot_parts(buf, slots))
                });
            }
            match mem.data {
                Some(data) if self.codec() == Codec::Raw => self.ragged_from_memory(data, &plan, locs, batch),
                _ => self.ragged_by_slots(&mem, &plan, locs, slots, batch),
            }
        })
    }
}

/// Whether `bytes` of a store (or a dataset's column) are too many for the
/// page cache to be worth keeping them ([`DIRECT_BEYOND`]).
pub(crate) fn bigger_than_memory(bytes: u64) -> bool {
    sys::memory_room().is_some_and(|room| bytes / DIRECT_BEYOND > room)
}

/// Run `f` with this thread's reusable location and slot vectors, taken out
/// of its scratch while `f` runs (reads inside `f` use the scratch's buffer).
pub(crate) fn with_scratch_locs<T>(
    f: impl FnOnce(&mut Vec<RecordLoc>, &mut Vec<Range<usize>>) -> Result<T>,
) -> Result<T> {
    let (mut locs, mut slots) = SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        (std::mem::take(&mut s.locs), std::mem::take(&mut s.slots))
    });
    let result = f(&mut locs, &mut slots);
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        s.locs = locs;
        s.slots = slots;
    });
    result
}

/// Read a store's `sums.zr`, its header checked before the file is read
/// whole (so a hostile length never sizes an allocation).
fn read_sidecar(info: &StoreInfo, dir: &Path, file: &File) -> Result<Vec<u8>> {
    let path = dir.join(SUMS);
    let len = file.metadata().map_err(|e| Error::io(&path, "stat", e))?.len();
    let mut head = vec![0u8; len.min(sums::HEADER_LEN) as usize];
    crate::local::sys::read_exact_at(file, &mut head, 0).map_err(|e| Error::io(&path, "read", e))?;
    let header = SumsHeader::parse(&info.name, &head, len)?;
    sums::check_covers(&info.name, &header, info.len())?;
    let mut bytes = vec![0u8; len as usize];
    crate::local::sys::read_exact_at(file, &mut bytes, 0).map_err(|e| Error::io(&path, "read", e))?;
    Ok(bytes)
}

/// Call `f(k, &mut buf[spans[k]])` for every span (sorted, disjoint), across
/// threads when `parallel`: the buffer is cut at span boundaries into parts
/// of a few spans each, shared by the calling thread and the pool
/// ([`work::share`]).
fn for_each_span<F>(buf: &mut [u8], spans: &[Range<usize>], parallel: bool, f: &F) -> Result<()>
where
    F: Fn(usize, &mut [u8]) -> Result<()> + Sync,
{
    // The spans `first..first + group.len()`, in `part`, which starts at byte `base`.
    let run = |(first, base, part, group): (usize, usize, &mut [u8], &[Range<usize>])| {
        group.iter().enumerate().try_for_each(|(k, s)| f(first + k, &mut part[s.start - base..s.end - base]))
    };
    if !parallel {
        return run((0, 0, buf, spans));
    }
    let mut rest = buf;
    let mut base = 0;
    let parts =
        work::guided(spans.len(), rest.len(), |k| spans[k].len(), usize::MAX, MIN_PART_BYTES).map(move |r| {
            let group = &spans[r.clone()];
            let end = group.last().map_or(base, |s| s.end);
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(end - base);
            let item = (r.start, base, part, group);
            (rest, base) = (tail, end);
            item
        });
    work::share(parts, run)
}

/// Record `i`'s location entry in `table` (empty when out of range).
fn table_entry(table: &[u8], i: u64) -> &[u8] {
    let entry = LOC_SIZE as usize;
    table.get(i as usize * entry..(i as usize + 1) * entry).unwrap_or_default()
}

/// The first `PREFETCH_BYTES` stored bytes of `loc` in `data`, for a
/// prefetch (the location is not validated yet: empty when out of range).
fn stored_head<'d>(data: &'d [u8], loc: &RecordLoc) -> &'d [u8] {
    let start = usize::try_from(loc.offset).unwrap_or(usize::MAX);
    let len = loc.phys_length.min(PREFETCH_BYTES) as usize;
    data.get(start..start.saturating_add(len)).unwrap_or_default()
}

/// In-memory views of a store's files (see [`Store::in_memory`]), and where
/// the other reads go (see [`Store::access`]).
#[derive(Clone, Copy)]
struct InMemory<'a> {
    table: Option<&'a [u8]>,
    data: Option<&'a [u8]>,
    /// Where reads of records not in `data` go.
    src: &'a dyn ByteSource,
    /// Whether the gather reads cold: its records are read all at once
    /// and decoded as they arrive ([`Parts::read_cold`]).
    cold: bool,
}
