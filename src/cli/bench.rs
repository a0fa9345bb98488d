//! `zrecord bench STORE|URL`: how fast random training batches come out of
//! a store — local, or in a bucket — before a training run depends on it.
//!
//! Gathers IID batches drawn by the sampler (loaderx's streams), one at a
//! time as a training step would, after `--warmup` untimed batches (the
//! first reads the location pages). Reports records/s, decoded MiB/s, batch
//! latency percentiles and, for a remote store, the requests and bytes each
//! batch cost. `--json`: one object with `records_per_s`, `mib_per_s`,
//! `p50_ms`, `p95_ms`, `p99_ms`, `requests_per_batch`, `bytes_per_batch`
//! (null for a local store) and the settings.

use super::common::{parse_shard, size, CliResult, Ctx, Out};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;
use zrecord::open::Options;
use zrecord::training::sampler::{Mode, Sampler};
use zrecord::{Batch, Records};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// Records per batch.
    #[arg(long, default_value_t = 256, value_name = "B")]
    batch: u64,
    /// Timed batches.
    #[arg(long, default_value_t = 50, value_name = "N")]
    batches: u64,
    /// Untimed batches first (the first reads the location table).
    #[arg(long, default_value_t = 1, value_name = "K")]
    warmup: u64,
    /// Seed of the sampler's IID stream.
    #[arg(long, default_value_t = 0, value_name = "S")]
    seed: u64,
    /// Read only this consumer's share of each batch (as a training process of WORLD would).
    #[arg(long, value_name = "RANK/WORLD", value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
    /// Requests in flight for a remote store [default: 64].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The `q`-quantile (0..=1) of sorted `v`, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    if a.batch == 0 || a.batches == 0 {
        return Err("--batch and --batches must be at least 1".into());
    }
    let opened = Instant::now();
    let mut options = Options::default();
    if let Some(c) = a.concurrency {
        options.remote.concurrency = c.max(1);
    }
    let store = zrecord::open_with(&a.store, &options)?;
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let remote = store.as_remote();
    let records = store.records();
    let len = records.len();
    if len == 0 {
        return Err(format!("{}: the store is empty", records.name()).into());
    }
    let mut sampler = Sampler::new(len, a.batch, Mode::Iid, a.seed)?;
    if let Some((rank, world)) = a.shard {
        sampler = sampler.shard(rank, world)?;
    }
    let mut indices = Vec::new();
    let mut batch = Batch::for_store(records.info());
    for _ in 0..a.warmup {
        sampler.fill_next(&mut indices);
        gather(records, &indices, &mut batch)?;
    }
    let stats0 = remote.map(|r| r.stats());
    let mut times = Vec::with_capacity(a.batches as usize);
    let (mut n_records, mut n_bytes) = (0u64, 0u64);
    let t0 = Instant::now();
    for _ in 0..a.batches {
        sampler.fill_next(&mut indices);
        let t = Instant::now();
        gather(records, &indices, &mut batch)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        n_records += indices.len() as u64;
        n_bytes += decoded_bytes(&batch);
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let per_batch = |d: u64| d as f64 / a.batches as f64;
    let (requests, bytes, stats) = match (remote, stats0) {
        (Some(r), Some(s0)) => {
            let s = r.stats();
            (Some(per_batch(s.requests - s0.requests)), Some(per_batch(s.bytes - s0.bytes)), Some(s))
        }
        _ => (None, None, None),
    };
    let v = json!({
        "store": records.name(),
        "remote": remote.is_some(),
        "len": len,
        "batch": a.batch,
        "batches": a.batches,
        "warmup": a.warmup,
        "seed": a.seed,
        "shard": a.shard.map(|(r, w)| format!("{r}/{w}")),
        "open_ms": open_ms,
        "records_per_s": n_records as f64 / secs,
        "mib_per_s": n_bytes as f64 / secs / (1u64 << 20) as f64,
        "p50_ms": quantile(&sorted, 0.50),
        "p95_ms": quantile(&sorted, 0.95),
        "p99_ms": quantile(&sorted, 0.99),
        "mean_ms": times.iter().sum::<f64>() / times.len() as f64,
        "requests_per_batch": requests,
        "bytes_per_batch": bytes,
        "concurrency": remote.map(|r| r.as_async().options().concurrency),
        "merge_gap": stats.map(|s| s.merge_gap),
        "latency_ms": stats.map(|s| s.latency_us as f64 / 1e3),
        "retries": stats.map(|s| s.retries),
    });
    let mut out = Out::new();
    if a.json {
        out.line(&v.to_string())?;
    } else {
        for line in text(&v) {
            out.line(&line)?;
        }
    }
    out.flush()
}

fn gather(store: &dyn Records, indices: &[u64], batch: &mut Batch) -> zrecord::Result<()> {
    match batch {
        Batch::Dense(b) => store.gather_dense_batch(indices, b),
        Batch::Ragged(b) => store.gather_ragged_into(indices, b),
    }
}

fn decoded_bytes(batch: &Batch) -> u64 {
    match batch {
        Batch::Dense(b) => b.bytes().len() as u64,
        Batch::Ragged(b) => b.values().len() as u64,
    }
}

fn text(v: &Value) -> Vec<String> {
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let mut lines = vec![
        format!("store        {}", v["store"].as_str().unwrap_or_default()),
        format!(
            "batches      {} of {} records, IID (seed {}){}, after {} warm-up",
            v["batches"],
            v["batch"],
            v["seed"],
            v["shard"].as_str().map(|s| format!(", shard {s}")).unwrap_or_default(),
            v["warmup"]
        ),
        format!("records/s    {:.0}", f("records_per_s")),
        format!("MiB/s        {:.1} (decoded)", f("mib_per_s")),
        format!(
            "batch ms     p50 {:.2}  p95 {:.2}  p99 {:.2}  mean {:.2}",
            f("p50_ms"),
            f("p95_ms"),
            f("p99_ms"),
            f("mean_ms")
        ),
        format!("open ms      {:.1}", f("open_ms")),
    ];
    if v["remote"] == true {
        lines.push(format!(
            "per batch    {:.1} requests, {} read ({} in flight, gaps up to {} merged, latency {:.1} ms)",
            f("requests_per_batch"),
            size(f("bytes_per_batch") as u64),
            v["concurrency"],
            size(v["merge_gap"].as_u64().unwrap_or(0)),
            f("latency_ms")
        ));
        if v["retries"].as_u64().unwrap_or(0) > 0 {
            lines.push(format!("retries      {}", v["retries"]));
        }
    }
    lines
}
