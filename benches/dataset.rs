//! Datasets against one store (`cargo bench --bench dataset`): the same
//! records as one store and as a dataset of 64 shards, the same IID batches
//! of 256, gathered locally (mmap) and from a server that answers after 20
//! ms; then the open of a dataset of 10,000 shards behind that server
//! (requests and time before the first gather, and the first batch).
//!
//! ```text
//! cargo bench --bench dataset                      # full run
//! cargo test --release --bench dataset -- --quick  # smoke run
//! cargo bench --bench dataset -- --local           # local rows only
//! cargo bench --bench dataset -- --local ragged     # workloads named so
//! RAYON_NUM_THREADS=1 cargo bench --bench dataset -- --local --cpu  # CPU time per record
//! cargo bench --bench dataset -- --local --batches=2000  # longer races, steadier ratios
//! ```
//!
//! Rows alternate one store and the dataset batch by batch, so drift on
//! this VM hits both alike; the ratio is dataset ÷ one store in records/s.

mod common;
#[path = "../tests/common/latency.rs"]
mod latency;

use common::{iid_batches, write_store, Workload, BATCH};
use std::path::Path;
use std::time::{Duration, Instant};
use zrecord::dataset::writer::ColumnDef;
use zrecord::dataset::{commit, CommitMode, Dataset, ShardInfo, ShardWriter};
use zrecord::format::schema::Geometry;
use zrecord::{Batch, Codec, CreateOptions, Records};

const SEED: u64 = 20_261_201;
const SHARDS: usize = 64;

/// Write `data` as a dataset of `shards` shards (one column `c`) at `root`.
fn write_dataset(data: &common::Data, root: &Path, shards: usize, codec: Codec) {
    let n = data.len();
    let geometry = if data.workload.is_dense() {
        Geometry::Dense { item_shape: data.item_shape.clone() }
    } else {
        Geometry::Ragged
    };
    let infos: Vec<ShardInfo> = (0..shards)
        .map(|s| {
            let def = ColumnDef {
                name: "c".into(),
                dtype: data.dtype.into(),
                geometry: geometry.clone(),
                options: CreateOptions::codec(codec),
            };
            let mut w = ShardWriter::create(root, vec![def]).expect("shard");
            let col = w.column("c").expect("column");
            for i in s * n / shards..(s + 1) * n / shards {
                if data.workload.is_dense() {
                    col.append(data.record(i)).expect("append");
                } else {
                    col.append_ragged(&[(data.shape(i), data.record(i))]).expect("append");
                }
            }
            w.finish().expect("finish")
        })
        .collect();
    commit(root.to_str().expect("utf-8"), &infos, CommitMode::Create).expect("commit");
}

/// Records/s of `a` and `b` over the same batches, alternating, after two
/// untimed batches (which open the dataset's shards), and the median over
/// batches of `b`'s speed ÷ `a`'s (a load spike on this shared VM moves
/// the totals' ratio by several percent, the median hardly).
fn race(a: &dyn Records, b: &dyn Records, batches: &[Vec<u64>]) -> (f64, f64, f64) {
    let mut out = (Batch::for_store(a.info()), Batch::for_store(b.info()));
    for warm in &batches[..2] {
        a.gather_batch_into(warm, &mut out.0).expect("gather");
        b.gather_batch_into(warm, &mut out.1).expect("gather");
    }
    let batches = &batches[2..];
    let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
    let mut ratios = Vec::with_capacity(batches.len());
    for (k, batch) in batches.iter().enumerate() {
        let before = (ta, tb);
        let (first, second) = if k % 2 == 0 {
            ((a, &mut out.0, &mut ta), (b, &mut out.1, &mut tb))
        } else {
            ((b, &mut out.1, &mut tb), (a, &mut out.0, &mut ta))
        };
        for (r, o, t) in [first, second] {
            let t0 = clock();
            r.gather_batch_into(batch, o).expect("gather");
            *t += clock() - t0;
        }
        ratios.push((ta - before.0).as_secs_f64() / (tb - before.1).as_secs_f64().max(1e-9));
        if k == 0 {
            for (k, i) in batch.iter().enumerate() {
                assert_eq!(out.0.record(k), out.1.record(k), "record {i} differs");
            }
        }
    }
    let records = (batches.len() * BATCH) as f64;
    ratios.sort_by(f64::total_cmp);
    (records / ta.as_secs_f64(), records / tb.as_secs_f64(), ratios[ratios.len() / 2])
}

