//! `zrecord bench STORE|URL`: how fast random training batches come out of
//! a store — local, or in a bucket — before a training run depends on it.
//! A dataset's column (`--column`, needed when it has several) is timed
//! the same way, over all its shards.
//!
//! Gathers IID batches drawn by the sampler (loaderx's streams), one at a
//! time as a training step would, after `--warmup` untimed batches (the
//! first reads the location pages). Reports records/s, decoded MiB/s, batch
//! latency percentiles and, for a remote store, the requests and bytes each
//! batch cost. `--rounds N` repeats the same batches N times and reports
//! each round and the median.
//!
//! `--cold` (local stores): before each round the store is closed, its
//! files are evicted from the page cache (`posix_fadvise(DONTNEED)`, see
//! [`zrecord::local::cache::evict`]) and it is reopened, with no warm-up:
//! the round's first batch pays the cold start. A local dataset's column
//! is evicted shard by shard (every shard's store of the column), with no
//! device probe (its shards are small files). Beside the store's numbers
//! it reports the device's own random-read limit on `data.zr`: `O_DIRECT`
//! reads of the store's mean stored record (rounded up to 4 KiB) at queue
//! depths 1 to 64 ([`zrecord::local::cache::device_limit`]), probed after
//! every round (`--device-secs` per depth shared out over them), each
//! depth's median over the probes, the best of those medians, and the
//! store's records/s (a median over rounds too) as a percentage of it.
//!
//! Where the system counts it (`/proc/self/io`), a local store's report
//! also gives the bytes read from storage during the timed batches and
//! their ratio to the records' stored bytes (read amplification: readahead
//! a random read did not need; near 0 when the store was warm). A cold
//! round also says how many of its batches the store read cold (its
//! residency probe found records out of memory; the others went through
//! its map): `per_round[].cold_batches`.
//!
//! `--json`: one object with `records_per_s`, `mib_per_s`, `p50_ms`,
//! `p95_ms`, `p99_ms`, `mean_ms`, `first_batch_ms`, `open_ms`,
//! `device_read_bytes`, `read_amplification` (the median over rounds when
//! there are several; `per_round` holds each),
//! `requests_per_batch`, `bytes_per_batch` (null for a local store),
//! `device_limit` and `percent_of_device` (null without `--cold`) and the
//! settings.
//!
//! `--cache DIR` (remote stores, `--cache-limit`, `--cache-block`): read
//! through the node-local cache (docs/CACHE.md); `requests_per_batch` and
//! `bytes_per_batch` are then what the remote saw, `per_round[].cache` the
//! cache's counters during the timed batches and `cache` over the whole run.

use super::common::{parse_shard, size, CliResult, Ctx, Out};
use super::records::{self, DatasetArgs, Target};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zrecord::dataset::layout::store_path;
use zrecord::local::cache;
use zrecord::location::Location;
use zrecord::open::{AnyStore, Options};
use zrecord::remote::CacheStats;
use zrecord::training::loader::Loader;
use zrecord::training::sampler::{Mode, Sampler};
use zrecord::{Backend, Batch, ColdReads, Records};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store or dataset directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    #[command(flatten)]
    dataset: DatasetArgs,
    /// Records per batch.
    #[arg(long, default_value_t = 256, value_name = "B")]
    batch: u64,
    /// Timed batches per round.
    #[arg(long, default_value_t = 50, value_name = "N")]
    batches: u64,
    /// Untimed batches first in each round (the first reads the location
    /// table) [default: 1; 0 with --cold].
    #[arg(long, value_name = "K")]
    warmup: Option<u64>,
    /// Seed of the sampler's IID stream (every round gathers the same
    /// batches; with --cold, round r uses seed + r: a VM's host may cache
    /// what the last round read of its virtual disk).
    #[arg(long, default_value_t = 0, value_name = "S")]
    seed: u64,
    /// Read only this consumer's share of each batch (as a training process of WORLD would).
    #[arg(long, value_name = "RANK/WORLD", value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
    /// Requests in flight for a remote store [default: 64].
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// How a local store's files are read: mmap or pread [default: mmap].
    #[arg(long, value_name = "B")]
    backend: Option<Backend>,
    /// Local stores and datasets: close it, evict its files (a dataset: every
    /// shard of the column) from the page cache and reopen it before each
    /// round (no warm-up); for a store, measure the device's own random-read
    /// limit on data.zr (O_DIRECT) beside it.
    #[arg(long)]
    cold: bool,
    /// How a local store's batches found out of memory are read: auto
    /// (direct for a store bigger than this process's memory), buffered
    /// (pread) or direct (O_DIRECT) [default: auto].
    #[arg(long, value_name = "R")]
    cold_reads: Option<ColdReads>,
    /// Rounds of --batches each; the median is reported [default: 1; 3 with --cold].
    #[arg(long, value_name = "N")]
    rounds: Option<u64>,
    /// With --cold: seconds of O_DIRECT reads at each queue depth (1 to 64),
    /// shared out over probes after each round; 0 skips the device limit.
    #[arg(long, default_value_t = 1.0, value_name = "SECS")]
    device_secs: f64,
    /// Read through the loader, its N worker threads gathering batches
    /// ahead of this thread (prefetch 2N) as a training job's do, instead
    /// of one gather at a time; batch times are this thread's waits.
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
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

