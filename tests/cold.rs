//! Gathers of stores whose pages are not in memory: the local reader then
//! reads every record of the batch at once with pread, many reads in
//! flight (src/local/reader.rs, `Store::access`; src/local/cold.rs). The cold path reads exactly what the warm one reads,
//! checked gathers included, and a hostile location is an error there too.
//!
//! Stores live under cargo's target dir, not /tmp (which may be tmpfs,
//! whose pages cannot be evicted); each test checks that its gathers read
//! cold (`Store::cold_gathers`), so none passes on the warm path alone.

mod common;

use common::{patch, Rng};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use zrecord::format::{Verify, LOC_SIZE, PAGE_SIZE};
use zrecord::local::cache;
use zrecord::source::memory::MemorySource;
use zrecord::{Backend, Codec, ColdReads, CreateOptions, OpenOptions, Records, Store, Writer};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cold").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    dir
}

/// 3,000 records of 1-8 KiB (Ragged) or 4 KiB (Dense), half random bytes.
fn write(dir: &Path, ragged: bool, codec: Codec) {
    let mut rng = Rng(11);
    let mut record = |i: usize, n: usize| {
        (0..n).map(|j| if j % 2 == 0 { rng.next() as u8 } else { (i + j) as u8 }).collect()
    };
    if ragged {
        let mut w = Writer::create_ragged(dir, "|u1", CreateOptions::codec(codec)).unwrap();
        let recs: Vec<(Vec<u64>, Vec<u8>)> = (0..3000)
            .map(|i| {
                let n = 1024 * (1 + i % 8);
                (vec![n as u64], record(i, n))
            })
            .collect();
        let refs: Vec<_> = recs.iter().map(|(s, b)| (s.as_slice(), b.as_slice())).collect();
        w.append_ragged(&refs).unwrap();
        w.close().unwrap();
    } else {
        let mut w = Writer::create_dense(dir, "|u1", &[4096], CreateOptions::codec(codec)).unwrap();
        let rows: Vec<u8> = (0..3000).flat_map(|i| record(i, 4096)).collect::<Vec<u8>>();
        w.append(&rows).unwrap();
        w.close().unwrap();
    }
}

/// The tests of this file evict and measure: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// This process's resident pages of mapped files (`RssFile`), in bytes.
fn rss_file() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("RssFile:")).expect("RssFile in /proc/self/status");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// 300 random records, then the first and the last (a cold read of the
/// last one's aligned span runs past the end of data.zr).
fn indices() -> Vec<u64> {
    let mut rng = Rng(5);
    (0..300).map(|_| rng.below(3000) as u64).chain([0, 2999]).collect()
}

#[test]
fn cold_gathers_read_what_warm_ones_read() {
    let _one = serial();
    for (ragged, codec) in
        [(false, Codec::Raw), (false, Codec::Zstd), (true, Codec::Raw), (true, Codec::Zstd)]
    {
        let dir = scratch(&format!("{}-{}", if ragged { "ragged" } else { "dense" }, codec.name()));
        write(&dir, ragged, codec);
        let idx = indices();
        let want = Store::open(&dir).unwrap().gather_any(&idx).unwrap();
        // The default backend: pread has no map to ask (each read waits
        // for its own I/O, as before).
        let backend = Backend::Mmap;
        let modes = [(Verify::Off, ColdReads::Buffered), (Verify::Always, ColdReads::Buffered)];
        let direct = [(Verify::Off, ColdReads::Direct), (Verify::Always, ColdReads::Direct)];
        for (verify, cold_reads) in modes.into_iter().chain(direct) {
            cache::evict(&dir).unwrap();
            let before = cache::process_read_bytes();
            let options = OpenOptions { backend, verify, cold_reads, ..Default::default() };
            let store = Store::open_with(&dir, options).unwrap();
            let got = store.gather_any(&idx).unwrap();
            let what = format!("{}: {backend:?}, {verify:?}, {cold_reads:?}", dir.display());
            // This machine's file systems (ext4) read directly.
            assert_eq!(store.reads_cold_direct(), cold_reads == ColdReads::Direct, "{what}");
            assert_eq!(got.len(), want.len(), "{what}");
            for (k, i) in idx.iter().enumerate() {
                assert_eq!(got.record(k), want.record(k), "{what}: record {k} (index {i})");
            }
            // The gather read its records from the device, cold.
            if let (Some(a), Some(b)) = (before, cache::process_read_bytes()) {
                assert!(b - a >= 300 * 1024, "{what}: only {} bytes read from the device", b - a);
            }
            assert_eq!(store.cold_gathers(), 1, "{what}");
            // Buffered: now in memory, but the next gathers read cold
            // without probing for a while; then a probe finds them warm.
            // Direct: nothing was kept, so the probe finds them cold again.
            for _ in 0..12 {
                store.gather_any(&idx).unwrap();
            }
            let cold = store.cold_gathers();
            store.gather_any(&idx).unwrap();
            match cold_reads {
                ColdReads::Direct => {
                    assert_eq!(store.cold_gathers(), cold + 1, "{what}: direct reads cached")
                }
                _ => assert_eq!(store.cold_gathers(), cold, "{what}: warm records read cold"),
            }
        }
    }
}

