//! What a remote store is told (its options) and what it tells (its
//! request counts and file sizes).

use crate::format::Verify;
use std::time::Duration;

/// Tuning for a remote store. The defaults suit object stores and CDNs
/// from a native process; [`RemoteOptions::browser`] suits a browser.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// Most unwanted bytes read between two records to save a request
    /// (default 1 MiB, object_store's). Within it, two ranges merge when
    /// the gap costs less than a request (see [`RemoteOptions::latency`]).
    pub max_gap: u64,
    /// What one request costs in time. Merging a gap saves one request —
    /// one of `concurrency` slots held for a latency — and costs
    /// `gap / bandwidth`, so ranges merge across gaps up to
    /// `latency × bandwidth / concurrency` (and `max_gap`). `None`
    /// (default): measured while running.
    pub latency: Option<Duration>,
    /// Bytes per second all requests together deliver; `None` (default):
    /// measured while running (the most any batch has received per second).
    pub bandwidth: Option<u64>,
    /// Largest merged request in bytes (default 8 MiB); a single larger
    /// record is still fetched alone.
    pub max_request: u64,
    /// Requests in flight at once (default 64; a browser keeps 6).
    pub concurrency: usize,
    /// Location pages (64 KiB, 4,096 records each) kept in the LRU (default 64).
    pub cache_pages: usize,
    /// Retries of a transient failure (5xx, 408, 429, network) by transports
    /// that retry, such as HTTP (default 3). Buckets retry as object_store
    /// does (see `objstore::BucketRetry`: 10 retries within 3 minutes).
    pub retries: u32,
    /// Wait before the first retry; doubled each time, jittered, at most 10 s (default 200 ms).
    pub backoff: Duration,
    /// Check every gathered record against the store's `sums.zr` sidecar
    /// (default off). Costs one read at open and the sidecar's pages
    /// (64 KiB, 8,192 records each, cached like location pages).
    pub verify: Verify,
    /// Send `If-Match` with the ETag seen first, so a changed file fails with
    /// 412 on the server (default off: it makes browsers send a CORS preflight).
    pub if_match: bool,
}

impl RemoteOptions {
    /// Requests in flight by default natively (Lance keeps 64 for cloud stores).
    pub const NATIVE_CONCURRENCY: usize = 64;

    /// A browser's defaults: 6 requests in flight (its per-host connection
    /// limit) and 64 KiB gaps (no clock to measure costs with).
    pub fn browser() -> Self {
        RemoteOptions { concurrency: 6, max_gap: super::cost::UNMEASURED_GAP, ..RemoteOptions::default() }
    }
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            max_gap: 1 << 20,
            latency: None,
            bandwidth: None,
            max_request: 8 << 20,
            concurrency: Self::NATIVE_CONCURRENCY,
            cache_pages: 64,
            retries: 3,
            backoff: Duration::from_millis(200),
            if_match: false,
            verify: Verify::Off,
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
    /// Requests to `sums.zr` (checked reads).
    pub sums_requests: u64,
    /// Location pages found in the cache.
    pub page_hits: u64,
    /// Location pages that had to be fetched.
    pub page_misses: u64,
    /// Location pages held in the cache now.
    pub cached_pages: u64,
    /// Gap (bytes) the next gather merges across.
    pub merge_gap: u64,
    /// Latency per request as measured or configured, in microseconds (0: unknown).
    pub latency_us: u64,
    /// Bandwidth as measured or configured, bytes per second (0: unknown).
    pub bandwidth: u64,
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

/// What a node-local cache (`remote::cache`, native) has cost and saved:
/// counted per process, over every cache directory it reads through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests sent to the remote: blocks, reads through, and one small
    /// read per file and process that learns the file's version.
    pub gets: u64,
    /// Bytes those requests received.
    pub bytes_fetched: u64,
    /// Block reads served from the cache directory.
    pub hits: u64,
    /// Blocks that were not there (fetched, or read through).
    pub misses: u64,
    /// Bytes of blocks this process removed to stay under the limit.
    pub evicted_bytes: u64,
    /// Reads served straight from the remote because no block could be
    /// kept (the limit is smaller than a block, or taken by downloads).
    pub read_through: u64,
}

impl CacheStats {
    /// Each counter by name, for reports (JSON, Python dicts).
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("gets", self.gets),
            ("bytes_fetched", self.bytes_fetched),
            ("hits", self.hits),
            ("misses", self.misses),
            ("evicted_bytes", self.evicted_bytes),
            ("read_through", self.read_through),
        ]
    }
}
