//! The loader over real stores written with the Writer: alignment, order,
//! resume, backpressure, failures and shutdown.

use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zrecord::training::loader::{Gathered, Loader, TRANSFORM_STREAM};
use zrecord::training::sampler::{Mode, Sampler};
use zrecord::Records;
use zrecord::{Batch, Codec, CreateOptions, Error, Store, Writer};

const N: u64 = 60;
/// Items per Dense record (shape [4, 3]).
const ROW: u64 = 12;

/// Dense `<u4` [4, 3]: record `i` holds `i * 1000 + k` at item `k`.
fn write_dense(path: &Path, n: u64) {
    let mut w = Writer::create_dense(path, "<u4", &[4, 3], CreateOptions::codec(Codec::Zstd)).unwrap();
    let items: Vec<u32> = (0..n).flat_map(|i| (0..ROW).map(move |k| (i * 1000 + k) as u32)).collect();
    w.append_typed(&items).unwrap();
    w.close().unwrap();
}

/// Ragged `<i2`: record `i` has shape `[i % 5 + 1]`, every item `i`.
fn write_ragged(path: &Path, n: u64) {
    let mut w = Writer::create_ragged(path, "<i2", CreateOptions::codec(Codec::Zstd)).unwrap();
    let payloads: Vec<(Vec<u64>, Vec<u8>)> = (0..n)
        .map(|i| {
            let len = i % 5 + 1;
            (vec![len], (0..len).flat_map(|_| (i as i16).to_le_bytes()).collect())
        })
        .collect();
    let records: Vec<(&[u64], &[u8])> = payloads.iter().map(|(s, b)| (s.as_slice(), b.as_slice())).collect();
    w.append_ragged(&records).unwrap();
    w.close().unwrap();
}

/// Scalar `<i8` labels: record `i` is `-(i as i64)`.
fn write_labels(path: &Path, n: u64) {
    let mut w = Writer::create_dense(path, "<i8", &[], CreateOptions::codec(Codec::Raw)).unwrap();
    w.append_typed(&(0..n as i64).map(|i| -i).collect::<Vec<_>>()).unwrap();
    w.close().unwrap();
}

struct Stores {
    _dir: tempfile::TempDir,
    image: Arc<Store>,
    tokens: Arc<Store>,
    label: Arc<Store>,
}

fn stores(n: u64) -> Stores {
    let dir = tempfile::tempdir().unwrap();
    write_dense(&dir.path().join("image"), n);
    write_ragged(&dir.path().join("tokens"), n);
    write_labels(&dir.path().join("label"), n);
    let open = |name: &str| Arc::new(Store::open(dir.path().join(name)).unwrap());
    Stores { image: open("image"), tokens: open("tokens"), label: open("label"), _dir: dir }
}

fn builder(s: &Stores) -> zrecord::training::loader::LoaderBuilder {
    Loader::builder()
        .stream("image", Arc::clone(&s.image))
        .stream("tokens", Arc::clone(&s.tokens))
        .stream("label", Arc::clone(&s.label))
        .batch_size(8)
        .mode(Mode::Cyclic)
        .seed(11)
}

/// A comparable digest of a gathered step: its step, indices and every byte.
fn digest(g: &Gathered) -> (u64, Vec<u64>, Vec<Vec<u8>>) {
    let bytes = g
        .iter()
        .map(|(_, b)| match b {
            Batch::Dense(d) => d.bytes().to_vec(),
            Batch::Ragged(r) => r
                .iter()
                .flat_map(|(shape, bytes)| {
                    shape
                        .iter()
                        .flat_map(|d| d.to_le_bytes())
                        .chain(bytes.iter().copied())
                        .collect::<Vec<_>>()
                })
                .collect(),
        })
        .collect();
    (g.step(), g.indices().to_vec(), bytes)
}

