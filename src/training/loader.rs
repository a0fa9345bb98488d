//! An endless, prefetching loader that gathers several aligned streams per
//! step and delivers the steps in order.
//!
//! # Design
//!
//! **Threads.** `workers` plain OS threads (not rayon tasks) do the work. A
//! worker claims the next step by drawing its indices from the one shared
//! [`Sampler`] under the loader's mutex (a few hundred nanoseconds), releases
//! the lock, gathers every stream at those indices (a large gather is shared
//! with zrecord's own pool, `work.rs`, which no caller's task can occupy),
//! runs the transform, and deposits the result in the slot reserved for its
//! step.
//!
//! **Ordering.** The IID sampler can only be replayed, not skipped, so indices
//! are drawn centrally and in order; slots form a window of `prefetch` steps
//! starting at the next step to deliver. The consumer always takes the slot at
//! the front, so steps arrive in step order whatever the number of workers or
//! their timing, and a failure is delivered at its own step, after the earlier
//! steps, so the error is as reproducible as the data.
//!
//! **Bounded memory.** A worker may claim a step only while fewer than
//! `prefetch` steps are claimed but not yet delivered, so at most `prefetch`
//! outputs exist inside the loader (in progress or waiting), plus whatever the
//! consumer holds. Workers beyond `prefetch` simply wait.
//!
//! **Recycling.** The gathered step ([`Gathered`]) owns its index vector and
//! one [`Batch`] per stream. When it is dropped (by the consumer, or by a
//! transform that copies what it needs into its own output) it hands those
//! buffers back to a small pool, and the next claim gathers into them: after
//! the first few steps no batch memory is allocated. [`Loader::allocated_buffers`]
//! reports how many buffer sets were ever created.
//!
//! **Blocking without spinning.** Workers wait on one condition variable
//! (room in the window), the consumer on another (its step is ready). An idle
//! consumer or a full window costs no CPU.
//!
//! **Mixtures.** A loader built from several sources ([`LoaderBuilder::source`],
//! each a mapping of the same stream names) draws `(source, index)` pairs
//! from a [`Mixture`] instead; each stream gathers every source's records
//! of the step (one gather per source) and puts them in the step's order.
//!
//! **State.** [`Loader::state_dict`] is the step the consumer receives next
//! (prefetched steps are not consumed), the seed, the mixture and every
//! store's identity; [`Loader::load_state_dict`] checks it against this
//! loader and moves the loader there, dropping what was prefetched.
//!
//! **Shutdown.** [`Loader::close`] (also run on drop) sets a stop flag, wakes
//! every waiter and joins every worker. A worker notices the flag when it next
//! waits or deposits, so `close` returns after at most the step each worker is
//! working on; nothing keeps a worker blocked.

use crate::dataset::concat::{assemble_ragged, Group, Split};
use crate::format::batch::{Batch, DenseBatch, RaggedBatch};
use crate::format::Codec;
use crate::local::work;
use crate::records::Records;
use crate::training::mixture::Mixture;
use crate::training::sampler::{Mode, Sampler};
use crate::training::state::{LoaderState, StreamId, STATE_FORMAT};
use crate::{Error, Result};
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// The stream name carried by [`Error::Loader`] when the transform failed
/// (returned an error or panicked) rather than a stream's gather.
pub const TRANSFORM_STREAM: &str = "<transform>";

/// Steps past the prefetch window whose records the loader brings close by default.
pub const LOOKAHEAD_STEPS: u64 = 8;
/// Most bytes the look-ahead fetches for steps not yet delivered, by default.
pub const LOOKAHEAD_BYTES: u64 = 1 << 30;

/// What the transform is: it runs on the worker threads.
type TransformFn<T> = dyn Fn(Gathered) -> Result<T> + Send + Sync;

/// One step as gathered: its step number, its indices, and one batch per
/// stream, record `i` of every batch being record `indices()[i]` of its store.
///
/// Dropping it recycles its buffers into the loader that made it, so holding
/// on to a `Gathered` is fine, and letting it go is what keeps allocation away.
///
/// ```
/// # use zrecord::training::loader::Gathered;
/// fn pixels(step: &Gathered) -> zrecord::Result<&[u8]> {
///     let image = step.dense("image").expect("an image stream");
///     image.as_slice::<u8>()
/// }
/// ```
pub struct Gathered {
    step: u64,
    indices: Vec<u64>,
    sources: Vec<u32>,
    names: Arc<[String]>,
    batches: Vec<Batch>,
    parts: Parts,
    pool: Weak<Pool>,
}

