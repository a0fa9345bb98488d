//! A node-local cache of remote files, shared by every process of a machine.
//!
//! [`CachedSource`] wraps any native transport. A read is mapped onto
//! aligned blocks of the remote file ([`CacheOptions::block`], 4 MiB by
//! default; a smaller file is one block); each block is fetched once, with
//! one request, into a file of the cache directory, and read from there
//! (through a map of the block file) ever after, by this process and every
//! other one using the directory.
//!
//! - **Versions.** A block's name holds the hashes of the file's URL and of
//!   its ETag, and the file's size: a replaced object has other names, so a
//!   stale block is never found. Each process learns a file's version once,
//!   with a one-byte read at its first use (the open store then keeps it, as
//!   every remote store does: a change under it is `StoreChanged`). A server
//!   that sends no ETag is read through, never cached.
//! - **Atomic blocks.** A block is written to a temporary file that is then
//!   renamed; a downloader killed on the way leaves only the temporary file,
//!   which no reader opens and the next eviction removes (its owner's `flock`
//!   is gone). Each block ends in a trailer (a magic and the XXH3-64 of its
//!   bytes), checked the first time a process reads the block: a damaged
//!   block is removed and fetched again, never served.
//! - **One download per block.** The downloader holds an exclusive `flock`
//!   on the block's lock stripe (one of [`STRIPES`] files); others wait on
//!   it, then find the block.
//! - **A bounded size.** Space is reserved under one lock for the whole
//!   directory before a block is fetched, counting every block and every
//!   download under way, and evicting the least recently used blocks first.
//!   When a block cannot fit (the limit is smaller than a block, or every
//!   byte is taken by downloads under way) the range is read through, straight
//!   from the remote: slower, never stuck.
//!
//! Waiting (on a lock, on the network) happens on the runtime's blocking
//! threads, never on the thread that drives a gather's reads.

use super::files::lock;
use super::runtime;
use super::transport::{Lent, LocalBoxFuture, RangeRead, Ranged, ReadRequest};
use super::AnyTransport;
use crate::format::StoreFile;
use crate::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub use super::options::CacheStats;

/// Lock stripes: a block's downloader locks stripe `hash % STRIPES`, a fixed
/// set of files that are never removed (removing a lock file races with
/// processes waiting on it).
pub const STRIPES: u64 = 256;

/// Blocks a prefetch fetches at once.
pub const WARMERS: usize = 8;

/// The trailer closing every block file: this magic, then the XXH3-64 of
/// the block's bytes (little-endian).
const MAGIC: &[u8; 8] = b"zrcache1";
const TRAILER: u64 = 16;

/// Where a cache lives and how big it may grow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// The directory (created when missing), shared by every process that
    /// names it.
    pub dir: PathBuf,
    /// Most bytes the directory's blocks (and downloads under way) may
    /// hold (default: no limit).
    pub limit: u64,
    /// Block size in bytes (default 4 MiB): one request fetches one block.
    pub block: u64,
}

impl CacheOptions {
    /// Default block size.
    pub const BLOCK: u64 = 4 << 20;
    /// Largest block size: a block is fetched, and checked, in memory.
    pub const MAX_BLOCK: u64 = 256 << 20;

    /// A cache in `dir` with no size limit.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CacheOptions { dir: dir.into(), limit: u64::MAX, block: Self::BLOCK }
    }

    /// The same, holding at most `limit` bytes.
    #[must_use]
    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }
}

/// Counters of this process, over every cache it uses.
#[derive(Default)]
struct Counters {
    gets: AtomicU64,
    bytes_fetched: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    evicted_bytes: AtomicU64,
    read_through: AtomicU64,
}

static COUNTERS: Counters = Counters {
    gets: AtomicU64::new(0),
    bytes_fetched: AtomicU64::new(0),
    hits: AtomicU64::new(0),
    misses: AtomicU64::new(0),
    evicted_bytes: AtomicU64::new(0),
    read_through: AtomicU64::new(0),
};

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// What the caches of this process have cost and saved so far (every cache
/// directory together; take differences for one epoch).
pub fn stats() -> CacheStats {
    let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let c = &COUNTERS;
    CacheStats {
        gets: g(&c.gets),
        bytes_fetched: g(&c.bytes_fetched),
        hits: g(&c.hits),
        misses: g(&c.misses),
        evicted_bytes: g(&c.evicted_bytes),
        read_through: g(&c.read_through),
    }
}

