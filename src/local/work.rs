//! Sharing one gather's (or one append's) parts between the calling thread
//! and the pool.
//!
//! A gather of a few hundred small records is 50-200 µs of work. Handed to
//! rayon from outside its pool (`par_iter`, `join`), the calling thread
//! sleeps while pool threads wake, split the work, and wake it again: the
//! wake-ups sit on the critical path (a Python gather of Ragged tokens
//! reached 55-57% of the libzstd limit that way, 63-66% this way,
//! interleaved in one process). Here the calling thread starts on the first
//! part at once, one task per pool thread joins it when that thread
//! wakes, and every thread takes the next part not yet taken, in order.
//! Parts shrink towards the end ([`guided`]), so no thread idles long while
//! another finishes a big one (fixed counts of 147 KiB images a part left
//! one thread idle for up to 20 images). The pool's threads leave the last
//! part to the calling thread, so that it is the one still working at the
//! end: when it finished first it slept until the last part was done, and
//! waking it cost more than the part.
//!
//! The calling thread being one of the workers, the pool has one thread
//! fewer than there are cores ([`pool`]). On rayon's global pool, one thread
//! a core, the thread left without a task was woken each time another took
//! one and spun until it slept again: 13% of a core during image writes on 2
//! cores, taken from the two threads working. This pool's threads stay
//! awake a moment after a job instead ([`keep_warm`]), which is what that
//! spinning had bought.

use crate::Result;
use rayon::{ThreadPool, ThreadPoolBuilder, Yield};
use std::cell::Cell;
use std::iter::Peekable;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::LocalKey;
use std::time::{Duration, Instant};

/// How long a pool thread stays awake after its last task at least
/// ([`keep_warm`]): longer than a Python loop takes between two gathers.
/// Gathers of 32 token records and of 256 with a dictionary, interleaved on
/// 2 cores, against rayon's global pool: 0.90x / 0.91x staying awake 0 µs,
/// 1.01x / 1.01x 30 µs, 1.04x / 1.04x 100 µs, 1.06x / 1.05x 300 µs.
const LINGER: Duration = Duration::from_micros(100);

/// How long a pool thread stays awake at most: when jobs come back to back
/// (a loader filling its queue, a dataset's batch checking its records on
/// the calling thread for 80 µs first), it stays awake for half as long
/// again as the last wait between two jobs, up to this ([`linger_after`]).
const MOST_LINGER: Duration = Duration::from_micros(400);

/// How long to stay awake after a job when the last wait between two jobs
/// was `gap`: long enough to catch the next job if it comes as soon, but
/// never longer than [`MOST_LINGER`], and only [`LINGER`] once waits are
/// longer than that (a training step between gathers), where staying awake
/// would spin a core for nothing. A thread that sleeps costs the job's
/// caller a wake-up (`futex_wake`: 2% of a dataset's Ragged gathers of 256
/// token records, whose 80 µs of checks before the shared decoding outlast
/// 100 µs of lingering once the previous batch's tail is counted).
fn linger_after(gap: Duration) -> Duration {
    if gap > MOST_LINGER {
        return LINGER;
    }
    (gap + gap / 2).clamp(LINGER, MOST_LINGER)
}

/// Lock a mutex whose holder may have panicked (what it guards stays whole:
/// its users leave it consistent between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The threads that work on a shared job: the calling thread and the pool's.
/// As many as rayon's global pool would have (the cores, or
/// `RAYON_NUM_THREADS`). One within a part of a [`share`] (see there).
pub(crate) fn threads() -> usize {
    if SHARING.get() {
        return 1;
    }
    pool().map_or(1, |p| p.threads.current_num_threads() + 1)
}

/// The threads the calling thread shares work with ([`share`]).
pub(crate) struct Pool {
    pub(crate) threads: ThreadPool,
    /// Threads staying awake for the next job ([`keep_warm`]).
    lingering: AtomicUsize,
    /// When the pool was made: the clock of `last_end`.
    born: Instant,
    /// When the last job ended, in ns since `born` (0: none yet).
    last_end: AtomicU64,
    /// How long to stay awake after the next job, in ns ([`linger_after`]).
    linger: AtomicU64,
}

