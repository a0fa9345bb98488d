//! Gather throughput of the native reader: every workload × codec × backend,
//! random IID batches of 256 from a warm page cache, into reused buffers.
//!
//! ```text
//! cargo bench --bench gather                       # all rows, ~1 s each
//! cargo bench --bench gather -- --filter tokens    # rows whose name contains "tokens"
//! cargo bench --bench gather -- --scale 1 --secs 2
//! valgrind --tool=callgrind --toggle-collect='*time_batches*' target/release/deps/gather-HASH \
//!     --filter dense-tokens/raw/mmap --scale 0.05 --batches 200   # instructions per batch
//! ```
//!
//! Reports records/s, MiB/s (decoded payload), p50/p95 batch latency, and what
//! the allocator was asked for per batch (a gather into a reused buffer should
//! allocate nothing that grows with the batch). Design goal for Dense raw
//! `int32[512]` (2 KiB) rows: at least NumPy fancy indexing on a memory-mapped
//! `.npy` of the same data (`benches/compare.rs` measures both side by side).

mod common;

use common::*;
use zrecord::{Backend, OpenOptions, Store};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

struct Args {
    filter: Option<String>,
    secs: f64,
    scale: f64,
    seed: u64,
    /// A fixed number of timed batches instead of `secs` (for instruction counts).
    batches: Option<usize>,
}

fn parse_args() -> Args {
    let mut a = Args { filter: None, secs: 1.0, scale: 0.5, seed: 20_240_501, batches: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--filter" => a.filter = Some(value()),
            "--secs" => a.secs = value().parse().expect("--secs SECONDS"),
            "--scale" => a.scale = value().parse().expect("--scale FACTOR"),
            "--seed" => a.seed = value().parse().expect("--seed N"),
            "--batches" => a.batches = Some(value().parse().expect("--batches N")),
            "--bench" => {}
            other if !other.starts_with("--") => a.filter = Some(other.to_string()),
            other => panic!("unknown option {other} (--filter S, --secs F, --scale F, --seed N)"),
        }
    }
    a
}

fn main() {
    let args = parse_args();
    let tmp = tempfile::tempdir().expect("temp dir");
    println!(
        "# zrecord gather bench: batches of {BATCH}, IID, warm page cache, {} rayon threads, load {}",
        rayon::current_num_threads(),
        load_average()
    );
    println!(
        "| row | rec size | records/s | MiB/s | p50 batch µs | p95 batch µs | allocs/batch | alloc B/batch (mean) | alloc B/batch (median) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for workload in Workload::ALL {
        let wanted = |codec: zrecord::Codec, backend: &str| {
            let name = format!("{}/{}/{backend}", workload.name(), codec.name());
            args.filter.as_deref().is_none_or(|f| name.contains(f)).then_some(name)
        };
        if !CODECS.iter().any(|&c| wanted(c, "mmap").is_some() || wanted(c, "pread").is_some()) {
            continue;
        }
        let n = ((workload.base_records() as f64 * args.scale).round() as usize).max(BATCH);
        let data = workload.generate(n, args.seed);
        let batches = iid_batches(n, 1024, args.seed);
        let mean_record = data.payload.len() / n;
        for codec in CODECS {
            if wanted(codec, "mmap").is_none() && wanted(codec, "pread").is_none() {
                continue;
            }
            let dir = tmp.path().join(format!("{}-{}", workload.name(), codec.name()));
            let dict = (codec == zrecord::Codec::ZstdDict).then(|| train_dict(&data));
            write_store(&data, &dir, codec, dict);
            for (backend, label) in [(Backend::Mmap, "mmap"), (Backend::Pread, "pread")] {
                let Some(name) = wanted(codec, label) else { continue };
                let store =
                    Store::open_with(&dir, OpenOptions { backend, ..Default::default() }).expect("open");
                warm_sweep(&store, &data);
                let mut out = Output::for_data(&data, BATCH);
                for b in &batches[..8] {
                    out.gather(&store, b);
                    out.check(&data, b);
                }
                let mut cursor = 0;
                let t = match args.batches {
                    Some(count) => {
                        time_batches(
                            &store,
                            &data,
                            &mut out,
                            &batches,
                            &mut cursor,
                            f64::INFINITY,
                            count / 10,
                        );
                        time_batches(&store, &data, &mut out, &batches, &mut cursor, f64::INFINITY, count)
                    }
                    None => {
                        time_gathers(&store, &data, &mut out, &batches, &mut cursor, args.secs / 10.0);
                        time_gathers(&store, &data, &mut out, &batches, &mut cursor, args.secs)
                    }
                };
                let nb = t.latencies.len() as f64;
                println!(
                    "| {name} | {mean_record} B | {:.0} | {:.1} | {:.1} | {:.1} | {:.2} | {:.0} | {:.0} |",
                    t.records as f64 / t.seconds(),
                    mib_s(t.bytes, t.seconds()),
                    t.latency_ms(50.0) * 1e3,
                    t.latency_ms(95.0) * 1e3,
                    t.alloc_calls as f64 / nb,
                    t.alloc_bytes as f64 / nb,
                    t.alloc_median(),
                );
            }
            std::fs::remove_dir_all(&dir).expect("remove store");
        }
    }
    println!(
        "peak RSS {:.0} MiB; load after: {}",
        peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
        load_average()
    );
}
