//! The node-local cache (`--cache DIR`): real processes of the CLI reading
//! one remote store through one cache directory, against the 20 ms latency
//! server (which logs every request's range) and moto's S3. Every record is
//! compared with the local store's; each block is fetched once; the
//! directory never holds more than its limit; a limit smaller than a block
//! or a batch still reads right; a downloader killed with SIGKILL leaves
//! nothing a reader trusts; a replaced or damaged store is never served
//! from old blocks.

#[path = "common/buckets.rs"]
mod buckets;
mod common;
#[path = "common/latency.rs"]
mod latency;
#[path = "common/moto.rs"]
mod moto;

use latency::LatencyServer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zrecord::local::writer::{CreateOptions, Writer};
use zrecord::{Codec, Records};

const DELAY: Duration = Duration::from_millis(20);
const MIB: u64 = 1 << 20;

/// A Dense u8 store of `n` rows of `row` bytes; `seed` changes every row.
fn write_store(path: &Path, n: usize, row: usize, codec: Codec, seed: u64) {
    if path.exists() {
        std::fs::remove_dir_all(path).unwrap();
    }
    let mut w = Writer::create_dense(path, "|u1", &[row as u64], CreateOptions::codec(codec)).unwrap();
    let mut rng = common::Rng(seed);
    let rows: Vec<u8> = (0..n * row)
        .map(|i| if i % 3 == 0 { rng.next() as u8 } else { ((i / row) as u64 ^ seed) as u8 })
        .collect();
    w.append(&rows).unwrap();
    w.close().unwrap();
}

