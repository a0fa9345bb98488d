//! The async remote reader: the pure format core driven over ranged GETs.
//!
//! Open reads `meta.zr` bytes `0-65535` once (Header, schema and the first
//! 3,840 locations; the file size from Content-Range) and `dict.zr` whole for
//! `zstd_dict` stores. A gather looks its locations up in 64 KiB pages of the
//! location table (an LRU; missing pages are fetched, consecutive ones in one
//! request), validates them like the local reader, coalesces the records'
//! byte ranges, fetches them with bounded concurrency and decodes each record
//! straight into its place in the output.
//!
//! `data.zr`'s size is not asked for at open (that would cost a request): it
//! comes with the first data answer's Content-Range, and the open-time rule
//! `size(data.zr) >= tail_offset` is applied then, before any record decodes.

use super::check::{self, Fail, Ranged};
use super::client::{LocalBoxFuture, RangeClient, RangeRequest, TransportError};
use super::exec::for_each_bounded;
use super::pages::{PageCache, LOC_PAGE};
use crate::batch::{Batch, DenseBatch, RaggedBatch};
use crate::codec::Dict;
use crate::format::coalesce::coalesce;
use crate::format::decode::{self, AlignedBytes};
use crate::format::store_info::FileSizes;
use crate::format::{Codec, Geometry, Header, RecordLoc, StoreInfo, LOC_SIZE, PAGE_SIZE};
use crate::{Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Largest `dict.zr` accepted (loaderx's largest tier is 1 MiB).
const MAX_DICT_BYTES: u64 = 64 << 20;

/// Tuning for a remote store. The defaults suit object stores and CDNs.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// Merge two record ranges into one request when at most this many
    /// unwanted bytes lie between them (default 64 KiB).
    pub max_gap: u64,
    /// Largest merged request in bytes (default 8 MiB); a single larger
    /// record is still fetched alone.
    pub max_request: u64,
    /// Requests in flight at once (default 6, a browser's per-host limit).
    pub concurrency: usize,
    /// Location pages (64 KiB, 4,096 records each) kept in the LRU (default 64).
    pub cache_pages: usize,
    /// Retries of a transient failure (5xx, 408, 429, network) (default 3).
    pub retries: u32,
    /// Wait before the first retry; doubled each time, at most 10 s (default 200 ms).
    pub backoff: Duration,
    /// Send `If-Match` with the ETag seen first, so a changed file fails with
    /// 412 on the server (default off: it makes browsers send a CORS preflight).
    pub if_match: bool,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            max_gap: 64 << 10,
            max_request: 8 << 20,
            concurrency: 6,
            cache_pages: 64,
            retries: 3,
            backoff: Duration::from_millis(200),
            if_match: false,
        }
    }
}

/// Requests and bytes a store has spent so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Every request sent, retries included.
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Requests that were retries of a transient failure.
    pub retries: u64,
    /// Requests to `meta.zr` (the open read and location pages).
    pub meta_requests: u64,
    /// Requests to `data.zr`.
    pub data_requests: u64,
    /// Requests to `dict.zr`.
    pub dict_requests: u64,
    /// Location pages found in the cache.
    pub page_hits: u64,
    /// Location pages that had to be fetched.
    pub page_misses: u64,
    /// Location pages held in the cache now.
    pub cached_pages: u64,
}

/// File sizes as far as they are known (`data` arrives with the first data answer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteSizes {
    /// `meta.zr`, from the open read.
    pub meta: u64,
    /// `data.zr`, once a data request has answered.
    pub data: Option<u64>,
    /// `dict.zr` for `zstd_dict` stores.
    pub dict: Option<u64>,
}

/// One of a store's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum File {
    Meta = 0,
    Data = 1,
    Dict = 2,
}

impl File {
    fn name(self) -> &'static str {
        match self {
            File::Meta => "meta.zr",
            File::Data => "data.zr",
            File::Dict => "dict.zr",
        }
    }
}

