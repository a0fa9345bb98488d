//! The store a command reads from, behind one trait so a remote store takes
//! a local one's place: every command but `verify` (which checks the stored
//! bytes themselves) reads through [`Records`], and [`open`] gives the HTTP
//! reader for `http://` and `https://` arguments.

use super::common::CliResult;
use std::ops::Range;
use std::path::Path;
use zrecord::format::store_info::FileSizes;
use zrecord::format::StoreInfo;
use zrecord::remote::{BlockingStore, RemoteStore};
use zrecord::train::{self, Tier};
use zrecord::{Batch, DType, DenseBatch, Geometry, RaggedBatch, Store};

/// A store records can be read from.
pub trait Records: Sync {
    /// Validated header, schema and file sizes.
    fn info(&self) -> &StoreInfo;
    /// Gather Dense records.
    fn gather(&self, indices: &[u64]) -> zrecord::Result<DenseBatch>;
    /// Gather Ragged records.
    fn gather_ragged(&self, indices: &[u64]) -> zrecord::Result<RaggedBatch>;
    /// Decoded bytes of every record (sum of `logic_length`).
    fn logical_bytes(&self) -> zrecord::Result<u64>;
    /// Train a dictionary from the records, as loaderx's `train_dict`.
    fn train_dict(&self, tier: Tier) -> zrecord::Result<Vec<u8>>;
    /// The local store, for what only files on disk can tell.
    fn local(&self) -> Option<&Store> {
        None
    }
    /// The real file sizes (a remote store learns `data.zr`'s on demand).
    fn sizes(&self) -> zrecord::Result<FileSizes> {
        Ok(self.info().sizes)
    }

    /// What errors call the store.
    fn name(&self) -> &str {
        &self.info().name
    }
    fn len(&self) -> u64 {
        self.info().len()
    }
    fn dtype(&self) -> &DType {
        self.info().dtype()
    }
    fn geometry(&self) -> &Geometry {
        self.info().geometry()
    }
    /// Gather records of either kind.
    fn gather_any(&self, indices: &[u64]) -> zrecord::Result<Batch> {
        Ok(match self.geometry() {
            Geometry::Dense { .. } => Batch::Dense(self.gather(indices)?),
            Geometry::Ragged => Batch::Ragged(self.gather_ragged(indices)?),
        })
    }
}

impl Records for Store {
    fn info(&self) -> &StoreInfo {
        Store::info(self)
    }
    fn gather(&self, indices: &[u64]) -> zrecord::Result<DenseBatch> {
        Store::gather(self, indices)
    }
    fn gather_ragged(&self, indices: &[u64]) -> zrecord::Result<RaggedBatch> {
        Store::gather_ragged(self, indices)
    }
    fn logical_bytes(&self) -> zrecord::Result<u64> {
        Store::logical_bytes(self)
    }
    fn train_dict(&self, tier: Tier) -> zrecord::Result<Vec<u8>> {
        train::train_from_store(self, tier)
    }
    fn local(&self) -> Option<&Store> {
        Some(self)
    }
}

impl Records for BlockingStore {
    fn info(&self) -> &StoreInfo {
        BlockingStore::info(self)
    }
    fn gather(&self, indices: &[u64]) -> zrecord::Result<DenseBatch> {
        BlockingStore::gather(self, indices)
    }
    fn gather_ragged(&self, indices: &[u64]) -> zrecord::Result<RaggedBatch> {
        BlockingStore::gather_ragged(self, indices)
    }
    fn logical_bytes(&self) -> zrecord::Result<u64> {
        BlockingStore::logical_bytes(self)
    }
    fn train_dict(&self, tier: Tier) -> zrecord::Result<Vec<u8>> {
        train::train_from_records(self.info(), tier, |indices| self.gather_any(indices))
    }
    fn sizes(&self) -> zrecord::Result<FileSizes> {
        Ok(FileSizes { data: self.data_size()?, ..BlockingStore::info(self).sizes })
    }
}

/// Whether a STORE argument names a remote store.
pub fn is_url(arg: &Path) -> bool {
    url_of(arg).is_some()
}

/// Open the store a command names: a directory, or an `http(s)://` URL.
pub fn open(arg: &Path) -> CliResult<Box<dyn Records>> {
    match url_of(arg) {
        Some(url) => Ok(Box::new(open_remote(url)?)),
        None => Ok(Box::new(Store::open(arg)?)),
    }
}

/// The URL a STORE argument names, if it names one.
pub fn url_of(arg: &Path) -> Option<&str> {
    arg.to_str().filter(|s| s.starts_with("http://") || s.starts_with("https://"))
}

/// Open a remote store (the store directory's URL, or its `meta.zr`'s).
pub fn open_remote(url: &str) -> zrecord::Result<BlockingStore> {
    RemoteStore::open_blocking(url)
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
        match &self.batch {
            Batch::Dense(b) => {
                let row = b.bytes().len() / b.len().max(1);
                (&b.shape()[1..], &b.bytes()[k * row..(k + 1) * row])
            }
            Batch::Ragged(b) => b.record(k),
        }
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
