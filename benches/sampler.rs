//! IID draws per second: batches of 256 over a store of 10^6 records.
//!
//! Run with `cargo bench --no-default-features --bench sampler`.

use std::hint::black_box;
use std::time::Instant;

use zrecord::sampler::{Mode, Sampler};

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
    println!(
        "iid length={LENGTH} batch={BATCH}: median {:.3e} draws/s (min {:.3e}, max {:.3e}, {RUNS} runs of {} draws)",
        rates[RUNS / 2],
        rates[0],
        rates[RUNS - 1],
        BATCHES_PER_RUN * BATCH
    );
}