impl Pool {
    /// Now, in ns since the pool was made.
    fn now(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A job starts: how long since the last one ended sets how long to
    /// linger after this one.
    fn job_starts(&self) {
        let last = self.last_end.load(Ordering::Relaxed);
        let gap =
            if last == 0 { Duration::MAX } else { Duration::from_nanos(self.now().saturating_sub(last)) };
        let linger = u64::try_from(linger_after(gap).as_nanos()).unwrap_or(u64::MAX);
        self.linger.store(linger, Ordering::Relaxed);
    }
}

thread_local! {
    /// This thread's [`pool`], and the process it belongs to.
    static MINE: Cell<Made<Pool>> = const { Cell::new(None) };
    /// Whether this thread is working on a part of a [`share`] now.
    static SHARING: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as working on a shared part while it lives.
struct Sharing(bool);

impl Sharing {
    fn enter() -> Sharing {
        Sharing(SHARING.replace(true))
    }
}

impl Drop for Sharing {
    fn drop(&mut self) {
        SHARING.set(self.0);
    }
}

/// The pool the calling thread shares work with ([`share`]): one thread
/// fewer than [`threads`], none on one core. One per process: a child made
/// by `fork` has none of its parent's threads, so it builds its own (the
/// parent's is left alone). Each thread keeps its own reference, so that
/// no lock is taken per call (a lock held by another thread at the moment
/// of a `fork` would stay locked in the child for good).
pub(crate) fn pool() -> Option<&'static Pool> {
    static POOL: Mutex<Made<Pool>> = Mutex::new(None);
    per_process(&MINE, &POOL, || {
        let helpers = rayon::current_num_threads().saturating_sub(1);
        if helpers == 0 {
            return None;
        }
        let threads = ThreadPoolBuilder::new()
            .num_threads(helpers)
            .thread_name(|i| format!("zrecord-{i}"))
            .build()
            .ok()?;
        Some(Pool {
            threads,
            lingering: AtomicUsize::new(0),
            born: Instant::now(),
            last_end: AtomicU64::new(0),
            linger: AtomicU64::new(LINGER.as_nanos() as u64),
        })
    })
}

/// What [`per_process`] made, and for which process (`None`: not asked yet).
pub(crate) type Made<T> = Option<(u32, Option<&'static T>)>;

/// A value made once per process by `build` (a thread pool), kept in
/// `slot` for the process's life and in each thread's `mine`, so that no
/// lock is taken per call (a lock held by another thread at the moment of a
/// `fork` would stay locked in the child for good). A child made by `fork`
/// has none of its parent's threads, so it makes its own (the parent's is
/// left alone).
pub(crate) fn per_process<T: Sync + 'static>(
    mine: &'static LocalKey<Cell<Made<T>>>,
    slot: &'static Mutex<Made<T>>,
    build: impl FnOnce() -> Option<T>,
) -> Option<&'static T> {
    let pid = std::process::id();
    if let Some((owner, made)) = mine.get() {
        if owner == pid {
            return made;
        }
    }
    let made = {
        let mut slot = lock(slot);
        match *slot {
            Some((owner, made)) if owner == pid => made,
            _ => {
                let made = build().map(|t| &*Box::leak(Box::new(t)));
                *slot = Some((pid, made));
                made
            }
        }
    };
    mine.set(Some((pid, made)));
    made
}

/// Keep the pool's threads awake a while after a job ([`linger_after`]),
/// taking the next one the moment it comes: a thread gone to sleep starts
/// 10-20 µs after a job is handed out, a tenth of a gather of 256 token
/// records. A thread's wait is a task of its own (at most one a thread),
/// which runs the tasks handed out meanwhile and yields the core between
/// looks.
fn keep_warm(pool: &'static Pool) {
    pool.last_end.store(pool.now().max(1), Ordering::Relaxed);
    let n = pool.threads.current_num_threads();
    while pool.lingering.fetch_add(1, Ordering::AcqRel) < n {
        pool.threads.spawn(move || {
            let linger = || Duration::from_nanos(pool.linger.load(Ordering::Relaxed));
            let mut until = Instant::now() + linger();
            while Instant::now() < until {
                match rayon::yield_now() {
                    Some(Yield::Executed) => until = Instant::now() + linger(),
                    _ => std::thread::yield_now(),
                }
            }
            pool.lingering.fetch_sub(1, Ordering::AcqRel);
        });
    }
    pool.lingering.fetch_sub(1, Ordering::AcqRel);
}

/// Call `work` on every part, on the calling thread and one task per
/// thread of [`pool`]; after the first error no part is taken any more, and
/// that error is returned. Parts are made as they are taken: nothing is
/// allocated per part.
///
/// Called from within a part (a dataset's shards shared out, each shard's
/// gather sharing its own records), the parts run on the calling thread:
/// every thread is busy already, and a nested scope would wait for a pool
/// thread to finish its outer part first (raw images through 64 shards
/// gathered at 0.61x one store's speed that way).
pub(crate) fn share<T, F>(parts: impl Iterator<Item = T> + Send, work: F) -> Result<()>
where
    T: Send,
    F: Fn(T) -> Result<()> + Sync,
{
    // The next part, made ahead so that a pool thread can see whether it is
    // the last one (which it leaves to the calling thread), and the rest.
    let queue: Mutex<(Option<T>, Peekable<_>)> = Mutex::new((None, parts.peekable()));
    let first_error = Mutex::new(None);
    let failed = AtomicBool::new(false);
    let drain = |leave_last: bool| loop {
        if failed.load(Ordering::Relaxed) {
            return;
        }
        // (The queue's lock is released before the part is worked on.)
        let part = {
            let mut queue = lock(&queue);
            let (next, rest) = &mut *queue;
            if next.is_none() {
                *next = rest.next();
            }
            if next.is_none() || (leave_last && rest.peek().is_none()) {
                return;
            }
            next.take()
        };
        let Some(part) = part else { return };
        let _sharing = Sharing::enter();
        if let Err(e) = work(part) {
            lock(&first_error).get_or_insert(e);
            failed.store(true, Ordering::Relaxed);
        }
    };
    match helpers() {
        Some(pool) => {
            pool.job_starts();
            pool.threads.in_place_scope(|scope| {
                for _ in 0..pool.threads.current_num_threads() {
                    scope.spawn(|_| drain(true));
                }
                drain(false);
            });
            keep_warm(pool);
        }
        None => drain(false),
    }
    match first_error.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The pool to share work with from this thread: none within a part of a
/// [`share`] (every thread is busy there) or on one core.
pub(crate) fn helpers() -> Option<&'static Pool> {
    pool().filter(|_| !SHARING.get())
}

