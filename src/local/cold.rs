//! Reading a batch whose records are out of memory: every record's read in
//! flight at once, so the device has as many reads queued as the batch has
//! records instead of one per gathering thread. Through io_uring where the
//! kernel has it ([`each_uring`], `uring.rs`), else handed to a pool of
//! [`DEPTH`] threads, each a blocking `pread` ([`each`]): `O_DIRECT` reads,
//! sources that are not plain files, and kernels or sandboxes that refuse
//! io_uring.
//!
//! The pool is this file's own, threads that sleep on a condition variable
//! between batches: rayon's threads (the pool before) look for work 32
//! times, yielding the core each time, before they sleep, and 64 of them
//! made 105,750 `sched_yield` calls for 30,724 reads of 64 KiB records
//! (`perf stat`), CPU the reads' copies and decoding could have used. With
//! these threads: none, a fifth fewer context switches, and 11-13% less
//! CPU for the same cold batches (builds alternated, `zrecord bench
//! --cold`, 6 runs each: 2 KiB zstd token blocks, median 1,029-1,035
//! against 1,170 ms of task clock; 64 KiB raw records, 2.8-3.0 against
//! 3.3-3.6 s), at the same records/s within this VM's noise (tokens
//! median about 48-50k both, 64 KiB 9.4-9.7k against 9.8k).
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
//! every epoch instead of turning warm after its first. They are what a
//! store far bigger than memory reads with (`source/direct.rs`).

use super::uring;
use super::work::{self, Made};
use crate::{Error, Result};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once, PoisonError};

/// Reads in flight for one cold batch, at most: the deepest queue `zrecord
/// bench --cold` measures the device at (its best came at depths 8 to 64
/// across runs), a quarter of a batch of 256. Threads blocked in a read
/// cost no CPU; 16 threads read 7-16% slower than 64.
pub(crate) const DEPTH: usize = 64;

/// A batch's work: run by the caller and pool threads at once, each taking
/// reads until none is left.
type Task<'a> = &'a (dyn Fn() + Sync);

/// The pool's threads and the batch they work on.
struct Pool {
    state: Mutex<State>,
    /// A new batch for the threads.
    work: Condvar,
    /// A thread left the batch.
    left: Condvar,
    /// One batch at a time: other callers wait here.
    turn: Mutex<()>,
    /// The threads, started on first use.
    started: Once,
}

#[derive(Default)]
struct State {
    /// The batch's task, its lifetime erased: see [`Pool::run`].
    task: Option<Task<'static>>,
    /// Threads the batch still wants (no more are woken than it has reads).
    wanted: usize,
    /// Threads running the task now.
    inside: usize,
    /// Whether the task panicked on a pool thread.
    panicked: bool,
}

