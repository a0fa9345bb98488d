//! The async remote reader: gather plans walked over range reads.
//!
//! Open reads `meta.zr` bytes `0-65535` once (Header, schema and the first
//! 3,840 locations; the file size with them) and `dict.zr` whole for
//! `zstd_dict` stores. A gather looks its locations up in 64 KiB pages of the
//! location table (an LRU; missing pages are read, consecutive ones in one
//! read), then walks the core's [`GatherPlan`]: the plan checks the
//! locations, merges the records' byte ranges, and decodes each record
//! straight into its place as its read completes. This file only knows how
//! to get bytes, with bounded concurrency.
//!
//! `data.zr`'s size is not asked for at open (that would cost a request): it
//! comes with the first data answer, and the open-time rule
//! `size(data.zr) >= tail_offset` is applied then, before any record decodes.

use super::cost::CostModel;
use super::exec::for_each_bounded;
use super::files::{add, get, lock, StoreFiles};
use super::http::{HttpGet, HttpRanges, Retry};
use super::options::{RemoteOptions, RemoteSizes, RemoteStats};
use super::pages::{PageCache, Table, LOC_PAGE};
use super::transport::{LocalBoxFuture, RangeRead};
use crate::format::batch::{Batch, DenseBatch, RaggedBatch};
use crate::format::plan::Expected;
use crate::format::store_core::check_dict_size;
use crate::format::store_core::MAX_DICT_BYTES;
use crate::format::sums::{self, SumsHeader};
use crate::format::{
    Codec, FileSizes, GatherPlan, Header, Reads, RecordLoc, StoreCore, StoreFile, StoreInfo, Verify,
    PAGE_SIZE,
};
use crate::{Error, Result};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A read's bytes and how long it took (when the transport has a clock).
type Timed = (Vec<u8>, Option<Duration>);

/// A store read over range reads: HTTP Range requests ([`HttpRanges`]), a
/// browser's local files, or any [`RangeRead`].
///
/// Every method is `async`; cancel one by dropping its future (see
/// [`super::cancellable`]). Natively, [`crate::open`] gives the
/// same reader behind the blocking [`Records`](crate::Records) trait.
pub struct RemoteStore<T> {
    files: StoreFiles<T>,
    options: RemoteOptions,
    core: StoreCore,
    /// `meta.zr`'s static page as read at open (for checkers: its padding).
    static_page: Box<[u8]>,
    pages: Mutex<PageCache>,
    /// The sidecar's header and record-checksum pages, for checked gathers.
    sums: Option<(SumsHeader, Mutex<PageCache>)>,
    costs: CostModel,
}

impl<T: RangeRead> std::fmt::Debug for RemoteStore<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let info = self.info();
        f.debug_struct("RemoteStore")
            .field("url", &info.name)
            .field("len", &info.len())
            .field("dtype", &info.dtype().as_str())
            .field("codec", &info.codec())
            .finish()
    }
}

impl<G: HttpGet> RemoteStore<HttpRanges<G>> {
    /// Open the store at `url` over HTTP: a directory URL
    /// (`https://host/stores/a/`), or the URL of its `meta.zr`. A query
    /// string is kept on every file's URL.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub async fn open_http(get: G, url: &str, options: RemoteOptions) -> Result<Self> {
        let retry = Retry { retries: options.retries, backoff: options.backoff };
        RemoteStore::open(HttpRanges::new(get, url, retry), options).await
    }

    /// The store's directory URL (ending in `/`).
    pub fn url(&self) -> &str {
        self.files.transport.base()
    }
    /// The HTTP client.
    pub fn client(&self) -> &G {
        self.files.transport.client()
    }
}

