//! The store a command reads from: [`zrecord::open`] gives a local store or
//! a remote one behind the library's [`Records`] trait, so every command but
//! `verify` (which checks the stored bytes themselves) reads both alike.

use super::common::CliResult;
use std::ops::Range;
use std::path::{Path, PathBuf};
use zrecord::format::Verify;
use zrecord::location::Location;
use zrecord::open::Options;
use zrecord::{Batch, Records};

/// The URL a STORE argument names, if it names one (the library's scheme
/// table decides; an unknown scheme is an error).
pub fn url_of(arg: &Path) -> CliResult<Option<&str>> {
    match arg.to_str() {
        Some(s) => Ok(Location::parse(s)?.url()),
        None => Ok(None),
    }
}

/// The directory a STORE argument names, for the commands that work on
/// local stores only (`file://` URLs become their paths; a caller refuses
/// other URLs first, with [`url_of`]).
pub fn local_path(arg: &Path) -> CliResult<PathBuf> {
    Ok(match arg.to_str().map(Location::parse).transpose()? {
        Some(Location::Path(p)) => PathBuf::from(p),
        _ => arg.to_path_buf(),
    })
}

/// Open the store a command names: a directory, or a bucket or `http(s)://`
/// URL. A sealed store's records are checked against its sidecar as they
/// are read, so no command hands on bytes that changed silently.
pub fn open(arg: &Path) -> CliResult<Box<dyn Records>> {
    Ok(Box::new(zrecord::open_with(arg, &Options::default().verify(Verify::IfSealed))?))
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
