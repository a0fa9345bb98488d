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
//! **Shutdown.** [`Loader::close`] (also run on drop) sets a stop flag, wakes
//! every waiter and joins every worker. A worker notices the flag when it next
//! waits or deposits, so `close` returns after at most the step each worker is
//! working on; nothing keeps a worker blocked.

use crate::format::batch::{Batch, DenseBatch, RaggedBatch};
use crate::records::Records;
use crate::training::sampler::{Mode, Sampler};
use crate::{Error, Result};
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;

/// The stream name carried by [`Error::Loader`] when the transform failed
/// (returned an error or panicked) rather than a stream's gather.
pub const TRANSFORM_STREAM: &str = "<transform>";

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
    names: Arc<[String]>,
    batches: Vec<Batch>,
    pool: Weak<Pool>,
}

impl Gathered {
    /// The step this batch was drawn at (0-based).
    pub fn step(&self) -> u64 {
        self.step
    }
    /// The record indices, shared by every stream.
    pub fn indices(&self) -> &[u64] {
        &self.indices
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
                batches: std::mem::take(&mut self.batches),
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
    batches: Vec<Batch>,
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
        Buffers { indices: Vec::new(), batches: vec![Batch::Ragged(RaggedBatch::default()); self.streams] }
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
    stores: Vec<Arc<dyn Records>>,
    transform: Arc<TransformFn<T>>,
    pool: Arc<Pool>,
    prefetch: u64,
}

struct State<T> {
    /// Draws the indices; its `step()` is the next step to claim.
    sampler: Sampler,
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
            names: Arc::clone(&self.names),
            batches: buffers.batches,
            pool: Arc::downgrade(&self.pool),
        };
        for (i, store) in self.stores.iter().enumerate() {
            stage.set(Some(i));
            store
                .gather_batch_into(&gathered.indices, &mut gathered.batches[i])
                .map_err(|e| Error::Loader { stream: self.names[i].clone(), step, source: Box::new(e) })?;
        }
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
        let (step, buffers) = {
            let mut st = shared.lock();
            loop {
                if st.stop || st.failed {
                    return;
                }
                if st.sampler.step().wrapping_sub(st.delivered) < shared.prefetch {
                    break;
                }
                st = shared.room.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            let mut buffers = shared.pool.take();
            let step = st.sampler.step();
            let drawn = st.sampler.try_fill_next(&mut buffers.indices);
            // The stream did not advance: no other worker may claim this step.
            st.failed |= drawn.is_err();
            (step, drawn.map(|()| buffers))
        };
        let stage = Cell::new(None);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let buffers =
                buffers.map_err(|e| Error::Loader { stream: "sampler".into(), step, source: Box::new(e) })?;
            shared.produce(step, buffers, &stage)
        }))
        .unwrap_or_else(|panic| {
            let stream = shared.stream_name(stage.get());
            Err(Error::Loader { stream, step, source: Box::new(panicked(panic.as_ref())) })
        });
        let mut st = shared.lock();
        if st.stop {
            drop(st);
            return; // `result` is dropped after the lock is released.
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
            seek: 0,
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

    /// The step of the batch the next call returns: save it in a checkpoint
    /// and pass it to [`LoaderBuilder::seek`] to resume there. After a failure
    /// it is the failed step.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Records in each stream.
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
    seek: u64,
    transform: Arc<TransformFn<T>>,
}

impl<T: Send + 'static> LoaderBuilder<T> {
    /// Adds a stream: a name and an open store (Dense or Ragged, local or
    /// remote; owned or in an `Arc`). All streams must hold the same number
    /// of records.
    pub fn stream(mut self, name: impl Into<String>, store: impl IntoStream) -> Self {
        self.streams.push((name.into(), store.into_stream()));
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
            seek: self.seek,
            transform: Arc::new(f),
        }
    }

    /// Checks the settings, positions the sampler and starts the workers.
    ///
    /// # Errors
    /// [`Error::Config`] for no streams, a repeated or reserved stream name,
    /// streams of different lengths (each length is named), a missing or zero
    /// batch size, zero workers or prefetch, or a bad shard; [`Error::Io`] if
    /// a thread cannot be spawned.
    pub fn build(self) -> Result<Loader<T>> {
        let config = |why: String| Err(Error::Config(why));
        if self.streams.is_empty() {
            return config("a loader needs at least one stream".into());
        }
        for (k, (name, _)) in self.streams.iter().enumerate() {
            if name == TRANSFORM_STREAM {
                return config(format!("stream name {name:?} is reserved for transform errors"));
            }
            if self.streams[..k].iter().any(|(other, _)| other == name) {
                return config(format!("stream {name:?} is added twice"));
            }
        }
        let len = self.streams[0].1.len();
        if self.streams.iter().any(|(_, s)| s.len() != len) {
            let lengths: Vec<String> =
                self.streams.iter().map(|(n, s)| format!("{n:?} has {} records", s.len())).collect();
            return config(format!("loader streams differ in length: {}", lengths.join(", ")));
        }
        if len == 0 {
            let names: Vec<&str> = self.streams.iter().map(|(n, _)| n.as_str()).collect();
            return config(format!(
                "the store is empty: loader streams {names:?} have length 0, nothing to sample"
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
        let mut sampler = Sampler::new(len, batch_size, self.mode, self.seed)?.shard(rank, world)?;
        sampler.seek(self.seek);
        let batch_len = sampler.batch_len();
        let (names, stores): (Vec<String>, Vec<Arc<dyn Records>>) = self.streams.into_iter().unzip();
        let streams = stores.len();
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
                sampler,
                delivered: self.seek,
                slots,
                stop: false,
                failed: false,
                live: self.workers,
            }),
            room: Condvar::new(),
            ready: Condvar::new(),
            names: names.into(),
            stores,
            transform: self.transform,
            pool: Arc::new(Pool {
                free: Mutex::new(Vec::new()),
                keep: prefetch + 1,
                streams,
                allocated: AtomicUsize::new(0),
            }),
            prefetch: prefetch as u64,
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