#[test]
fn streams_line_up_with_direct_gathers() {
    let s = stores(N);
    let mut loader = builder(&s).workers(3).prefetch(4).build().unwrap();
    assert_eq!((loader.len(), loader.batch_len()), (N, 8));
    assert_eq!(loader.names().collect::<Vec<_>>(), ["image", "tokens", "label"]);
    let mut sampler = Sampler::new(N, 8, Mode::Cyclic, 11).unwrap();
    for step in 0..40 {
        let g = loader.next_batch().unwrap();
        assert_eq!(g.step(), step);
        assert_eq!(g.indices(), sampler.next_batch(), "the sampler's stream");
        let idx = g.indices();
        // Each stream equals a direct gather at the same indices...
        assert_eq!(g.dense("image").unwrap().bytes(), s.image.gather(idx).unwrap().bytes());
        assert_eq!(g.dense("label").unwrap().bytes(), s.label.gather(idx).unwrap().bytes());
        let tokens = g.ragged("tokens").unwrap();
        let direct = s.tokens.gather_ragged(idx).unwrap();
        assert!(tokens.iter().eq(direct.iter()));
        // ...and record k of every stream is record idx[k].
        let image = g.dense("image").unwrap();
        assert_eq!(image.shape(), [8, 4, 3]);
        let pixels = image.as_slice::<u32>().unwrap();
        let labels = g["label"].as_dense().unwrap().as_slice::<i64>().unwrap();
        for (k, &i) in idx.iter().enumerate() {
            assert_eq!(
                pixels[k * ROW as usize..][..ROW as usize],
                (0..ROW).map(|c| (i * 1000 + c) as u32).collect::<Vec<_>>()[..]
            );
            assert_eq!(labels[k], -(i as i64));
            let t = tokens.record_as::<i16>(s.tokens.dtype(), k).unwrap();
            assert_eq!(tokens.shape(k), [i % 5 + 1]);
            assert!(t.iter().all(|&v| v == i as i16));
        }
    }
    assert_eq!(loader.step(), 40);
}

/// A transform that sleeps a pseudo-random 0..4 ms per step, so workers finish out of order.
fn jittery(g: Gathered) -> zrecord::Result<(u64, Vec<u64>, Vec<Vec<u8>>)> {
    let jitter = (g.step().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) % 4;
    std::thread::sleep(Duration::from_millis(jitter));
    Ok(digest(&g))
}

#[test]
fn order_is_step_order_whatever_the_workers() {
    let s = stores(N);
    // Steps in the order the workers finished them.
    let finished = Arc::new(std::sync::Mutex::new(Vec::new()));
    let run = |workers: usize, mode: Mode| -> Vec<_> {
        let done = Arc::clone(&finished);
        let loader = builder(&s)
            .mode(mode)
            .workers(workers)
            .prefetch(6)
            .transform(move |g| {
                let out = jittery(g)?;
                done.lock().unwrap().push(out.0);
                Ok(out)
            })
            .build()
            .unwrap();
        loader.take(50).map(Result::unwrap).collect()
    };
    let mut reordered = false;
    for mode in [Mode::Sequential, Mode::Iid, Mode::Cyclic] {
        let one = run(1, mode);
        finished.lock().unwrap().clear();
        let four = run(4, mode);
        reordered |= finished.lock().unwrap().windows(2).any(|w| w[0] > w[1]);
        assert_eq!(one.iter().map(|d| d.0).collect::<Vec<_>>(), (0..50).collect::<Vec<_>>());
        assert_eq!(one, four, "{mode}: workers=4 differs from workers=1");
    }
    assert!(reordered, "the jitter should make workers finish out of step order");
}

#[test]
fn seek_resumes_the_same_batches() {
    let s = stores(N);
    for mode in [Mode::Sequential, Mode::Iid, Mode::Cyclic] {
        let mut first = builder(&s).mode(mode).workers(2).shard(1, 2).build().unwrap();
        assert_eq!(first.batch_len(), 4);
        let all: Vec<_> = (0..30).map(|_| digest(&first.next_batch().unwrap())).collect();
        let mut checkpoint = builder(&s).mode(mode).workers(3).shard(1, 2).build().unwrap();
        for _ in 0..17 {
            checkpoint.next_batch().unwrap();
        }
        let saved = checkpoint.step();
        assert_eq!(saved, 17);
        drop(checkpoint);
        let mut resumed = builder(&s).mode(mode).workers(3).shard(1, 2).seek(saved).build().unwrap();
        assert_eq!(resumed.step(), 17);
        let rest: Vec<_> = (17..30).map(|_| digest(&resumed.next_batch().unwrap())).collect();
        assert_eq!(rest, all[17..], "{mode}");
    }
}

/// Counts outputs alive at once.
struct Live(Arc<AtomicUsize>);
impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn prefetch_bounds_batches_in_flight() {
    let s = stores(N);
    let prefetch = 3;
    let started = Arc::new(AtomicUsize::new(0));
    let live = Arc::new(AtomicUsize::new(0));
    let max_live = Arc::new(AtomicUsize::new(0));
    let (st, lv, mx) = (Arc::clone(&started), Arc::clone(&live), Arc::clone(&max_live));
    let mut loader = builder(&s)
        .workers(4)
        .prefetch(prefetch)
        .transform(move |g| {
            st.fetch_add(1, Ordering::SeqCst);
            let now = lv.fetch_add(1, Ordering::SeqCst) + 1;
            mx.fetch_max(now, Ordering::SeqCst);
            Ok((g.step(), Live(Arc::clone(&lv))))
        })
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for consumed in 0..20 {
        // A slow consumer: the workers fill the window, then must wait.
        while started.load(Ordering::SeqCst) < consumed + prefetch && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(5));
        let ahead = started.load(Ordering::SeqCst) - consumed;
        assert_eq!(ahead, prefetch, "prefetch fills the window and no further");
        let (step, item) = loader.next_batch().unwrap();
        assert_eq!(step, consumed as u64);
        drop(item);
    }
    assert!(max_live.load(Ordering::SeqCst) <= prefetch + 1);
    assert!(loader.allocated_buffers() <= prefetch + 1, "{} buffer sets", loader.allocated_buffers());
}

