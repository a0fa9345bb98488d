//! The store a command reads from: a local store or a remote one behind the
//! library's [`Records`] trait, so every command but `verify` (which checks
//! the stored bytes themselves) reads both alike. [`open`] gives the remote
//! reader for `s3://`, `gs://`, `az://`, `http://` and `https://` arguments.

use super::common::CliResult;
use std::ops::Range;
use std::path::Path;
use zrecord::format::Verify;
use zrecord::remote::{BlockingStore, HttpOptions, RemoteOptions, RemoteStore};
use zrecord::{Batch, OpenOptions, Records, Store};

/// Whether a STORE argument names a remote store.
pub fn is_url(arg: &Path) -> bool {
    url_of(arg).is_some()
}

/// Open the store a command names: a directory, or a bucket or `http(s)://`
/// URL. A sealed store's records are checked against its sidecar as they
/// are read, so no command hands on bytes that changed silently.
pub fn open(arg: &Path) -> CliResult<Box<dyn Records>> {
    match url_of(arg) {
        Some(url) => Ok(Box::new(open_remote_with(
            url,
            RemoteOptions { verify: Verify::IfSealed, ..Default::default() },
        )?)),
        None => Ok(Box::new(Store::open_with(
            arg,
            OpenOptions { verify: Verify::IfSealed, ..Default::default() },
        )?)),
    }
}

/// The URL a STORE argument names, if it names one.
pub fn url_of(arg: &Path) -> Option<&str> {
    arg.to_str().filter(|s| {
        s.split_once("://")
            .is_some_and(|(scheme, _)| URL_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()))
    })
}

/// Schemes a STORE argument may have (buckets go through object_store).
const URL_SCHEMES: [&str; 9] = ["http", "https", "s3", "s3a", "gs", "az", "azure", "abfs", "abfss"];

/// Open a remote store (the store directory's URL, or its `meta.zr`'s).
pub fn open_remote(url: &str) -> zrecord::Result<BlockingStore> {
    RemoteStore::open_blocking(url)
}

/// As [`open_remote`], with options.
pub fn open_remote_with(url: &str, options: RemoteOptions) -> zrecord::Result<BlockingStore> {
    RemoteStore::open_blocking_with(url, options, HttpOptions::default())
}

/// One batch of records to work on.
pub struct Chunk {
    /// Indices of the records, consecutive.
    pub range: Range<u64>,
    pub batch: Batch,
}

impl Chunk {
    /// `(shape, payload)` of the `k`-th record of the chunk.
    pub fn record(&self, k: usize) -> (&[u64], &[u8]) {
        self.batch.record(k)
    }
    pub fn len(&self) -> usize {
        (self.range.end - self.range.start) as usize
    }
}

/// Bytes of decoded records a chunk aims at: bounds memory, keeps threads busy.
pub const CHUNK_BYTES: u64 = 32 << 20;

/// Read `range` of the store in consecutive chunks of about [`CHUNK_BYTES`]
/// decoded bytes and hand each to `f`. Dense chunks are sized exactly; Ragged
/// chunks are sized from the mean record size seen so far (no location
/// reads up front, which would cost a request each on a remote store).
pub fn for_each_chunk(
    store: &dyn Records,
    range: Range<u64>,
    mut f: impl FnMut(Chunk) -> CliResult,
) -> CliResult {
    let dense_row = store.info().row_bytes();
    let (mut seen_records, mut seen_bytes) = (0u64, 0u64);
    let mut at = range.start;
    while at < range.end {
        let count = match dense_row {
            Some(row) => (CHUNK_BYTES / row.max(1)).max(1),
            None if seen_records == 0 => 64,
            None => (CHUNK_BYTES / (seen_bytes / seen_records).max(1)).clamp(1, 65_536),
        }
        .min(range.end - at);
        let indices: Vec<u64> = (at..at + count).collect();
        let batch = store.gather_any(&indices)?;
        if let Batch::Ragged(b) = &batch {
            seen_records += count;
            seen_bytes += b.values().len() as u64;
        }
        f(Chunk { range: at..at + count, batch })?;
        at += count;
    }
    Ok(())
}