/// The median of `v` (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The settings of one run.
struct Plan<'a> {
    a: &'a Args,
    /// Remote reads go through a node-local cache.
    cached: bool,
    warmup: u64,
    rounds: u64,
}

/// What one round measured.
struct Round {
    times: Vec<f64>,
    secs: f64,
    n_records: u64,
    n_bytes: u64,
    open_ms: f64,
    /// Requests and bytes of a remote store during the timed batches.
    requests: u64,
    bytes: u64,
    /// Bytes the process read from storage during the timed batches.
    device_read: Option<u64>,
    /// Bytes the timed batches' records hold on disk, at the mean stored size.
    stored_read: f64,
    /// What the cache did during the timed batches.
    cache: CacheStats,
    /// Timed batches a local store read cold (its residency probe found
    /// records out of memory): the rest went through its map.
    cold_batches: Option<u64>,
}

impl Round {
    fn json(&self) -> Value {
        let mut sorted = self.times.clone();
        sorted.sort_by(f64::total_cmp);
        json!({
            "records_per_s": self.n_records as f64 / self.secs,
            "mib_per_s": self.n_bytes as f64 / self.secs / (1u64 << 20) as f64,
            "p50_ms": quantile(&sorted, 0.50),
            "p95_ms": quantile(&sorted, 0.95),
            "p99_ms": quantile(&sorted, 0.99),
            "mean_ms": self.times.iter().sum::<f64>() / self.times.len() as f64,
            "first_batch_ms": self.times[0],
            "open_ms": self.open_ms,
            "device_read_bytes": self.device_read,
            "read_amplification": self.device_read.map(|b| b as f64 / self.stored_read),
            "cache": cache_json(&self.cache),
            "cold_batches": self.cold_batches,
        })
    }
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    if a.batch == 0 || a.batches == 0 || a.workers == Some(0) {
        return Err("--batch, --batches and --workers must be at least 1".into());
    }
    let remote_target = match a.store.to_str() {
        Some(s) => Location::parse(s)?.is_remote(),
        None => false,
    };
    if remote_target && a.cold {
        return Err(format!(
            "{}: --cold is for local stores (it evicts a store's files from this machine's page cache)",
            a.store.display()
        )
        .into());
    }
    if remote_target && (a.backend.is_some() || a.cold_reads.is_some()) {
        return Err(format!("{}: --backend and --cold-reads are for local stores", a.store.display()).into());
    }
    if !(a.device_secs >= 0.0 && a.device_secs <= 3600.0) {
        return Err("--device-secs must be between 0 and 3600".into());
    }
    let plan = Plan {
        a: &a,
        cached: remote_target && a.dataset.cache.cache.is_some(),
        warmup: a.warmup.unwrap_or(if a.cold { 0 } else { 1 }),
        rounds: a.rounds.unwrap_or(if a.cold { 3 } else { 1 }),
    };
    if plan.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let mut options = Options::default();
    if let Some(c) = a.concurrency {
        options.remote.concurrency = c.max(1);
    }
    if let Some(b) = a.backend {
        options.local.backend = b;
    }
    if let Some(c) = a.cold_reads {
        options.local.cold_reads = c;
    }
    let open = || -> CliResult<(Target, f64)> {
        let opened = Instant::now();
        let target = records::open_target_with(&a.store, &a.dataset, &options)?;
        Ok((target, opened.elapsed().as_secs_f64() * 1e3))
    };
    let (mut target, mut open_ms) = open()?;
    if let Target::Dataset(ds) = &target {
        if a.backend.is_some() {
            return Err(format!("{}: --backend is for stores, not datasets", ds.location()).into());
        }
    }
    let column = a.dataset.column.as_deref();
    // What --cold evicts: the store, or every shard's store of the column.
    let evicted: Vec<PathBuf> = match &target {
        _ if !a.cold => Vec::new(),
        Target::Store(s) => s.as_local().map(|s| s.path().to_path_buf()).into_iter().collect(),
        Target::Dataset(ds) => {
            target.one(column, "bench")?; // one column, or the error saying so
            let name = target.columns(column)?.first().and_then(|c| c.0).unwrap_or_default().to_string();
            let root = Path::new(ds.location());
            ds.manifest().shards.iter().map(|e| root.join(store_path(&e.path, &name))).collect()
        }
    };
    let len = target.one(column, "bench")?.len();
    if len == 0 {
        return Err(format!("{}: the store is empty", target.one(column, "bench")?.name()).into());
    }
    // Checked here, before any round: a bad --shard fails at once.
    let sampler = Sampler::new(len, a.batch, Mode::Iid, a.seed)?;
    if let Some((rank, world)) = a.shard {
        sampler.shard(rank, world)?;
    }
    let dir = store_of(&target).and_then(AnyStore::as_local).map(|s| s.path().to_path_buf());
    let bar = ctx.bar(plan.rounds * a.batches * a.batch, "bench");
    let mut rounds = Vec::with_capacity(plan.rounds as usize);
    // --device-secs per depth in all, shared out over the rounds.
    let probe_secs = if a.cold { a.device_secs / plan.rounds as f64 } else { 0.0 };
    let (mut probes, mut probe_error) = (Vec::new(), None);
    // The device is read in units of the store's mean stored record.
    let record_bytes = target.one(column, "bench")?.stored_bytes().div_ceil(len) as usize;
    for r in 0..plan.rounds {
        if a.cold {
            bar.set_message("evicting");
            // Every mapping closed first: mapped pages are never dropped.
            drop(target);
            cache::evict_all(&evicted)?;
            (target, open_ms) = open()?;
        }
        bar.set_message(format!("round {}/{}", r + 1, plan.rounds));
        let remote = store_of(&target).and_then(AnyStore::as_remote);
        let local = store_of(&target).and_then(AnyStore::as_local);
        // The loader's workers share the store; dropped with the round,
        // before the next eviction.
        let shared = match a.workers {
            Some(_) => Some(target.one_shared(column, "bench")?),
            None => None,
        };
        let records = target.one(column, "bench")?;
        let mut round = one_round(&plan, r, records, shared, (remote, local), &bar)?;
        round.open_ms = open_ms;
        rounds.push(round);
        // The device right after the round: the host's cache of this VM's
        // disk moves its speed from one second to the next.
        if let (Some(dir), true, None) = (&dir, probe_secs > 0.0, &probe_error) {
            bar.set_message("device limit");
            match probe_device(ctx, &dir.join("data.zr"), record_bytes, probe_secs) {
                Ok(rates) => probes.push(rates),
                Err(e) => probe_error = Some(e),
            }
        }
    }
    bar.finish_and_clear();
    let records = target.one(column, "bench")?;
    let store = store_of(&target);
    let remote = store.and_then(AnyStore::as_remote);
    let local = store.and_then(AnyStore::as_local);