impl Gathered {
    /// The step this batch was drawn at (0-based).
    pub fn step(&self) -> u64 {
        self.step
    }
    /// The record indices, shared by every stream (in a mixture, indices
    /// into each record's own source).
    pub fn indices(&self) -> &[u64] {
        &self.indices
    }
    /// In a mixture, the source of each record; empty otherwise.
    pub fn sources(&self) -> &[u32] {
        &self.sources
    }
    /// Records per stream.
    pub fn len(&self) -> usize {
        self.indices.len()
    }
    /// Whether the step holds no records.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
    /// Stream names, in the order they were added to the builder.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.names.iter().map(String::as_str)
    }
    /// The batch of stream `name`.
    pub fn get(&self, name: &str) -> Option<&Batch> {
        self.position(name).map(|i| &self.batches[i])
    }
    /// The batch of stream `name` if it is a Dense stream.
    pub fn dense(&self, name: &str) -> Option<&DenseBatch> {
        self.get(name).and_then(Batch::as_dense)
    }
    /// The batch of stream `name` if it is a Ragged stream.
    pub fn ragged(&self, name: &str) -> Option<&RaggedBatch> {
        self.get(name).and_then(Batch::as_ragged)
    }
    /// `(name, batch)` for every stream, in builder order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Batch)> + '_ {
        self.names().zip(&self.batches)
    }
    /// Moves stream `name`'s batch out (its buffer then leaves the recycling pool).
    pub fn take(&mut self, name: &str) -> Option<Batch> {
        let i = self.position(name)?;
        Some(std::mem::replace(&mut self.batches[i], Batch::Ragged(RaggedBatch::default())))
    }
    fn position(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

impl std::ops::Index<&str> for Gathered {
    type Output = Batch;
    /// # Panics
    /// If there is no stream `name`.
    fn index(&self, name: &str) -> &Batch {
        self.get(name).unwrap_or_else(|| panic!("no loader stream named {name:?}"))
    }
}

impl Drop for Gathered {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.put(Buffers {
                indices: std::mem::take(&mut self.indices),
                sources: std::mem::take(&mut self.sources),
                batches: std::mem::take(&mut self.batches),
                parts: std::mem::take(&mut self.parts),
            });
        }
    }
}

impl fmt::Debug for Gathered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Gathered");
        d.field("step", &self.step).field("len", &self.len());
        for (name, batch) in self.iter() {
            d.field(name, &batch.len());
        }
        d.finish()
    }
}

/// The reusable memory of one step.
struct Buffers {
    indices: Vec<u64>,
    sources: Vec<u32>,
    batches: Vec<Batch>,
    parts: Parts,
}

/// A mixed step's scratch, reused step after step: its records grouped by
/// source, and each source's Ragged batch of one stream before they are put
/// in the step's order (reused stream after stream).
#[derive(Default)]
struct Parts {
    split: Split,
    ragged: Vec<RaggedBatch>,
}

/// Buffers returned by dropped [`Gathered`] values, waiting for the next claim.
struct Pool {
    free: Mutex<Vec<Buffers>>,
    /// Most buffer sets kept; more can exist only while the consumer holds them.
    keep: usize,
    streams: usize,
    allocated: AtomicUsize,
}

impl Pool {
    fn take(&self) -> Buffers {
        if let Some(b) = lock(&self.free).pop() {
            return b;
        }
        self.allocated.fetch_add(1, Ordering::Relaxed);
        // The first gather turns each placeholder into the stream's kind of batch.
        let batches = vec![Batch::Ragged(RaggedBatch::default()); self.streams];
        Buffers { indices: Vec::new(), sources: Vec::new(), batches, parts: Parts::default() }
    }
    fn put(&self, b: Buffers) {
        let mut free = lock(&self.free);
        if free.len() < self.keep && b.batches.len() == self.streams {
            free.push(b);
        }
    }
}

/// A mutex guard, whether or not a panicking thread poisoned the lock: every
/// critical section here leaves the state consistent at each step.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Everything the workers and the consumer share.
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Workers wait here for room in the window (or for stop).
    room: Condvar,
    /// The consumer waits here for the front slot (or for all workers gone).
    ready: Condvar,
    names: Arc<[String]>,
    /// `sources[s][i]`: stream `i` of source `s` (one source unless mixed).
    sources: Vec<Vec<Arc<dyn Records>>>,
    transform: Arc<TransformFn<T>>,
    pool: Arc<Pool>,
    prefetch: u64,
    /// Steps past the workers' window whose records the look-ahead thread
    /// brings close ([`Records::prefetch`]), and the most bytes it may have
    /// fetched for steps not yet delivered.
    lookahead: u64,
    lookahead_bytes: u64,
    /// The look-ahead thread waits here (never on `room`, whose single
    /// wake-ups are the workers').
    ahead: Condvar,
    /// Bytes the look-ahead has fetched so far.
    fetched_ahead: AtomicU64,
    /// This loader's state at step 0.
    identity: LoaderState,
}

struct State<T> {
    /// Draws the indices; its `step()` is the next step to claim.
    draw: Draw,
    /// Bumped by every seek: a step claimed before it is dropped.
    generation: u64,
    /// The step the consumer receives next; `slots[i]` holds step `delivered + i`.
    delivered: u64,
    /// Always `prefetch` long; `None` until the step's worker deposits it.
    slots: VecDeque<Option<Result<T>>>,
    /// Set by close, and once a failure has been delivered: workers exit.
    stop: bool,
    /// A claimed step failed: claim no further steps.
    failed: bool,
    /// Workers that have not exited.
    live: usize,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        lock(&self.state)
    }

    /// Gather every stream at step `step`'s indices and run the transform.
    /// `stage` names the stream being gathered (`None`: the transform), so a
    /// panic can be attributed.
    fn produce(&self, step: u64, buffers: Buffers, stage: &Cell<Option<usize>>) -> Result<T> {
        let mut gathered = Gathered {
            step,
            indices: buffers.indices,
            sources: buffers.sources,
            names: Arc::clone(&self.names),
            batches: buffers.batches,
            parts: buffers.parts,
            pool: Arc::downgrade(&self.pool),
        };
        let mixed = self.sources.len() > 1;
        let mut split = std::mem::take(&mut gathered.parts.split);
        if mixed {
            by_source(&gathered.sources, &gathered.indices, &mut split);
        }
        for i in 0..self.names.len() {
            stage.set(Some(i));
            let g = &mut gathered;
            if mixed {
                gather_mixed(&self.sources, i, &split, &mut g.batches[i], &mut g.parts)
            } else {
                self.sources[0][i].gather_batch_into(&g.indices, &mut g.batches[i])
            }
            .map_err(|e| Error::Loader {
                stream: self.names[i].clone(),
                step,
                source: Box::new(e),
            })?;
        }
        gathered.parts.split = split;
        stage.set(None);
        (self.transform)(gathered).map_err(|e| Error::Loader {
            stream: TRANSFORM_STREAM.to_string(),
            step,
            source: Box::new(e),
        })
    }

    fn stream_name(&self, stage: Option<usize>) -> String {
        stage.map_or_else(|| TRANSFORM_STREAM.to_string(), |i| self.names[i].clone())
    }
}