#[test]
fn dropped_batches_are_recycled() {
    let s = stores(N);
    let mut loader = builder(&s).workers(2).prefetch(2).build().unwrap();
    for _ in 0..30 {
        drop(loader.next_batch().unwrap());
    }
    // At most `prefetch` steps inside the loader plus the one the consumer holds.
    assert!(loader.allocated_buffers() <= 3, "{} buffer sets for 30 steps", loader.allocated_buffers());
    // Holding every batch forces fresh buffers: the counter does count.
    let held: Vec<_> = (0..10).map(|_| loader.next_batch().unwrap()).collect();
    assert!(loader.allocated_buffers() >= 10);
    drop(held);
}

/// Zero the zstd frame of record `index` in a store's data.zr (the frame magic
/// is gone, so decoding fails deterministically).
fn corrupt_record(store: &Path, index: u64) {
    let meta = std::fs::read(store.join("meta.zr")).unwrap();
    let at = 4096 + 16 * index as usize;
    let offset = u64::from_le_bytes(meta[at..at + 8].try_into().unwrap()) as usize;
    let phys = u32::from_le_bytes(meta[at + 8..at + 12].try_into().unwrap()) as usize;
    let mut data = std::fs::read(store.join("data.zr")).unwrap();
    data[offset..offset + phys].fill(0);
    std::fs::write(store.join("data.zr"), data).unwrap();
}

fn expect_loader_error(err: Error, want_stream: &str, want_step: u64) -> Error {
    match err {
        Error::Loader { stream, step, source } => {
            assert_eq!((stream.as_str(), step), (want_stream, want_step));
            *source
        }
        other => panic!("expected Error::Loader, got {other:?}"),
    }
}

#[test]
fn corrupt_record_names_stream_and_step() {
    let dir = tempfile::tempdir().unwrap();
    write_dense(&dir.path().join("image"), 40);
    write_labels(&dir.path().join("label"), 40);
    corrupt_record(&dir.path().join("image"), 10);
    let mut loader = Loader::builder()
        .stream("label", Store::open(dir.path().join("label")).unwrap())
        .stream("image", Store::open(dir.path().join("image")).unwrap())
        .batch_size(4)
        .mode(Mode::Sequential)
        .workers(3)
        .prefetch(5)
        .build()
        .unwrap();
    // Steps 0 and 1 (records 0..8) arrive first: the failure comes at its own step.
    for step in 0..2 {
        assert_eq!(loader.next_batch().unwrap().step(), step);
    }
    let err = loader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("\"image\" step 2"), "{err}");
    let source = expect_loader_error(err, "image", 2);
    assert!(matches!(source, Error::CorruptRecord { index: 10, .. }), "{source:?}");
    assert_eq!(loader.step(), 2, "the failed step, to resume from");
    assert!(loader.next().is_none(), "the loader stops after a failure");
    assert!(matches!(loader.next_batch(), Err(Error::Cancelled)));
}

#[test]
fn transform_error_names_the_transform_and_step() {
    let s = stores(N);
    let mut loader = builder(&s)
        .workers(3)
        .transform(|g| {
            if g.step() == 5 {
                return Err(Error::Config("step five is bad".into()));
            }
            Ok(g.step())
        })
        .build()
        .unwrap();
    let got: Vec<_> = loader.by_ref().take(5).map(Result::unwrap).collect();
    assert_eq!(got, [0, 1, 2, 3, 4]);
    let source = expect_loader_error(loader.next().unwrap().unwrap_err(), TRANSFORM_STREAM, 5);
    assert!(source.to_string().contains("step five is bad"));
    assert!(loader.next().is_none());
}

#[test]
fn transform_panic_becomes_an_error() {
    let s = stores(N);
    let mut loader = builder(&s)
        .workers(2)
        .transform(|g| {
            if g.step() == 3 {
                panic!("boom at step {}", g.step());
            }
            Ok(g.step())
        })
        .build()
        .unwrap();
    for step in 0..3 {
        assert_eq!(loader.next_batch().unwrap(), step);
    }
    let source = expect_loader_error(loader.next_batch().unwrap_err(), TRANSFORM_STREAM, 3);
    assert!(matches!(source, Error::Panicked { .. }), "{source:?}");
    assert!(source.to_string().contains("boom at step 3"), "{source}");
    assert!(loader.next().is_none());
    loader.close();
}

