//! Reading a batch whose records are out of memory: every record's read is
//! handed at once to a pool of [`DEPTH`] threads, each a blocking `pread`,
//! so the device has as many reads in flight as the batch has records (up
//! to [`DEPTH`]) instead of one per gathering thread.
//!
//! Measured on this VM's disk with `benches/cold_io` (2 cores; cold random
//! records, every method reading records of its own; numbers in
//! benches/results/bigger_than_memory.md): 64 KiB records, 64 threads
//! 8,623-11,112 records/s against 4,796-7,554 for the reader before
//! (`POSIX_FADV_WILLNEED` for the whole batch, then pread on the gather's
//! 2 threads: the advice waits for its reads here) and 3,454-9,500 for
//! io_uring's buffered reads 64 in flight (the `io-uring` crate: no clear
//! win, so no dependency). `O_DIRECT` reads, through io_uring or this
//! pool, were faster still in one run (about 15,000), and through the
//! whole reader 1.05-1.14x on 64 KiB records (tokens alike), but they leave
//! nothing in the page cache: a store that fits in memory would read cold
//! every epoch instead of turning warm after its first (tried and undone).

use super::work::{self, Made};
use crate::source::ByteSource;
use crate::{Error, Result};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Reads in flight for one cold batch, at most: the deepest queue `zrecord
/// bench --cold` measures the device at (its best came at depths 8 to 64
/// across runs), a quarter of a batch of 256. Threads blocked in a read
/// cost no CPU; 16 threads read 7-16% slower than 64.
pub(crate) const DEPTH: usize = 64;

/// This process's read pool, made on first use (a child made by `fork` makes
/// its own).
fn pool() -> Option<&'static ThreadPool> {
    static POOL: Mutex<Made<ThreadPool>> = Mutex::new(None);
    thread_local! {
        static MINE: Cell<Made<ThreadPool>> = const { Cell::new(None) };
    }
    work::per_process(&MINE, &POOL, || {
        ThreadPoolBuilder::new().num_threads(DEPTH).thread_name(|i| format!("zrecord-io-{i}")).build().ok()
    })
}

/// Fill every buffer of `reads` with the bytes of `src` at its offset, up
/// to [`DEPTH`] reads at once, and hand each, as soon as it is read, to
/// `then(k, bytes, &mut reads[k].2)` on the thread that read it: decoding
/// overlaps the reads still in flight (a batch of 2 KiB zstd records
/// decoded after its last read spent a fifth of its time decoding with the
/// device idle). The first error: a read's (`io` names it) or `then`'s.
/// Every thread of the pool is woken at once and takes reads until none is
/// left (rayon's parallel iterators wake threads one steal at a time: on a
/// busy machine few had started before the batch was read).
pub(crate) fn read_then<T: Send>(
    src: &dyn ByteSource,
    reads: &mut [(u64, &mut [u8], T)],
    io: impl Fn(io::Error) -> Error + Sync,
    then: impl Fn(usize, &[u8], &mut T) -> Result<()> + Sync,
) -> Result<()> {
    let one = |k: usize, (offset, buf, to): &mut (u64, &mut [u8], T)| {
        src.read_exact_at(*offset, buf).map_err(&io)?;
        then(k, buf, to)
    };
    let Some(pool) = pool().filter(|_| reads.len() > 1) else {
        return reads.iter_mut().enumerate().try_for_each(|(k, r)| one(k, r));
    };
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(None);
    let reads: Vec<Mutex<&mut (u64, &mut [u8], T)>> = reads.iter_mut().map(Mutex::new).collect();
    pool.broadcast(|_| loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(r) = reads.get(k) else { break };
        if let Err(e) = one(k, &mut work::lock(r)) {
            work::lock(&failed).get_or_insert(e);
            next.store(reads.len(), Ordering::Relaxed);
        }
    });
    failed.into_inner().unwrap_or_else(PoisonError::into_inner).map_or(Ok(()), Err)
}