/// A remote file's version: its size and ETag.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Version {
    total: u64,
    etag: String,
}

/// What this process knows of one of the store's files.
#[derive(Clone, Debug)]
enum Known {
    /// Its version; its blocks are cached.
    Cached(Arc<Version>),
    /// The server names no version: read through.
    Through,
}

/// The state shared with blocking threads.
struct Shared {
    inner: AnyTransport,
    options: CacheOptions,
    blocks: PathBuf,
    versions: [Mutex<Option<Known>>; StoreFile::COUNT],
    /// Blocks (path, inode) whose trailer this process has checked.
    checked: Mutex<HashSet<(PathBuf, u64)>>,
    /// Held while a block is checked, so a block is read whole once.
    checking: Mutex<()>,
    /// Checked blocks kept mapped, by (file, index): a hit is a copy from
    /// the map, with no system call (a `stat` at most once a second).
    open: Mutex<HashMap<(StoreFile, u64), Arc<Held>>>,
}

/// A checked block file, mapped. Block files are never written after
/// their rename (eviction and repair remove them), so the map's bytes stay
/// what was checked; a removed block's map keeps its space until dropped.
struct Held {
    map: memmap2::Mmap,
    path: PathBuf,
    inode: u64,
    /// When this process last checked the block's name and set its mtime
    /// (seconds on `runtime::now`).
    touched: AtomicU64,
    /// When it was last read (on the clock [`READS`]), to drop the least
    /// recently read maps first.
    used: AtomicU64,
}

impl Held {
    /// Whether the block may still be read here. At most once a second per
    /// block: check that it still has its name (another process may have
    /// evicted it: let the map go, and its space with it) and mark it used
    /// now (its mtime orders eviction).
    fn fresh(&self) -> bool {
        self.used.store(READS.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        let now = runtime::now().as_secs();
        if self.touched.swap(now, Ordering::Relaxed) == now {
            return true;
        }
        let Ok(f) = File::open(&self.path) else { return false };
        let named = f.metadata().is_ok_and(|m| crate::local::sys::inode(&m) == self.inode);
        if named {
            let _ = f.set_modified(SystemTime::now());
        }
        named
    }

    /// The bytes `within` the block.
    fn bytes(&self, within: Range<u64>) -> Vec<u8> {
        self.map[within.start as usize..within.end as usize].to_vec()
    }
}

/// Block reads served from maps in this process: the clock of `Held::used`.
static READS: AtomicU64 = AtomicU64::new(0);

/// How many ranges ahead of its decoding a lent range's bytes are asked
/// for, and how many of them (all of a small record; the hardware
/// prefetcher follows a long one's stream): a local store's numbers.
const AHEAD: usize = 8;
const AHEAD_BYTES: usize = 4096;

/// Most block maps a store keeps; beyond, the least recently read half
/// is dropped.
const HELD: usize = 1024;

/// A transport whose reads go through a node-local cache directory.
pub struct CachedSource {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CachedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedSource").field("options", &self.shared.options).finish_non_exhaustive()
    }
}

impl CachedSource {
    /// Read `inner`'s files through the cache `options` describe.
    ///
    /// # Errors
    /// `Io` when the cache directory cannot be made; `InvalidArgument` for
    /// a block size of zero or above [`CacheOptions::MAX_BLOCK`], and for a
    /// cache directory another user owns or may write to.
    pub fn new(inner: AnyTransport, options: CacheOptions) -> Result<CachedSource> {
        if options.block == 0 || options.block > CacheOptions::MAX_BLOCK {
            return Err(Error::InvalidArgument {
                store: options.dir.display().to_string(),
                why: format!(
                    "the cache's block size must be 1 byte to {} MiB (a block is fetched and checked in memory), not {}",
                    CacheOptions::MAX_BLOCK >> 20,
                    options.block
                ),
            });
        }
        let blocks = options.dir.join("blocks");
        let locks = options.dir.join("locks");
        for d in [&blocks, &locks] {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, "create the cache directory", e))?;
            check_owner(d)?;
        }
        let shared = Shared {
            inner,
            options,
            blocks,
            versions: Default::default(),
            checked: Mutex::default(),
            checking: Mutex::default(),
            open: Mutex::default(),
        };
        Ok(CachedSource { shared: Arc::new(shared) })
    }
}