/// What draws each step's indices: loaderx's sampler over one source, or a
/// mixture over several.
#[derive(Clone, Debug)]
enum Draw {
    One(Sampler),
    Mix(Box<Mixture>),
}

impl Draw {
    fn step(&self) -> u64 {
        match self {
            Draw::One(s) => s.step(),
            Draw::Mix(m) => m.step(),
        }
    }

    fn seek(&mut self, step: u64) {
        match self {
            Draw::One(s) => s.seek(step),
            Draw::Mix(m) => m.seek(step),
        }
    }

    fn fill(&mut self, b: &mut Buffers) -> Result<()> {
        match self {
            Draw::One(s) => {
                b.sources.clear();
                s.try_fill_next(&mut b.indices)
            }
            Draw::Mix(m) => m.fill_next(&mut b.sources, &mut b.indices),
        }
    }
}

/// A mixed step's records grouped by source (the dataset's plan for
/// shards), into `split`, whose vectors are kept from step to step.
fn by_source(sources: &[u32], indices: &[u64], split: &mut Split) {
    split.group(sources.iter().zip(indices).map(|(&s, &i)| (s as usize, i)));
}

/// Gather stream `i` of a mixed step: each source's records, then put in
/// the step's order (one source: straight into `out`).
fn gather_mixed(
    sources: &[Vec<Arc<dyn Records>>],
    i: usize,
    split: &Split,
    out: &mut Batch,
    parts: &mut Parts,
) -> Result<()> {
    let store = |g: &Group| &sources[g.shard][i];
    let Some(first) = split.groups.first().map(store) else {
        return sources[0][i].gather_batch_into(&[], out);
    };
    if split.is_one_group() {
        return first.gather_batch_into(split.local(&split.groups[0]), out);
    }
    let n = split.groups.len();
    out.fit(first.info());
    match out {
        Batch::Dense(batch) => {
            // Each source's rows straight into their places: no copy.
            let row = first.info().row_bytes().unwrap_or(0) as usize;
            // Sized as a one-store gather sizes it (every byte is overwritten).
            let bytes = split.len.saturating_mul(row);
            batch
                .data
                .reuse(bytes)
                .map_err(|e| e.error(&first.info().name, format!("a mixed batch of {bytes} bytes")))?;
            batch.shape.clear();
            batch.shape.push(split.len as u64);
            batch.shape.extend_from_slice(first.item_shape().unwrap_or(&[]));
            batch.dtype.clone_from(first.dtype());
            if row == 0 {
                return Ok(());
            }
            let rows = split.per_group(batch.data.as_mut_slice().chunks_mut(row).collect());
            each_source(first, split.groups.iter().zip(rows), |(g, mut rows)| {
                store(g).gather_rows(split.local(g), &mut rows)
            })?;
        }
        Batch::Ragged(batch) => {
            parts.ragged.resize_with(n, RaggedBatch::default);
            let groups = split.groups.iter().zip(&mut parts.ragged);
            each_source(first, groups, |(g, part)| store(g).gather_ragged_into(split.local(g), part))?;
            assemble_ragged(&first.info().name, split, &parts.ragged[..n], first.dtype().alignment(), batch)?;
        }
    }
    Ok(())
}

/// Run `gather` for each source's group: compressed sources side by side on
/// the shared pool (as a dataset's shards), raw ones in turn (copies that
/// one thread keeps up with, where waking the pool costs more than it saves).
fn each_source<T: Send>(
    first: &Arc<dyn Records>,
    groups: impl Iterator<Item = T> + Send,
    gather: impl Fn(T) -> Result<()> + Sync,
) -> Result<()> {
    work::share_if(first.codec() != Codec::Raw, groups, gather)
}

/// Decrements the live-worker count however the worker exits, and wakes the
/// consumer so it never waits for a worker that is gone.
struct LiveGuard<'a, T>(&'a Shared<T>);

impl<T> Drop for LiveGuard<'_, T> {
    fn drop(&mut self) {
        self.0.lock().live -= 1;
        self.0.ready.notify_all();
    }
}