/// The loader's workers gather a cold store at once: every step equals
/// the same batch gathered warm, and they read cold: the first probe's
/// batch and the 8 after it at least (later probes may find this small
/// store partly in memory by then, and read warm). The race that once sent
/// one worker's batch through page faults is `residency.rs`'s unit test.
#[test]
fn a_loaders_workers_read_a_cold_store_cold() {
    use zrecord::training::loader::Loader;
    use zrecord::training::sampler::Mode;
    let _one = serial();
    let dir = scratch("loader");
    write(&dir, true, Codec::Zstd);
    let warm = Store::open(&dir).unwrap();
    for round in 0..3 {
        cache::evict(&dir).unwrap();
        let store = Arc::new(Store::open(&dir).unwrap());
        let loader = Loader::builder().stream("s", store.clone()).batch_size(64).mode(Mode::Iid).seed(round);
        let mut loader = loader.workers(2).build().unwrap();
        for step in 0..12 {
            let got = loader.next_batch().unwrap();
            let want = warm.gather_any(got.indices()).unwrap();
            let got = got.ragged("s").unwrap();
            for k in 0..got.len() {
                assert_eq!(got.record(k), want.record(k), "round {round}, step {step}, record {k}");
            }
        }
        loader.close();
        assert!(store.cold_gathers() >= 9, "round {round}: {} of 12+ steps read cold", store.cold_gathers());
    }
}

#[test]
fn a_hostile_location_in_a_cold_gather_is_an_error() {
    let _one = serial();
    let dir = scratch("hostile");
    write(&dir, true, Codec::Zstd);
    // Record 7 claims bytes far past data.zr, record 9 a length that wraps.
    let entry = |i: u64| PAGE_SIZE + i * LOC_SIZE;
    patch(&dir.join("meta.zr"), entry(7), &(u64::MAX - 16).to_le_bytes());
    patch(&dir.join("meta.zr"), entry(9) + 8, &u32::MAX.to_le_bytes());
    for i in [7, 9] {
        cache::evict(&dir).unwrap();
        let store = Store::open(&dir).unwrap();
        let err = store.gather_ragged(&[1, 2, i, 3]).expect_err("a hostile location read back");
        assert!(err.to_string().contains(&format!("record {i}")), "{err}");
        assert_eq!(store.cold_gathers(), 1, "record {i}: the gather did not read cold");
    }
}

/// Reading a whole cold store in random batches keeps none of it mapped in
/// the process: its resident memory is its batches, not the store (a map
/// faulted in one page at a time held every page it touched: 479 MB after
/// 30 batches of 64 KiB records, against 39 MB now, `zrecord bench`).
#[test]
fn a_cold_scan_keeps_no_store_pages_resident() {
    let _one = serial();
    let dir = scratch("scan");
    let mut w = Writer::create_dense(&dir, "|u1", &[16 << 10], CreateOptions::codec(Codec::Raw)).unwrap();
    let mut rng = Rng(3);
    for _ in 0..4 {
        w.append(&(0..1024 * (16 << 10)).map(|_| rng.next() as u8).collect::<Vec<u8>>()).unwrap();
    }
    w.close().unwrap();
    cache::evict(&dir).unwrap();
    let store = Store::open(&dir).unwrap();
    let before = rss_file();
    let mut order: Vec<u64> = (0..4096).collect();
    for k in (1..order.len()).rev() {
        order.swap(k, rng.below(k + 1));
    }
    for batch in order.chunks(256) {
        store.gather(batch).unwrap();
    }
    let grown = rss_file().saturating_sub(before);
    assert!(store.cold_gathers() >= 8, "{} cold gathers of 16", store.cold_gathers());
    // 64 MiB read; the location table (64 KiB) may stay mapped.
    assert!(grown < 8 << 20, "{grown} bytes of the store stayed resident in the process");
}