impl<T: RangeRead> RemoteStore<T> {
    /// Open the store whose files `transport` reads.
    ///
    /// Costs one read (two for `zstd_dict`).
    ///
    /// # Errors
    /// `NotFound`, `Remote` (the server misbehaves or refuses), `BadFormat`,
    /// `Unpublished`, `Cancelled`.
    pub async fn open(transport: T, options: RemoteOptions) -> Result<Self> {
        let files = StoreFiles::new(transport, options.if_match);
        let name = files.transport.name();
        let head = files.read(StoreFile::Meta, 0..LOC_PAGE, true, None).await?;
        let header = Header::parse(&name, &head.bytes)?;
        let mut dict_bytes = None;
        if header.codec == Codec::ZstdDict {
            match files.read(StoreFile::Dict, 0..MAX_DICT_BYTES + 1, true, None).await {
                Ok(d) => {
                    check_dict_size(&name, d.total)?;
                    dict_bytes = Some(d.bytes);
                }
                // A missing dict.zr is the format's rule to report, below.
                Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        // data.zr's size is checked when the first data answer tells it.
        let sizes = FileSizes { meta: head.total, data: header.tail_offset, dict: None };
        let core = StoreCore::open(&name, &head.bytes, sizes, dict_bytes)?;
        let static_page = head.bytes[..head.bytes.len().min(PAGE_SIZE as usize)].into();
        let sums = match options.verify {
            Verify::Off => None,
            verify => match files.read(StoreFile::Sums, 0..sums::HEADER_LEN, true, None).await {
                Ok(h) => {
                    let header = SumsHeader::parse(&name, &h.bytes, h.total)?;
                    let info = core.info();
                    sums::check_store(&name, &header, info.len(), None, core.dict_bytes())?;
                    Some((header, Mutex::new(PageCache::new(options.cache_pages))))
                }
                Err(Error::NotFound { .. }) if verify == Verify::IfSealed => None,
                Err(Error::NotFound { .. }) => return Err(sums::not_sealed(&name)),
                Err(e) => return Err(e),
            },
        };
        let store = RemoteStore {
            pages: Mutex::new(PageCache::new(options.cache_pages)),
            costs: CostModel::new(&options),
            files,
            options,
            core,
            static_page,
            sums,
        };
        let first = Table::locations(store.info().len()).page(0);
        if !first.is_empty() {
            let page: Arc<[u8]> = Arc::from(&head.bytes[..first.end as usize]);
            lock(&store.pages).insert(0, page);
        }
        Ok(store)
    }

    /// Validated Header, schema and sizes. `info().sizes.data` holds
    /// `tail_offset` (the least `data.zr` may hold) until a data read
    /// learns the real size; see [`RemoteStore::file_sizes`].
    pub fn info(&self) -> &StoreInfo {
        self.core.info()
    }
    /// The store's description and dictionary, as gather plans take them.
    pub fn core(&self) -> &StoreCore {
        &self.core
    }
    /// The dictionary bytes of a `zstd_dict` store.
    pub fn dict_bytes(&self) -> Option<&[u8]> {
        self.core.dict_bytes()
    }
    /// The first 4096 bytes of `meta.zr` (Header, schema, padding) as read
    /// at open; fewer only when the file is shorter.
    pub fn static_page(&self) -> &[u8] {
        &self.static_page
    }
    /// The options the store was opened with.
    pub fn options(&self) -> &RemoteOptions {
        &self.options
    }
    /// The transport.
    pub fn transport(&self) -> &T {
        &self.files.transport
    }

    /// Whether gathers check records against the store's checksum sidecar.
    pub fn is_checked(&self) -> bool {
        self.sums.is_some()
    }

    /// The whole checksum sidecar (`sums.zr`), or `None` for a store that
    /// has none (for checkers).
    ///
    /// # Errors
    /// `BadFormat` for a sidecar whose header is broken or whose size does
    /// not match it, and the read errors of [`RemoteStore::open`].
    pub async fn read_sidecar(&self) -> Result<Option<Vec<u8>>> {
        // One read of the size a sidecar of this store has: bounded by the
        // store, whatever the file claims.
        let expected = sums::entry_range(self.info().len()).start;
        let got = match self.files.read(StoreFile::Sums, 0..expected, true, None).await {
            Ok(got) => got,
            Err(Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let header = SumsHeader::parse(&self.info().name, &got.bytes, got.total)?;
        sums::check_covers(&self.info().name, &header, self.info().len())?;
        Ok(Some(got.bytes))
    }

    /// Sizes of the files as far as known.
    pub fn file_sizes(&self) -> RemoteSizes {
        let sizes = self.info().sizes;
        RemoteSizes { meta: sizes.meta, data: self.files.data_size(), dict: sizes.dict }
    }

    /// Requests and bytes spent so far.
    pub fn stats(&self) -> RemoteStats {
        let c = &self.files.counters;
        let per_file = |f: StoreFile| get(&c.reads[f as usize]);
        let retries = self.files.transport.retries();
        let reads: u64 = StoreFile::ALL.into_iter().map(per_file).sum();
        RemoteStats {
            requests: reads + retries,
            bytes: get(&c.bytes),
            retries,
            meta_requests: per_file(StoreFile::Meta),
            data_requests: per_file(StoreFile::Data),
            dict_requests: per_file(StoreFile::Dict),
            sums_requests: per_file(StoreFile::Sums),
            page_hits: get(&c.page_hits),
            page_misses: get(&c.page_misses),
            cached_pages: lock(&self.pages).len() as u64,
            merge_gap: self.costs.merge_gap(),
            latency_us: self.costs.latency().map_or(0, |l| (l * 1e6) as u64),
            bandwidth: self.costs.bandwidth().map_or(0, |b| b as u64),
        }
    }

    /// Read every range of `reads` from `file` with bounded concurrency,
    /// handing original range `m`'s bytes to `each(m, bytes)` as its read
    /// completes.
    async fn read_all(
        &self,
        file: StoreFile,
        reads: &Reads,
        mut each: impl FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let data_rules = (file == StoreFile::Data).then(|| self.info());
        // Bytes at hand (a cache's mapped blocks) are decoded straight from
        // where they lie; only the rest become requests.
        let ranges: Vec<Range<u64>> = reads.fetches().iter().map(|f| f.range.clone()).collect();
        let waiting = self.files.read_at_hand(file, &ranges, data_rules, |f, bytes| {
            reads.members(f, bytes).try_for_each(|(m, src)| each(m, src))
        })?;
        if waiting.is_empty() {
            return Ok(());
        }
        let clock = || self.files.transport.now();
        let t0 = clock();
        let futures: Vec<LocalBoxFuture<'_, Result<Timed>>> = waiting
            .iter()
            .map(|&f| {
                let range = reads.fetches()[f].range.clone();
                Box::pin(async move {
                    let start = clock();
                    let bytes = self.files.read(file, range, false, data_rules).await?.bytes;
                    let took = start.zip(clock()).map(|(a, b)| b.saturating_sub(a));
                    Ok((bytes, took))
                }) as LocalBoxFuture<'_, Result<Timed>>
            })
            .collect();
        let (mut quickest, mut received) = (None::<Duration>, 0u64);
        for_each_bounded(futures, self.options.concurrency, |w, (bytes, took)| {
            let f = waiting[w];
            quickest = match (quickest, took) {
                (Some(q), Some(t)) => Some(q.min(t)),
                (q, t) => q.or(t),
            };
            received += bytes.len() as u64;
            reads.members(f, &bytes).try_for_each(|(m, src)| each(m, src))
        })
        .await?;
        if let (Some(q), Some(t0), Some(t1)) = (quickest, t0, clock()) {
            self.costs.measured(q.as_secs_f64(), received, t1.saturating_sub(t0).as_secs_f64());
        }
        Ok(())
    }

    /// The raw locations of `indices` (in range, not yet validated).
    async fn locate(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        let table = Table::locations(self.info().len());
        self.entries(table, &self.pages, indices, |e| RecordLoc::decode(e.try_into().expect("16 bytes")))
            .await
    }

    /// The sidecar's checksums of `indices`, for a checked gather.
    async fn expected(&self, indices: &[u64]) -> Result<Option<Vec<u64>>> {
        let Some((header, cache)) = &self.sums else { return Ok(None) };
        let table = Table::checksums(header.records);
        let sums =
            self.entries(table, cache, indices, |e| u64::from_le_bytes(e.try_into().expect("8 bytes")));
        Ok(Some(sums.await?))
    }

    /// Entries `indices` of `table`, read through `cache`: pages not cached
    /// are read, consecutive ones in one read.
    async fn entries<E>(
        &self,
        table: Table,
        cache: &Mutex<PageCache>,
        indices: &[u64],
        decode: impl Fn(&[u8]) -> E,
    ) -> Result<Vec<E>> {
        let mut held: HashMap<u64, Arc<[u8]>> = HashMap::new();
        let mut missing: Vec<u64> = Vec::new();
        {
            let mut cache = lock(cache);
            for &i in indices {
                let p = table.place(i).0;
                if held.contains_key(&p) || missing.contains(&p) {
                    continue;
                }
                match cache.get(p) {
                    Some(bytes) => {
                        add(&self.files.counters.page_hits, 1);
                        held.insert(p, bytes);
                    }
                    None => missing.push(p),
                }
            }
        }
        if !missing.is_empty() {
            add(&self.files.counters.page_misses, missing.len() as u64);
            missing.sort_unstable();
            let reads = Reads::new(missing.iter().map(|&p| table.page(p)).collect(), self.costs.merge(0));
            let mut fetched: Vec<(u64, Arc<[u8]>)> = Vec::with_capacity(missing.len());
            self.read_all(table.file, &reads, |m, bytes| {
                fetched.push((missing[m], Arc::from(bytes)));
                Ok(())
            })
            .await?;
            let mut cache = lock(cache);
            for (p, bytes) in fetched {
                cache.insert(p, bytes.clone());
                held.insert(p, bytes);
            }
        }
        indices
            .iter()
            .map(|&i| {
                let (p, at) = table.place(i);
                let entry = held.get(&p).and_then(|page| page.get(at..at + table.entry as usize));
                entry.map(&decode).ok_or_else(|| Error::BadFormat {
                    store: self.info().name.clone(),
                    check: format!("record {i}: its entry lies outside {}", table.file),
                })
            })
            .collect()
    }

    /// The locations of `plan`'s records, checked by the plan.
    async fn checked_locs(&self, plan: &GatherPlan<'_>) -> Result<Vec<RecordLoc>> {
        let locs = self.locate(plan.indices()).await?;
        plan.check_locs(&locs)?;
        Ok(locs)
    }

    /// Read the records at checked `locs` and decode record `k` into `parts[k]`
    /// as its read completes.
    async fn read_decode(
        &self,
        plan: &GatherPlan<'_>,
        locs: &[RecordLoc],
        parts: &mut [&mut [u8]],
    ) -> Result<()> {
        let reads = plan.reads(locs, self.costs.data_merge(locs));
        self.read_all(StoreFile::Data, &reads, |k, src| plan.decode(k, src, parts[k])).await
    }

    /// The stored bytes of the records at checked `locs`, for a batch that is
    /// sized by their lengths: `data.zr`'s size is not known before its first
    /// answer, so every length must be backed by bytes that arrived, and each
    /// big frame must declare its claim. Buffers are allocated as bytes arrive.
    async fn read_checked(&self, plan: &GatherPlan<'_>, locs: &[RecordLoc]) -> Result<Vec<Vec<u8>>> {
        let reads = plan.reads(locs, self.costs.data_merge(locs));
        let mut stored = vec![Vec::new(); locs.len()];
        self.read_all(StoreFile::Data, &reads, |k, src| {
            plan.check_frame_head(k, &locs[k], src)?;
            stored[k] = src.to_vec();
            Ok(())
        })
        .await?;
        Ok(stored)
    }

    /// Bring the stored bytes of `indices` close ahead of their gather (a
    /// node-local cache's blocks, see [`RangeRead::prefetch`]); the bytes
    /// that fetched. Costs the location pages a gather would read.
    ///
    /// # Errors
    /// `IndexOutOfRange`, and the read errors of [`RemoteStore::open`].
    pub async fn prefetch(&self, indices: &[u64]) -> Result<u64> {
        self.info().check_indices(indices)?;
        if self.files.transport.holds_all(StoreFile::Data) {
            return Ok(0);
        }
        let ranges = self
            .locate(indices)
            .await?
            .iter()
            .map(|l| l.offset..l.offset.saturating_add(u64::from(l.phys_length)))
            .collect();
        self.files.transport.prefetch(StoreFile::Data, ranges).await
    }

    /// Validated locations of records `start .. start + count` (for viewers).
    ///
    /// # Errors
    /// `IndexOutOfRange`, `BadFormat` for a location breaking a rule, and the
    /// read errors of [`RemoteStore::open`].
    pub async fn locs(&self, start: u64, count: u64) -> Result<Vec<RecordLoc>> {
        let info = self.info();
        let end = start.checked_add(count).filter(|&e| e <= info.len());
        let Some(end) = end else {
            return Err(Error::IndexOutOfRange {
                store: info.name.clone(),
                index: start.saturating_add(count).saturating_sub(1).max(start),
                len: info.len(),
            });
        };
        let indices: Vec<u64> = (start..end).collect();
        let locs = self.locate(&indices).await?;
        for (&i, loc) in indices.iter().zip(&locs) {
            loc.validate(&info.name, i, info.codec(), info.header.tail_offset)?;
        }
        Ok(locs)
    }

    /// Locations of `indices` exactly as stored in `meta.zr`, not validated.
    ///
    /// For checkers such as `zrecord verify`, which report every broken
    /// location instead of stopping at the first; readers want
    /// [`RemoteStore::locs`]. Costs what a gather's lookup costs (cached
    /// 64 KiB pages, consecutive missing ones in one read).
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), and the read errors of
    /// [`RemoteStore::open`].
    pub async fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        self.info().check_indices(indices)?;
        self.locate(indices).await
    }

    /// Bytes of `data.zr` as stored (record frames, for checkers), the
    /// `ranges` concatenated in the order given. Read as a gather reads
    /// records: merged, with bounded concurrency.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty range or one reaching past
    /// `tail_offset` (before any read), and the read errors of
    /// [`RemoteStore::open`].
    pub async fn read_stored(&self, ranges: &[Range<u64>]) -> Result<Vec<u8>> {
        let tail = self.info().header.tail_offset;
        if let Some(r) = ranges.iter().find(|r| r.start >= r.end || r.end > tail) {
            return Err(Error::InvalidArgument {
                store: self.info().name.clone(),
                why: format!(
                    "data.zr bytes {}..{} are empty or reach past tail_offset {tail}",
                    r.start, r.end
                ),
            });
        }
        let reads = Reads::new(ranges.to_vec(), self.costs.merge(self.costs.merge_gap()));
        let mut parts = vec![Vec::new(); ranges.len()];
        self.read_all(StoreFile::Data, &reads, |m, src| {
            parts[m] = src.to_vec();
            Ok(())
        })
        .await?;
        Ok(parts.concat())
    }

    /// The size of `data.zr`: known once a data read has answered, else
    /// asked for with a one-byte read. Either way the format's rules on
    /// it (at least `tail_offset` bytes; none for an empty store) are applied.
    ///
    /// # Errors
    /// `BadFormat`, `Unpublished`, and the read errors of [`RemoteStore::open`].
    pub async fn data_size(&self) -> Result<u64> {
        if let Some(size) = self.files.data_size() {
            return Ok(size);
        }
        Ok(self.files.read(StoreFile::Data, 0..1, true, Some(self.info())).await?.total)
    }

    /// Gather Dense records into `out` (exactly `indices.len() * row_bytes`
    /// bytes). Indices may repeat and come in any order.
    ///
    /// # Errors
    /// `IndexOutOfRange` (before any read), `InvalidArgument` for a Ragged
    /// store or a wrong buffer size, `BadFormat`/`CorruptRecord`, `Remote`,
    /// `StoreChanged`, `NotFound`.
    pub async fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let plan = GatherPlan::dense_into(&self.core, indices, out.len())?;
        let sums = self.expected(indices).await?;
        let plan = plan.checked(sums.as_deref().map(Expected::ByRecord));
        self.fill_dense(&plan, out).await
    }

    /// Read and decode a Dense plan's rows into `out` as reads complete.
    async fn fill_dense(&self, plan: &GatherPlan<'_>, out: &mut [u8]) -> Result<()> {
        let row = plan.row().expect("a Dense plan").max(1);
        let locs = self.checked_locs(plan).await?;
        let mut parts: Vec<&mut [u8]> = out.chunks_mut(row).collect();
        self.read_decode(plan, &locs, &mut parts).await
    }

    /// Gather Dense records into `batch`, reusing its buffer.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`].
    pub async fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let plan = GatherPlan::dense(&self.core, indices)?;
        let sums = self.expected(indices).await?;
        let plan = plan.checked(sums.as_deref().map(Expected::ByRecord));
        if !plan.checks_first() {
            plan.size_dense(batch)?;
            return self.fill_dense(&plan, batch.data.as_mut_slice()).await;
        }
        // A big batch is read before it is allocated.
        let locs = self.checked_locs(&plan).await?;
        let stored = self.read_checked(&plan, &locs).await?;
        plan.fill_dense_from(&stored, batch)
    }

    /// Gather Ragged records into `batch`, reusing its buffers.
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`], `InvalidArgument` for a Dense store.
    pub async fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        let plan = GatherPlan::ragged(&self.core, indices)?;
        let sums = self.expected(indices).await?;
        let plan = plan.checked(sums.as_deref().map(Expected::ByRecord));
        let locs = self.checked_locs(&plan).await?;
        // The batch is sized by location fields: read first.
        let stored = self.read_checked(&plan, &locs).await?;
        plan.fill_ragged_from(&locs, &stored, batch)
    }

    /// Gather into either kind of batch (the one async entry the
    /// allocating conveniences of [`Records`](crate::Records) mirror);
    /// `batch` becomes the store's kind, keeping its buffers when it already is.
    ///
    /// # Errors
    /// As the gathers.
    pub async fn gather_batch_into(&self, indices: &[u64], batch: &mut Batch) -> Result<()> {
        batch.fit(self.info());
        match batch {
            Batch::Dense(b) => self.gather_dense_batch(indices, b).await,
            Batch::Ragged(b) => self.gather_ragged_into(indices, b).await,
        }
    }
}