fn worker<T>(shared: &Shared<T>) {
    let _live = LiveGuard(shared);
    loop {
        let (step, generation, buffers, drawn) = {
            let mut st = shared.lock();
            loop {
                if st.stop || st.failed {
                    return;
                }
                if st.draw.step().wrapping_sub(st.delivered) < shared.prefetch {
                    break;
                }
                st = shared.room.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            let mut buffers = shared.pool.take();
            let step = st.draw.step();
            let drawn = st.draw.fill(&mut buffers);
            // The stream did not advance: no other worker may claim this step.
            st.failed |= drawn.is_err();
            (step, st.generation, buffers, drawn)
        };
        let stage = Cell::new(None);
        let produce = || {
            drawn.map_err(|e| Error::Loader { stream: "sampler".into(), step, source: Box::new(e) })?;
            shared.produce(step, buffers, &stage)
        };
        let result = catch_unwind(AssertUnwindSafe(produce)).unwrap_or_else(|panic| {
            let stream = shared.stream_name(stage.get());
            Err(Error::Loader { stream, step, source: Box::new(panicked(panic.as_ref())) })
        });
        let mut st = shared.lock();
        if st.stop || st.generation != generation {
            drop(st);
            continue; // a stopped loader's worker exits at the top; `result` is dropped unlocked.
        }
        let failed = result.is_err();
        let at = step.wrapping_sub(st.delivered) as usize;
        st.slots[at] = Some(result);
        if failed {
            st.failed = true;
            shared.room.notify_all();
        }
        drop(st);
        if at == 0 {
            shared.ready.notify_one();
        }
    }
}

/// The look-ahead thread: the sampler is a pure function of the step, so
/// the records of the steps after the workers' window are known exactly;
/// their bytes are brought close ([`Records::prefetch`]: a node-local
/// cache's blocks) before a worker gathers them, within the byte budget.
/// Failures are left for the gather to report.
fn lookahead<T>(shared: &Shared<T>) {
    let (mut draw, mut generation) = {
        let st = shared.lock();
        (st.draw.clone(), st.generation)
    };
    let mut b =
        Buffers { indices: Vec::new(), sources: Vec::new(), batches: Vec::new(), parts: Parts::default() };
    // (step, bytes fetched for it), for steps not yet delivered.
    let mut window: VecDeque<(u64, u64)> = VecDeque::new();
    loop {
        {
            let mut st = shared.lock();
            loop {
                if st.stop || st.failed {
                    return;
                }
                if st.generation != generation {
                    (draw, generation) = (st.draw.clone(), st.generation);
                    window.clear();
                }
                // Steps the workers have claimed are theirs to read.
                if draw.step() < st.draw.step() {
                    draw.seek(st.draw.step());
                }
                while window.front().is_some_and(|&(step, _)| step < st.delivered) {
                    window.pop_front();
                }
                let ahead = draw.step().wrapping_sub(st.delivered);
                let bytes: u64 = window.iter().map(|w| w.1).sum();
                if ahead < shared.prefetch + shared.lookahead && bytes < shared.lookahead_bytes {
                    break;
                }
                st = shared
                    .ahead
                    .wait_timeout(st, Duration::from_millis(50))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        let step = draw.step();
        if draw.fill(&mut b).is_err() {
            return; // the workers meet and report the same failure
        }
        let mut fetched = 0u64;
        for (k, row) in shared.sources.iter().enumerate() {
            let picked: Vec<u64>;
            let indices = if b.sources.is_empty() {
                &b.indices
            } else {
                picked = b
                    .sources
                    .iter()
                    .zip(&b.indices)
                    .filter(|(s, _)| **s as usize == k)
                    .map(|(_, &i)| i)
                    .collect();
                &picked
            };
            if indices.is_empty() {
                continue;
            }
            for store in row {
                fetched = fetched.saturating_add(store.prefetch(indices).unwrap_or(0));
            }
        }
        shared.fetched_ahead.fetch_add(fetched, Ordering::Relaxed);
        window.push_back((step, fetched));
    }
}

/// The error a caught panic on a worker thread becomes.
fn panicked(payload: &(dyn std::any::Any + Send)) -> Error {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string());
    Error::Panicked { message: msg }
}

/// An endless, prefetching, step-ordered loader over several aligned streams.
///
/// Every step draws one batch of indices from a [`Sampler`] and gathers every
/// stream at those indices on background threads; the consumer receives the
/// steps in step order, as [`Gathered`] values or as whatever the transform
/// makes of them. See the [module documentation](self) for the design.
///
/// ```
/// use std::sync::Arc;
/// use zrecord::training::{loader::Loader, sampler::Mode};
/// use zrecord::{Codec, CreateOptions, Store, Writer};
///
/// let dir = tempfile::tempdir()?;
/// // Eight 2x2 u8 "images" whose pixels are their record index, and their labels.
/// let mut w = Writer::create_dense(dir.path().join("image"), "|u1", &[2, 2], CreateOptions::codec(Codec::Zstd))?;
/// w.append(&(0..8u8).flat_map(|i| [i; 4]).collect::<Vec<_>>())?;
/// w.close()?;
/// let mut w = Writer::create_dense(dir.path().join("label"), "<i8", &[], CreateOptions::default())?;
/// w.append_typed(&(0..8i64).map(|i| 10 * i).collect::<Vec<_>>())?;
/// w.close()?;
///
/// let image = Arc::new(Store::open(dir.path().join("image"))?);
/// let label = Store::open(dir.path().join("label"))?;
/// let mut loader = Loader::builder()
///     .stream("image", image)
///     .stream("label", label)
///     .batch_size(4)
///     .mode(Mode::Cyclic)
///     .seed(7)
///     .workers(2)
///     .prefetch(3)
///     .build()?;
/// let step = loader.next_batch()?;
/// assert_eq!(step.step(), 0);
/// for (k, &i) in step.indices().iter().enumerate() {
///     assert_eq!(step.dense("image").unwrap().as_slice::<u8>()?[4 * k], i as u8);
///     assert_eq!(step.dense("label").unwrap().as_slice::<i64>()?[k], 10 * i as i64);
/// }
/// assert_eq!(loader.step(), 1); // save this in a checkpoint...
/// loader.close();
///
/// // ...and resume from it, with a transform that runs on the workers.
/// let mut resumed = Loader::builder()
///     .stream("label", Store::open(dir.path().join("label"))?)
///     .batch_size(4)
///     .mode(Mode::Cyclic)
///     .seed(7)
///     .seek(1)
///     .transform(|step| Ok(step.dense("label").unwrap().as_slice::<i64>()?.iter().sum::<i64>()))
///     .build()?;
/// let sum: i64 = resumed.next().unwrap()?;
/// assert!(sum > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loader<T = Gathered> {
    shared: Arc<Shared<T>>,
    threads: Vec<JoinHandle<()>>,
    /// Mirrors `State::delivered`, read without the lock.
    step: u64,
    /// The iterator has ended (closed, or a failure was returned).
    finished: bool,
    len: u64,
    batch_len: u64,
    workers: usize,
}

impl Loader {
    /// A builder with the defaults: cyclic mode, seed 0, unsharded, 2 workers,
    /// prefetch twice the workers, step 0, no transform.
    pub fn builder() -> LoaderBuilder {
        LoaderBuilder {
            streams: Vec::new(),
            batch_size: None,
            mode: Mode::Cyclic,
            seed: 0,
            shard: (0, 1),
            workers: 2,
            prefetch: None,
            lookahead: (LOOKAHEAD_STEPS, LOOKAHEAD_BYTES),
            seek: 0,
            mix: Mix::default(),
            transform: Arc::new(Ok),
        }
    }
}

impl<T> Loader<T> {
    /// The next step's output, in step order; waits for it if needed.
    ///
    /// The same as [`Iterator::next`] with the end folded into the error: the
    /// loader never ends on its own, so `Err(Error::Cancelled)` means it was
    /// closed or has already returned a failure.
    ///
    /// # Errors
    /// [`Error::Loader`] naming the stream (or [`TRANSFORM_STREAM`]) and the
    /// step that failed; the loader stops after returning it. Then
    /// [`Error::Cancelled`] on every later call.
    pub fn next_batch(&mut self) -> Result<T> {
        self.next().unwrap_or(Err(Error::Cancelled))
    }

    /// Bytes the look-ahead has fetched so far (see [`LoaderBuilder::lookahead`]).
    pub fn fetched_ahead(&self) -> u64 {
        self.shared.fetched_ahead.load(Ordering::Relaxed)
    }

    /// The step of the batch the next call returns: save it in a checkpoint
    /// and pass it to [`LoaderBuilder::seek`] to resume there. After a failure
    /// it is the failed step.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// The state to checkpoint: [`Loader::step`] (steps prefetched but not
    /// yet handed out are not consumed), the seed, the mixture and every
    /// store's identity. Plain data; see [`LoaderState`].
    pub fn state_dict(&self) -> LoaderState {
        self.state_at(self.step)
    }

    /// [`Loader::state_dict`] as if the consumer were at `step` (for a
    /// caller that holds delivered steps of its own, such as a transform
    /// queue).
    pub fn state_at(&self, step: u64) -> LoaderState {
        LoaderState { step, ..self.shared.identity.clone() }
    }

    /// Checks `state` against this loader and moves it to the state's step,
    /// dropping whatever was prefetched.
    ///
    /// # Errors
    /// [`Error::StateMismatch`] naming what differs (a source's length or
    /// stored bytes, the seed, the batch size, the mixture);
    /// [`Error::Cancelled`] for a closed or failed loader.
    pub fn load_state_dict(&mut self, state: &LoaderState) -> Result<()> {
        self.shared.identity.check(state)?;
        self.seek(state.step)
    }

    /// Moves the loader so the next step delivered is `step`, dropping
    /// whatever was prefetched.
    ///
    /// # Errors
    /// [`Error::Cancelled`] for a closed loader, or one whose workers met a
    /// failure (build a new one).
    pub fn seek(&mut self, step: u64) -> Result<()> {
        let pending = {
            let mut st = self.shared.lock();
            if self.finished || st.stop || st.failed {
                return Err(Error::Cancelled);
            }
            st.generation = st.generation.wrapping_add(1);
            st.draw.seek(step);
            st.delivered = step;
            let n = st.slots.len();
            std::mem::replace(&mut st.slots, (0..n).map(|_| None).collect())
        };
        self.step = step;
        self.shared.room.notify_all();
        drop(pending); // outside the lock: dropping a Gathered takes the pool lock
        Ok(())
    }

    /// Records in each stream (in a mixture, in all sources together).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the streams hold no records (never true for a built loader).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records per step (the sampler's batch length, after sharding).
    pub fn batch_len(&self) -> u64 {
        self.batch_len
    }

    /// Stream names, in builder order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.shared.names.iter().map(String::as_str)
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Most steps claimed but not yet delivered.
    pub fn prefetch(&self) -> usize {
        self.shared.prefetch as usize
    }

    /// How many buffer sets (index vector plus one batch per stream) the
    /// loader has allocated so far. With recycling this stops growing at about
    /// `prefetch + 1` plus the [`Gathered`] values the consumer keeps alive.
    pub fn allocated_buffers(&self) -> usize {
        self.shared.pool.allocated.load(Ordering::Relaxed)
    }

    /// As [`Iterator::next`], waiting at most `timeout` for the step: `Err(TimedOut)`
    /// when it is not ready by then, leaving the loader as it was (call again).
    /// For callers that must notice interrupts while they wait (the Python
    /// bindings check for Ctrl-C between waits).
    ///
    /// # Errors
    /// [`TimedOut`] only; the step's own failure comes as `Ok(Some(Err(_)))`.
    pub fn next_timeout(
        &mut self,
        timeout: std::time::Duration,
    ) -> std::result::Result<Option<Result<T>>, TimedOut> {
        self.next_until(Some(std::time::Instant::now() + timeout))
    }

    fn next_until(
        &mut self,
        deadline: Option<std::time::Instant>,
    ) -> std::result::Result<Option<Result<T>>, TimedOut> {
        if self.finished {
            return Ok(None);
        }
        let shared = Arc::clone(&self.shared);
        let mut st = shared.lock();
        let item = loop {
            if let Some(item) = st.slots.front_mut().and_then(Option::take) {
                st.slots.pop_front();
                st.slots.push_back(None);
                st.delivered = st.delivered.wrapping_add(1);
                break item;
            }
            if st.stop {
                self.finished = true;
                return Ok(None);
            }
            if st.live == 0 {
                // Unreachable unless a worker died outside its panic guard.
                st.stop = true;
                self.finished = true;
                return Ok(Some(Err(Error::Loader {
                    stream: String::from("<worker>"),
                    step: st.delivered,
                    source: Box::new(Error::Cancelled),
                })));
            }
            st = match deadline {
                None => shared.ready.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Err(TimedOut);
                    }
                    shared.ready.wait_timeout(st, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        };
        if item.is_ok() {
            self.step = st.delivered;
            drop(st);
            shared.room.notify_one();
            shared.ahead.notify_all();
        } else {
            st.stop = true;
            self.finished = true;
            drop(st);
            shared.room.notify_all();
        }
        Ok(Some(item))
    }

    /// Stops the workers and joins them; pending outputs are dropped.
    ///
    /// Returns once every worker thread has exited, which takes at most the
    /// step each one is gathering (a blocked worker wakes at once). Later
    /// calls of `next` return `None`. Idempotent; dropping the loader closes it.
    pub fn close(&mut self) {
        self.finished = true;
        let pending = {
            let mut st = self.shared.lock();
            st.stop = true;
            std::mem::take(&mut st.slots)
        };
        self.shared.room.notify_all();
        self.shared.ready.notify_all();
        self.shared.ahead.notify_all();
        drop(pending); // outside the lock: dropping a Gathered takes the pool lock
        for thread in self.threads.drain(..) {
            // Workers catch panics in gathers and transforms; a join error
            // would mean a bug in the loader itself, and there is no one to tell.
            let _ = thread.join();
        }
    }
}

impl<T> Iterator for Loader<T> {
    type Item = Result<T>;

    /// `Some(Ok(_))` for each step in order. A failure comes as
    /// `Some(Err(Error::Loader { stream, step, .. }))` at its own step (steps
    /// before it are delivered first), after which the loader is stopped and
    /// returns `None`, as it does once closed.
    fn next(&mut self) -> Option<Result<T>> {
        // Without a deadline the wait never times out.
        self.next_until(None).unwrap_or(None)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.finished {
            (0, Some(0))
        } else {
            (0, None)
        }
    }
}

impl<T> std::iter::FusedIterator for Loader<T> {}

impl<T> Drop for Loader<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> fmt::Debug for Loader<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loader")
            .field("streams", &self.shared.names)
            .field("step", &self.step)
            .field("len", &self.len)
            .field("batch_len", &self.batch_len)
            .field("workers", &self.workers)
            .field("prefetch", &self.shared.prefetch)
            .finish()
    }
}