/// After a probe finds a store warm, the next probe waits for 256 records:
/// small gathers (or a dataset's few records per shard) do not each pay a
/// system call. A store evicted meanwhile is found cold at that probe.
#[test]
fn a_warm_store_is_probed_again_after_256_records() {
    let _one = serial();
    let dir = scratch("warm-probe");
    write(&dir, false, Codec::Zstd);
    let store = Store::open(&dir).unwrap(); // just written: resident
    store.gather(&[0, 1]).unwrap(); // the first gather probes: warm
                                    // (Pages a gather mapped stay resident: later gathers read others.)
    cache::evict(&dir).unwrap();
    // 63 gathers of 4: 252 records after the probe, read warm unprobed.
    for k in 0..63u64 {
        store.gather(&[k * 40 + 10, k * 40 + 11, k * 40 + 12, k * 40 + 13]).unwrap();
    }
    assert_eq!(store.cold_gathers(), 0, "a gather probed within 256 records of a warm probe");
    cache::evict(&dir).unwrap();
    store.gather(&[2600, 2601, 2602, 2603]).unwrap(); // 256 records: still trusted
    store.gather(&[2900, 2901]).unwrap(); // after 256: probes, finds them cold
    assert_eq!(store.cold_gathers(), 1);
}

/// A store partly in memory is read cold: the probe asks about records
/// spread over the batch, so one resident record (here the batch's first,
/// paged in by a gather of its own) does not send the rest through page
/// faults one at a time.
#[test]
fn a_batch_whose_first_record_is_resident_among_cold_ones_reads_cold() {
    let _one = serial();
    let dir = scratch("partly-warm");
    write(&dir, false, Codec::Raw);
    let idx = indices();
    let want = Store::open(&dir).unwrap().gather_any(&idx).unwrap();
    cache::evict(&dir).unwrap();
    let store = Store::open(&dir).unwrap();
    store.gather(&idx[..1]).unwrap(); // one record: read through the map, no probe
    assert_eq!(store.cold_gathers(), 0);
    let got = store.gather_any(&idx).unwrap();
    assert_eq!(store.cold_gathers(), 1, "a batch led by a resident record read warm");
    for k in 0..idx.len() {
        assert_eq!(got.record(k), want.record(k), "record {k}");
    }
}

/// A source that counts the reads in flight at once (`common/in_flight.rs`).
mod in_flight {
    use zrecord::source::{memory::MemorySource, ByteSource};
    include!("common/in_flight.rs");
}
use in_flight::InFlight;

/// A cold batch's records are read together, many at once (the device's
/// queue kept full), not one per gathering thread; what they decode to is
/// what a warm gather gives. Dense and Ragged, raw and zstd.
#[test]
fn a_cold_batch_has_many_reads_in_flight() {
    let _one = serial();
    for (ragged, codec) in
        [(false, Codec::Raw), (false, Codec::Zstd), (true, Codec::Raw), (true, Codec::Zstd)]
    {
        let dir = scratch(&format!("in-flight-{ragged}-{}", codec.name()));
        write(&dir, ragged, codec);
        let idx: Vec<u64> = indices().into_iter().take(64).collect();
        let want = Store::open(&dir).unwrap().gather_any(&idx).unwrap();
        let most = Arc::new(AtomicUsize::new(0));
        let data = InFlight {
            bytes: MemorySource::new(std::fs::read(dir.join("data.zr")).unwrap()),
            now: Arc::new(AtomicUsize::new(0)),
            most: most.clone(),
        };
        let meta = MemorySource::new(std::fs::read(dir.join("meta.zr")).unwrap());
        let store = Store::from_sources("in-flight", Box::new(meta), Box::new(data), None).unwrap();
        let got = store.gather_any(&idx).unwrap();
        assert_eq!(store.cold_gathers(), 1, "{ragged} {codec:?}");
        for k in 0..idx.len() {
            assert_eq!(got.record(k), want.record(k), "{ragged} {codec:?}: record {k}");
        }
        let most = most.load(Ordering::SeqCst);
        assert!(most >= 16, "{ragged} {codec:?}: at most {most} reads in flight for 64 cold records");
    }
}

