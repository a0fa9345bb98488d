//! A remote store behind the blocking [`Records`] API, for the CLI, the
//! Python package and the loader: each call runs the async reader to
//! completion on the calling thread while its requests run on the shared
//! tokio runtime. [`crate::open`] makes one from a URL.

use super::exec::block_on;
use super::options::{RemoteOptions, RemoteSizes, RemoteStats};
use super::store::RemoteStore;
use super::transport::RangeRead;
use crate::format::batch::{DenseBatch, RaggedBatch};
use crate::format::{FileSizes, RecordLoc, StoreCore};
use crate::records::Records;
use crate::Result;

/// Any native transport, as a [`BlockingStore`] holds it.
pub type AnyTransport = Box<dyn RangeRead + Send + Sync>;

/// A remote store behind the blocking [`Records`] API: each call runs the
/// async reader to completion on the calling thread while its requests run
/// on the shared tokio runtime.
#[derive(Debug)]
pub struct BlockingStore {
    inner: RemoteStore<AnyTransport>,
    url: String,
}

impl BlockingStore {
    /// Open the store `transport` reads.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub fn open(transport: AnyTransport, options: RemoteOptions) -> Result<BlockingStore> {
        let inner = block_on(RemoteStore::open(transport, options))?;
        let url = inner.transport().name();
        Ok(BlockingStore { inner, url })
    }
    /// The async reader underneath.
    pub fn as_async(&self) -> &RemoteStore<AnyTransport> {
        &self.inner
    }
    /// The store's directory URL (ending in `/`).
    pub fn url(&self) -> &str {
        &self.url
    }
    /// See [`RemoteStore::static_page`].
    pub fn static_page(&self) -> &[u8] {
        self.inner.static_page()
    }
    /// See [`RemoteStore::stats`].
    pub fn stats(&self) -> RemoteStats {
        self.inner.stats()
    }
    /// See [`RemoteStore::file_sizes`].
    pub fn file_sizes(&self) -> RemoteSizes {
        self.inner.file_sizes()
    }
    /// See [`RemoteStore::locs`].
    ///
    /// # Errors
    /// As [`RemoteStore::locs`].
    pub fn locs(&self, start: u64, count: u64) -> Result<Vec<RecordLoc>> {
        block_on(self.inner.locs(start, count))
    }
    /// See [`RemoteStore::read_stored`].
    ///
    /// # Errors
    /// As [`RemoteStore::read_stored`].
    pub fn read_stored(&self, ranges: &[std::ops::Range<u64>]) -> Result<Vec<u8>> {
        block_on(self.inner.read_stored(ranges))
    }
    /// See [`RemoteStore::read_sidecar`].
    ///
    /// # Errors
    /// As [`RemoteStore::read_sidecar`].
    pub fn read_sidecar(&self) -> Result<Option<Vec<u8>>> {
        block_on(self.inner.read_sidecar())
    }
    /// See [`RemoteStore::data_size`].
    ///
    /// # Errors
    /// As [`RemoteStore::data_size`].
    pub fn data_size(&self) -> Result<u64> {
        block_on(self.inner.data_size())
    }
}

impl Records for BlockingStore {
    fn core(&self) -> &StoreCore {
        self.inner.core()
    }
    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        block_on(self.inner.raw_locs(indices))
    }
    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        block_on(self.inner.gather_into(indices, out))
    }
    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        block_on(self.inner.gather_dense_batch(indices, batch))
    }
    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        block_on(self.inner.gather_ragged_into(indices, batch))
    }
    fn sizes(&self) -> Result<FileSizes> {
        Ok(FileSizes { data: self.data_size()?, ..self.info().sizes })
    }
    fn prefetch(&self, indices: &[u64]) -> Result<u64> {
        block_on(self.inner.prefetch(indices))
    }
    fn prefetches(&self) -> bool {
        self.inner.transport().prefetches()
    }
}
