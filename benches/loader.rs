//! Loader throughput against back-to-back direct gathers of the same batches,
//! over a zstd Dense store of smooth synthetic 3x224x224 uint8 images.
//!
//! Run with `cargo bench --bench loader` (env `LOADER_WORKERS`, `LOADER_PREFETCH`
//! override the loader's 2 workers and prefetch 4).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use zrecord::training::loader::Loader;
use zrecord::training::sampler::{Mode, Sampler};
use zrecord::Records;
use zrecord::{Codec, CreateOptions, DenseBatch, Store, Writer};

const RECORDS: u64 = 1536;
const BATCH: u64 = 256;
const SIDE: usize = 224;
const IMAGE: usize = 3 * SIDE * SIDE;
/// Steps per timed run: ten epochs of six batches. A finite run charges the
/// loader for its start-up and for the steps it prefetches past the end, so
/// this is long enough for those to be small.
const STEPS: u64 = 60;
const RUNS: usize = 5;
const SEED: u64 = 7;

/// A smooth image that differs per record: low-frequency waves plus a gradient.
fn image(i: u64, out: &mut [u8]) {
    let phase = i as f32 * 0.37;
    for c in 0..3 {
        for y in 0..SIDE {
            for x in 0..SIDE {
                let (fx, fy) = (x as f32, y as f32);
                let v = 110.0
                    + 60.0 * ((fx + 9.0 * phase) / 19.0).sin() * ((fy - 5.0 * phase) / 27.0).cos()
                    + 0.2 * (fx + fy)
                    + 25.0 * c as f32;
                out[(c * SIDE + y) * SIDE + x] = v.clamp(0.0, 255.0) as u8;
            }
        }
    }
}

fn write_store(path: &Path) {
    let mut w =
        Writer::create_dense(path, "|u1", &[3, SIDE as u64, SIDE as u64], CreateOptions::codec(Codec::Zstd))
            .expect("create store");
    let mut rows = vec![0u8; 64 * IMAGE];
    for start in (0..RECORDS).step_by(64) {
        let n = (RECORDS - start).min(64) as usize;
        for k in 0..n {
            image(start + k as u64, &mut rows[k * IMAGE..(k + 1) * IMAGE]);
        }
        w.append(&rows[..n * IMAGE]).expect("append");
    }
    w.close().expect("close");
}

/// Records per second and a checksum of what was read.
fn direct(store: &Store) -> (f64, u64) {
    let t = Instant::now();
    let mut sampler = Sampler::new(store.len(), BATCH, Mode::Cyclic, SEED).expect("sampler");
    let mut indices = Vec::new();
    let mut batch = DenseBatch::new(store.dtype().clone());
    let mut sum = 0u64;
    for _ in 0..STEPS {
        sampler.fill_next(&mut indices);
        store.gather_dense_batch(&indices, &mut batch).expect("gather");
        sum = checksum(sum, black_box(batch.bytes()));
    }
    ((STEPS * BATCH) as f64 / t.elapsed().as_secs_f64(), sum)
}

/// As [`direct`], through the loader (start-up included).
fn loaded(store: &Arc<Store>, workers: usize, prefetch: usize) -> (f64, u64) {
    let t = Instant::now();
    let mut loader = Loader::builder()
        .stream("image", Arc::clone(store))
        .batch_size(BATCH)
        .mode(Mode::Cyclic)
        .seed(SEED)
        .workers(workers)
        .prefetch(prefetch)
        .build()
        .expect("loader");
    let mut sum = 0u64;
    for _ in 0..STEPS {
        let step = loader.next_batch().expect("step");
        sum = checksum(sum, black_box(step.dense("image").expect("dense").bytes()));
    }
    let rate = (STEPS * BATCH) as f64 / t.elapsed().as_secs_f64();
    loader.close();
    (rate, sum)
}

/// Touches one byte per image, so both paths do the same (negligible) work.
fn checksum(sum: u64, bytes: &[u8]) -> u64 {
    bytes.iter().step_by(IMAGE / 2 + 1).fold(sum, |s, &b| s.wrapping_mul(31).wrapping_add(u64::from(b)))
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let workers = env("LOADER_WORKERS", 2);
    let prefetch = env("LOADER_PREFETCH", 4);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("images");
    let t = Instant::now();
    write_store(&path);
    let store = Arc::new(Store::open(&path).expect("open"));
    println!(
        "store: {RECORDS} records of 3x{SIDE}x{SIDE} u8, zstd, {:.1} MB stored / {:.1} MB decoded, written in {:.1} s; \
         {} cores",
        store.stored_bytes() as f64 / 1e6,
        (RECORDS as usize * IMAGE) as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    direct(&store); // warm the page cache and rayon's pool
    let (mut d, mut l) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (rate_d, sum_d) = direct(&store);
        let (rate_l, sum_l) = loaded(&store, workers, prefetch);
        assert_eq!(sum_d, sum_l, "the loader must deliver the same batches");
        d.push(rate_d);
        l.push(rate_l);
    }
    let (d, l) = (median(&mut d), median(&mut l));
    println!("direct gathers:               {d:>9.0} records/s ({:.0} MB/s decoded)", d * IMAGE as f64 / 1e6);
    println!(
        "loader (workers={workers}, prefetch={prefetch}): {l:>9.0} records/s ({:.0} MB/s decoded)",
        l * IMAGE as f64 / 1e6
    );
    println!(
        "loader / direct = {:.3} (medians of {RUNS} interleaved runs of {STEPS} batches of {BATCH})",
        l / d
    );
}
