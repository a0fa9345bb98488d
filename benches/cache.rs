//! The node-local cache against direct remote gathers and the local disk
//! (`cargo bench --bench cache`): 100,000 records of 2 KiB int32 tokens,
//! zstd, behind a server that answers every request after 20 ms. Each row is
//! read by 4 processes at once, each its shard r/4 through the loader (2
//! workers, prefetch 4, look-ahead 8 steps; an epoch is 391 global IID
//! batches of 256): one epoch straight from the server; through one cache
//! directory, the first epoch (cold), then epochs 2-4 (the same processes
//! read on after an untimed first, as a training run does; `--later N`
//! times N epochs); epochs 2-4 from the store on the local disk; and one
//! epoch from a warm cache by new processes (which check each block whole
//! once and learn each file's version with a request). Every process checks
//! every batch it received against the local store (an XXH3 over the
//! batches, compared after the timed loop). The 4 processes start their
//! timed steps together (each opens and reads its untimed steps, then waits
//! for the parent's go). Each row gives records/s (all records over the
//! first start to the last end: the node's rate), the processes' own rates
//! added (which count a process running alone while others wait as
//! throughput), and records per CPU-second of the processes (every thread:
//! loader workers, look-ahead, runtime).
//!
//! ```text
//! cargo bench --bench cache                         # full run (later epochs: median of 5 rounds each)
//! cargo bench --bench cache -- --json out.json      # also write the rows as JSON
//! cargo test --release --bench cache -- --quick     # smoke run (10,000 records)
//! ```
//!
//! Reported as ratios of one run: requests per epoch direct / cached
//! (target >= 100x), the later epochs' records/s / the local disk's
//! (>= 0.9x; the median of each round's ratio, cache and disk run next to
//! each other), the cold epoch's / direct (>= 1x).

mod common;
#[path = "../tests/common/latency.rs"]
mod latency;

use common::{load_average, write_store, Workload};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zrecord::remote::cache::{self, CacheOptions};
use zrecord::training::loader::Loader;
use zrecord::training::sampler::Mode;
use zrecord::{Codec, Records, Store};

const SEED: u64 = 20_261_202;
const GLOBAL_BATCH: u64 = 256;
const WORLD: u64 = 4;

/// One process's share of an epoch: `MODE TARGET CACHE LOCAL RANK SKIP
/// STEPS`: `SKIP` untimed steps (an earlier epoch), then `STEPS` timed.
fn worker(args: &[String]) {
    let [mode, target, cache_dir, local, rank, skip, steps] = args else { panic!("worker args: {args:?}") };
    let (rank, skip, steps): (u64, u64, u64) =
        (rank.parse().unwrap(), skip.parse().unwrap(), steps.parse().unwrap());
    let local = Store::open(local).expect("local store");
    let opened = Instant::now();
    let store: std::sync::Arc<dyn Records> = match mode.as_str() {
        "local" => std::sync::Arc::new(Store::open(target).expect("open")),
        "direct" => std::sync::Arc::new(zrecord::open(target).expect("open")),
        "cache" => {
            let options =
                zrecord::open::Options { cache: Some(CacheOptions::new(cache_dir)), ..Default::default() };
            std::sync::Arc::new(zrecord::open_with(target, &options).expect("open"))
        }
        other => panic!("mode {other}"),
    };
    let mut loader = Loader::builder()
        .stream("tokens", store.clone())
        .batch_size(GLOBAL_BATCH)
        .mode(Mode::Iid)
        .seed(SEED)
        .shard(rank, WORLD)
        .workers(2)
        .prefetch(4)
        .build()
        .expect("loader");
    let (mut sum, mut records, mut indices) = (0u64, 0u64, Vec::new());
    for _ in 0..skip {
        let step = loader.next_batch().expect("batch");
        sum = sum.wrapping_add(xxh3::hash64_with_seed(step.dense("tokens").expect("dense").bytes(), 0));
        indices.push(step.indices().to_vec());
    }
    // Every process starts its timed steps at once (the parent's go), so
    // that the node's rate counts the 4 running together, not one running
    // alone while the others open or finish.
    println!("ready");
    std::io::stdout().flush().expect("stdout");
    std::io::stdin().read_line(&mut String::new()).expect("the parent's go");
    let cache_before = cache::stats();
    let (t0, cpu0, began) = (Instant::now(), process_cpu(), unix_secs());
    for _ in 0..steps {
        let step = loader.next_batch().expect("batch");
        let bytes = step.dense("tokens").expect("dense").bytes();
        sum = sum.wrapping_add(xxh3::hash64_with_seed(bytes, 0));
        records += step.len() as u64;
        indices.push(step.indices().to_vec());
    }
    let (secs, cpu_secs) = (t0.elapsed().as_secs_f64(), (process_cpu() - cpu0).as_secs_f64());
    let fetched_ahead = loader.fetched_ahead();
    loader.close();
    let c = cache::stats();
    let want = indices.iter().fold(0u64, |s, i| {
        s.wrapping_add(xxh3::hash64_with_seed(local.gather(i).expect("local gather").bytes(), 0))
    });
    assert_eq!(sum, want, "{mode} rank {rank}: the batches differ from the local store's");
    let v = json!({
        "records": records,
        "secs": secs,
        "cpu_secs": cpu_secs,
        "began": began,
        "ended": began + secs,
        "open_and_run_secs": opened.elapsed().as_secs_f64(),
        "gets": c.gets - cache_before.gets,
        "bytes_fetched": c.bytes_fetched - cache_before.bytes_fetched,
        "hits": c.hits - cache_before.hits,
        "misses": c.misses - cache_before.misses,
        "fetched_ahead": fetched_ahead,
    });
    println!("{v}");
}