impl RangeRead for CachedSource {
    fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>> {
        Box::pin(async move {
            // Blocks already here are read on this thread; anything that may
            // wait (a lock, the network) on a blocking thread.
            if let Some(got) = self.shared.read_present(&req)? {
                return Ok(got);
            }
            let shared = self.shared.clone();
            runtime::spawn_blocking(move || shared.read(&req)).await.unwrap_or(Err(Error::Cancelled))
        })
    }
    /// Every block of `file` mapped here (a map is let go when its block is
    /// found evicted, at most a second after).
    fn holds_all(&self, file: StoreFile) -> bool {
        let Some(Known::Cached(v)) = self.shared.known(file) else { return false };
        let blocks = v.total.div_ceil(self.shared.options.block);
        let open = lock(&self.shared.open);
        (open.len() as u64) >= blocks && (0..blocks).all(|i| open.contains_key(&(file, i)))
    }
    /// Ranges within one block this process has mapped (checked, and
    /// still named within the last second): lent from the map.
    fn read_at_hand(
        &self,
        file: StoreFile,
        ranges: &[Range<u64>],
        with: &mut dyn FnMut(usize, Lent<'_>) -> Result<()>,
    ) -> Result<Vec<usize>> {
        self.shared.read_at_hand(file, ranges, with)
    }
    fn locate(&self, file: StoreFile) -> String {
        self.shared.inner.locate(file)
    }
    fn name(&self) -> String {
        self.shared.inner.name()
    }
    fn retries(&self) -> u64 {
        self.shared.inner.retries()
    }
    /// No clock: what a read costs here is a disk read, not the remote's
    /// latency, and merging is set for that (`open::Options`).
    fn now(&self) -> Option<Duration> {
        None
    }
    /// Fetch the blocks `ranges` need that are not here, several at once,
    /// on blocking threads.
    fn prefetch(&self, file: StoreFile, ranges: Vec<Range<u64>>) -> LocalBoxFuture<'_, Result<u64>> {
        let shared = self.shared.clone();
        Box::pin(async move {
            if shared.all_held(file, &ranges) {
                return Ok(0);
            }
            runtime::spawn_blocking(move || shared.warm(file, &ranges)).await.unwrap_or(Err(Error::Cancelled))
        })
    }
    fn prefetches(&self) -> bool {
        true
    }
    /// Not cached: a dataset's manifest changes with every commit.
    fn read_path(&self, path: &str, range: Range<u64>) -> LocalBoxFuture<'_, Result<Ranged>> {
        self.shared.inner.read_path(path, range)
    }
}

/// An open file this process holds an exclusive `flock` on, unlocked
/// explicitly when dropped: a `flock` belongs to the open file description,
/// which a child forked meanwhile (a Python DataLoader's worker) shares
/// until it exits, so closing our descriptor alone would leave it held.
struct Flock(File);

impl Flock {
    fn lock(file: File) -> std::io::Result<Flock> {
        file.lock()?;
        Ok(Flock(file))
    }
}

impl Drop for Flock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Refuse a cache directory another user can write to: a block's trailer
/// is a checksum, not a key, and its name follows from the URL, ETag and
/// size, so whoever can write there could plant blocks readers would trust
/// (another user who made `/tmp/…/blocks` first, say).
fn check_owner(dir: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(dir, "read the cache directory", e))?;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() == me && meta.mode() & 0o022 == 0 {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        store: dir.display().to_string(),
        why: format!(
            "this cache directory belongs to user {} with mode {:o} (this process runs as user {me}): another user \
             could plant blocks in it; give --cache a directory of your own that only you can write",
            meta.uid(),
            meta.mode() & 0o7777
        ),
    })
}

/// Block `index` of a file of `total` bytes, as a byte range.
fn block_range(index: u64, block: u64, total: u64) -> Range<u64> {
    let start = index.saturating_mul(block).min(total);
    start..start.saturating_add(block).min(total)
}

impl Shared {
    fn known(&self, file: StoreFile) -> Option<Known> {
        lock(&self.versions[file as usize]).clone()
    }