impl Pool {
    /// Run `task` on this thread and on up to `helpers` pool threads at
    /// once, and return once all have left it.
    fn run(&'static self, helpers: usize, task: Task<'_>) {
        self.started.call_once(|| {
            for i in 1..DEPTH {
                let thread = std::thread::Builder::new().name(format!("zrecord-io-{i}"));
                if thread.spawn(move || self.serve()).is_err() {
                    break; // fewer threads: fewer reads in flight
                }
            }
        });
        let _turn = work::lock(&self.turn);
        let wanted = {
            let mut s = work::lock(&self.state);
            // SAFETY: only the lifetime is erased. The pool's threads use
            // the task only between taking it here, under the lock, and
            // leaving (`inside` back down); this function clears it and
            // waits for every thread to leave before it returns, so no use
            // outlives the borrow.
            #[allow(unsafe_code)]
            let task: Task<'static> = unsafe { std::mem::transmute::<Task<'_>, Task<'static>>(task) };
            s.task = Some(task);
            s.wanted = helpers.min(DEPTH - 1);
            s.panicked = false;
            s.wanted
        };
        // Woken with the lock free, so no woken thread waits on it for the
        // next wake-up.
        for _ in 0..wanted {
            self.work.notify_one();
        }
        let mine = panic::catch_unwind(AssertUnwindSafe(task));
        let mut s = work::lock(&self.state);
        (s.task, s.wanted) = (None, 0);
        while s.inside > 0 {
            s = self.left.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        let theirs = std::mem::take(&mut s.panicked);
        drop(s);
        if let Err(p) = mine {
            panic::resume_unwind(p);
        }
        assert!(!theirs, "a cold read thread panicked");
    }

    /// A pool thread: sleep until a batch wants it, work on it, again.
    fn serve(&self) {
        loop {
            let task = {
                let mut s = work::lock(&self.state);
                loop {
                    match s.task {
                        Some(task) if s.wanted > 0 => {
                            s.wanted -= 1;
                            s.inside += 1;
                            break task;
                        }
                        _ => s = self.work.wait(s).unwrap_or_else(PoisonError::into_inner),
                    }
                }
            };
            let ok = panic::catch_unwind(AssertUnwindSafe(task)).is_ok();
            let mut s = work::lock(&self.state);
            s.panicked |= !ok;
            s.inside -= 1;
            if s.inside == 0 {
                self.left.notify_all();
            }
        }
    }
}

/// This process's read pool, made on first use (a child made by `fork` makes
/// its own): `DEPTH - 1` threads, the caller being the last.
fn pool() -> Option<&'static Pool> {
    static POOL: Mutex<Made<Pool>> = Mutex::new(None);
    thread_local! {
        static MINE: Cell<Made<Pool>> = const { Cell::new(None) };
    }
    work::per_process(&MINE, &POOL, || {
        Some(Pool {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            left: Condvar::new(),
            turn: Mutex::new(()),
            started: Once::new(),
        })
    })
}

/// Run `read(k, &mut items[k])` for every item, up to [`DEPTH`] at once:
/// each item one record's blocking read and then its decoding, on the
/// thread that read it, so decoding overlaps the reads still in flight (a
/// batch of 2 KiB zstd records decoded after its last read spent a fifth of
/// its time decoding with the device idle). The items of one batch may read
/// different stores (a dataset's shards): all are in flight together. The
/// first error stops the batch.
pub(crate) fn each<T: Send>(
    items: &mut [T],
    read: impl Fn(usize, &mut T) -> Result<()> + Sync,
) -> Result<()> {
    let Some(pool) = pool().filter(|_| items.len() > 1) else {
        return items.iter_mut().enumerate().try_for_each(|(k, r)| read(k, r));
    };
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(None);
    let items: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    pool.run(items.len() - 1, &|| loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(r) = items.get(k) else { break };
        if let Err(e) = read(k, &mut work::lock(r)) {
            work::lock(&failed).get_or_insert(e);
            next.store(items.len(), Ordering::Relaxed);
        }
    });
    failed.into_inner().unwrap_or_else(PoisonError::into_inner).map_or(Ok(()), Err)
}

