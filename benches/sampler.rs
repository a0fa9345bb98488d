//! IID draws per second: batches of 256 over a store of 10^6 records, side by
//! side with NumPy's `default_rng().integers` drawing the same batches (run in
//! the loaderx venv that `.ci/install` sets up, when it is there). Then cyclic
//! draws: the sampler's batches (its permutation evaluated a run at a time)
//! against the same permutation one index at a time, and a mixture of three
//! sources (the loader's draw, which runs under its lock).
//!
//! Run with `cargo bench --bench sampler`.

use std::hint::black_box;
use std::time::Instant;

use zrecord::training::mixture::Mixture;
use zrecord::training::sampler::{Mode, Permutation, Sampler};

const LENGTH: u64 = 1_000_000;
const BATCH: u64 = 256;
const BATCHES_PER_RUN: u64 = 400_000; // ~10^8 draws
const RUNS: usize = 5;

fn main() {
    let mut sampler = Sampler::new(LENGTH, BATCH, Mode::Iid, 42).expect("valid parameters");
    let mut buf = Vec::with_capacity(BATCH as usize);
    for _ in 0..10_000 {
        sampler.fill_next(&mut buf); // warm up caches and the branch predictor
    }
    let mut rates = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        for _ in 0..BATCHES_PER_RUN {
            sampler.fill_next(&mut buf);
            black_box(&buf);
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push((BATCHES_PER_RUN * BATCH) as f64 / secs);
    }
    rates.sort_by(f64::total_cmp);
    let ours = rates[RUNS / 2];
    println!(
        "iid length={LENGTH} batch={BATCH}: median {:.3e} draws/s (min {:.3e}, max {:.3e}, {RUNS} runs of {} draws)",
        rates[RUNS / 2],
        rates[0],
        rates[RUNS - 1],
        BATCHES_PER_RUN * BATCH
    );
    match numpy_draws_per_second() {
        Some(numpy) => println!(
            "numpy default_rng().integers(0, {LENGTH}, {BATCH}) per batch: median {numpy:.3e} draws/s; zrecord / numpy = {:.2}x",
            ours / numpy
        ),
        None => println!("numpy: not measured (no venv at ~/.cache/zrecord/venv-loaderx; run .ci/install)"),
    }
    // The Python bench's mixture (50,000 token blocks split 50/30/20), and 10^6.
    for length in [50_000, LENGTH] {
        cyclic(length);
    }
}

/// Median draws/s of `batch()` (one batch of [`BATCH`] per call) over [`RUNS`] runs.
fn draws_per_second(mut batch: impl FnMut()) -> f64 {
    let per_run = BATCHES_PER_RUN / 10;
    let mut rates: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            (0..per_run).for_each(|_| batch());
            (per_run * BATCH) as f64 / start.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[RUNS / 2]
}

fn cyclic(length: u64) {
    let mut sampler = Sampler::new(length, BATCH, Mode::Cyclic, 42).expect("valid parameters");
    let mut buf = Vec::with_capacity(BATCH as usize);
    let runs = draws_per_second(|| {
        sampler.fill_next(&mut buf);
        black_box(&buf);
    });
    let perm = Permutation::new(42, length);
    let mut at = 0;
    let pointwise = draws_per_second(|| {
        buf.clear();
        buf.extend((at..at + BATCH).map(|x| perm.apply(x)));
        at = (at + BATCH) % (length - BATCH);
        black_box(&buf);
    });
    println!(
        "cyclic length={length} batch={BATCH}: {runs:.3e} draws/s; one index at a time {pointwise:.3e}; runs / pointwise = {:.2}x",
        runs / pointwise
    );
    let lengths = [length / 2, length * 3 / 10, length / 5];
    let mut mixture = Mixture::new(&lengths, &[0.5, 0.3, 0.2], BATCH, 42).expect("valid parameters");
    let (mut sources, mut indices) = (Vec::new(), Vec::new());
    let mixed = draws_per_second(|| {
        mixture.fill_next(&mut sources, &mut indices).expect("room for a batch");
        black_box(&indices);
    });
    println!(
        "mixture of 3 cyclic sources ({lengths:?}, 0.5/0.3/0.2) batch={BATCH}: {mixed:.3e} draws/s; mixture / sampler = {:.2}x",
        mixed / runs
    );
}

/// NumPy's draws/s for the same batches, median of 5 runs, or `None` without the venv.
fn numpy_draws_per_second() -> Option<f64> {
    let home = std::env::var("HOME").ok()?;
    let python = std::path::Path::new(&home).join(".cache/zrecord/venv-loaderx/bin/python");
    let script = format!(
        "import time, numpy as np\n\
         rng = np.random.default_rng(42)\n\
         rates = []\n\
         for _ in range(5):\n\
         \x20   t = time.perf_counter()\n\
         \x20   for _ in range(40000): rng.integers(0, {LENGTH}, {BATCH})\n\
         \x20   rates.append(40000 * {BATCH} / (time.perf_counter() - t))\n\
         print(sorted(rates)[2])\n"
    );
    let out = std::process::Command::new(python).arg("-c").arg(script).output().ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}