/// Now, in seconds since 1970 (the same clock in every process).
fn unix_secs() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// CPU time of every thread of this process so far (the loader's workers
/// and look-ahead, the runtime's threads): what an epoch costs apart from
/// whatever else the machine runs.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Run one epoch with 4 worker processes; the row.
fn epoch(
    name: &str,
    mode: &str,
    target: &str,
    cache_dir: &Path,
    local: &Path,
    (skip, steps): (u64, u64),
    server: Option<&latency::LatencyServer>,
) -> Value {
    let exe = std::env::current_exe().expect("own path");
    let before = server.map(|s| s.requests());
    let t0 = Instant::now();
    let mut children: Vec<_> = (0..WORLD)
        .map(|r| {
            let mut c = Command::new(&exe)
                .args(["--worker", mode, target])
                .arg(cache_dir)
                .arg(local)
                .args([r.to_string(), skip.to_string(), steps.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn a worker");
            let out = BufReader::new(c.stdout.take().expect("piped"));
            (c, out)
        })
        .collect();
    // Each is ready (opened, its untimed steps read): all go at once.
    for (_, out) in &mut children {
        let mut line = String::new();
        out.read_line(&mut line).expect("worker");
        assert_eq!(line.trim(), "ready", "{name}: a worker failed before its timed steps");
    }
    for (c, _) in &mut children {
        writeln!(c.stdin.as_mut().expect("piped"), "go").expect("go");
    }
    let outs: Vec<Value> = children
        .into_iter()
        .map(|(mut c, mut out)| {
            let mut line = String::new();
            out.read_line(&mut line).expect("worker");
            assert!(c.wait().expect("worker").success(), "{name}: a worker failed");
            serde_json::from_str(&line).expect("worker json")
        })
        .collect();
    let wall = t0.elapsed().as_secs_f64();
    let sum = |k: &str| outs.iter().map(|o| o[k].as_f64().unwrap_or(0.0)).sum::<f64>();
    let fold = |f: fn(f64, f64) -> f64, k: &str| {
        outs.iter().map(|o| o[k].as_f64().unwrap_or(f64::NAN)).reduce(f).unwrap_or(f64::NAN)
    };
    let records = sum("records");
    let requests = match (server, before) {
        (Some(s), Some(b)) => (s.requests() - b) as f64,
        _ => 0.0,
    };
    json!({
        "name": name,
        "records": records,
        "wall_secs": wall,
        "records_per_s": records / (fold(f64::max, "ended") - fold(f64::min, "began")),
        "records_per_s_summed": outs.iter().map(|o| o["records"].as_f64().unwrap() / o["secs"].as_f64().unwrap()).sum::<f64>(),
        "records_per_s_wall": records / wall,
        "records_per_cpu_s": records / sum("cpu_secs"),
        "server_requests": requests,
        "cache_misses": sum("misses"),
        "cache_hits": sum("hits"),
        "bytes_fetched": sum("bytes_fetched"),
        "fetched_ahead": sum("fetched_ahead"),
    })
}

/// The row of median records/s among `rows`, with every round's rate.
fn median_row(mut rows: Vec<Value>) -> Value {
    let rate = |r: &Value| r["records_per_s"].as_f64().unwrap_or(f64::NAN);
    let rates: Vec<f64> = rows.iter().map(rate).collect();
    rows.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    let mut mid = rows.swap_remove(rows.len() / 2);
    mid["rounds_records_per_s"] = json!(rates);
    let cpu: Vec<f64> = rows.iter().map(|r| r["records_per_cpu_s"].as_f64().unwrap_or(f64::NAN)).collect();
    mid["rounds_records_per_cpu_s"] = json!(cpu);
    let name = format!("{} (median of {})", mid["name"].as_str().unwrap_or(""), rates.len());
    mid["name"] = json!(name);
    mid
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--worker") {
        return worker(&args[1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    if !quick && !args.iter().any(|a| a == "--bench") {
        println!("cache bench: run with `cargo bench --bench cache` (or `-- --quick`)");
        return;
    }
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .map_or(if quick { 1 } else { 5 }, |i| args[i + 1].parse().expect("--rounds N"));
    let json_out: Option<PathBuf> =
        args.iter().position(|a| a == "--json").map(|i| args[i + 1].clone().into());
    let n = if quick { 10_000 } else { 100_000 };
    let steps = (n as u64).div_ceil(GLOBAL_BATCH);
    println!(
        "# zrecord cache bench{}: {n} records of 2 KiB tokens (zstd), {WORLD} processes, one epoch = {steps} global IID batches of {GLOBAL_BATCH}, 20 ms per request, load {}",
        if quick { " (quick)" } else { "" },
        load_average()
    );
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("tokens");
    let data = Workload::DenseTokens.generate(n, SEED);
    write_store(&data, &dir, Codec::Zstd, None);
    drop(data);
    let server = latency::LatencyServer::start(root.path(), Duration::from_millis(20));
    let url = server.url("tokens/");
    let cache_dir = root.path().join("cache");
    let none = root.path().join("no-cache");
    let d = dir.to_str().unwrap();
    // The epochs after the first are timed together: one lasts about a
    // quarter of a second a process here, too short to tell 10% apart on a
    // shared machine.
    let later: u64 =
        args.iter().position(|a| a == "--later").map_or(3, |i| args[i + 1].parse().expect("--later N"));
    let (first, second) = ((0, steps), (steps, later * steps));
    let mut rows = vec![
        epoch("direct remote gathers", "direct", &url, &none, &dir, first, Some(&server)),
        epoch("cache, first epoch (cold)", "cache", &url, &cache_dir, &dir, first, Some(&server)),
    ];
    // An epoch from disk lasts under a second here, and the machine is
    // shared: the second epochs (the same processes read on after an
    // untimed first) alternate, and each reports its median.
    // Each round's two runs are next to each other in time, and take turns
    // going first; the target's ratio is the median of the rounds' ratios,
    // which a load spike moves less than a ratio of medians.
    let (mut warm, mut local, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let cached = || {
            let name = &format!("cache, epochs 2-{}", later + 1);
            epoch(name, "cache", &url, &cache_dir, &dir, second, Some(&server))
        };
        let on_disk = || {
            let name = &format!("local disk, epochs 2-{}", later + 1);
            epoch(name, "local", d, &none, &dir, second, None)
        };
        let (c, l) = if round % 2 == 0 {
            (cached(), on_disk())
        } else {
            let l = on_disk();
            (cached(), l)
        };
        ratios.push(
            c["records_per_s"].as_f64().unwrap_or(f64::NAN) / l["records_per_s"].as_f64().unwrap_or(f64::NAN),
        );
        warm.push(c);
        local.push(l);
    }
    rows.push(median_row(warm));
    rows.push(median_row(local));
    rows.push(epoch("cache, warm, new processes", "cache", &url, &cache_dir, &dir, first, Some(&server)));
    println!("\n| epoch, 4 processes | records/s | summed process rates | records per CPU-s | wall s | server requests | cache misses | MiB fetched | MiB fetched ahead |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let g = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.1} | {:.1} |",
            r["name"].as_str().unwrap(),
            g("records_per_s"),
            g("records_per_s_summed"),
            g("records_per_cpu_s"),
            g("wall_secs"),
            g("server_requests"),
            g("cache_misses"),
            g("bytes_fetched") / (1 << 20) as f64,
            g("fetched_ahead") / (1 << 20) as f64,
        );
    }
    let g = |i: usize, k: &str| rows[i][k].as_f64().unwrap_or(f64::NAN);
    let fewer = g(0, "server_requests") / g(1, "server_requests");
    ratios.sort_by(f64::total_cmp);
    let warm_vs_local = ratios[ratios.len() / 2];
    let warm_vs_local_cpu = g(2, "records_per_cpu_s") / g(3, "records_per_cpu_s");
    let warm_vs_local_summed = g(2, "records_per_s_summed") / g(3, "records_per_s_summed");
    let cold_vs_direct = g(1, "records_per_s") / g(0, "records_per_s");
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("\nratios (one run):");
    println!(
        "  requests per epoch, direct / cached first epoch: {fewer:.0}x (target >= 100x): {}",
        verdict(fewer >= 100.0)
    );
    println!(
        "  later epochs records/s / local disk, median of the rounds' ratios: {warm_vs_local:.2}x (target >= 0.9x): {} (rounds, sorted: {})",
        verdict(warm_vs_local >= 0.9),
        ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", ")
    );
    println!("  later epochs summed process rates / local disk (medians): {warm_vs_local_summed:.2}x");
    println!("  later epochs records per CPU-second / local disk: {warm_vs_local_cpu:.2}x (what the rate is when the cores are the limit)");
    println!(
        "  first epoch records/s / direct: {cold_vs_direct:.2}x (target >= 1x): {}",
        verdict(cold_vs_direct >= 1.0)
    );
    if let Some(path) = json_out {
        let doc = json!({"quick": quick, "records": n, "world": WORLD, "steps": steps, "latency_ms": 20,
            "load_average_end": load_average(), "rows": rows,
            "ratios": {"requests_direct_over_cached": fewer, "warm_over_local": warm_vs_local, "warm_over_local_cpu": warm_vs_local_cpu, "warm_over_local_summed": warm_vs_local_summed, "warm_over_local_rounds": ratios,
                       "cold_over_direct": cold_vs_direct}});
        std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("json")).expect("write --json");
        println!("\nresults written to {}", path.display());
    }
}