/// Read every item's [`uring::Target`] through io_uring and run
/// `decode(k, item)` once its read is in: a pool thread decodes what has
/// arrived, this thread too whenever none of its reads has just completed,
/// and both decode what is left once every read is in. `None` when
/// io_uring cannot be used here (nothing read).
///
/// Decoding on the reaping thread alone left the other core idle: cold 64
/// KiB zstd records (about 145 µs to decode each) read at 5,700-6,200
/// records/s that way against 9,100-9,600 through the pread pool. The pool
/// thread alone starved concurrent callers (a loader's workers): it helps
/// one batch at a time, and the other batch's records waited for its last
/// read. With this thread decoding while it waits, the loader's 2 workers
/// read cold 2 KiB token blocks at 68,900-75,000 records/s against
/// 60,400-64,100 (`zrecord bench --cold --workers 2`, 4 seeds, alternated).
pub(crate) fn each_uring<'f, T: Send>(
    items: &mut [T],
    target: impl Fn(&mut T) -> uring::Target<'f>,
    decode: impl Fn(usize, &mut T) -> Result<()> + Sync,
    io_err: impl Fn(usize, std::io::Error) -> Error,
) -> Option<Result<()>> {
    if !uring::available() {
        return None;
    }
    let Some(pool) = work::helpers().filter(|_| items.len() > 1) else {
        return uring::each(items, target, decode, || false, io_err);
    };
    let cells: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    let queue = Mutex::new(Ready {
        ready: Vec::with_capacity(cells.len()),
        reading: true,
        failed: None,
        sleepers: 0,
    });
    let arrived = Condvar::new();
    // Decode record `k`: a failure stops the batch.
    let decode_one = |k: usize| {
        if let Err(e) = decode(k, &mut work::lock(&cells[k])) {
            work::lock(&queue).failed.get_or_insert(e);
            arrived.notify_all();
        }
    };
    // One thread's share of the decoding: records as they arrive, until
    // every read is in and decoded, or one failed.
    let decode_arrived = || loop {
        let k = {
            let mut q = work::lock(&queue);
            loop {
                if q.failed.is_some() {
                    return;
                }
                if let Some(k) = q.ready.pop() {
                    break k;
                }
                if !q.reading {
                    return;
                }
                q.sleepers += 1;
                q = arrived.wait(q).unwrap_or_else(PoisonError::into_inner);
                q.sleepers -= 1;
            }
        };
        decode_one(k);
    };
    let mut refs: Vec<&Mutex<&mut T>> = cells.iter().collect();
    let mut read = None;
    pool.threads.in_place_scope(|scope| {
        scope.spawn(|_| decode_arrived());
        // Reads over, however `each` ends: a panic that skipped this would
        // leave the pool thread waiting for reads, and the scope for it.
        let over = ReadsOver(&queue, &arrived);
        read = uring::each(
            &mut refs,
            |cell| target(&mut work::lock(cell)),
            |k, _| {
                let mut q = work::lock(&queue);
                if q.failed.is_some() {
                    return Err(Error::Cancelled); // (the decoder's error is returned)
                }
                q.ready.push(k);
                let wake = q.sleepers > 0;
                drop(q);
                if wake {
                    arrived.notify_one();
                }
                Ok(())
            },
            // While no read has completed, this thread decodes too: when
            // the pool thread is on another caller's batch (a loader's
            // other worker), this batch's records would wait for its last
            // read.
            || {
                let k = {
                    let mut q = work::lock(&queue);
                    if q.failed.is_some() {
                        return false;
                    }
                    q.ready.pop()
                };
                k.map(decode_one).is_some()
            },
            io_err,
        );
        drop(over);
        decode_arrived();
    });
    let failed = queue.into_inner().unwrap_or_else(PoisonError::into_inner).failed;
    Some(match (read?, failed) {
        (_, Some(e)) => Err(e),
        (r, None) => r,
    })
}

/// Tells [`each_uring`]'s decoders that no more reads come, when dropped.
struct ReadsOver<'a>(&'a Mutex<Ready>, &'a Condvar);

impl Drop for ReadsOver<'_> {
    fn drop(&mut self) {
        work::lock(self.0).reading = false;
        self.1.notify_all();
    }
}

/// Records read and waiting to be decoded ([`each_uring`]).
struct Ready {
    ready: Vec<usize>,
    /// Whether reads are still coming.
    reading: bool,
    /// A decoding error: the batch stops.
    failed: Option<Error>,
    /// Threads waiting for a record (woken only when there are some).
    sleepers: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::memory::MemorySource;
    use crate::source::ByteSource;
    use crate::Error;
    use std::io;