/// [`share`] when `parallel`, else every part on the calling thread (work
/// too small, or copies one thread keeps up with, where waking the pool
/// costs more than it saves).
pub(crate) fn share_if<T: Send>(
    parallel: bool,
    mut parts: impl Iterator<Item = T> + Send,
    work: impl Fn(T) -> Result<()> + Sync,
) -> Result<()> {
    if parallel {
        share(parts, work)
    } else {
        parts.try_for_each(work)
    }
}

/// The parts of `n` items (`bytes` in all, item `k` being `len(k)` bytes),
/// as ranges of items, made as they are taken (guided scheduling): each
/// part about half of what is left per thread, at most `most` and at least
/// `least` bytes (or one item), so parts taken in order end small.
pub(crate) fn guided(
    n: usize,
    bytes: usize,
    len: impl Fn(usize) -> usize,
    most: usize,
    least: usize,
) -> impl Iterator<Item = Range<usize>> {
    let threads = threads();
    let (mut k, mut rest) = (0, bytes);
    std::iter::from_fn(move || {
        if k >= n {
            return None;
        }
        let start = k;
        let want = most.min(rest / (2 * threads)).max(least);
        let mut got = len(k);
        k += 1;
        while k < n && got + len(k) <= want {
            got += len(k);
            k += 1;
        }
        rest = rest.saturating_sub(got);
        Some(start..k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::thread;

    #[test]
    fn the_pool_has_one_thread_fewer_than_rayons_global_pool() {
        match pool() {
            Some(p) => {
                assert_eq!(p.threads.current_num_threads() + 1, rayon::current_num_threads());
                assert!(std::ptr::eq(p, pool().expect("the same pool")));
                let other = std::thread::spawn(|| pool().map(|p| p as *const Pool as usize)).join().unwrap();
                assert_eq!(other, Some(p as *const Pool as usize), "one pool for every thread");
            }
            None => assert_eq!(rayon::current_num_threads(), 1),
        }
        assert_eq!(threads(), rayon::current_num_threads());
    }

    /// Back-to-back jobs keep the pool awake as long again as half their
    /// wait, within bounds; jobs far apart get the least.
    #[test]
    fn the_pool_lingers_as_long_as_jobs_come_soon_and_no_longer() {
        let us = Duration::from_micros;
        assert_eq!(linger_after(us(10)), LINGER);
        assert_eq!(linger_after(us(100)), us(150));
        assert_eq!(linger_after(us(200)), us(300));
        assert_eq!(linger_after(us(300)), MOST_LINGER);
        assert_eq!(linger_after(MOST_LINGER), MOST_LINGER);
        assert_eq!(linger_after(MOST_LINGER + us(1)), LINGER);
        assert_eq!(linger_after(Duration::from_millis(20)), LINGER);
        assert_eq!(linger_after(Duration::MAX), LINGER);
    }

    #[test]
    fn every_part_is_worked_once_by_the_caller_and_each_pool_thread_the_last_by_the_caller() {
        let caller = thread::current().id();
        let seen = Mutex::new(Vec::new());
        share(0..64, |k| {
            thread::sleep(Duration::from_millis(2));
            lock(&seen).push((k, thread::current().id()));
            Ok(())
        })
        .unwrap();
        let seen = seen.into_inner().unwrap();
        let mut parts: Vec<usize> = seen.iter().map(|s| s.0).collect();
        parts.sort_unstable();
        assert_eq!(parts, (0..64).collect::<Vec<_>>());
        let workers: HashSet<_> = seen.iter().map(|s| s.1).collect();
        assert_eq!(workers.len(), threads(), "every thread takes parts: {seen:?}");
        assert!(seen.contains(&(63, caller)), "the caller takes the last part: {seen:?}");
    }

    #[test]
    fn a_share_within_a_part_runs_on_the_thread_working_that_part() {
        let seen = Mutex::new(Vec::new());
        share(0..8, |k| {
            let outer = thread::current().id();
            assert_eq!(threads(), 1, "a part sees one thread");
            share(0..4, |j| {
                assert_eq!(thread::current().id(), outer, "nested part {k}.{j} moved threads");
                lock(&seen).push((k, j));
                Ok(())
            })
        })
        .unwrap();
        assert_eq!(lock(&seen).len(), 32);
        assert_eq!(threads(), rayon::current_num_threads(), "the mark is gone after the share");
    }
}