    /// `req` served from blocks present, when its version is known and all
    /// its blocks are here (`None`: something must be fetched or waited for).
    fn read_present(&self, req: &ReadRequest) -> Result<Option<Ranged>> {
        let Some(Known::Cached(v)) = self.known(req.file) else { return Ok(None) };
        let (mut out, pieces) = (Vec::new(), self.pieces(req, &v));
        for (index, within) in &pieces {
            match self.read_block(req.file, &v, *index, within.clone())? {
                // Most reads lie in one block: its bytes are the answer.
                Some(bytes) if pieces.len() == 1 => out = bytes,
                Some(bytes) => out.extend_from_slice(&bytes),
                None => return Ok(None),
            }
        }
        bump(&COUNTERS.hits, pieces.len() as u64);
        Ok(Some(Ranged { bytes: out, total: v.total, version: Some(v.etag.clone()) }))
    }

    /// See [`CachedSource::read_at_hand`]. The bytes of the range
    /// [`AHEAD`] places on are asked of the CPU while one decodes, as a
    /// local store's gather does: ranges lie at random in blocks far larger
    /// than its caches, and a decoder waiting on each miss in turn took 20%
    /// longer than the local store.
    fn read_at_hand(
        &self,
        file: StoreFile,
        ranges: &[Range<u64>],
        with: &mut dyn FnMut(usize, Lent<'_>) -> Result<()>,
    ) -> Result<Vec<usize>> {
        let Some(Known::Cached(v)) = self.known(file) else { return Ok((0..ranges.len()).collect()) };
        let b = self.options.block;
        // Each range's block map, looked up under one lock.
        let held: Vec<Option<(Arc<Held>, Range<usize>)>> = {
            let open = lock(&self.open);
            let within = |r: &Range<u64>| {
                let index = r.start / b;
                let one_block = r.start < r.end && r.end <= v.total && index == (r.end - 1) / b;
                let at = (r.start - index * b) as usize..(r.end - index * b) as usize;
                one_block.then(|| open.get(&(file, index)).map(|h| (h.clone(), at))).flatten()
            };
            ranges.iter().map(within).collect()
        };
        let mut waiting = Vec::new();
        for (k, h) in held.iter().enumerate() {
            if let Some(Some((ahead, at))) = held.get(k + AHEAD) {
                let head = at.start..at.end.min(at.start + AHEAD_BYTES);
                crate::local::sys::prefetch(&ahead.map[head]);
            }
            match h {
                Some((h, at)) if h.fresh() => {
                    bump(&COUNTERS.hits, 1);
                    with(k, Lent { bytes: &h.map[at.clone()], total: v.total, version: Some(&v.etag) })?;
                }
                _ => waiting.push(k),
            }
        }
        Ok(waiting)
    }

    /// `req` served, fetching what is missing (on a blocking thread).
    fn read(&self, req: &ReadRequest) -> Result<Ranged> {
        let v = match self.version(req.file)? {
            Known::Through => return self.fetch(req.clone()),
            Known::Cached(v) => v,
        };
        let mut out = Vec::new();
        for (index, within) in self.pieces(req, &v) {
            out.extend_from_slice(&self.block(req.file, &v, index, within)?);
        }
        Ok(Ranged { bytes: out, total: v.total, version: Some(v.etag.clone()) })
    }

    /// The blocks `req` covers, with the range wanted of each (relative to
    /// the block's start); the range is cut at the file's end, as a remote
    /// read's answer is.
    fn pieces(&self, req: &ReadRequest, v: &Version) -> Vec<(u64, Range<u64>)> {
        let b = self.options.block;
        let (start, end) = (req.range.start.min(v.total), req.range.end.min(v.total));
        if start >= end {
            return Vec::new();
        }
        (start / b..=(end - 1) / b)
            .map(|i| {
                let r = block_range(i, b, v.total);
                (i, start.max(r.start) - r.start..end.min(r.end) - r.start)
            })
            .collect()
    }

    /// The blocks under `ranges`, in order, each once.
    fn blocks_under(&self, v: &Version, ranges: &[Range<u64>]) -> Vec<u64> {
        let b = self.options.block;
        let mut blocks: Vec<u64> = ranges
            .iter()
            .filter(|r| r.start < r.end.min(v.total))
            .flat_map(|r| r.start / b..=(r.end.min(v.total) - 1) / b)
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        blocks
    }

    /// Whether every block under `ranges` of `file` is mapped here, each
    /// then marked as needed (see [`Held::fresh`]): a look-ahead's usual
    /// case once the cache is warm, answered without a blocking thread.
    fn all_held(&self, file: StoreFile, ranges: &[Range<u64>]) -> bool {
        let Some(Known::Cached(v)) = self.known(file) else { return false };
        let held: Option<Vec<Arc<Held>>> = {
            let open = lock(&self.open);
            self.blocks_under(&v, ranges).iter().map(|&i| open.get(&(file, i)).cloned()).collect()
        };
        held.is_some_and(|held| held.iter().all(|h| h.fresh()))
    }

    /// Fetch the missing blocks under `ranges` of `file`, [`WARMERS`] at
    /// once; the bytes fetched.
    fn warm(&self, file: StoreFile, ranges: &[Range<u64>]) -> Result<u64> {
        let Known::Cached(v) = self.version(file)? else { return Ok(0) };
        let mut wanted = self.blocks_under(&v, ranges);
        // Blocks here are marked as used now: eviction takes the least
        // recently used first, so blocks the next steps need go last.
        wanted.retain(|&i| !self.mark_needed(file, &v, i));
        let before = stats().bytes_fetched;
        let next = AtomicU64::new(0);
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..WARMERS.min(wanted.len()) {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(&index) = wanted.get(k) else { break };
                    if let Err(e) = self.block(file, &v, index, 0..0) {
                        *lock(&failed) = Some(e);
                        break;
                    }
                });
            }
        });
        let failed = lock(&failed).take();
        match failed {
            Some(e) => Err(e),
            // Counted process-wide: other fetches may add to it meanwhile.
            None => Ok(stats().bytes_fetched.saturating_sub(before)),
        }
    }

    /// Set block `index`'s mtime to now if it is here (whether it is): a
    /// block this process has mapped was marked within the last second.
    fn mark_needed(&self, file: StoreFile, v: &Version, index: u64) -> bool {
        let held = lock(&self.open).get(&(file, index)).cloned();
        match held.map(|h| h.fresh()) {
            Some(true) => return true,
            Some(false) => drop(lock(&self.open).remove(&(file, index))),
            None => {}
        }
        let now = SystemTime::now();
        File::open(self.block_path(file, v, index)).is_ok_and(|f| f.set_modified(now).is_ok())
    }

    /// One request to the remote, counted.
    fn fetch(&self, req: ReadRequest) -> Result<Ranged> {
        bump(&COUNTERS.gets, 1);
        let got = super::exec::block_on(self.inner.read(req))?;
        bump(&COUNTERS.bytes_fetched, got.bytes.len() as u64);
        Ok(got)
    }

    /// The file's version, learned with a one-byte read at its first use
    /// in this process.
    fn version(&self, file: StoreFile) -> Result<Known> {
        let mut slot = lock(&self.versions[file as usize]);
        if let Some(k) = &*slot {
            return Ok(k.clone());
        }
        let got = self.fetch(ReadRequest { file, range: 0..1, if_version: None })?;
        let known = match got.version {
            Some(etag) => Known::Cached(Arc::new(Version { total: got.total, etag })),
            None => Known::Through,
        };
        *slot = Some(known.clone());
        Ok(known)
    }

    /// The path of block `index` of `file` at version `v`.
    fn block_path(&self, file: StoreFile, v: &Version, index: u64) -> PathBuf {
        let url = xxh3::hash128_with_seed(self.inner.locate(file).as_bytes(), 0);
        let etag = xxh3::hash64_with_seed(v.etag.as_bytes(), 0);
        self.blocks.join(format!("{url:032x}-{etag:016x}-{}-{index}.blk", v.total))
    }

    /// The bytes `within` block `index`, read from its file when it is here
    /// and sound (`None` otherwise; a damaged block is removed).
    fn read_block(
        &self,
        file: StoreFile,
        v: &Version,
        index: u64,
        within: Range<u64>,
    ) -> Result<Option<Vec<u8>>> {
        let held = lock(&self.open).get(&(file, index)).cloned();
        if let Some(h) = held {
            if h.fresh() {
                return Ok(Some(h.bytes(within)));
            }
            // Evicted: let it go (its space with it), look again.
            drop(lock(&self.open).remove(&(file, index)));
        }
        let path = self.block_path(file, v, index);
        let len = block_range(index, self.options.block, v.total);
        let len = len.end - len.start;
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, "open a cached block", e)),
        };
        let meta = f.metadata().map_err(|e| Error::io(&path, "stat a cached block", e))?;
        let inode = crate::local::sys::inode(&meta);
        let key = (path.clone(), inode);
        let map = if meta.len() == len + TRAILER {
            // SAFETY: block files are never written after their rename (see `Held`).
            #[allow(unsafe_code)]
            let map = unsafe { memmap2::Mmap::map(&f) };
            Some(map.map_err(|e| Error::io(&path, "map a cached block", e))?)
        } else {
            None
        };
        // One thread checks a block; the others wait, then read it.
        let checking = lock(&self.checking);
        let sound = map.filter(|m| lock(&self.checked).contains(&key) || sound_block(m, len));
        let Some(map) = sound else {
            // Whoever finds a damaged block removes it; it is fetched again.
            let _ = std::fs::remove_file(&path);
            return Ok(None);
        };
        lock(&self.checked).insert(key);
        drop(checking);
        let _ = f.set_modified(SystemTime::now());
        let touched = AtomicU64::new(runtime::now().as_secs());
        let used = AtomicU64::new(READS.fetch_add(1, Ordering::Relaxed));
        let h = Held { map, path, inode, touched, used };
        let bytes = h.bytes(within);
        let mut open = lock(&self.open);
        if open.len() >= HELD {
            let mut by_use: Vec<u64> = open.values().map(|h| h.used.load(Ordering::Relaxed)).collect();
            let (_, &mut median, _) = by_use.select_nth_unstable(HELD / 2);
            open.retain(|_, h| h.used.load(Ordering::Relaxed) > median);
        }
        open.insert((file, index), Arc::new(h));
        Ok(Some(bytes))
    }

    /// The bytes `within` block `index`: from the cache, else fetched once
    /// for every process (under the block's lock stripe), else read through.
    fn block(&self, file: StoreFile, v: &Version, index: u64, within: Range<u64>) -> Result<Vec<u8>> {
        if let Some(bytes) = self.read_block(file, v, index, within.clone())? {
            bump(&COUNTERS.hits, 1);
            return Ok(bytes);
        }
        let path = self.block_path(file, v, index);
        let stripe = self
            .options
            .dir
            .join("locks")
            .join(format!("{:03}", xxh3::hash64_with_seed(path.as_os_str().as_encoded_bytes(), 0) % STRIPES));
        let held = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&stripe)
            .map_err(|e| Error::io(&stripe, "open a cache lock", e))?;
        let held = Flock::lock(held).map_err(|e| Error::io(&stripe, "lock a cache lock", e))?;
        // Whoever held the lock may have fetched it.
        if let Some(bytes) = self.read_block(file, v, index, within.clone())? {
            bump(&COUNTERS.hits, 1);
            return Ok(bytes);
        }
        bump(&COUNTERS.misses, 1);
        let range = block_range(index, self.options.block, v.total);
        let len = range.end - range.start;
        let Some((tmp, tmp_path)) = self.reserve(&path, len + TRAILER)? else {
            drop(held);
            if within.is_empty() {
                // A prefetch, with no room to keep the block: nothing to
                // read (a request is never for an empty range).
                return Ok(Vec::new());
            }
            bump(&COUNTERS.read_through, 1);
            let r = range.start + within.start..range.start + within.end;
            let got = self.fetch(ReadRequest { file, range: r, if_version: Some(v.etag.clone()) })?;
            self.check_answer(file, v, &got, within.end - within.start)?;
            return Ok(got.bytes);
        };
        let got = self.fetch(ReadRequest { file, range, if_version: Some(v.etag.clone()) });
        let got = match got.and_then(|g| self.check_answer(file, v, &g, len).map(|()| g)) {
            Ok(g) => g,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp_path);
                return Err(e);
            }
        };
        let mut trailer = [0u8; TRAILER as usize];
        trailer[..8].copy_from_slice(MAGIC);
        trailer[8..].copy_from_slice(&crate::codec::checksum::hash64(&got.bytes).to_le_bytes());
        let written = crate::local::sys::write_all_at(&tmp.0, &got.bytes, 0)
            .and_then(|()| crate::local::sys::write_all_at(&tmp.0, &trailer, len))
            .and_then(|()| std::fs::rename(&tmp_path, &path));
        if written.is_err() {
            // A full disk or a vanished directory: serve the bytes, keep nothing.
            let _ = std::fs::remove_file(&tmp_path);
            bump(&COUNTERS.read_through, 1);
        } else {
            let meta = tmp.0.metadata().map_err(|e| Error::io(&path, "stat a cached block", e))?;
            lock(&self.checked).insert((path, crate::local::sys::inode(&meta)));
        }
        drop(tmp);
        drop(held);
        Ok(got.bytes[within.start as usize..within.end as usize].to_vec())
    }

    /// A fetched answer must be the version this process knows, and whole.
    fn check_answer(&self, file: StoreFile, v: &Version, got: &Ranged, len: u64) -> Result<()> {
        if got.total != v.total || got.version.as_deref().is_some_and(|e| e != v.etag) {
            return Err(Error::StoreChanged {
                url: self.inner.locate(file),
                why: format!(
                    "{file} was {} bytes with ETag {}, now {} bytes with ETag {}",
                    v.total,
                    v.etag,
                    got.total,
                    got.version.as_deref().unwrap_or("(none)")
                ),
            });
        }
        if got.bytes.len() as u64 != len {
            return Err(Error::Remote {
                url: self.inner.locate(file),
                why: format!("asked for {len} bytes, got {}", got.bytes.len()),
            });
        }
        Ok(())
    }

    /// Room for `need` more bytes: a locked temporary file of that size next
    /// to `block`, made under the directory's lock after evicting the least
    /// recently used blocks; `None` when the limit cannot make room.
    fn reserve(&self, block: &Path, need: u64) -> Result<Option<(Flock, PathBuf)>> {
        if need > self.options.limit {
            return Ok(None);
        }
        let dir_lock = &self.options.dir.join(".lock");
        let io = |op: &'static str| move |e| Error::io(dir_lock, op, e);
        let guard = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir_lock)
            .map_err(io("open the cache's lock"))?;
        let guard = Flock::lock(guard).map_err(io("lock the cache"))?;
        let mut used = 0u64;
        let mut blocks: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        let entries =
            std::fs::read_dir(&self.blocks).map_err(|e| Error::io(&self.blocks, "list the cache", e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let is_block = path.extension().is_some_and(|e| e == "blk");
            if !is_block {
                // A download under way holds its file's lock; one nobody
                // holds was left by a killed process.
                if let Ok(f) = File::open(&path) {
                    if f.try_lock().is_ok() {
                        let _ = std::fs::remove_file(&path);
                        let _ = f.unlock();
                        continue;
                    }
                }
            } else {
                blocks.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), path));
            }
            used = used.saturating_add(meta.len());
        }
        blocks.sort();
        let mut oldest = blocks.into_iter();
        while used.saturating_add(need) > self.options.limit {
            let Some((_, len, path)) = oldest.next() else { return Ok(None) };
            if std::fs::remove_file(&path).is_ok() {
                used -= len;
                bump(&COUNTERS.evicted_bytes, len);
            }
        }
        static NONCE: AtomicU64 = AtomicU64::new(0);
        let tmp_path = block.with_extension(format!(
            "tmp{}-{}",
            std::process::id(),
            NONCE.fetch_add(1, Ordering::Relaxed)
        ));
        let at = &tmp_path;
        let io = |op: &'static str| move |e| Error::io(at, op, e);
        let tmp = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&tmp_path)
            .map_err(io("create a cache block"))?;
        let tmp = Flock::lock(tmp).map_err(io("lock a cache block"))?;
        tmp.0.set_len(need).map_err(io("size a cache block"))?;
        drop(guard);
        Ok(Some((tmp, tmp_path)))
    }
}