    /// Callers on many threads at once, batches of every size from 0 to
    /// past `DEPTH`: each gets its own bytes, and an error stops only its
    /// own batch.
    #[test]
    fn batches_from_many_threads_read_their_own_bytes() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let src = MemorySource::new(bytes.clone());
        let io = |e: io::Error| Error::io("memory", "read", e);
        std::thread::scope(|scope| {
            for caller in 0..8u64 {
                let (src, bytes) = (&src, &bytes);
                scope.spawn(move || {
                    for n in [0, 1, 2, 3, 63, 64, 65, 200] {
                        let mut bufs = vec![[0u8; 10]; n];
                        let mut reads: Vec<(u64, &mut [u8], usize)> = bufs
                            .iter_mut()
                            .enumerate()
                            .map(|(k, b)| (caller * 1000 + k as u64 * 37, &mut b[..], 0))
                            .collect();
                        each(&mut reads, |k, (offset, got, seen)| {
                            src.read_exact_at(*offset, got).map_err(io)?;
                            *seen = k + 1;
                            Ok(())
                        })
                        .unwrap();
                        for (k, (offset, got, seen)) in reads.iter().enumerate() {
                            assert_eq!(*seen, k + 1, "read {k} of {n} handed on once");
                            assert_eq!(&got[..], &bytes[*offset as usize..*offset as usize + 10]);
                        }
                        // One read past the end: this batch's error.
                        let mut past = vec![[0u8; 10]; n.max(2)];
                        let mut reads: Vec<(u64, &mut [u8], ())> = past
                            .iter_mut()
                            .enumerate()
                            .map(|(k, b)| (k as u64 * 10, &mut b[..], ()))
                            .collect();
                        reads[1].0 = 99_995;
                        let read = |_, (offset, got, ()): &mut (u64, &mut [u8], ())| {
                            src.read_exact_at(*offset, got).map_err(io)
                        };
                        assert!(each(&mut reads, read).is_err());
                    }
                });
            }
        });
    }

    /// Through io_uring with the decoding shared: every item decoded once,
    /// from its own bytes, by the reading thread or the pool's; a decoding
    /// error (on whichever thread) is the batch's error, not a stand-in.
    /// Four callers at once, as a loader's workers: the pool's thread helps
    /// one batch at a time, and each caller decodes its own while its
    /// reads are in flight.
    #[test]
    fn uring_reads_are_decoded_once_each_and_a_decoding_error_is_returned() {
        use std::io::Write;
        if !uring::available() {
            eprintln!("io_uring is not available here: not tested");
            return;
        }
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 11 % 241) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bytes).unwrap();
        let io_err = |k: usize, e: io::Error| Error::io(format!("read {k}"), "read", e);
        let batches = || {
            for n in [2usize, 300] {
                let mut bufs = vec![[0u8; 100]; n];
                // (offset, buffer, sum of its bytes once decoded, times decoded)
                let mut items: Vec<(u64, &mut [u8], u64, usize)> =
                    bufs.iter_mut().enumerate().map(|(k, b)| (k as u64 * 641, &mut b[..], 0, 0)).collect();
                let target = |(offset, buf, _, _): &mut (u64, &mut [u8], u64, usize)| uring::Target {
                    file: f.as_file(),
                    offset: *offset,
                    buf: buf.as_mut_ptr(),
                    len: buf.len(),
                };
                let decode = |_, (_, buf, sum, times): &mut (u64, &mut [u8], u64, usize)| {
                    *sum = buf.iter().map(|&b| u64::from(b)).sum();
                    *times += 1;
                    Ok(())
                };
                each_uring(&mut items, target, decode, io_err).unwrap().unwrap();
                for (k, (offset, _, sum, times)) in items.iter().enumerate() {
                    let want: u64 =
                        bytes[*offset as usize..*offset as usize + 100].iter().map(|&b| u64::from(b)).sum();
                    assert_eq!((*sum, *times), (want, 1), "item {k} of {n}");
                }
                let failing = |k, _: &mut (u64, &mut [u8], u64, usize)| match k {
                    1 => Err(Error::InvalidArgument { store: "t".into(), why: "record 1 is bad".into() }),
                    _ => Ok(()),
                };
                let err = each_uring(&mut items, target, failing, io_err).unwrap().unwrap_err();
                assert!(err.to_string().contains("record 1 is bad"), "{err}");
            }
        };
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(batches);
            }
        });
    }
}