/// What the first answer said about a file; later answers must agree.
#[derive(Clone, Debug, Default)]
struct Seen {
    size: Option<u64>,
    etag: Option<String>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    retries: AtomicU64,
    per_file: [AtomicU64; 3],
    page_hits: AtomicU64,
    page_misses: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A store read over HTTP Range requests (or any [`RangeClient`]).
///
/// Every method is `async`; cancel one by dropping its future (see
/// [`super::cancellable`]). Natively, `RemoteStore::open_blocking` gives the
/// same reader behind a blocking API shaped like the local `Store`.
pub struct RemoteStore<C> {
    conn: Conn<C>,
    info: StoreInfo,
    dict: Option<Dict>,
    dict_bytes: Option<Vec<u8>>,
    /// `meta.zr`'s static page as read at open (for checkers: its padding).
    static_page: Box<[u8]>,
    pages: Mutex<PageCache>,
}

/// The requests side: where the files are, what they looked like first,
/// what was spent.
struct Conn<C> {
    client: C,
    base: String,
    query: String,
    options: RemoteOptions,
    seen: Mutex<[Seen; 3]>,
    counters: Counters,
}

impl<C> std::fmt::Debug for RemoteStore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore")
            .field("url", &self.conn.base)
            .field("len", &self.info.len())
            .field("dtype", &self.info.dtype().as_str())
            .field("codec", &self.info.codec())
            .finish()
    }
}

