//! IID draws per second: batches of 256 over a store of 10^6 records, side by
//! side with NumPy's `default_rng().integers` drawing the same batches (run in
//! the loaderx venv that `.ci/install` sets up, when it is there).
//!
//! Run with `cargo bench --bench sampler`.

use std::hint::black_box;
use std::time::Instant;

use zrecord::training::sampler::{Mode, Sampler};

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