/// Every store directory under `root` (a dataset's shard columns).
fn stores_under(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let path = e.unwrap().path();
        if path.join("meta.zr").exists() {
            found.push(path);
        } else if path.is_dir() {
            found.extend(stores_under(&path));
        }
    }
    found
}

/// A dataset at `scratch(name)` of 4 shards of 500 records, columns `r`
/// (Ragged, 1 to 8 KiB) and `d` (Dense, 4 KiB rows), committed.
fn write_dataset(name: &str, codec: Codec) -> PathBuf {
    use zrecord::dataset::writer::{commit, ColumnDef, CommitMode, ShardWriter};
    use zrecord::Geometry;
    let root = scratch(name);
    let columns = || {
        let def = |name: &str, geometry| ColumnDef {
            name: name.into(),
            dtype: "|u1".into(),
            geometry,
            options: CreateOptions::codec(codec),
        };
        vec![def("r", Geometry::Ragged), def("d", Geometry::Dense { item_shape: vec![4096] })]
    };
    let mut rng = Rng(17);
    let mut infos = Vec::new();
    for shard in 0..4 {
        let mut w = ShardWriter::create(&root, columns()).unwrap();
        for i in 0..500 {
            let n = 1024 * (1 + (shard * 500 + i) % 8);
            let r: Vec<u8> = (0..n).map(|j| if j % 2 == 0 { rng.next() as u8 } else { j as u8 }).collect();
            w.column("r").unwrap().append_ragged(&[(&[n as u64][..], &r[..])]).unwrap();
            w.column("d").unwrap().append(&r[..1024].repeat(4)).unwrap();
        }
        infos.push(w.finish().unwrap());
    }
    commit(root.to_str().unwrap(), &infos, CommitMode::Create).unwrap();
    root
}

/// A dataset's shards read cold, their records staged and decoded into one
/// batch laid out across the shards (Ragged) or into their rows (Dense),
/// give what they give warm.
#[test]
fn a_dataset_gathers_cold_what_it_gathers_warm() {
    use zrecord::Dataset;
    let _one = serial();
    for codec in [Codec::Raw, Codec::Zstd] {
        let root = write_dataset(&format!("dataset-{}", codec.name()), codec);
        let mut idx: Vec<u64> = indices().into_iter().map(|i| i % 2000).collect();
        idx.truncate(256);
        let warm = Dataset::open(root.to_str().unwrap()).unwrap();
        let want: Vec<_> =
            ["r", "d"].iter().map(|c| warm.column(c).unwrap().gather_any(&idx).unwrap()).collect();
        drop(warm);
        // Every shard cold, then every other one (a batch partly in memory:
        // the column reads all of it cold); read through the page cache and
        // past it.
        let modes =
            [(1, ColdReads::Auto), (2, ColdReads::Auto), (1, ColdReads::Direct), (2, ColdReads::Direct)];
        for (every, cold_reads) in modes {
            let mut stores = stores_under(&root);
            stores.sort(); // shards/<shard>/<column>: each shard's columns side by side
            for s in stores.chunks(2).step_by(every).flatten() {
                cache::evict(s).unwrap();
            }
            let before = cache::process_read_bytes();
            let mut options = zrecord::dataset::DatasetOptions::default();
            options.open.local.cold_reads = cold_reads;
            let ds = Dataset::open_with(root.to_str().unwrap(), &options).unwrap();
            for (c, want) in ["r", "d"].iter().zip(&want) {
                let got = ds.column(c).unwrap().gather_any(&idx).unwrap();
                for k in 0..idx.len() {
                    assert_eq!(
                        got.record(k),
                        want.record(k),
                        "{codec:?} {cold_reads:?} column {c}, 1/{every} cold: record {k}"
                    );
                }
            }
            if let (Some(a), Some(b)) = (before, cache::process_read_bytes()) {
                let least = 256 * 1024 / every as u64;
                assert!(
                    b - a >= least,
                    "{codec:?} {cold_reads:?}, 1/{every} cold: only {} bytes read from the device",
                    b - a
                );
            }
        }
    }
}