/// Split a store URL into its directory (ending in `/`) and query string.
fn split_url(url: &str) -> (String, String) {
    let url = url.split('#').next().unwrap_or_default();
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, format!("?{q}")),
        None => (url, String::new()),
    };
    let mut base = path.strip_suffix("meta.zr").unwrap_or(path).to_string();
    if !base.ends_with('/') {
        base.push('/');
    }
    (base, query)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave these plain records half-updated.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<C: RangeClient> RemoteStore<C> {
    /// Open the store at `url`: a directory URL (`https://host/stores/a/`),
    /// or the URL of its `meta.zr`. A query string is kept on every file's URL.
    ///
    /// Costs one request (two for `zstd_dict`).
    ///
    /// # Errors
    /// `NotFound`, `Remote` (the server misbehaves or refuses), `BadFormat`,
    /// `Unpublished`, `Cancelled`.
    pub async fn open(client: C, url: &str, options: RemoteOptions) -> Result<Self> {
        let (base, query) = split_url(url);
        let name = base.clone();
        let conn = Conn {
            client,
            base,
            query,
            options,
            seen: Mutex::new(Default::default()),
            counters: Counters::default(),
        };
        let head = conn.fetch(File::Meta, 0..LOC_PAGE, true, None).await?;
        let header = Header::parse(&name, &head.bytes)?;
        let mut dict_bytes = None;
        if header.codec == Codec::ZstdDict {
            match conn.fetch(File::Dict, 0..MAX_DICT_BYTES + 1, true, None).await {
                Ok(d) if d.total > MAX_DICT_BYTES => {
                    return Err(Error::BadFormat {
                        store: name,
                        check: format!(
                            "dict.zr is {} bytes (dictionaries are at most {MAX_DICT_BYTES})",
                            d.total
                        ),
                    })
                }
                Ok(d) => dict_bytes = Some(d.bytes),
                // A missing dict.zr is the format's rule to report, below.
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let sizes = FileSizes {
            meta: head.total,
            // Checked when the first data answer tells the real size.
            data: header.tail_offset,
            dict: dict_bytes.as_ref().map(|d: &Vec<u8>| d.len() as u64),
        };
        let info = StoreInfo::parse(&name, &head.bytes, sizes)?;
        let dict = match (&dict_bytes, header.codec) {
            (Some(bytes), Codec::ZstdDict) => {
                Some(Dict::new(bytes).map_err(|why| Error::BadFormat { store: name.clone(), check: why })?)
            }
            _ => None,
        };
        let static_page = head.bytes[..head.bytes.len().min(PAGE_SIZE as usize)].into();
        let store = RemoteStore {
            pages: Mutex::new(PageCache::new(conn.options.cache_pages)),
            conn,
            info,
            dict,
            dict_bytes,
            static_page,
        };
        let first = store.page_range(0);
        if !first.is_empty() {
            let page: Arc<[u8]> = Arc::from(&head.bytes[..first.end as usize]);
            lock(&store.pages).insert(0, page);
        }
        Ok(store)
    }

    /// Validated Header, schema and sizes. `info().sizes.data` holds
    /// `tail_offset` (the least `data.zr` may hold) until a data request
    /// learns the real size; see [`RemoteStore::file_sizes`].
    pub fn info(&self) -> &StoreInfo {
        &self.info
    }
    /// The store's directory URL (ending in `/`).
    pub fn url(&self) -> &str {
        &self.conn.base
    }
    crate::format::store_info::info_accessors!();

    /// The dictionary bytes of a `zstd_dict` store.
    pub fn dict_bytes(&self) -> Option<&[u8]> {
        self.dict_bytes.as_deref()
    }
    /// The first 4096 bytes of `meta.zr` (Header, schema, padding) as read
    /// at open; fewer only when the file is shorter.
    pub fn static_page(&self) -> &[u8] {
        &self.static_page
    }
    /// Stored bytes of the published records (`tail_offset`).
    pub fn stored_bytes(&self) -> u64 {
        self.info.header.tail_offset
    }
    /// The options the store was opened with.
    pub fn options(&self) -> &RemoteOptions {
        &self.conn.options
    }
    /// The transport.
    pub fn client(&self) -> &C {
        &self.conn.client
    }

    /// Sizes of the files as far as known.
    pub fn file_sizes(&self) -> RemoteSizes {
        let seen = lock(&self.conn.seen);
        RemoteSizes {
            meta: self.info.sizes.meta,
            data: seen[File::Data as usize].size,
            dict: self.info.sizes.dict,
        }
    }

    /// Requests and bytes spent so far.
    pub fn stats(&self) -> RemoteStats {
        let c = &self.conn.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RemoteStats {
            requests: get(&c.requests),
            bytes: get(&c.bytes),
            retries: get(&c.retries),
            meta_requests: get(&c.per_file[File::Meta as usize]),
            data_requests: get(&c.per_file[File::Data as usize]),
            dict_requests: get(&c.per_file[File::Dict as usize]),
            page_hits: get(&c.page_hits),
            page_misses: get(&c.page_misses),
            cached_pages: lock(&self.pages).len() as u64,
        }
    }

    /// `meta.zr` bytes held by location page `p` (only the published table).
    fn page_range(&self, page: u64) -> Range<u64> {
        // Fits: open checked `size(meta.zr) >= table_end` (in u128).
        let table_end = PAGE_SIZE + LOC_SIZE * self.info.len();
        let start = page.saturating_mul(LOC_PAGE);
        start.min(table_end)..start.saturating_add(LOC_PAGE).min(table_end)
    }

    /// The raw locations of `indices` (in range, not yet validated), fetching
    /// the pages not cached: consecutive missing pages in one request.
    async fn locate(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        let page_of = |i: u64| RecordLoc::position(i) / LOC_PAGE;
        let mut held: HashMap<u64, Arc<[u8]>> = HashMap::new();
        let mut missing: Vec<u64> = Vec::new();
        {
            let mut cache = lock(&self.pages);
            for &i in indices {
                let p = page_of(i);
                if held.contains_key(&p) || missing.contains(&p) {
                    continue;
                }
                match cache.get(p) {
                    Some(bytes) => {
                        add(&self.conn.counters.page_hits, 1);
                        held.insert(p, bytes);
                    }
                    None => missing.push(p),
                }
            }
        }
        if !missing.is_empty() {
            add(&self.conn.counters.page_misses, missing.len() as u64);
            missing.sort_unstable();
            let ranges: Vec<Range<u64>> = missing.iter().map(|&p| self.page_range(p)).collect();
            let fetches = coalesce(&ranges, 0, self.conn.options.max_request);
            let futures: Vec<LocalBoxFuture<'_, Result<Vec<u8>>>> = fetches
                .iter()
                .map(|f| {
                    let range = f.range.clone();
                    Box::pin(async move { Ok(self.conn.fetch(File::Meta, range, false, None).await?.bytes) })
                        as LocalBoxFuture<'_, Result<Vec<u8>>>
                })
                .collect();
            let mut fetched: Vec<(u64, Arc<[u8]>)> = Vec::with_capacity(missing.len());
            for_each_bounded(futures, self.conn.options.concurrency, |k, bytes| {
                let f = &fetches[k];
                for &m in &f.members {
                    let r = &ranges[m];
                    let at = (r.start - f.range.start) as usize;
                    let page: Arc<[u8]> = Arc::from(&bytes[at..at + (r.end - r.start) as usize]);
                    fetched.push((missing[m], page));
                }
                Ok(())
            })
            .await?;
            let mut cache = lock(&self.pages);
            for (p, bytes) in fetched {
                cache.insert(p, bytes.clone());
                held.insert(p, bytes);
            }
        }
        indices
            .iter()
            .map(|&i| {
                let pos = RecordLoc::position(i);
                let p = pos / LOC_PAGE;
                let at = (pos - p * LOC_PAGE) as usize;
                let entry =
                    held.get(&p).and_then(|page| page.get(at..at + LOC_SIZE as usize)).ok_or_else(|| {
                        Error::BadFormat {
                            store: self.info.name.clone(),
                            check: format!("record {i}: location lies outside meta.zr"),
                        }
                    })?;
                Ok(RecordLoc::decode(entry.try_into().expect("16 bytes")))
            })
            .collect()
    }

    /// Fetch `data.zr` byte ranges (each within `tail_offset`, none empty):
    /// coalesced, with bounded concurrency, handing range `m`'s bytes to
    /// `each(m, bytes)` as its request completes.
    async fn fetch_ranges(
        &self,
        ranges: &[Range<u64>],
        mut each: impl FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let fetches = coalesce(ranges, self.conn.options.max_gap, self.conn.options.max_request);
        let futures: Vec<LocalBoxFuture<'_, Result<Vec<u8>>>> = fetches
            .iter()
            .map(|f| {
                let range = f.range.clone();
                Box::pin(async move {
                    Ok(self.conn.fetch(File::Data, range, false, Some(&self.info)).await?.bytes)
                }) as LocalBoxFuture<'_, Result<Vec<u8>>>
            })
            .collect();
        for_each_bounded(futures, self.conn.options.concurrency, |k, bytes| {
            let f = &fetches[k];
            for &m in &f.members {
                let r = &ranges[m];
                let at = (r.start - f.range.start) as usize;
                each(m, &bytes[at..at + (r.end - r.start) as usize])?;
            }
            Ok(())
        })
        .await
    }

    /// Fetch the records at validated `locs` and decode record `k` into `parts[k]`.
    async fn fetch_decode(&self, indices: &[u64], locs: &[RecordLoc], parts: &mut [&mut [u8]]) -> Result<()> {
        let ranges: Vec<Range<u64>> = locs.iter().map(|l| l.offset..l.end()).collect();
        self.fetch_ranges(&ranges, |m, src| {
            decode::decode_record(&self.info, indices[m], self.dict.as_ref(), src, parts[m])
        })
        .await
    }

    fn invalid(&self, why: &str) -> Error {
        Error::InvalidArgument { store: self.info.name.clone(), why: why.to_string() }
    }

    /// Validated locations of records `start .. start + count` (for viewers).
    ///
    /// # Errors
    /// `IndexOutOfRange`, `BadFormat` for a location breaking a rule, and the
    /// request errors of [`RemoteStore::open`].
    pub async fn locs(&self, start: u64, count: u64) -> Result<Vec<RecordLoc>> {
        let end = start.checked_add(count).filter(|&e| e <= self.len());
        let Some(end) = end else {
            return Err(Error::IndexOutOfRange {
                store: self.info.name.clone(),
                index: start.saturating_add(count).saturating_sub(1).max(start),
                len: self.len(),
            });
        };
        let indices: Vec<u64> = (start..end).collect();
        let locs = self.locate(&indices).await?;
        for (&i, loc) in indices.iter().zip(&locs) {
            loc.validate(&self.info.name, i, self.codec(), self.info.header.tail_offset)?;
        }
        Ok(locs)
    }

    /// Locations of `indices` exactly as stored in `meta.zr`, not validated.
    ///
    /// For checkers such as `zrecord verify`, which report every broken
    /// location instead of stopping at the first; readers want
    /// [`RemoteStore::locs`]. Costs what a gather's lookup costs (cached
    /// 64 KiB pages, consecutive missing ones in one request).
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any request), and the request errors of
    /// [`RemoteStore::open`].
    pub async fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        self.info.check_indices(indices)?;
        self.locate(indices).await
    }

    /// Bytes of `data.zr` as stored (record frames, for checkers), the
    /// `ranges` concatenated in the order given. Fetched as a gather fetches
    /// records: coalesced, with bounded concurrency.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty range or one reaching past
    /// `tail_offset` (before any request), and the request errors of
    /// [`RemoteStore::open`].
    pub async fn read_stored(&self, ranges: &[Range<u64>]) -> Result<Vec<u8>> {
        let tail = self.info.header.tail_offset;
        if let Some(r) = ranges.iter().find(|r| r.start >= r.end || r.end > tail) {
            return Err(self.invalid(&format!(
                "data.zr bytes {}..{} are empty or reach past tail_offset {tail}",
                r.start, r.end
            )));
        }
        Ok(self.fetch_each(ranges).await?.concat())
    }

    /// The stored bytes of records at checked `locs`, before a buffer is
    /// sized by their lengths: data.zr's size is not known before its first
    /// answer, so every length must be backed by bytes that arrived, and each
    /// big frame must declare its claim (as the local reader checks).
    async fn fetch_checked(&self, indices: &[u64], locs: &[RecordLoc]) -> Result<Vec<Vec<u8>>> {
        let ranges: Vec<Range<u64>> = locs.iter().map(|l| l.offset..l.end()).collect();
        let stored = self.fetch_each(&ranges).await?;
        for ((&i, loc), src) in indices.iter().zip(locs).zip(&stored) {
            if decode::is_big_claim(&self.info, loc) {
                let head = &src[..src.len().min(decode::ZSTD_MAX_HEADER)];
                decode::check_frame_header(&self.info, i, loc, head)?;
            }
        }
        Ok(stored)
    }

    /// Decode record `k` of `stored` into the `k`-th of `parts`.
    fn decode_stored<'a>(
        &self,
        indices: &[u64],
        stored: &[Vec<u8>],
        parts: impl IntoIterator<Item = &'a mut [u8]>,
    ) -> Result<()> {
        for ((&i, src), dst) in indices.iter().zip(stored).zip(parts) {
            decode::decode_record(&self.info, i, self.dict.as_ref(), src, dst)?;
        }
        Ok(())
    }

    /// The bytes of each of `ranges` (validated), fetched as [`Self::fetch_ranges`]
    /// fetches them; each buffer is allocated when its bytes have arrived.
    async fn fetch_each(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        let mut out = vec![Vec::new(); ranges.len()];
        self.fetch_ranges(ranges, |m, src| {
            out[m] = src.to_vec();
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// The size of `data.zr`: known once a data request has answered, else
    /// asked for with a one-byte request. Either way the format's rules on
    /// it (at least `tail_offset` bytes; none for an empty store) are applied.
    ///
    /// # Errors
    /// `BadFormat`, `Unpublished`, and the request errors of [`RemoteStore::open`].
    pub async fn data_size(&self) -> Result<u64> {
        if let Some(size) = self.file_sizes().data {
            return Ok(size);
        }
        Ok(self.conn.fetch(File::Data, 0..1, true, Some(&self.info)).await?.total)
    }

    /// Gather Dense records into `out` (exactly `indices.len() * row_bytes`
    /// bytes). Indices may repeat and come in any order.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any request), `InvalidArgument` for a Ragged
    /// store or a wrong buffer size, `BadFormat`/`CorruptRecord`, `Remote`,
    /// `StoreChanged`, `NotFound`.
    pub async fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let row = self.info.check_dense_gather(indices, out.len())?;
        if row == 0 || indices.is_empty() {
            return Ok(());
        }
        let locs = self.locate(indices).await?;
        for (&i, loc) in indices.iter().zip(&locs) {
            decode::check_dense_loc(&self.info, i, loc, row as u64)?;
        }
        let mut parts: Vec<&mut [u8]> = out.chunks_mut(row).collect();
        self.fetch_decode(indices, &locs, &mut parts).await
    }

    /// Gather Dense records into a new batch.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`].
    pub async fn gather(&self, indices: &[u64]) -> Result<DenseBatch> {
        let mut batch = DenseBatch::new(self.dtype().clone());
        self.gather_dense_batch(indices, &mut batch).await?;
        Ok(batch)
    }

    /// Gather Dense records into `batch`, reusing its buffer.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`].
    pub async fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let row = self.info.dense_row()?;
        // A big batch is fetched before it is allocated: a hostile schema
        // alone cannot claim gigabytes.
        let stored = if indices.len().saturating_mul(row) > decode::PRECHECK_BYTES {
            self.info.check_indices(indices)?;
            let locs = self.locate(indices).await?;
            for (&i, loc) in indices.iter().zip(&locs) {
                decode::check_dense_loc(&self.info, i, loc, row as u64)?;
            }
            Some(self.fetch_checked(indices, &locs).await?)
        } else {
            None
        };
        batch.data.resize(indices.len() * row);
        batch.shape.clear();
        batch.shape.push(indices.len() as u64);
        batch.shape.extend_from_slice(self.item_shape().unwrap_or(&[]));
        batch.dtype.clone_from(self.dtype());
        match stored {
            Some(stored) => self.decode_stored(indices, &stored, batch.data.as_mut_slice().chunks_mut(row)),
            None => self.gather_into(indices, batch.data.as_mut_slice()).await,
        }
    }

    /// Gather Ragged records into a new packed batch.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`], `InvalidArgument` for a Dense store.
    pub async fn gather_ragged(&self, indices: &[u64]) -> Result<RaggedBatch> {
        let mut batch = RaggedBatch::default();
        self.gather_ragged_into(indices, &mut batch).await?;
        Ok(batch)
    }

    /// Gather Ragged records into `batch`, reusing its buffers.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_ragged`].
    pub async fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        if !matches!(self.geometry(), Geometry::Ragged) {
            return Err(self.invalid("this is a Dense store; use gather"));
        }
        self.info.check_indices(indices)?;
        let locs = self.locate(indices).await?;
        for (&i, loc) in indices.iter().zip(&locs) {
            decode::check_record_loc(&self.info, i, loc)?;
        }
        // The batch is sized by location fields: fetch first.
        let stored = self.fetch_checked(indices, &locs).await?;
        let (slots, total) = decode::ragged_slots(&locs).map_err(|why| self.invalid(&why))?;
        batch.data.resize(total);
        self.decode_stored(indices, &stored, decode::slot_parts(batch.data.as_mut_slice(), &slots))?;
        decode::compact_ragged(&self.info, indices, &slots, batch)
    }

    /// Gather into either kind of batch.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`] / [`RemoteStore::gather_ragged`].
    pub async fn gather_batch_into(&self, indices: &[u64], batch: &mut Batch) -> Result<()> {
        match self.geometry() {
            Geometry::Dense { .. } => {
                if !matches!(batch, Batch::Dense(_)) {
                    *batch = Batch::Dense(DenseBatch::new(self.dtype().clone()));
                }
                let Batch::Dense(b) = batch else { unreachable!("set above") };
                self.gather_dense_batch(indices, b).await
            }
            Geometry::Ragged => {
                if !matches!(batch, Batch::Ragged(_)) {
                    *batch = Batch::Ragged(RaggedBatch::default());
                }
                let Batch::Ragged(b) = batch else { unreachable!("set above") };
                self.gather_ragged_into(indices, b).await
            }
        }
    }

    /// One record: its shape and payload bytes (no shape prefix).
    ///
    /// # Errors
    /// As the gathers.
    pub async fn get(&self, index: u64) -> Result<(Vec<u64>, AlignedBytes)> {
        match self.geometry() {
            Geometry::Dense { item_shape } => {
                let b = self.gather(&[index]).await?;
                Ok((item_shape.clone(), b.data))
            }
            Geometry::Ragged => {
                let b = self.gather_ragged(&[index]).await?;
                let (shape, bytes) = b.record(0);
                let mut data = AlignedBytes::zeroed(bytes.len());
                data.as_mut_slice().copy_from_slice(bytes);
                Ok((shape.to_vec(), data))
            }
        }
    }

    /// Decoded bytes of every record (sum of `logic_length`), reading the
    /// whole location table page by page.
    ///
    /// # Errors
    /// The request errors of [`RemoteStore::open`].
    pub async fn logical_bytes(&self) -> Result<u64> {
        let per_page = LOC_PAGE / LOC_SIZE;
        let mut total = 0u64;
        let mut start = 0u64;
        while start < self.len() {
            let count = per_page.min(self.len() - start);
            let indices: Vec<u64> = (start..start + count).collect();
            total += self.locate(&indices).await?.iter().map(|l| u64::from(l.logic_length)).sum::<u64>();
            start += count;
        }
        Ok(total)
    }
}

