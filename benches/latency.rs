//! Random training batches from a store behind object-store latency
//! (`cargo bench --bench latency`): IID batches of 256 from 100,000 records
//! of 2 KiB int32 tokens, zstd, read by the native remote reader with its
//! default settings from a server that answers every request after a fixed
//! delay (20 ms: in-region S3 GET latency at p50), with unlimited
//! concurrency. Rows: the defaults (64 in flight), 6 in flight (a browser's
//! limit, the old native default), the same server as an S3 endpoint read
//! through object_store (`s3://`), and nginx on loopback with no added delay.
//!
//! ```text
//! cargo bench --bench latency                       # full run, about a minute after the build
//! cargo bench --bench latency -- --latency-ms 40    # another delay
//! cargo bench --bench latency -- --json out.json    # also write the rows as JSON
//! cargo test --release --bench latency -- --quick   # smoke run
//! ```
//!
//! The bound of a row is what its requests in flight allow: `in flight /
//! latency` requests per second, divided by the requests a batch costs.

mod common;
#[path = "../tests/common/latency.rs"]
mod latency;
#[path = "../tests/common/nginx.rs"]
mod nginx;

use common::{iid_batches, load_average, percentile, write_store, Workload, BATCH};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use zrecord::remote::objstore::{BucketRetry, ObjectRanges};
use zrecord::remote::{BlockingStore, RemoteOptions};
use zrecord::{Codec, DenseBatch, Records, Store};

/// The issue's numbers for the reader before this work (8 blocking ureq
/// threads, 6 in flight), same workload at 20 ms.
const TODAY_RECORDS_S: f64 = 295.0;
const TODAY_P50_MS: f64 = 879.0;
/// The issue's nginx-on-loopback number for the old reader.
const TODAY_NGINX_RECORDS_S: f64 = 7_900.0;
const SEED: u64 = 20_240_501;
const WARM: usize = 2;

struct Args {
    quick: bool,
    latency_ms: u64,
    batches: usize,
    json: Option<PathBuf>,
}

fn parse_args() -> Option<Args> {
    let mut a = Args { quick: false, latency_ms: 20, batches: 0, json: None };
    let mut bench = false;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--bench" => bench = true,
            "--quick" => a.quick = true,
            "--latency-ms" => a.latency_ms = it.next().and_then(|s| s.parse().ok()).expect("--latency-ms MS"),
            "--batches" => a.batches = it.next().and_then(|s| s.parse().ok()).expect("--batches N"),
            "--json" => a.json = Some(it.next().expect("--json FILE").into()),
            other => panic!("unknown option {other} (--quick, --latency-ms MS, --batches N, --json FILE)"),
        }
    }
    if a.batches == 0 {
        a.batches = if a.quick { 5 } else { 60 };
    }
    (bench || a.quick).then_some(a)
}