/// Whether `race` times the calling thread's CPU instead of the wall clock
/// (`--cpu`, meant with `RAYON_NUM_THREADS=1`: all of a gather's work on
/// that thread, its cost measured apart from what else the machine runs).
static CPU_CLOCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Now, on the clock `race` uses.
fn clock() -> Duration {
    if !CPU_CLOCK.load(std::sync::atomic::Ordering::Relaxed) {
        return START.elapsed();
    }
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let local_only = args.iter().any(|a| a == "--local");
    CPU_CLOCK.store(args.iter().any(|a| a == "--cpu"), std::sync::atomic::Ordering::Relaxed);
    let only: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with("--")).collect();
    if !quick && !args.iter().any(|a| a == "--bench") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let (count, scale) = if quick { (8, 0.05) } else { (202, 1.0) };
    let count = args.iter().find_map(|a| a.strip_prefix("--batches=")).map_or(count, |n| {
        n.parse::<usize>().expect("--batches=N takes a number").max(3) // two warm-up batches
    });
    println!("| workload | where | one store rec/s | dataset of {SHARDS} rec/s | ratio |");
    println!("|---|---|---:|---:|---:|");
    for (workload, codec) in [
        (Workload::DenseTokens, Codec::Zstd),
        (Workload::RaggedTokens, Codec::Zstd),
        (Workload::DenseVision, Codec::Raw),
    ] {
        if !only.is_empty() && !only.iter().any(|o| workload.name().contains(o.as_str())) {
            continue;
        }
        let n = ((workload.base_records() as f64 * scale) as usize).max(SHARDS * 4);
        let data = workload.generate(n, SEED);
        let dir = tmp.path().join(workload.name());
        std::fs::create_dir_all(&dir).expect("dir");
        write_store(&data, &dir.join("one"), codec, None);
        write_dataset(&data, &dir.join("ds"), SHARDS, codec);
        let batches = iid_batches(n, count, SEED);
        let label = format!("{} {}", workload.name(), codec.name());
        let one = zrecord::Store::open(dir.join("one")).expect("open");
        let ds = Dataset::open(dir.join("ds").to_str().expect("utf-8")).expect("open");
        let (a, b, median) = race(&one, ds.column("c").expect("column"), &batches);
        println!("| {label} | local mmap | {a:.0} | {b:.0} | {:.2}x |", b / a);
        eprintln!("{label}, local mmap: median batch ratio {median:.3}x");
        if local_only {
            continue;
        }
        let server = latency::LatencyServer::start(&dir, Duration::from_millis(20));
        let options = zrecord::open::Options::default();
        let one = zrecord::open::remote(&server.url("one/"), &options).expect("open");
        let ds = Dataset::open(&server.url("ds/")).expect("open");
        let remote_batches = &batches[..batches.len().min(if quick { 4 } else { 42 })];
        let (a, b, _) = race(&one, ds.column("c").expect("column"), remote_batches);
        println!("| {label} | 20 ms server | {a:.0} | {b:.0} | {:.2}x |", b / a);
    }
    if local_only {
        return;
    }
    // Opening 10,000 shards behind 20 ms.
    let shards = if quick { 200 } else { 10_000 };
    let data = Workload::RaggedTokens.generate(shards * 10, SEED);
    let root = tmp.path().join("many");
    let t0 = Instant::now();
    write_dataset(&data, &root.join("ds"), shards, Codec::Zstd);
    eprintln!("wrote {shards} shards in {:.1} s", t0.elapsed().as_secs_f64());
    let server = latency::LatencyServer::start(&root, Duration::from_millis(20));
    let t0 = Instant::now();
    let ds = Dataset::open(&server.url("ds/")).expect("open");
    let open_ms = t0.elapsed().as_secs_f64() * 1e3;
    let open_requests = server.requests();
    let batch = &iid_batches(ds.len() as usize, 1, SEED)[0];
    let t1 = Instant::now();
    let got = ds.column("c").expect("column").gather_ragged(batch).expect("gather");
    let first_ms = t1.elapsed().as_secs_f64() * 1e3;
    assert_eq!(got.len(), BATCH);
    for (k, &i) in batch.iter().enumerate() {
        assert_eq!(got.record(k).1, data.record(i as usize), "record {i}");
    }
    println!();
    println!("| dataset of {shards} shards, 20 ms server | requests | ms |");
    println!("|---|---:|---:|");
    println!("| open (before the first gather) | {open_requests} | {open_ms:.0} |");
    println!(
        "| first batch of {BATCH} random records | {} | {first_ms:.0} |",
        server.requests() - open_requests
    );
}