impl<C: RangeClient> Conn<C> {
    fn file_url(&self, file: File) -> String {
        format!("{}{}{}", self.base, file.name(), self.query)
    }

    /// One ranged GET with retries, judged and checked against what earlier
    /// answers said about the file. `allow_short` accepts an answer that ends
    /// early because the file does.
    /// `data_rules` applies the format's rules on `data.zr`'s size when the
    /// first data answer tells it.
    async fn fetch(
        &self,
        file: File,
        range: Range<u64>,
        allow_short: bool,
        data_rules: Option<&StoreInfo>,
    ) -> Result<Ranged> {
        let url = self.file_url(file);
        let attempts = self.options.retries + 1;
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                add(&self.counters.retries, 1);
                let wait = self.options.backoff.saturating_mul(1 << (attempt - 1).min(16));
                self.client.sleep(wait.min(Duration::from_secs(10))).await;
            }
            add(&self.counters.requests, 1);
            add(&self.counters.per_file[file as usize], 1);
            let if_match =
                if self.options.if_match { lock(&self.seen)[file as usize].etag.clone() } else { None };
            let req = RangeRequest { url: url.clone(), range: range.clone(), if_match };
            match self.client.get(req.clone()).await {
                Err(TransportError::Network(why)) => last = why,
                Err(TransportError::Aborted) => return Err(Error::Cancelled),
                Err(TransportError::Fatal(why)) => return Err(Error::Remote { url, why }),
                Ok(resp) => {
                    add(&self.counters.bytes, resp.body.len() as u64);
                    match check::judge(&req, resp) {
                        Ok(got) => return self.accept(file, &req, got, allow_short, data_rules),
                        Err(Fail::Retry(why)) => last = why,
                        Err(Fail::Fatal(e)) => return Err(e),
                    }
                }
            }
        }
        Err(Error::Remote { url, why: format!("{last} (gave up after {attempts} attempts)") })
    }

    /// Check an answer against the file's first answer, then its length.
    fn accept(
        &self,
        file: File,
        req: &RangeRequest,
        got: Ranged,
        allow_short: bool,
        data_rules: Option<&StoreInfo>,
    ) -> Result<Ranged> {
        let changed = |why: String| Error::StoreChanged { url: req.url.clone(), why };
        {
            let mut seen = lock(&self.seen);
            let seen = &mut seen[file as usize];
            match seen.size {
                Some(size) if size != got.total => {
                    return Err(changed(format!("{} was {size} bytes, now {}", file.name(), got.total)))
                }
                Some(_) => {}
                None => {
                    if let (File::Data, Some(info)) = (file, data_rules) {
                        info.check_data_size(got.total)?;
                    }
                    seen.size = Some(got.total);
                    seen.etag.clone_from(&got.etag);
                }
            }
            if let (Some(was), Some(now)) = (&seen.etag, &got.etag) {
                if was != now {
                    return Err(changed(format!("{} had ETag {was}, now {now}", file.name())));
                }
            }
        }
        let wanted = req.range.end - req.range.start;
        let ends_at_eof = req.range.start.saturating_add(got.bytes.len() as u64) == got.total;
        if got.bytes.len() as u64 != wanted && !(allow_short && ends_at_eof) {
            return Err(Error::Remote {
                url: req.url.clone(),
                why: format!(
                    "asked for bytes {}-{} but the file has only {} bytes",
                    req.range.start,
                    req.range.end - 1,
                    got.total
                ),
            });
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(split_url("http://h/s"), ("http://h/s/".into(), String::new()));
        assert_eq!(split_url("http://h/s/"), ("http://h/s/".into(), String::new()));
        assert_eq!(split_url("http://h/s/meta.zr?sig=1#x"), ("http://h/s/".into(), "?sig=1".into()));
    }
}