/// Time `batches` after `WARM` untimed ones; one row.
fn measure(
    name: &str,
    store: &BlockingStore,
    local: &Store,
    batches: &[Vec<u64>],
    latency: Option<f64>,
) -> Value {
    let mut out = DenseBatch::new(store.dtype().clone());
    for b in &batches[..WARM] {
        store.gather_dense_batch(b, &mut out).expect("gather");
        assert_eq!(out.bytes(), local.gather(b).expect("local gather").bytes(), "{name}: bytes differ");
    }
    let before = store.stats();
    let mut ms = Vec::new();
    let t0 = Instant::now();
    for b in &batches[WARM..] {
        let t = Instant::now();
        store.gather_dense_batch(b, &mut out).expect("gather");
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let secs = t0.elapsed().as_secs_f64();
    let after = store.stats();
    let n = ms.len() as f64;
    ms.sort_by(f64::total_cmp);
    let records_s = n * BATCH as f64 / secs;
    let requests = (after.requests - before.requests) as f64 / n;
    let concurrency = store.as_async().options().concurrency as f64;
    // What the requests in flight allow: concurrency / latency requests/s.
    let bound_batches_s = latency.map(|l| concurrency / l / requests);
    json!({
        "name": name,
        "concurrency": concurrency,
        "records_per_s": records_s,
        "p50_ms": percentile(&ms, 50.0),
        "p95_ms": percentile(&ms, 95.0),
        "requests_per_batch": requests,
        "bytes_per_batch": (after.bytes - before.bytes) as f64 / n,
        "merge_gap": after.merge_gap,
        "bound_batches_per_s": bound_batches_s,
        "bound_records_per_s": bound_batches_s.map(|b| b * BATCH as f64),
        "of_bound": bound_batches_s.map(|b| records_s / (b * BATCH as f64)),
    })
}

fn f(v: &Value) -> String {
    v.as_f64().map_or("–".into(), |x| format!("{x:.0}"))
}

fn main() {
    let Some(args) = parse_args() else {
        println!("latency bench: run with `cargo bench --bench latency` (or `-- --quick`)");
        return;
    };
    let records = if args.quick { 10_000 } else { 100_000 };
    println!(
        "# zrecord latency bench{}{}: {records} records of 2 KiB tokens (zstd), IID batches of {BATCH}, load {}",
        if args.quick { " (quick)" } else { "" },
        if cfg!(debug_assertions) { " (debug build: a smoke run, not numbers to quote)" } else { "" },
        load_average()
    );
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("tokens");
    let data = Workload::DenseTokens.generate(records, SEED);
    write_store(&data, &dir, Codec::Zstd, None);
    drop(data);
    let local = Store::open(&dir).expect("open");
    let batches = iid_batches(records, WARM + args.batches, SEED);
    let delay = Duration::from_millis(args.latency_ms);
    let slow = latency::LatencyServer::start(root.path(), delay);
    let fast = nginx::Nginx::start(root.path());
    let open = |url: &str, options: RemoteOptions| {
        zrecord::open::remote(url, &zrecord::open::Options { remote: options, ..Default::default() })
            .expect("open remote")
    };
    let l = Some(delay.as_secs_f64());
    let mut rows = Vec::new();
    let at = format!("{} ms", args.latency_ms);
    let defaults = RemoteOptions::default();
    rows.push(measure(
        &format!("{at}, defaults"),
        &open(&slow.url("tokens/"), defaults.clone()),
        &local,
        &batches,
        l,
    ));
    let six = RemoteOptions { concurrency: 6, ..RemoteOptions::default() };
    rows.push(measure(&format!("{at}, 6 in flight"), &open(&slow.url("tokens/"), six), &local, &batches, l));
    // The same server as an S3 endpoint (path-style GET /tokens/meta.zr),
    // read through object_store: signing, its client and retries included.
    let config: Vec<(String, String)> = [
        ("aws_endpoint", format!("http://127.0.0.1:{}", slow.port)),
        ("aws_allow_http", "true".into()),
        ("aws_access_key_id", "bench".into()),
        ("aws_secret_access_key", "bench".into()),
        ("aws_region", "us-east-1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let s3 = ObjectRanges::with_config("s3://tokens", BucketRetry::default(), &config).expect("s3 client");
    let s3 = BlockingStore::open(Box::new(s3), defaults.clone()).expect("open s3://");
    rows.push(measure(&format!("{at}, s3:// (object_store), defaults"), &s3, &local, &batches, l));
    rows.push(measure(
        "nginx loopback, defaults",
        &open(&fast.url("tokens/"), defaults),
        &local,
        &batches,
        None,
    ));

    println!(
        "\n| reader | in flight | records/s | p50 ms | p95 ms | requests/batch | KiB/batch | bound batches/s | bound records/s | of bound |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| before (the issue's numbers), {at} | 6 | {TODAY_RECORDS_S:.0} | {TODAY_P50_MS:.0} | – | ~209 | – | – | – | – |"
    );
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
            r["name"].as_str().unwrap_or("?"),
            r["concurrency"],
            f(&r["records_per_s"]),
            r["p50_ms"].as_f64().unwrap_or(f64::NAN),
            r["p95_ms"].as_f64().unwrap_or(f64::NAN),
            r["requests_per_batch"].as_f64().unwrap_or(f64::NAN),
            r["bytes_per_batch"].as_f64().unwrap_or(f64::NAN) / 1024.0,
            r["bound_batches_per_s"].as_f64().map_or("–".into(), |x| format!("{x:.1}")),
            f(&r["bound_records_per_s"]),
            r["of_bound"].as_f64().map_or("–".into(), |x| format!("{:.0}%", x * 100.0)),
        );
    }
    println!("| before (the issue's numbers), nginx loopback | 6 | {TODAY_NGINX_RECORDS_S:.0} | – | – | – | – | – | – | – |");
    let d = &rows[0];
    let p50 = d["p50_ms"].as_f64().unwrap_or(f64::NAN);
    let of_bound = d["of_bound"].as_f64().unwrap_or(0.0);
    let nginx = rows[3]["records_per_s"].as_f64().unwrap_or(0.0);
    println!("\ntargets (defaults):");
    println!(
        "  median batch at {at}: {p50:.1} ms (goal <= 100 ms): {}",
        if p50 <= 100.0 { "met" } else { "MISSED" }
    );
    println!(
        "  share of the concurrency bound: {:.0}% (goal >= 80%): {}",
        of_bound * 100.0,
        if of_bound >= 0.8 { "met" } else { "MISSED" }
    );
    println!(
        "  nginx on loopback: {nginx:.0} records/s (goal >= {TODAY_NGINX_RECORDS_S:.0}): {}",
        if nginx >= TODAY_NGINX_RECORDS_S { "met" } else { "MISSED" }
    );
    if let Some(path) = &args.json {
        let doc = json!({"quick": args.quick, "latency_ms": args.latency_ms, "records": records,
            "load_average_end": load_average(), "rows": rows});
        std::fs::write(path, serde_json::to_string_pretty(&doc).expect("json")).expect("write --json file");
        println!("\nresults written to {}", path.display());
    }
}