/// [`Loader::next_timeout`]'s answer when the step was not ready in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

/// A store a loader stream reads: any [`Records`], owned or shared.
pub trait IntoStream {
    /// The store, shared with the loader's workers.
    fn into_stream(self) -> Arc<dyn Records>;
}

impl<S: Records + 'static> IntoStream for S {
    fn into_stream(self) -> Arc<dyn Records> {
        Arc::new(self)
    }
}

impl<S: Records + 'static> IntoStream for Arc<S> {
    fn into_stream(self) -> Arc<dyn Records> {
        self
    }
}

impl IntoStream for Arc<dyn Records> {
    fn into_stream(self) -> Arc<dyn Records> {
        self
    }
}

/// Configures a [`Loader`]; see [`Loader::builder`] for the defaults.
#[must_use]
pub struct LoaderBuilder<T = Gathered> {
    streams: Vec<(String, Arc<dyn Records>)>,
    batch_size: Option<u64>,
    mode: Mode,
    seed: u64,
    shard: (u64, u64),
    workers: usize,
    prefetch: Option<usize>,
    lookahead: (u64, u64),
    seek: u64,
    mix: Mix,
    transform: Arc<TransformFn<T>>,
}

/// A mixture's settings in the builder.
#[derive(Default)]
struct Mix {
    sources: Vec<Vec<(String, Arc<dyn Records>)>>,
    weights: Option<Vec<f64>>,
    schedule: Vec<(u64, Vec<f64>)>,
    modes: Option<Vec<Mode>>,
}