fn zrecord() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn stdout(out: Output) -> String {
    assert!(out.status.success(), "zrecord failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `zrecord checksum` of the local store: what every reader must print.
fn local_sums(store: &Path) -> String {
    stdout(zrecord().arg("checksum").arg(store).output().unwrap())
}

/// Start `checksum TARGET --cache DIR EXTRA...` in a process.
fn spawn_checksum(mut cmd: Command, target: &str, cache: &Path, extra: &[&str]) -> Child {
    cmd.args(["checksum", target, "--cache"]).arg(cache).args(extra).spawn().unwrap()
}

/// The cache's block files and the bytes every file under `blocks/` holds.
fn cache_files(cache: &Path) -> (Vec<PathBuf>, Vec<PathBuf>, u64) {
    let (mut blocks, mut others, mut bytes) = (Vec::new(), Vec::new(), 0);
    let Ok(entries) = std::fs::read_dir(cache.join("blocks")) else { return (blocks, others, 0) };
    for e in entries.flatten() {
        bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
        if e.path().extension().is_some_and(|x| x == "blk") {
            blocks.push(e.path());
        } else {
            others.push(e.path());
        }
    }
    (blocks, others, bytes)
}

/// Whether a block file's trailer vouches for its bytes.
fn sound(block: &Path) -> bool {
    let all = std::fs::read(block).unwrap();
    let (bytes, trailer) = all.split_at(all.len() - 16);
    &trailer[..8] == b"zrcache1"
        && u64::from_le_bytes(trailer[8..].try_into().unwrap()) == xxh3::hash64_with_seed(bytes, 0)
}

/// Watches the cache directory's size on a thread until dropped; `peak()`
/// is the most it ever held.
struct Watch {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn start(cache: &Path) -> Watch {
        let (stop, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (s, p, dir) = (stop.clone(), peak.clone(), cache.to_path_buf());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(cache_files(&dir).2, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Watch { stop, peak, thread: Some(thread) }
    }
    fn peak(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        self.peak.load(Ordering::Relaxed)
    }
}

/// Run 4 `checksum` processes at once through `cache`; each must print `expected`.
fn four_readers(target: &str, cache: &Path, extra: &[&str], expected: &str, env: impl Fn(&mut Command)) {
    let children: Vec<Child> = (0..4)
        .map(|_| {
            let mut cmd = zrecord();
            env(&mut cmd);
            spawn_checksum(cmd, target, cache, extra)
        })
        .collect();
    for child in children {
        assert_eq!(stdout(child.wait_with_output().unwrap()), expected, "a reader printed other records");
    }
}

/// The server's requests by path, then by Range header.
fn requests_by_range(server: &LatencyServer) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut by: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (path, range) in server.log() {
        *by.entry(path).or_default().entry(range.unwrap_or_default()).or_default() += 1;
    }
    by
}

/// A store of 20,000 zstd records of 512 bytes (`seed` picks them) served
/// after `delay` per request, and its local checksums.
fn served(seed: u64, delay: Duration) -> (tempfile::TempDir, PathBuf, String, LatencyServer) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    write_store(&store, 20_000, 512, Codec::Zstd, seed);
    let expected = local_sums(&store);
    let server = LatencyServer::start(dir.path(), delay);
    (dir, store, expected, server)
}

#[test]
fn four_processes_share_one_cache_and_each_block_is_fetched_once() {
    let (dir, _store, expected, server) = served(7, DELAY);
    let cache = dir.path().join("cache");
    four_readers(&server.url("s/"), &cache, &["--cache-block", "1MiB"], &expected, |_| {});

    let (blocks, others, _) = cache_files(&cache);
    assert!(others.is_empty(), "left behind: {others:?}");
    assert!(blocks.iter().all(|b| sound(b)));
    let mut block_requests = 0;
    for (path, ranges) in requests_by_range(&server) {
        let file = std::fs::metadata(dir.path().join(path.trim_start_matches('/'))).unwrap().len();
        for (range, count) in &ranges {
            if range == "bytes=0-0" {
                assert_eq!(*count, 4, "{path}: each process learns the version once");
                continue;
            }
            assert_eq!(*count, 1, "{path} {range}: a block fetched {count} times");
            let (a, b) = range.trim_start_matches("bytes=").split_once('-').unwrap();
            let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
            assert_eq!(a % MIB, 0, "{path} {range}: not a block");
            assert!(b + 1 == (a + MIB).min(file), "{path} {range}: not a whole block of {file} bytes");
            block_requests += 1;
        }
        // Every block of every file read was fetched.
        let fetched = ranges.keys().filter(|r| *r != "bytes=0-0").count() as u64;
        assert_eq!(fetched, file.div_ceil(MIB), "{path}");
    }
    assert_eq!(block_requests, blocks.len(), "one block file per block fetched");

    // A second epoch: only the version reads go out.
    let before = server.requests();
    four_readers(&server.url("s/"), &cache, &["--cache-block", "1MiB"], &expected, |_| {});
    let files_read = requests_by_range(&server).len() as u64;
    assert_eq!(server.requests() - before, 4 * files_read, "a warm cache sends only version reads");
}

#[test]
fn the_limit_holds_and_limits_below_a_batch_or_a_block_still_read_right() {
    let (dir, store, expected, server) = served(11, DELAY);
    let data = std::fs::metadata(store.join("data.zr")).unwrap().len();
    // Smaller than the store and than one of checksum's batches (32 MiB
    // decoded, all of data.zr's blocks), larger than a block.
    assert!(5 * MIB / 2 < data);
    let peak = peak_while_four_read(&server, &dir.path().join("small"), "2.5MiB", &expected);
    assert!(peak <= 5 * MIB / 2, "the cache held {peak} bytes, over its limit");
    assert!(peak > 0, "nothing was cached");
    // Smaller than one block: read through (only a file's short last block fits).
    let peak = peak_while_four_read(&server, &dir.path().join("tiny"), "100KiB", &expected);
    assert!(peak <= 100 << 10, "the cache held {peak} bytes, over its limit");
}

/// The most `cache` held while 4 processes read the store through it, 1 MiB
/// blocks, at most `limit`.
fn peak_while_four_read(server: &LatencyServer, cache: &Path, limit: &str, expected: &str) -> u64 {
    let watch = Watch::start(cache);
    four_readers(
        &server.url("s/"),
        cache,
        &["--cache-block", "1MiB", "--cache-limit", limit],
        expected,
        |_| {},
    );
    watch.peak()
}

#[test]
fn a_downloader_killed_mid_fetch_leaves_nothing_a_reader_trusts() {
    // Slow answers: a download stays under way long enough to be killed.
    let (dir, _store, expected, server) = served(13, Duration::from_millis(500));
    let cache = dir.path().join("cache");
    let mut victim = spawn_checksum(zrecord(), &server.url("s/"), &cache, &["--cache-block", "1MiB"]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let partial = loop {
        if let Some(p) = cache_files(&cache).1.into_iter().next() {
            break p;
        }
        assert!(Instant::now() < deadline, "no download started");
        assert!(victim.try_wait().unwrap().is_none(), "the reader finished before it could be killed");
        std::thread::sleep(Duration::from_millis(2));
    };
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let name = partial.file_name().unwrap().to_str().unwrap();
    let (stem, _) = name.split_once(".tmp").expect("a download's temporary file");
    let block = partial.with_file_name(format!("{stem}.blk"));
    assert!(!block.exists(), "the killed download left a block: {}", block.display());
    assert!(partial.exists(), "the partial download is still there (it is only ever a temporary file)");

    let out = stdout(
        zrecord()
            .args(["checksum", &server.url("s/"), "--cache-block", "1MiB", "--cache"])
            .arg(&cache)
            .output()
            .unwrap(),
    );
    assert_eq!(out, expected);
    let (blocks, others, _) = cache_files(&cache);
    assert!(others.is_empty(), "the killed download's file was not cleared: {others:?}");
    assert!(block.exists(), "the next reader fetched the block again");
    assert!(blocks.iter().all(|b| sound(b)));
}

#[test]
fn a_replaced_or_damaged_store_is_never_served_from_old_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    write_store(&store, 3_000, 512, Codec::Zstd, 17);
    let server = LatencyServer::start(dir.path(), DELAY);
    let cache = dir.path().join("cache");
    let read = || {
        stdout(
            zrecord()
                .args(["checksum", &server.url("s/"), "--cache-block", "256KiB", "--cache"])
                .arg(&cache)
                .output()
                .unwrap(),
        )
    };
    assert_eq!(read(), local_sums(&store));
    // Rewritten with other records (and so other sizes and ETags).
    write_store(&store, 3_100, 512, Codec::Zstd, 18);
    server.forget_files();
    assert_eq!(read(), local_sums(&store));

    // A block damaged on disk (a flipped byte, or cut short) is found by
    // its trailer or size, removed and fetched again.
    std::fs::remove_dir_all(&cache).unwrap();
    assert_eq!(read(), local_sums(&store));
    let before = server.requests();
    for (k, b) in cache_files(&cache).0.iter().enumerate() {
        let mut bytes = std::fs::read(b).unwrap();
        let mid = bytes.len() / 2;
        if k % 2 == 0 {
            bytes[mid] ^= 0xff;
        } else {
            bytes.truncate(mid);
        }
        std::fs::write(b, bytes).unwrap();
    }
    assert_eq!(read(), local_sums(&store));
    assert!(server.requests() - before > 3, "the damaged blocks were fetched again");
    assert!(cache_files(&cache).0.iter().all(|b| sound(b)));
}

#[test]
fn four_processes_read_a_bucket_through_one_cache() {
    use buckets::Emulator;
    let moto = moto::Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    // Raw records: the replacement below has the same sizes, other bytes.
    write_store(&store, 8_000, 512, Codec::Raw, 21);
    let url = moto.url("cached/s");
    buckets::ok(&moto, &[&"push", &store, &url]);
    let cache = dir.path().join("cache");
    let extra = ["--cache-block", "512KiB"];
    four_readers(&url, &cache, &extra, &local_sums(&store), |c| moto.env(c));
    let blocks = cache_files(&cache).0.len();
    let sizes: u64 = ["meta.zr", "data.zr", "sums.zr"]
        .iter()
        .map(|f| std::fs::metadata(store.join(f)).unwrap().len().div_ceil(512 << 10))
        .sum();
    assert_eq!(blocks as u64, sizes, "one block file per block");

    // A second epoch from the warm cache: each process only learns versions.
    let benches: Vec<Child> = (0..4)
        .map(|r| {
            let mut cmd = zrecord();
            moto.env(&mut cmd);
            cmd.args(["bench", &url, "--batches", "20", "--json", "--shard", &format!("{r}/4"), "--cache"])
                .arg(&cache)
                .args(extra)
                .spawn()
                .unwrap()
        })
        .collect();
    for b in benches {
        let v: serde_json::Value = serde_json::from_str(&stdout(b.wait_with_output().unwrap())).unwrap();
        let c = &v["cache"];
        assert_eq!(c["misses"], 0, "{v}");
        assert_eq!(c["read_through"], 0, "{v}");
        assert!(c["hits"].as_u64().unwrap() > 0, "{v}");
        assert!(c["gets"].as_u64().unwrap() <= 2, "one version read per file (meta.zr, data.zr): {v}");
    }

    // The store replaced in the bucket, same sizes: no old bytes come back.
    write_store(&store, 8_000, 512, Codec::Raw, 22);
    buckets::ok(&moto, &[&"push", &store, &url]);
    four_readers(&url, &cache, &extra, &local_sums(&store), |c| moto.env(c));
}

/// The loader knows its next steps exactly (the sampler is a pure function
/// of the step): its look-ahead fetches the blocks of those steps' records
/// and no others, before a worker gathers them.
#[test]
fn the_loader_fetches_exactly_the_blocks_of_its_next_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    write_store(&path, 20_000, 512, Codec::Zstd, 29);
    let local = zrecord::Store::open(&path).unwrap();
    let data = local.info().sizes.data;
    let server = LatencyServer::start(dir.path(), DELAY);
    let cache = dir.path().join("cache");
    let remote = zrecord::open_with(server.url("s/"), &cached(&cache)).unwrap();
    lookahead_fetches_exactly(remote, &local, &cache, |i| (data, local.loc(i).unwrap()));
}

/// The same over a dataset's column: the look-ahead fans out to the shards
/// its next steps touch.
#[test]
fn a_dataset_column_fetches_exactly_the_blocks_of_its_next_steps() {
    use zrecord::dataset::writer::ColumnDef;
    use zrecord::dataset::{commit, CommitMode, Dataset, DatasetOptions, ShardWriter};
    use zrecord::format::schema::Geometry;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ds");
    let mut infos = Vec::new();
    // Shards of different lengths, so their data.zr sizes tell them apart.
    for (k, n) in [4_000usize, 5_000, 5_500, 6_000].into_iter().enumerate() {
        let scratch = dir.path().join(format!("rows{k}"));
        write_store(&scratch, n, 512, Codec::Raw, 40 + k as u64);
        let rows =
            zrecord::Store::open(&scratch).unwrap().gather(&(0..n as u64).collect::<Vec<_>>()).unwrap();
        let column = ColumnDef {
            name: "s".into(),
            dtype: "|u1".into(),
            geometry: Geometry::Dense { item_shape: vec![512] },
            options: zrecord::CreateOptions::codec(Codec::Zstd),
        };
        let mut w = ShardWriter::create(&root, vec![column]).unwrap();
        w.column("s").unwrap().append(rows.bytes()).unwrap();
        infos.push(w.finish().unwrap());
    }
    commit(root.to_str().unwrap(), &infos, CommitMode::Create).unwrap();
    let local = Dataset::open(root.to_str().unwrap()).unwrap();
    let zrecord::dataset::Column::Local(column) = local.column("s").unwrap() else { panic!("local") };
    let shards: Vec<_> = (0..infos.len()).map(|k| column.shard(k).unwrap()).collect();
    let sizes: std::collections::BTreeSet<u64> = shards.iter().map(|s| s.info().sizes.data).collect();
    assert_eq!(sizes.len(), shards.len(), "shards of distinct sizes");
    let server = LatencyServer::start(dir.path(), DELAY);
    let cache = dir.path().join("cache");
    let options = DatasetOptions { open: cached(&cache), ..Default::default() };
    let remote = Dataset::open_with(&server.url("ds/"), &options).unwrap();
    let stream = remote.stream("s").unwrap().clone();
    lookahead_fetches_exactly(stream, local.column("s").unwrap(), &cache, |i| {
        let (k, start) = local.shard_of(i).unwrap();
        (shards[k].info().sizes.data, shards[k].loc(i - start).unwrap())
    });
}

const LOOKAHEAD_BLOCK: u64 = 64 << 10;

fn cached(cache: &Path) -> zrecord::open::Options {
    use zrecord::remote::cache::CacheOptions;
    let cache = CacheOptions { block: LOOKAHEAD_BLOCK, ..CacheOptions::new(cache) };
    zrecord::open::Options { cache: Some(cache), ..Default::default() }
}

/// A loader over `remote` (batches of 8, one worker, prefetch 1, look-ahead
/// 4): once it has delivered step 0, the cache holds exactly the data blocks
/// of steps 0 to 5, as `local` and `place(i)` (record `i`'s `data.zr` size
/// and location) compute them; then its batches equal `local`'s.
fn lookahead_fetches_exactly(
    remote: impl zrecord::training::loader::IntoStream,
    local: &dyn zrecord::Records,
    cache: &Path,
    place: impl Fn(u64) -> (u64, zrecord::format::RecordLoc),
) {
    use zrecord::training::loader::Loader;
    use zrecord::training::sampler::{Mode, Sampler};
    let (batch, seed, lookahead, block) = (8, 5, 4, LOOKAHEAD_BLOCK);
    let mut loader = Loader::builder()
        .stream("s", remote)
        .batch_size(batch)
        .mode(Mode::Iid)
        .seed(seed)
        .workers(1)
        .prefetch(1)
        .lookahead(lookahead, 1 << 30)
        .build()
        .unwrap();
    let first = loader.next_batch().unwrap();
    assert_eq!(first.dense("s").unwrap().bytes(), local.gather(first.indices()).unwrap().bytes());
    // Delivered: step 0. Workers: step 1. Look-ahead: steps 2 to 1 + 1 + 4 - 1.
    let mut sampler = Sampler::new(local.len(), batch, Mode::Iid, seed).unwrap();
    let (mut expected, mut sizes) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for _ in 0..=(1 + lookahead) {
        for i in sampler.next_batch() {
            let (data, loc) = place(i);
            let last = loc.offset + u64::from(loc.phys_length) - 1;
            expected.extend((loc.offset / block..=last / block).map(|b| (data, b)));
            sizes.insert(data);
        }
    }
    // Blocks of data.zr files: named ...-SIZE-INDEX.blk.
    let data_blocks = || -> std::collections::BTreeSet<(u64, u64)> {
        cache_files(cache)
            .0
            .iter()
            .filter_map(|p| {
                let name = p.file_stem()?.to_str()?.to_string();
                let mut parts = name.rsplit('-');
                let index: u64 = parts.next()?.parse().ok()?;
                let size = parts.next()?.parse::<u64>().ok()?;
                sizes.contains(&size).then_some((size, index))
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !data_blocks().is_superset(&expected) {
        assert!(Instant::now() < deadline, "the look-ahead never fetched the next steps' blocks");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(data_blocks(), expected, "blocks of exactly steps 0 to {}", 1 + lookahead);
    assert!(loader.fetched_ahead() > 0);
    for _ in 0..10 {
        let step = loader.next_batch().unwrap();
        assert_eq!(step.dense("s").unwrap().bytes(), local.gather(step.indices()).unwrap().bytes());
    }
}

#[test]
fn bad_cache_settings_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let run = |extra: &[&str]| {
        let out = zrecord()
            .args(["info", "http://127.0.0.1:9/s/", "--cache"])
            .arg(&cache)
            .args(extra)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["--cache-block", "1TiB"]).contains("block size"), "{}", run(&["--cache-block", "1TiB"]));
    assert!(run(&["--cache-limit", "12 parsecs"]).contains("unknown unit"));
    // A cache directory others may write to: they could plant blocks.
    std::fs::create_dir_all(cache.join("blocks")).unwrap();
    std::fs::set_permissions(cache.join("blocks"), std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .unwrap();
    assert!(run(&[]).contains("another user"), "{}", run(&[]));
    std::fs::remove_dir_all(&cache).unwrap();
    // A cache directory that is a file.
    std::fs::write(&cache, b"not a directory").unwrap();
    assert!(run(&[]).contains("create the cache directory"), "{}", run(&[]));
}

/// One file in memory that, as the transports do, refuses an empty range
/// (`ReadRequest::range` is never empty: object_store calls `0..0` an
/// invalid range, HTTP's `bytes=0-{end - 1}` underflows), and counts reads.
struct Strict(Vec<u8>, Arc<AtomicU64>);

impl zrecord::remote::RangeRead for Strict {
    fn read(
        &self,
        req: zrecord::remote::ReadRequest,
    ) -> zrecord::remote::LocalBoxFuture<'_, zrecord::Result<zrecord::remote::Ranged>> {
        self.1.fetch_add(1, Ordering::Relaxed);
        let total = self.0.len() as u64;
        let got = if req.range.is_empty() {
            Err(zrecord::Error::Remote {
                url: "strict:".into(),
                why: format!("an empty range {:?}", req.range),
            })
        } else {
            let (a, b) = (req.range.start.min(total) as usize, req.range.end.min(total) as usize);
            Ok(zrecord::remote::Ranged { bytes: self.0[a..b].to_vec(), total, version: Some("v1".into()) })
        };
        Box::pin(async move { got })
    }
    fn locate(&self, file: zrecord::format::StoreFile) -> String {
        format!("strict:{file}")
    }
    fn name(&self) -> String {
        "strict:".into()
    }
}

#[test]
fn a_prefetch_that_cannot_keep_a_block_sends_no_request() {
    use zrecord::remote::cache::{CacheOptions, CachedSource};
    use zrecord::remote::RangeRead;
    let dir = tempfile::tempdir().unwrap();
    let reads = Arc::new(AtomicU64::new(0));
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i * 13) as u8).collect();
    // A limit below one block: every block is read through.
    let options = CacheOptions { block: 4096, ..CacheOptions::new(dir.path()) }.limit(1000);
    let source = CachedSource::new(Box::new(Strict(bytes.clone(), reads.clone())), options).unwrap();
    let file = zrecord::format::StoreFile::Data;
    let ahead = zrecord::remote::block_on(source.prefetch(file, vec![10..20, 5000..5001]));
    assert_eq!(ahead.unwrap(), 0, "nothing can be kept, so nothing is fetched ahead");
    assert_eq!(reads.load(Ordering::Relaxed), 1, "only the version read");
    // A read still reads through, right.
    let req = zrecord::remote::ReadRequest { file, range: 4090..4100, if_version: None };
    let got = zrecord::remote::block_on(source.read(req)).unwrap();
    assert_eq!(got.bytes, &bytes[4090..4100]);
}

/// A file in memory whose first block read forks a child process, as a
/// Python DataLoader forks its workers while the parent reads: the child
/// holds copies of every descriptor the parent has open, the cache's locks
/// included, until it exits.
struct ForksOnFetch(Vec<u8>, Arc<std::sync::Mutex<Option<i32>>>);

impl zrecord::remote::RangeRead for ForksOnFetch {
    fn read(
        &self,
        req: zrecord::remote::ReadRequest,
    ) -> zrecord::remote::LocalBoxFuture<'_, zrecord::Result<zrecord::remote::Ranged>> {
        let mut child = self.1.lock().unwrap();
        if req.range.end - req.range.start > 1 && child.is_none() {
            // SAFETY: the child only sleeps and exits (async-signal-safe).
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe {
                    libc::sleep(30);
                    libc::_exit(0);
                }
            }
            *child = Some(pid);
        }
        let total = self.0.len() as u64;
        let (a, b) = (req.range.start.min(total) as usize, req.range.end.min(total) as usize);
        let got = zrecord::remote::Ranged { bytes: self.0[a..b].to_vec(), total, version: Some("v1".into()) };
        Box::pin(async move { Ok(got) })
    }
    fn locate(&self, file: zrecord::format::StoreFile) -> String {
        format!("forks:{file}")
    }
    fn name(&self) -> String {
        "forks:".into()
    }
}

