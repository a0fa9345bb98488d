//! Surviving `fork()`.
//!
//! A forked child has one thread: the loader's workers and the HTTP client's
//! workers of its parent are gone, while their bookkeeping says they exist,
//! so work handed to them would wait forever. So a remote store is reopened
//! in a child on first use, and loaders and writers refuse to run there (see
//! their modules). (Gathers need nothing here: the core's thread pool is one
//! per process, `work.rs`.) Nothing here costs the importing process a
//! thing: it compares two integers per gather.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
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

/// A store as the bindings hold it: any store [`zrecord::open`] gives,
/// reopened (remote) in a forked child.
#[derive(Debug)]
pub struct ForkSafe {
    inner: Arc<dyn Records>,
    /// For a remote store: how to open it again in a child.
    url: Option<(String, Options)>,
    child: Mutex<Option<(u32, Arc<dyn Records>)>>,
}

impl ForkSafe {
    /// Open `target` (a path or a URL) as [`zrecord::open_with`] does.
    pub fn open(target: &str, options: Options) -> Result<Self> {
        Ok(match zrecord::open_with(target, &options)? {
            AnyStore::Local(store) => ForkSafe::new(Arc::new(store), None),
            AnyStore::Remote(store) => ForkSafe::new(Arc::new(store), Some((target.to_string(), options))),
        })
    }

    fn new(inner: Arc<dyn Records>, url: Option<(String, Options)>) -> Self {
        ForkSafe { inner, url, child: Mutex::new(None) }
    }

    /// The store to read in this process.
    fn current(&self) -> Result<Arc<dyn Records>> {
        let Some((url, options)) = self.url.as_ref().filter(|_| forked()) else {
            return Ok(Arc::clone(&self.inner));
        };
        let pid = std::process::id();
        let mut slot = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((owner, store)) = slot.as_ref() {
            if *owner == pid {
                return Ok(Arc::clone(store));
            }
        }
        let store: Arc<dyn Records> = Arc::new(zrecord::open::remote(url, options)?);
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
    fn name(&self) -> &str {
        self.inner.name()
    }
}
