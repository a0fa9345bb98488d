//! Surviving `fork()`.
//!
//! A forked child has one thread: the loader's workers and the HTTP client's
//! workers of its parent are gone, while their bookkeeping says they exist,
//! so work handed to them would wait forever. So a remote store is reopened
//! in a child on first use, and loaders and writers refuse to run there (see
//! their modules). A dataset's remote column is reopened the same way, at
//! the version the parent read. (Gathers need nothing here: the core's thread pool is one
//! per process, `work.rs`.) Nothing here costs the importing process a
//! thing: it compares two integers per gather.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use zrecord::dataset::{Column, Dataset, DatasetOptions};
use zrecord::format::batch::{DenseBatch, RaggedBatch};
use zrecord::format::{FileSizes, RecordLoc, StoreCore};
use zrecord::open::Options;
use zrecord::{AnyStore, Records, Result};

static HOME_PID: OnceLock<u32> = OnceLock::new();

/// The process that imported the module (called once at import).
pub fn home_pid() -> u32 {
    *HOME_PID.get_or_init(std::process::id)
}

/// Whether we run in a process forked from the one that imported us.
pub fn forked() -> bool {
    std::process::id() != home_pid()
}

/// A store as the bindings hold it: any store [`zrecord::open`] gives, or a
/// dataset's column, reopened (remote) in a forked child.
#[derive(Debug)]
pub struct ForkSafe {
    inner: Arc<dyn Records>,
    /// For a remote store or column: how to open it again in a child.
    reopen: Option<Reopen>,
    child: Mutex<Option<(u32, Arc<dyn Records>)>>,
}

/// What a forked child opens again.
#[derive(Debug)]
enum Reopen {
    /// A remote store.
    Store(String, Options),
    /// Column `column` of a remote dataset, at the version first read.
    Column { target: String, options: DatasetOptions, column: usize },
}

impl Reopen {
    fn open(&self) -> Result<Arc<dyn Records>> {
        Ok(match self {
            Reopen::Store(url, options) => Arc::new(zrecord::open::remote(url, options)?),
            Reopen::Column { target, options, column } => {
                Dataset::open_with(target, options)?.columns()[*column].clone()
            }
        })
    }
}

impl ForkSafe {
    /// Open `target` (a path or a URL) as [`zrecord::open_with`] does.
    pub fn open(target: &str, options: Options) -> Result<Self> {
        Ok(match zrecord::open_with(target, &options)? {
            AnyStore::Local(store) => ForkSafe::new(Arc::new(store), None),
            AnyStore::Remote(store) => {
                ForkSafe::new(Arc::new(store), Some(Reopen::Store(target.to_string(), options)))
            }
        })
    }

    /// Column `index` of `ds`, opened from `target` with `options` (whose
    /// version must be the one `ds` read, so a child reads the same records).
    pub fn column(ds: Arc<Dataset>, index: usize, target: &str, options: DatasetOptions) -> Self {
        let column = ds.columns()[index].clone();
        let remote = !matches!(*column, Column::Local(_));
        let reopen = remote.then(|| Reopen::Column { target: target.to_string(), options, column: index });
        ForkSafe::new(column, reopen)
    }

    fn new(inner: Arc<dyn Records>, reopen: Option<Reopen>) -> Self {
        ForkSafe { inner, reopen, child: Mutex::new(None) }
    }

    /// The store to read in this process.
    fn current(&self) -> Result<Arc<dyn Records>> {
        let Some(reopen) = self.reopen.as_ref().filter(|_| forked()) else {
            return Ok(Arc::clone(&self.inner));
        };
        let pid = std::process::id();
        let mut slot = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((owner, store)) = slot.as_ref() {
            if *owner == pid {
                return Ok(Arc::clone(store));
            }
        }
        let store = reopen.open()?;
        if let Some(old) = slot.replace((pid, Arc::clone(&store))) {
            std::mem::forget(old); // its HTTP workers belong to another process
        }
        Ok(store)
    }
}

impl Drop for ForkSafe {
    fn drop(&mut self) {
        if forked() {
            // The parent's store, copied by fork: its HTTP workers and its
            // shared lock on meta.zr are the parent's, leave them alone.
            std::mem::forget(Arc::clone(&self.inner));
        }
    }
}

impl Records for ForkSafe {
    fn core(&self) -> &StoreCore {
        self.inner.core()
    }
    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        let store = self.current()?;
        store.raw_locs(indices)
    }
    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let store = self.current()?;
        store.gather_into(indices, out)
    }
    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        let store = self.current()?;
        store.gather_dense_batch(indices, batch)
    }
    fn gather_rows(&self, indices: &[u64], rows: &mut [&mut [u8]]) -> Result<()> {
        let store = self.current()?;
        store.gather_rows(indices, rows)
    }
    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        let store = self.current()?;
        store.gather_ragged_into(indices, batch)
    }
    fn sizes(&self) -> Result<FileSizes> {
        let store = self.current()?;
        store.sizes()
    }
    fn local_dir(&self) -> Option<&std::path::Path> {
        self.inner.local_dir()
    }
    fn prefetch(&self, indices: &[u64]) -> Result<u64> {
        let store = self.current()?;
        store.prefetch(indices)
    }
    fn prefetches(&self) -> bool {
        self.inner.prefetches()
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}