#[test]
fn a_process_forked_during_a_download_holds_no_cache_lock() {
    use zrecord::remote::cache::{CacheOptions, CachedSource};
    use zrecord::remote::RangeRead;
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i * 29) as u8).collect();
    let child = Arc::new(std::sync::Mutex::new(None));
    let up = ForksOnFetch(bytes.clone(), child.clone());
    let source =
        CachedSource::new(Box::new(up), CacheOptions { block: 4096, ..CacheOptions::new(dir.path()) })
            .unwrap();
    let req = zrecord::remote::ReadRequest {
        file: zrecord::format::StoreFile::Data,
        range: 10..20,
        if_version: None,
    };
    let got = zrecord::remote::block_on(source.read(req)).unwrap();
    assert_eq!(got.bytes, &bytes[10..20]);
    // The download is done: every lock file and block is free, though the
    // forked child still has them open.
    let mut held = Vec::new();
    for sub in ["locks", "blocks", ""] {
        for e in std::fs::read_dir(dir.path().join(sub)).unwrap() {
            let path = e.unwrap().path();
            if path.is_file() && std::fs::File::open(&path).unwrap().try_lock().is_err() {
                held.push(path);
            }
        }
    }
    let pid = child.lock().unwrap().expect("a child was forked");
    // SAFETY: our own child, killed and reaped.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    assert!(held.is_empty(), "still locked after the download, by the forked child: {held:?}");
}