/// Whether `block` (a block file's bytes) is `len` bytes and a trailer
/// that vouches for them.
fn sound_block(block: &[u8], len: u64) -> bool {
    let Some((bytes, trailer)) = usize::try_from(len).ok().and_then(|n| block.split_at_checked(n)) else {
        return false;
    };
    trailer.len() as u64 == TRAILER
        && trailer[..8] == MAGIC[..]
        && u64::from_le_bytes(trailer[8..].try_into().expect("8 bytes"))
            == crate::codec::checksum::hash64(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One file in memory, version `v1`.
    struct InMemory(Vec<u8>);

    impl RangeRead for InMemory {
        fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>> {
            let total = self.0.len() as u64;
            let (a, b) = (req.range.start.min(total) as usize, req.range.end.min(total) as usize);
            let got = Ranged { bytes: self.0[a..b].to_vec(), total, version: Some("v1".into()) };
            Box::pin(async move { Ok(got) })
        }
        fn locate(&self, file: StoreFile) -> String {
            format!("memory:{file}")
        }
        fn name(&self) -> String {
            "memory:".into()
        }
    }

    #[test]
    fn ranges_within_mapped_blocks_are_lent_and_the_others_given_back() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..4000u32).map(|i| (i * 13) as u8).collect();
        let options = CacheOptions { block: 1024, ..CacheOptions::new(dir.path()) };
        let source = CachedSource::new(Box::new(InMemory(bytes.clone())), options).unwrap();
        let file = StoreFile::Data;
        let ranges = [10..20, 1020..1030, 2100..2200, 3100..3200, 3990..4010, 1024..2048];
        let lent = |source: &CachedSource| {
            let mut got = Vec::new();
            let waiting = source
                .read_at_hand(file, &ranges, &mut |k, l| {
                    assert_eq!((l.total, l.version), (4000, Some("v1")));
                    got.push((k, l.bytes.to_vec()));
                    Ok(())
                })
                .unwrap();
            (got, waiting)
        };
        // Nothing is known before the first read.
        assert_eq!(lent(&source), (vec![], vec![0, 1, 2, 3, 4, 5]));
        // A block's first read fetches it, its next maps it.
        for i in [0u64, 1, 3, 0, 1, 3] {
            let req = ReadRequest { file, range: i * 1024..i * 1024 + 1, if_version: None };
            crate::remote::block_on(source.read(req)).unwrap();
        }
        // Blocks 0, 1 and 3 are mapped: a range across two blocks, one in
        // block 2 and one past the end are given back.
        let (got, waiting) = lent(&source);
        let want: Vec<(usize, Vec<u8>)> = [0, 3, 5]
            .into_iter()
            .map(|k: usize| (k, bytes[ranges[k].start as usize..ranges[k].end as usize].to_vec()))
            .collect();
        assert_eq!((got, waiting), (want, vec![1, 2, 4]));
        // A look-ahead has something to bring close until every block is mapped.
        assert!(!source.holds_all(file));
        for _ in 0..2 {
            let req = ReadRequest { file, range: 2048..2049, if_version: None };
            crate::remote::block_on(source.read(req)).unwrap();
        }
        assert!(source.holds_all(file));
        // An error from the borrower stops the reads.
        let failed = source.read_at_hand(file, &ranges, &mut |_, _| Err(Error::Cancelled));
        assert!(matches!(failed, Err(Error::Cancelled)));
    }

    #[test]
    fn blocks_the_next_steps_need_are_evicted_last() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let options =
            CacheOptions { block: 1024, ..CacheOptions::new(dir.path()) }.limit(3 * (1024 + TRAILER));
        let source = CachedSource::new(Box::new(InMemory(bytes.clone())), options).unwrap();
        let read = |i: u64| {
            let req = ReadRequest { file: StoreFile::Data, range: i * 1024..i * 1024 + 10, if_version: None };
            let got = crate::remote::block_on(source.read(req)).unwrap();
            assert_eq!(got.bytes, &bytes[i as usize * 1024..i as usize * 1024 + 10]);
        };
        let v = Version { total: 4096, etag: "v1".into() };
        let path = |i| source.shared.block_path(StoreFile::Data, &v, i);
        for i in 0..3 {
            read(i);
            // Block 0 used longest ago, then 1, then 2.
            let at = SystemTime::now() - Duration::from_secs(30 - 10 * i);
            File::open(path(i)).unwrap().set_modified(at).unwrap();
        }
        // A block read here is marked used at most once a second.
        std::thread::sleep(Duration::from_millis(1100));
        // The next steps need block 0: it becomes the most recently used.
        let wanted: Vec<Range<u64>> = std::iter::once(5..6).collect();
        let ahead = source.prefetch(StoreFile::Data, wanted);
        assert_eq!(crate::remote::block_on(ahead).unwrap(), 0, "block 0 is here already");
        read(3);
        assert!(path(0).exists(), "the block the next steps need was evicted");
        assert!(!path(1).exists(), "the least recently used block stayed");
        assert!(path(2).exists() && path(3).exists());
    }

    #[test]
    fn blocks_cover_a_range_and_stop_at_the_end() {
        assert_eq!(block_range(0, 10, 25), 0..10);
        assert_eq!(block_range(2, 10, 25), 20..25);
        assert_eq!(block_range(3, 10, 25), 25..25);
        assert_eq!(block_range(u64::MAX, 10, 25), 25..25);
    }
}