impl<T: Send + 'static> LoaderBuilder<T> {
    /// Adds a stream: a name and an open store (Dense or Ragged, local or
    /// remote; owned or in an `Arc`). All streams must hold the same number
    /// of records.
    pub fn stream(mut self, name: impl Into<String>, store: impl IntoStream) -> Self {
        self.streams.push((name.into(), store.into_stream()));
        self
    }
    /// Adds a source of a mixture: its streams, by the same names (and of
    /// the same dtypes and shapes) in every source. Use with
    /// [`LoaderBuilder::weights`] instead of [`LoaderBuilder::stream`];
    /// each step then draws its records from the sources by a [`Mixture`].
    pub fn source<N: Into<String>, S: IntoStream>(
        mut self,
        streams: impl IntoIterator<Item = (N, S)>,
    ) -> Self {
        self.mix.sources.push(streams.into_iter().map(|(n, s)| (n.into(), s.into_stream())).collect());
        self
    }
    /// The sources' weights (required with [`LoaderBuilder::source`]).
    pub fn weights(mut self, weights: &[f64]) -> Self {
        self.mix.weights = Some(weights.to_vec());
        self
    }
    /// From `step` on, mix the sources by `weights` (see [`Mixture::schedule`]).
    pub fn schedule(mut self, step: u64, weights: &[f64]) -> Self {
        self.mix.schedule.push((step, weights.to_vec()));
        self
    }
    /// Each source's sampling mode (default: [`LoaderBuilder::mode`] for all).
    pub fn modes(mut self, modes: &[Mode]) -> Self {
        self.mix.modes = Some(modes.to_vec());
        self
    }
    /// Global batch size (required).
    pub fn batch_size(mut self, batch_size: u64) -> Self {
        self.batch_size = Some(batch_size);
        self
    }
    /// Sampling mode (default [`Mode::Cyclic`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
    /// Sampler seed (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Take rank `rank`'s slice of each global batch among `world` consumers
    /// (see [`Sampler::shard`]).
    pub fn shard(mut self, rank: u64, world: u64) -> Self {
        self.shard = (rank, world);
        self
    }
    /// Worker threads (default 2, at least 1).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }
    /// Most steps claimed but not yet delivered (default twice the workers,
    /// at least 1). Bounds the loader's memory to that many outputs.
    pub fn prefetch(mut self, prefetch: usize) -> Self {
        self.prefetch = Some(prefetch);
        self
    }
    /// Bring the records of the next `steps` steps after the prefetch
    /// window close before they are gathered ([`Records::prefetch`]: a
    /// remote store read through a node-local cache fetches their blocks),
    /// fetching at most `bytes` for steps not yet delivered (default 8
    /// steps, 1 GiB; 0 steps, or no stream that [`Records::prefetches`]:
    /// no look-ahead thread).
    pub fn lookahead(mut self, steps: u64, bytes: u64) -> Self {
        self.lookahead = (steps, bytes);
        self
    }
    /// Start at `step` (a value of [`Loader::step`] saved in a checkpoint).
    pub fn seek(mut self, step: u64) -> Self {
        self.seek = step;
        self
    }
    /// Runs `f` on the worker threads on every gathered step; the loader
    /// delivers its outputs. Dropping the [`Gathered`] inside `f` recycles its
    /// buffers at once. An `Err` or a panic stops the loader with
    /// [`Error::Loader`] naming [`TRANSFORM_STREAM`].
    pub fn transform<U, F>(self, f: F) -> LoaderBuilder<U>
    where
        F: Fn(Gathered) -> Result<U> + Send + Sync + 'static,
    {
        LoaderBuilder {
            streams: self.streams,
            batch_size: self.batch_size,
            mode: self.mode,
            seed: self.seed,
            shard: self.shard,
            workers: self.workers,
            prefetch: self.prefetch,
            lookahead: self.lookahead,
            seek: self.seek,
            mix: self.mix,
            transform: Arc::new(f),
        }
    }

    /// Checks the settings, positions the sampler and starts the workers.
    ///
    /// # Errors
    /// [`Error::Config`] for no streams, a repeated or reserved stream name,
    /// streams of different lengths (each length is named), sources whose
    /// streams differ in names, dtypes or shapes, both streams and sources,
    /// a mixture without weights or with bad ones, a missing or zero
    /// batch size, zero workers or prefetch, or a bad shard;
    /// [`Error::WorldSize`] for a mixture's world that does not divide its
    /// batch; [`Error::Io`] if a thread cannot be spawned.
    pub fn build(self) -> Result<Loader<T>> {
        let config = |why: String| Err(Error::Config(why));
        let mixed = !self.mix.sources.is_empty();
        if mixed && !self.streams.is_empty() {
            return config("a loader takes streams or mixture sources, not both".into());
        }
        let sources = if mixed { self.mix.sources } else { vec![self.streams] };
        let first = &sources[0];
        if first.is_empty() {
            return config("a loader needs at least one stream".into());
        }
        for (k, (name, _)) in first.iter().enumerate() {
            if name == TRANSFORM_STREAM {
                return config(format!("stream name {name:?} is reserved for transform errors"));
            }
            if first[..k].iter().any(|(other, _)| other == name) {
                return config(format!("stream {name:?} is added twice"));
            }
        }
        let names: Vec<String> = first.iter().map(|(n, _)| n.clone()).collect();
        let mut stores: Vec<Vec<Arc<dyn Records>>> = Vec::with_capacity(sources.len());
        let mut lengths = Vec::with_capacity(sources.len());
        for (k, source) in sources.iter().enumerate() {
            if source.len() != first.len() {
                return config(format!(
                    "mixture source {k} has streams {:?}, source 0 has {names:?}",
                    source.iter().map(|(n, _)| n).collect::<Vec<_>>()
                ));
            }
            let mut row = Vec::with_capacity(first.len());
            for (name, model) in first {
                let Some((_, store)) = source.iter().find(|(n, _)| n == name) else {
                    return config(format!(
                        "mixture source {k} has no stream {name:?} (each needs {names:?})"
                    ));
                };
                if store.dtype() != model.dtype() || store.geometry() != model.geometry() {
                    return config(format!(
                        "mixture source {k} stream {name:?} holds {} {:?}, source 0's holds {} {:?}",
                        store.dtype(),
                        store.geometry(),
                        model.dtype(),
                        model.geometry()
                    ));
                }
                row.push(Arc::clone(store));
            }
            let len = row[0].len();
            if row.iter().any(|s| s.len() != len) {
                let lengths: Vec<String> =
                    names.iter().zip(&row).map(|(n, s)| format!("{n:?} has {} records", s.len())).collect();
                let whose = if mixed { format!("mixture source {k}: ") } else { String::new() };
                return config(format!("{whose}loader streams differ in length: {}", lengths.join(", ")));
            }
            lengths.push(len);
            stores.push(row);
        }
        if let Some(k) = lengths.iter().position(|&l| l == 0) {
            let whose = if mixed { format!("mixture source {k}: ") } else { String::new() };
            return config(format!(
                "{whose}the store is empty: loader streams {names:?} have length 0, nothing to sample"
            ));
        }
        let Some(batch_size) = self.batch_size else {
            return config("loader batch_size is not set".into());
        };
        if self.workers == 0 {
            return config("loader workers must be at least 1 (got 0)".into());
        }
        let prefetch = self.prefetch.unwrap_or(2 * self.workers);
        if prefetch == 0 {
            return config("loader prefetch must be at least 1 (got 0)".into());
        }
        let (rank, world) = self.shard;
        let (mut draw, modes, schedule) = if mixed {
            let Some(weights) = self.mix.weights else {
                return config("a mixture loader needs weights, one per source".into());
            };
            let modes = self.mix.modes.unwrap_or_else(|| vec![self.mode; sources.len()]);
            let mut m = Mixture::new(&lengths, &weights, batch_size, self.seed)?.modes(&modes)?;
            for (step, w) in &self.mix.schedule {
                m = m.schedule(*step, w)?;
            }
            let schedule = m.segments().map(|(step, w, _)| (step, w.to_vec())).collect();
            (Draw::Mix(Box::new(m.shard(rank, world)?)), modes, schedule)
        } else {
            if self.mix.weights.is_some() || !self.mix.schedule.is_empty() || self.mix.modes.is_some() {
                return config(
                    "weights, schedule and modes are for mixture sources (LoaderBuilder::source)".into(),
                );
            }
            let sampler = Sampler::new(lengths[0], batch_size, self.mode, self.seed)?.shard(rank, world)?;
            (Draw::One(sampler), vec![self.mode], Vec::new())
        };
        draw.seek(self.seek);
        let batch_len = match &draw {
            Draw::One(s) => s.batch_len(),
            Draw::Mix(m) => m.batch_len(),
        };
        let identity = LoaderState {
            format: STATE_FORMAT.into(),
            step: 0,
            seed: self.seed,
            batch_size,
            modes: modes.iter().map(|m| m.as_str().to_string()).collect(),
            schedule,
            sources: stores
                .iter()
                .map(|row| {
                    let id = |(name, s): (&String, &Arc<dyn Records>)| StreamId {
                        name: name.clone(),
                        store: s.name().to_string(),
                        length: s.len(),
                        stored_bytes: s.stored_bytes(),
                    };
                    names.iter().zip(row).map(id).collect()
                })
                .collect(),
        };
        let len = lengths.iter().fold(0u64, |a, &b| a.saturating_add(b));
        let streams = names.len();
        // Caller-sized: refused as an error, never an abort.
        let mut slots = VecDeque::new();
        slots.try_reserve_exact(prefetch).map_err(|_| Error::OutOfMemory {
            store: "loader".into(),
            what: format!("prefetch of {prefetch} steps"),
            bytes: (prefetch as u64).saturating_mul(std::mem::size_of::<Option<Result<T>>>() as u64),
        })?;
        slots.extend((0..prefetch).map(|_| None));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                draw,
                generation: 0,
                delivered: self.seek,
                slots,
                stop: false,
                failed: false,
                live: self.workers,
            }),
            room: Condvar::new(),
            ready: Condvar::new(),
            names: names.into(),
            sources: stores,
            transform: self.transform,
            pool: Arc::new(Pool {
                free: Mutex::new(Vec::new()),
                keep: prefetch + 1,
                streams,
                allocated: AtomicUsize::new(0),
            }),
            prefetch: prefetch as u64,
            lookahead: self.lookahead.0,
            lookahead_bytes: self.lookahead.1,
            ahead: Condvar::new(),
            fetched_ahead: AtomicU64::new(0),
            identity,
        });
        let mut loader = Loader {
            shared,
            threads: Vec::with_capacity(self.workers),
            step: self.seek,
            finished: false,
            len,
            batch_len,
            workers: self.workers,
        };
        for i in 0..self.workers {
            let shared = Arc::clone(&loader.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("zrecord-loader-{i}"))
                .spawn(move || worker(&shared));
            match spawned {
                Ok(thread) => loader.threads.push(thread),
                Err(e) => {
                    // Workers never spawned will never decrement `live`.
                    loader.shared.lock().live -= self.workers - i;
                    return Err(Error::io("loader worker", "spawn thread", e)); // drop joins the others
                }
            }
        }
        let prefetches = loader.shared.sources.iter().flatten().any(|s| s.prefetches());
        if self.lookahead.0 > 0 && prefetches {
            let shared = Arc::clone(&loader.shared);
            let spawned = std::thread::Builder::new()
                .name("zrecord-lookahead".into())
                .spawn(move || lookahead(&shared));
            // Without it the loader still works: gathers fetch what they need.
            if let Ok(thread) = spawned {
                loader.threads.push(thread);
            }
        }
        Ok(loader)
    }
}

impl<T> fmt::Debug for LoaderBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoaderBuilder")
            .field("streams", &self.streams.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("batch_size", &self.batch_size)
            .field("mode", &self.mode)
            .field("seed", &self.seed)
            .field("shard", &self.shard)
            .field("workers", &self.workers)
            .field("prefetch", &self.prefetch)
            .field("seek", &self.seek)
            .finish()
    }
}