    let device = match (&dir, probe_secs > 0.0) {
        (Some(dir), true) => {
            Some(device_json(&dir.join("data.zr"), record_bytes, probe_secs, &probes, probe_error))
        }
        _ => None,
    };
    let per_round: Vec<Value> = rounds.iter().map(Round::json).collect();
    let med = |k: &str| median(per_round.iter().map(|v| v[k].as_f64().unwrap_or(f64::NAN)).collect());
    let med_opt = |k: &str| -> Option<f64> {
        let v: Option<Vec<f64>> = per_round.iter().map(|v| v[k].as_f64()).collect();
        v.map(median)
    };
    let records_per_s = med("records_per_s");
    let percent_of_device = device
        .as_ref()
        .and_then(|d| d["best"]["reads_per_s"].as_f64())
        .map(|best| 100.0 * records_per_s / best);
    let total_batches = (plan.rounds * a.batches) as f64;
    let (requests, bytes) = match remote {
        _ if plan.cached => (
            Some(rounds.iter().map(|r| r.requests).sum::<u64>() as f64 / total_batches),
            Some(rounds.iter().map(|r| r.bytes).sum::<u64>() as f64 / total_batches),
        ),
        Some(_) => (
            Some(rounds.iter().map(|r| r.requests).sum::<u64>() as f64 / total_batches),
            Some(rounds.iter().map(|r| r.bytes).sum::<u64>() as f64 / total_batches),
        ),
        None => (None, None),
    };
    let stats = remote.map(|r| r.stats());
    let v = json!({
        "store": records.name(),
        "remote": remote.is_some(),
        "backend": local.map(|s| format!("{:?}", s.backend()).to_lowercase()),
        "cold_reads": local.filter(|s| s.backend() == Backend::Mmap)
            .map(|s| if s.reads_cold_direct() { "direct" } else { "buffered" }),
        "len": len,
        "file_bytes": local.map(|s| {
            let z = s.info().sizes;
            z.meta + z.data + z.dict.unwrap_or(0)
        }),
        "batch": a.batch,
        "batches": a.batches,
        "warmup": plan.warmup,
        "seed": a.seed,
        "shard": a.shard.map(|(r, w)| format!("{r}/{w}")),
        "workers": a.workers,
        "cold": a.cold,
        "rounds": plan.rounds,
        "open_ms": med("open_ms"),
        "records_per_s": records_per_s,
        "mib_per_s": med("mib_per_s"),
        "p50_ms": med("p50_ms"),
        "p95_ms": med("p95_ms"),
        "p99_ms": med("p99_ms"),
        "mean_ms": med("mean_ms"),
        "first_batch_ms": med("first_batch_ms"),
        "device_read_bytes": med_opt("device_read_bytes"),
        "read_amplification": med_opt("read_amplification"),
        "per_round": per_round,
        "device_limit": device,
        "percent_of_device": percent_of_device,
        "requests_per_batch": requests,
        "bytes_per_batch": bytes,
        "concurrency": remote.map(|r| r.as_async().options().concurrency),
        "merge_gap": stats.map(|s| s.merge_gap),
        "latency_ms": stats.map(|s| s.latency_us as f64 / 1e3),
        "retries": stats.map(|s| s.retries),
        "cache_dir": a.dataset.cache.cache.as_ref().map(|d| d.display().to_string()),
        "cache_limit": a.dataset.cache.cache_limit,
        // The whole run, open and warm-up included.
        "cache": plan.cached.then(|| cache_json(&zrecord::remote::cache::stats())),
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

/// One round: a fresh sampler (the same batches every warm round, new ones
/// every cold round: `seed + round`), the warm-up, then the timed batches.
/// The store a target is, when it is no dataset.
fn store_of(t: &Target) -> Option<&AnyStore> {
    match t {
        Target::Store(s) => Some(s.as_ref()),
        Target::Dataset(_) => None,
    }
}

fn one_round(
    plan: &Plan<'_>,
    round: u64,
    records: &dyn Records,
    shared: Option<Arc<dyn Records>>,
    (remote, local): (Option<&zrecord::remote::BlockingStore>, Option<&zrecord::Store>),
    bar: &indicatif::ProgressBar,
) -> CliResult<Round> {
    let a = plan.a;
    let seed = if a.cold { a.seed.wrapping_add(round) } else { a.seed };
    let mut sampler = Sampler::new(records.len(), a.batch, Mode::Iid, seed)?;
    if let Some((rank, world)) = a.shard {
        sampler = sampler.shard(rank, world)?;
    }
    let mut indices = Vec::new();
    let mut batch = Batch::for_store(records.info());
    // With --workers: the loader, over the same batches as the sampler's.
    let mut loader = match (shared, a.workers) {
        (Some(store), Some(workers)) => {
            let (rank, world) = a.shard.unwrap_or((0, 1));
            let builder = Loader::builder().stream("bench", store).batch_size(a.batch).mode(Mode::Iid);
            Some(builder.seed(seed).shard(rank, world).workers(workers).build()?)
        }
        _ => None,
    };
    // The next batch: `(records, decoded bytes)`.
    let mut next = |indices: &mut Vec<u64>, batch: &mut Batch| -> CliResult<(u64, u64)> {
        if let Some(l) = &mut loader {
            let got = l.next_batch()?;
            let bytes = got.iter().map(|(_, b)| decoded_bytes(b)).sum();
            return Ok((got.len() as u64, bytes));
        }
        sampler.try_fill_next(indices)?;
        gather(records, indices, batch)?;
        Ok((indices.len() as u64, decoded_bytes(batch)))
    };
    for _ in 0..plan.warmup {
        next(&mut indices, &mut batch)?;
    }
    let stats0 = remote.map(|r| r.stats());
    let cache0 = zrecord::remote::cache::stats();
    let read0 = cache::process_read_bytes();
    let cold0 = local.map(zrecord::Store::cold_gathers);
    let mut times = Vec::new();
    let batches = usize::try_from(a.batches).unwrap_or(usize::MAX);
    zrecord::format::batch::try_room(&mut times, batches)
        .map_err(|e| e.error("bench", format!("the times of {} batches", a.batches)))?;
    let (mut n_records, mut n_bytes) = (0u64, 0u64);
    let t0 = Instant::now();
    for _ in 0..a.batches {
        let t = Instant::now();
        let (n, bytes) = next(&mut indices, &mut batch)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        n_records += n;
        n_bytes += bytes;
        bar.inc(a.batch);
    }
    let secs = t0.elapsed().as_secs_f64();
    let device_read = match (read0, cache::process_read_bytes()) {
        (Some(r0), Some(r1)) if remote.is_none() => Some(r1 - r0),
        _ => None,
    };
    let stored_read = n_records as f64 * records.stored_bytes() as f64 / records.len() as f64;
    let cache = cache_delta(cache0, zrecord::remote::cache::stats());
    let (requests, bytes) = match (remote, stats0) {
        // Through a cache, what the remote saw.
        _ if plan.cached => (cache.gets, cache.bytes_fetched),
        (Some(r), Some(s0)) => {
            let s = r.stats();
            (s.requests - s0.requests, s.bytes - s0.bytes)
        }
        _ => (0, 0),
    };
    Ok(Round {
        times,
        secs,
        n_records,
        n_bytes,
        open_ms: 0.0,
        requests,
        bytes,
        device_read,
        stored_read,
        cache,
        cold_batches: local.zip(cold0).map(|(s, c0)| s.cold_gathers() - c0),
    })
}

/// What a cache did between two readings of its counters.
fn cache_delta(a: CacheStats, b: CacheStats) -> CacheStats {
    CacheStats {
        gets: b.gets - a.gets,
        bytes_fetched: b.bytes_fetched - a.bytes_fetched,
        hits: b.hits - a.hits,
        misses: b.misses - a.misses,
        evicted_bytes: b.evicted_bytes - a.evicted_bytes,
        read_through: b.read_through - a.read_through,
    }
}

/// A cache's counters as JSON.
fn cache_json(c: &CacheStats) -> Value {
    Value::Object(c.fields().into_iter().map(|(k, v)| (k.to_string(), v.into())).collect())
}

/// One probe of the device under `data` (O_DIRECT reads of the store's
/// mean stored record at every depth of [`cache::DEPTHS`], `secs` each).
fn probe_device(
    ctx: &Ctx,
    data: &Path,
    record_bytes: usize,
    secs: f64,
) -> Result<Vec<cache::DeviceRate>, String> {
    let spin = ctx.spinner("device limit");
    let mut rates = Vec::new();
    for depth in cache::DEPTHS {
        spin.set_message(format!(
            "device limit: O_DIRECT reads of {} on data.zr, queue depth {depth}",
            size(cache::direct_read_bytes(record_bytes) as u64)
        ));
        let rate = cache::device_limit(data, record_bytes, &[depth], Duration::from_secs_f64(secs));
        rates.extend(rate.map_err(|e| e.to_string())?);
    }
    spin.finish_and_clear();
    Ok(rates)
}

/// The device's random-read limit on `data` from `probes` (one after each
/// round): each depth's median over the probes, and the best of those.
/// (The best of single probes would stand for the host's luckiest second:
/// this VM's disk moves 2x from one second to the next, and the store's
/// number beside it is a median too.)
fn device_json(
    data: &Path,
    record_bytes: usize,
    secs: f64,
    probes: &[Vec<cache::DeviceRate>],
    error: Option<String>,
) -> Value {
    let depths: Vec<Value> = cache::DEPTHS
        .iter()
        .enumerate()
        .map(|(k, &depth)| {
            let at = |f: fn(&cache::DeviceRate) -> f64| -> Vec<f64> {
                probes.iter().filter_map(|p| p.get(k)).map(f).collect()
            };
            let bytes_per_s = median(at(|r| r.bytes_per_s));
            json!({
                "depth": depth,
                "reads_per_s": median(at(|r| r.reads_per_s)),
                "bytes_per_s": bytes_per_s,
                "mib_per_s": bytes_per_s / (1u64 << 20) as f64,
                "per_probe": at(|r| r.reads_per_s),
            })
        })
        .collect();
    let best =
        depths.iter().filter(|d| d["reads_per_s"].as_f64().is_some_and(f64::is_finite)).max_by(|x, y| {
            let r = |v: &Value| v["reads_per_s"].as_f64().unwrap_or(0.0);
            r(x).total_cmp(&r(y))
        });
    json!({
        "file": data.display().to_string(),
        "record_bytes": record_bytes,
        "read_bytes": cache::direct_read_bytes(record_bytes),
        "secs_per_depth": secs,
        "probes": probes.len(),
        "best": if error.is_none() { best.cloned() } else { None },
        "depths": depths,
        "error": error,
    })
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
    let rounds = v["rounds"].as_u64().unwrap_or(1);
    let med = if rounds > 1 { format!(" (median of {rounds} rounds)") } else { String::new() };
    let mut lines = vec![
        format!("store        {}", v["store"].as_str().unwrap_or_default()),
        format!(
            "batches      {} of {} records, IID (seed {}){}, after {} warm-up{}",
            v["batches"],
            v["batch"],
            v["seed"],
            v["shard"].as_str().map(|s| format!(", shard {s}")).unwrap_or_default(),
            v["warmup"],
            match (v["cold"] == true, rounds) {
                (true, 1) => "; cold (closed, evicted, reopened)".to_string(),
                (true, _) => format!("; {rounds} rounds, each cold (closed, evicted, reopened)"),
                (false, 1) => String::new(),
                (false, _) => format!("; {rounds} rounds"),
            }
        ),
    ];
    if let Some(w) = v["workers"].as_u64() {
        lines.push(format!(
            "loader       {w} workers gathering ahead (prefetch {}); batch ms are waits for the next",
            2 * w
        ));
    }
    if let (true, Some(how)) = (v["cold"] == true, v["cold_reads"].as_str()) {
        lines.push(format!("cold reads   {how}"));
    }
    lines.extend([
        format!("records/s    {:.0}{med}", f("records_per_s")),
        format!("MiB/s        {:.1} (decoded)", f("mib_per_s")),
        format!(
            "batch ms     p50 {:.2}  p95 {:.2}  p99 {:.2}  mean {:.2}  first {:.2}",
            f("p50_ms"),
            f("p95_ms"),
            f("p99_ms"),
            f("mean_ms"),
            f("first_batch_ms")
        ),
        format!("open ms      {:.1}", f("open_ms")),
    ]);
    if let (Some(b), Some(x)) = (v["device_read_bytes"].as_f64(), v["read_amplification"].as_f64()) {
        lines.push(format!(
            "from device  {:.1} MiB read during the timed batches, {x:.2}x the records' stored bytes",
            b / (1u64 << 20) as f64
        ));
        let files = v["file_bytes"].as_f64().unwrap_or(f64::INFINITY);
        // Pages a round brings in serve its later records too: readahead,
        // or small records sharing a page (400,000 token blocks of 1.3 KiB
        // read 2.1-2.5 ms a batch by the end of 300 batches, 3.9-4.2 at
        // first).
        if v["cold"] == true && b >= files / 10.0 {
            lines.push(format!(
                "note         that is {:.0}% of the store's files: records on pages an earlier read brought in \
                 (readahead, or a neighbour on the same page) came from memory, so later batches were partly \
                 warm; a cold measure needs a store far larger than its rounds read",
                100.0 * b / files
            ));
        }
    }
    if rounds > 1 {
        for (i, r) in v["per_round"].as_array().into_iter().flatten().enumerate() {
            let g = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            // Only a cold round opens the store again.
            let open =
                if v["cold"] == true { format!(", open {:.1} ms", g("open_ms")) } else { String::new() };
            let amp = r["read_amplification"]
                .as_f64()
                .map(|x| format!(", read {x:.2}x from device"))
                .unwrap_or_default();
            let cold = match (v["cold"] == true, r["cold_batches"].as_u64()) {
                (true, Some(n)) => format!(", {n} of {} batches read cold", v["batches"]),
                _ => String::new(),
            };
            lines.push(format!(
                "round {:<6} {:.0} records/s, {:.1} MiB/s, batch ms p50 {:.2} first {:.2}{open}{amp}{cold}",
                i + 1,
                g("records_per_s"),
                g("mib_per_s"),
                g("p50_ms"),
                g("first_batch_ms"),
            ));
        }
    }
    if v["remote"] == true {
        lines.push(format!(
            "per batch    {:.1} requests, {} read ({} in flight, gaps up to {} merged, latency {:.1} ms)",
            f("requests_per_batch"),
            size(f("bytes_per_batch") as u64),
            v["concurrency"],
            size(v["merge_gap"].as_u64().unwrap_or(0)),
            f("latency_ms")
        ));
        let c = &v["cache"];
        if c.is_object() {
            let n = |k: &str| c[k].as_u64().unwrap_or(0);
            lines.push(format!(
                "cache        {}: {} requests, {} fetched, {} hits, {} misses, {} evicted, {} read through (the whole run)",
                v["cache_dir"].as_str().unwrap_or_default(),
                n("gets"),
                size(n("bytes_fetched")),
                n("hits"),
                n("misses"),
                size(n("evicted_bytes")),
                n("read_through"),
            ));
        }
        if v["retries"].as_u64().unwrap_or(0) > 0 {
            lines.push(format!("retries      {}", v["retries"]));
        }
    }
    let d = &v["device_limit"];
    if d.is_object() {
        lines.push(format!(
            "device       O_DIRECT random reads of {} (mean stored record {}) on {}, {:.2} s per depth after each round; median of {} probes",
            size(d["read_bytes"].as_u64().unwrap_or(0)),
            size(d["record_bytes"].as_u64().unwrap_or(0)),
            d["file"].as_str().unwrap_or_default(),
            d["secs_per_depth"].as_f64().unwrap_or(f64::NAN),
            d["probes"]
        ));
        for r in d["depths"].as_array().into_iter().flatten() {
            let each: Vec<String> = r["per_probe"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| format!("{:.0}", x.as_f64().unwrap_or(f64::NAN)))
                .collect();
            lines.push(format!(
                "  depth {:<4} {:.0} reads/s, {:.1} MiB/s (probes: {})",
                r["depth"].as_u64().unwrap_or(0),
                r["reads_per_s"].as_f64().unwrap_or(f64::NAN),
                r["mib_per_s"].as_f64().unwrap_or(f64::NAN),
                each.join(", ")
            ));
        }
        if let Some(e) = d["error"].as_str() {
            lines.push(format!("  no device limit: {e}"));
        }
        if d["best"].is_object() {
            lines.push(format!(
                "  best       {:.0} reads/s at depth {} ({:.1} MiB/s)",
                d["best"]["reads_per_s"].as_f64().unwrap_or(f64::NAN),
                d["best"]["depth"],
                d["best"]["mib_per_s"].as_f64().unwrap_or(f64::NAN)
            ));
            lines.push(format!(
                "vs device    records/s are {:.1}% of the device's best reads/s",
                f("percent_of_device")
            ));
        }
    }
    lines
}