thread_local! {
    /// Marks this thread as counted by each counter in the list; the marks
    /// drop (and decrement) when the thread exits.
    static MARKS: RefCell<Vec<ThreadMark>> = const { RefCell::new(Vec::new()) };
}

struct ThreadMark(Arc<AtomicUsize>);
impl Drop for ThreadMark {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Count the calling thread in `counter` until it exits.
fn mark_thread(counter: &Arc<AtomicUsize>) {
    MARKS.with(|m| {
        let mut m = m.borrow_mut();
        if !m.iter().any(|mark| Arc::ptr_eq(&mark.0, counter)) {
            counter.fetch_add(1, Ordering::SeqCst);
            m.push(ThreadMark(Arc::clone(counter)));
        }
    });
}

#[test]
fn close_with_workers_blocked_on_a_full_window() {
    let s = stores(N);
    for close_explicitly in [true, false] {
        let threads = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let (t, st) = (Arc::clone(&threads), Arc::clone(&started));
        let mut loader = builder(&s)
            .workers(4)
            .prefetch(2)
            .transform(move |g| {
                mark_thread(&t);
                st.fetch_add(1, Ordering::SeqCst);
                Ok(g.step())
            })
            .build()
            .unwrap();
        assert_eq!(loader.next_batch().unwrap(), 0);
        // The consumer stops reading; workers fill the window (steps 1, 2) and wait.
        let deadline = Instant::now() + Duration::from_secs(10);
        while started.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(started.load(Ordering::SeqCst), 3);
        assert!(threads.load(Ordering::SeqCst) >= 1);
        let t0 = Instant::now();
        if close_explicitly {
            loader.close();
            assert!(loader.next().is_none());
            assert!(matches!(loader.next_batch(), Err(Error::Cancelled)));
        } else {
            drop(loader);
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "close took {:?}", t0.elapsed());
        assert_eq!(threads.load(Ordering::SeqCst), 0, "every worker thread exited");
    }
}

#[test]
fn close_while_the_consumer_never_read() {
    let s = stores(N);
    let threads = Arc::new(AtomicUsize::new(0));
    let t = Arc::clone(&threads);
    let loader = builder(&s)
        .workers(3)
        .prefetch(6)
        .transform(move |g| {
            mark_thread(&t);
            std::thread::sleep(Duration::from_millis(2));
            Ok(g.len())
        })
        .build()
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t0 = Instant::now();
    drop(loader);
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(threads.load(Ordering::SeqCst), 0);
}

#[test]
fn mismatched_lengths_name_each_length() {
    let dir = tempfile::tempdir().unwrap();
    write_dense(&dir.path().join("image"), 10);
    write_labels(&dir.path().join("label"), 12);
    let err = Loader::builder()
        .stream("image", Store::open(dir.path().join("image")).unwrap())
        .stream("label", Store::open(dir.path().join("label")).unwrap())
        .batch_size(2)
        .build()
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Config(_)), "{err:?}");
    assert!(msg.contains("\"image\" has 10 records") && msg.contains("\"label\" has 12 records"), "{msg}");
}

#[test]
fn bad_settings_are_config_errors() {
    let s = stores(N);
    let config = |b: zrecord::training::loader::LoaderBuilder| match b.build() {
        Err(Error::Config(why)) => why,
        other => panic!("expected Error::Config, got {other:?}"),
    };
    assert!(config(builder(&s).prefetch(0)).contains("prefetch"));
    assert!(config(builder(&s).workers(0)).contains("workers"));
    assert!(config(Loader::builder().batch_size(4)).contains("at least one stream"));
    assert!(config(Loader::builder().stream("a", Arc::clone(&s.label))).contains("batch_size"));
    assert!(config(builder(&s).batch_size(0)).contains("batch_size"));
    assert!(config(builder(&s).stream("label", Arc::clone(&s.label))).contains("twice"));
    assert!(config(builder(&s).stream(TRANSFORM_STREAM, Arc::clone(&s.label))).contains("reserved"));
    assert!(config(builder(&s).shard(0, 3)).contains("3"));
}

/// Threads of this process named `name` (Linux: `/proc/self/task/*/comm`).
fn threads_named(name: &str) -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// Local stores have nothing to bring close ahead of a gather: no thread
/// draws the future steps a second time (that costs a mixture's loader as
/// much as its own draw).
#[test]
fn local_stores_get_no_look_ahead_thread() {
    let s = stores(1000);
    let mut loader = builder(&s).build().unwrap();
    loader.next_batch().unwrap();
    assert!(!s.image.prefetches());
    assert_eq!(threads_named("zrecord-lookahe"), 0, "a look-ahead thread over local stores");
}
