//! The store a command reads from, behind one trait so a remote store can
//! take a local one's place: every command but `verify` (which checks the
//! files themselves) reads through [`Records`].
//!
//! To add remote stores: implement [`Records`] for the HTTP reader and
//! return it from [`open`] for `http://` and `https://` arguments.

use super::common::{CliResult, Fail};
use std::ops::Range;
use std::path::Path;
use zrecord::format::StoreInfo;
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

/// Whether a STORE argument names a remote store.
pub fn is_url(arg: &Path) -> bool {
    arg.to_str().is_some_and(|s| s.starts_with("http://") || s.starts_with("https://"))
}

/// Open the store a command names: a directory, or (later) an `http(s)://` URL.
pub fn open(arg: &Path) -> CliResult<Box<dyn Records>> {
    if is_url(arg) {
        return Err(Fail::Msg(format!(
            "{}: remote stores: not built yet (this build reads local store directories only)",
            arg.display()
        )));
    }
    Ok(Box::new(Store::open(arg)?))
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