/// A dataset's column decides for a whole batch whether it is in memory:
/// with one shard warm and the others cold, a batch across them reads cold
/// in every shard, the warm one too. (Each shard asking about its own few
/// records found a warm one, then read its next 256 records, 64 batches of
/// a dataset of 64 shards, unasked through page faults one at a time as its
/// pages left the cache.)
#[test]
fn a_dataset_batch_reads_cold_in_every_shard_or_none() {
    use zrecord::dataset::Column;
    use zrecord::Dataset;
    let _one = serial();
    let root = write_dataset("dataset-one-warm", Codec::Raw);
    let mut stores = stores_under(&root);
    stores.retain(|s| s.ends_with("d"));
    stores.sort();
    assert_eq!(stores.len(), 4);
    let ds = Dataset::open(root.to_str().unwrap()).unwrap();
    let Column::Local(column) = ds.column("d").unwrap() else { panic!("a local column") };
    let shard_of = |s: usize| column.shard(s).unwrap().path().to_path_buf();
    let order: Vec<usize> = (0..4).map(|s| stores.iter().position(|p| *p == shard_of(s)).unwrap()).collect();
    drop(ds);
    let idx: Vec<u64> = indices().into_iter().map(|i| i % 2000).take(256).collect();
    for warm in [false, true] {
        // Shard 0 warm (its files read into the page cache) or not; the others cold.
        cache::evict_all(&stores).unwrap();
        if warm {
            std::fs::read(stores[order[0]].join("data.zr")).unwrap();
            std::fs::read(stores[order[0]].join("meta.zr")).unwrap();
        }
        let ds = Dataset::open(root.to_str().unwrap()).unwrap();
        let Column::Local(column) = ds.column("d").unwrap() else { panic!("a local column") };
        column.gather_any(&idx).unwrap();
        for s in 0..4 {
            let cold = column.shard(s).unwrap().cold_gathers();
            assert_eq!(cold, 1, "shard {s} (shard 0 warm: {warm}) read {cold} batches cold, not 1");
        }
    }
}

/// A damaged frame met on a read thread of a cold batch (where each record
/// decodes as soon as it is read) is an error naming the record, and the
/// store reads its other records after it.
#[test]
fn a_damaged_frame_in_a_cold_batch_is_an_error() {
    let _one = serial();
    for ragged in [false, true] {
        let dir = scratch(&format!("damaged-frame-{ragged}"));
        write(&dir, ragged, Codec::Zstd);
        let store = Store::open(&dir).unwrap();
        let loc = store.raw_locs(&[42]).unwrap()[0];
        let want = store.gather_any(&[1, 2, 3]).unwrap();
        drop(store);
        // Record 42's frame header (a reserved bit set: zstd refuses it;
        // damage in raw literals would decode unnoticed, which only a
        // sealed store's checksums catch). A Ragged record's shape prefix
        // is inside its frame.
        patch(&dir.join("data.zr"), loc.offset + 4, &[0xff; 4]);
        cache::evict(&dir).unwrap();
        let store = Store::open(&dir).unwrap();
        let idx: Vec<u64> = (0..64).map(|k| k * 37 % 3000).chain([42]).collect();
        let err = store.gather_any(&idx).expect_err("a damaged frame read back");
        assert!(err.to_string().contains("record 42"), "ragged {ragged}: {err}");
        assert_eq!(store.cold_gathers(), 1, "ragged {ragged}: the gather did not read cold");
        let got = store.gather_any(&[1, 2, 3]).unwrap();
        for k in 0..3 {
            assert_eq!(got.record(k), want.record(k), "ragged {ragged}: record {k}");
        }
    }
}
