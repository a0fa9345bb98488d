//! Fuzzing inside `cargo test`: real stores with bytes flipped, inserted,
//! cut and overwritten with hostile values, plus fully random files, opened
//! with `Store::from_sources` over memory and read record by record and all
//! at once, and served from memory to the remote reader, which must agree
//! with the local one. Never a panic, only typed errors, and — enforced by this binary's
//! allocator — no single allocation over 64 MiB: the reader never sizes a
//! buffer by a length field it has not checked against the bytes it holds.
//!
//! `ZRECORD_FUZZ_ITERS` (default 1500) sets the number of mutated inputs;
//! `ZRECORD_FUZZ_SEED` the first seed. Crashes found by the cargo-fuzz target
//! (`fuzz/`) are kept in `tests/fuzz-regressions/` and replayed here.

mod common;
mod fuzz_common;

use common::{fixtures_dir, Rng};
use fuzz_common::{exercise, exercise_remote, join, split, Files, MemoryServer, Reach};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use zrecord::format::RecordLoc;
use zrecord::remote::{
    block_on, HttpError, HttpGet, HttpRequest, HttpResponse, LocalBoxFuture, RemoteOptions, RemoteStore,
};
use zrecord::Records;
use zrecord::{Codec, CreateOptions, Error, Store, Writer};

/// Largest single allocation any test of this binary may make.
const LIMIT: usize = 64 << 20;
static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// The input being exercised, named in the report of an oversized allocation.
static CASE: AtomicU64 = AtomicU64::new(u64::MAX);

/// The system allocator, refusing (and reporting) any allocation over [`LIMIT`].
struct Bounded;

impl Bounded {
    fn allow(&self, size: usize) -> bool {
        LARGEST.fetch_max(size, Ordering::Relaxed);
        if size <= LIMIT {
            return true;
        }
        // Report without allocating, then fail the allocation (the process aborts).
        let mut buf = [0u8; 160];
        let mut w = StackWriter { buf: &mut buf, len: 0 };
        let _ = std::fmt::Write::write_fmt(
            &mut w,
            format_args!(
                "\nfuzz: allocation of {size} bytes (limit {LIMIT}) in case {}\n",
                CASE.load(Ordering::Relaxed)
            ),
        );
        let len = w.len;
        use std::io::Write;
        let _ = std::io::stderr().write_all(&buf[..len]);
        false
    }
}

struct StackWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl std::fmt::Write for StackWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator, except
// that oversized requests return null, which GlobalAlloc permits.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.allow(layout.size()) {
            // SAFETY: the caller upholds `alloc`'s contract; passed through.
            unsafe { System.alloc(layout) }
        } else {
            std::ptr::null_mut()
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.allow(layout.size()) {
            // SAFETY: as `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        } else {
            std::ptr::null_mut()
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.allow(new_size) {
            // SAFETY: as `alloc`; `ptr` came from this allocator.
            unsafe { System.realloc(ptr, layout, new_size) }
        } else {
            std::ptr::null_mut()
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

fn read_store(dir: &Path) -> Files {
    let read = |f: &str| std::fs::read(dir.join(f));
    (read("meta.zr").unwrap(), read("data.zr").unwrap(), read("dict.zr").ok())
}

/// Every loaderx fixture (published, empty and unpublished), and stores of
/// ours covering the dtypes and codecs the fixtures lack.
fn seeds() -> Vec<(String, Files)> {
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("meta.zr").exists())
        .collect();
    names.sort();
    for dir in names {
        out.push((dir.file_name().unwrap().to_string_lossy().into_owned(), read_store(&dir)));
    }
    let tmp = tempfile::tempdir().unwrap();
    let dict = std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap();
    let dir = tmp.path().join("ragged-U3-dict");
    let mut w = Writer::create_ragged(&dir, "<U3", CreateOptions::with_dict(dict)).unwrap();
    let text = [0x41u8; 48];
    w.append_ragged(&[(&[2, 2], &text[..]), (&[], &text[..12]), (&[1], &text[..12])]).unwrap();
    w.close().unwrap();
    out.push(("ours-ragged-U3-dict".into(), read_store(&dir)));
    let dir = tmp.path().join("dense-S7-zstd");
    let mut w = Writer::create_dense(&dir, "|S7", &[3], CreateOptions::codec(Codec::Zstd)).unwrap();
    w.append(&[b'z'; 21 * 5]).unwrap();
    w.close().unwrap();
    out.push(("ours-dense-S7-zstd".into(), read_store(&dir)));
    let dir = tmp.path().join("dense-M8-raw");
    let mut w = Writer::create_dense(&dir, "<M8[ns]", &[], CreateOptions::codec(Codec::Raw)).unwrap();
    w.append(&(0..64u8).collect::<Vec<_>>()).unwrap();
    w.close().unwrap();
    out.push(("ours-dense-M8-raw".into(), read_store(&dir)));
    out
}

/// Values that break length and offset fields.
fn hostile(rng: &mut Rng, files: &Files) -> u64 {
    let sizes = [files.0.len() as u64, files.1.len() as u64];
    let picks = [
        0,
        1,
        2,
        255,
        4064,
        4065,
        (1 << 31) - 1,
        1 << 31,
        (1 << 31) + 1,
        (1 << 32) - 1,
        1 << 32,
        1 << 60,
        (1 << 63) - 1,
        1 << 63,
        u64::MAX,
        sizes[rng.below(2)],
        sizes[rng.below(2)].wrapping_add(1),
        sizes[rng.below(2)].wrapping_sub(1),
        rng.next() >> rng.below(64),
    ];
    picks[rng.below(picks.len())]
}

fn put(buf: &mut [u8], at: usize, value: u64, width: usize) {
    if at + width <= buf.len() {
        buf[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
    }
}

/// One random mutation of a store's files.
fn mutate(rng: &mut Rng, files: &mut Files, seeds: &[(String, Files)]) {
    let value = hostile(rng, files);
    let (meta, data, dict) = files;
    let records = meta.len().saturating_sub(4096) / 16;
    let record = 4096 + 16 * rng.below(records.max(1));
    // Location and record damage (read past open) twice as often as the rest.
    const KINDS: [u8; 22] = [0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9, 9, 9, 10, 11, 12, 13, 14, 15];
    match KINDS[rng.below(KINDS.len())] {
        // Header fields.
        0 => put(meta, 0, value, 8),
        1 => put(meta, 8, value, 8),
        2 => put(meta, 16, value, 4),
        3 => put(meta, 20 + rng.below(12), value, 1),
        // One RecordLoc field.
        4 => put(meta, record, value, 8),
        5 => put(meta, record + 8, value, 4),
        6 => put(meta, record + 12, value, 4),
        // A location pointing at bytes that exist, with a hostile decoded size.
        7 if records > 0 => {
            let offset = rng.below(data.len() + 1);
            let phys = rng.below(data.len() - offset + 1);
            let loc =
                RecordLoc { offset: offset as u64, phys_length: phys as u32, logic_length: value as u32 };
            if let Some(entry) = meta.get_mut(record..record + 16) {
                entry.copy_from_slice(&loc.encode());
            }
        }
        // Bit flips in the schema, the table, or a stored record.
        8 => {
            let at = 32 + rng.below(meta.get(16..20).map_or(16, |b| b[0] as usize + 1));
            if let Some(b) = meta.get_mut(at) {
                *b ^= 1 << rng.below(8);
            }
        }
        9 if !data.is_empty() => {
            let at = rng.below(data.len());
            data[at] ^= 1 << rng.below(8);
        }
        10 if !meta.is_empty() => {
            let at = rng.below(meta.len());
            meta[at] = [0, 0xFF, 0x80, 0x7F, rng.next() as u8][rng.below(5)];
        }
        // Cuts, insertions and extensions.
        11 => {
            let target = if rng.below(2) == 0 { meta } else { data };
            let len = rng.below(target.len() + 1);
            target.truncate(len);
        }
        12 => {
            let target = if rng.below(2) == 0 { meta } else { data };
            let at = rng.below(target.len() + 1);
            let n = 1 + rng.below(64);
            let extra = rng.bytes(n);
            target.splice(at..at, extra);
        }
        13 => {
            let target = if rng.below(2) == 0 { meta } else { data };
            if !target.is_empty() {
                let at = rng.below(target.len());
                let end = (at + 1 + rng.below(64)).min(target.len());
                target.drain(at..end);
            }
        }
        // dict.zr: dropped, added, damaged.
        14 => match dict {
            Some(d) if rng.below(2) == 0 && !d.is_empty() => {
                let at = rng.below(d.len());
                d[at] ^= 0x40;
            }
            Some(_) => *dict = None,
            None => {
                *dict = Some(std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap())
            }
        },
        // Another store's data.zr.
        _ => *data = seeds[rng.below(seeds.len())].1 .1.clone(),
    }
}

fn iterations() -> u64 {
    std::env::var("ZRECORD_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500)
}

fn first_seed() -> u64 {
    std::env::var("ZRECORD_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5EED)
}

/// Exercise one input; a panic or broken contract fails the test with the
/// input saved for replay.
fn run_case(case: u64, files: Files) -> Reach {
    CASE.store(case, Ordering::Relaxed);
    let input = join(&files.0, &files.1, files.2.as_deref());
    let outcome = std::panic::catch_unwind(|| {
        let remote = exercise_remote(&files);
        exercise(files).and_then(|reach| remote.map(|()| reach))
    });
    let problem = match outcome {
        Ok(Ok(reach)) => return reach,
        Ok(Err(why)) => why,
        Err(_) => "panicked (see above)".to_string(),
    };
    let saved = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-case-{case}.bin"));
    std::fs::write(&saved, &input).unwrap();
    panic!(
        "fuzz case {case}: {problem}; input saved to {} (copy it to tests/fuzz-regressions/)",
        saved.display()
    );
}

#[test]
fn mutated_stores_fail_cleanly() {
    let seeds = seeds();
    for (k, (_, files)) in seeds.iter().enumerate() {
        run_case(k as u64, files.clone());
    }
    let mut rng = Rng(first_seed());
    let (mut opened, mut ok, mut failed) = (0, 0, 0);
    let n = iterations();
    for i in 0..n {
        let (_, base) = &seeds[rng.below(seeds.len())];
        let mut files = base.clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut files, &seeds);
        }
        let reach = run_case(1000 + i, files);
        opened += u64::from(reach.opened);
        ok += reach.records_ok;
        failed += reach.records_failed;
    }
    eprintln!(
        "{n} mutated stores: {opened} opened, {ok} records read, {failed} refused; largest allocation {} bytes",
        LARGEST.load(Ordering::Relaxed)
    );
    // The mutations must reach past open and into the records, not just break headers.
    assert!(opened > n / 4 && failed > n / 20 && ok > n, "mutations too shallow");
}

#[test]
fn random_files_fail_cleanly() {
    let mut rng = Rng(first_seed() ^ 0xF00D);
    for i in 0..iterations() / 2 {
        let meta_len = [0, 31, 32, 100, 4096, 4096 + 16 * rng.below(8), rng.below(6000)][rng.below(7)];
        let mut meta = rng.bytes(meta_len);
        if rng.below(2) == 0 && meta.len() >= 32 {
            // A plausible header, so the random bytes after it get read.
            meta[16..20].copy_from_slice(&(1 + rng.below(40) as u32).to_le_bytes());
            meta[20..31].fill(0);
            meta[31] = rng.below(3) as u8;
        }
        let n = rng.below(3000);
        let data = rng.bytes(n);
        let n = rng.below(300);
        let dict = (rng.below(3) == 0).then(|| rng.bytes(n));
        run_case(2_000_000 + i, (meta, data, dict));
    }
}

/// Hand-made inputs for the bugs this suite found, and every crash input the
/// cargo-fuzz target found (`tests/fuzz-regressions/*.bin`, in `join`'s format).
#[test]
fn regressions_replay() {
    let fixture = |name: &str| read_store(&fixtures_dir().join(name));
    let loc_at = |meta: &[u8], i: usize| {
        RecordLoc::decode(meta[4096 + 16 * i..4096 + 16 * i + 16].try_into().unwrap())
    };
    let mut cases: Vec<(String, Files)> = Vec::new();
    // A small frame claiming 2^31 bytes (was: a zero-filled 2 GiB buffer).
    let mut f = fixture("ragged-i32-tokens-zstd");
    let loc = loc_at(&f.0, 3);
    f.0[4096 + 48..4096 + 64].copy_from_slice(&RecordLoc { logic_length: 1 << 31, ..loc }.encode());
    cases.push(("2^31 claim, small frame".into(), f));
    // A frame big enough for a 1 GiB claim by the expansion bound, declaring another size.
    let mut f = fixture("ragged-i32-tokens-zstd");
    let frame = zstd::bulk::compress(&Rng(9).bytes(40_000), 3).unwrap();
    let tail = f.1.len() as u64;
    f.1.extend(&frame);
    f.0[8..16].copy_from_slice(&(tail + frame.len() as u64).to_le_bytes());
    let loc = RecordLoc { offset: tail, phys_length: frame.len() as u32, logic_length: 1 << 30 };
    f.0[4096..4112].copy_from_slice(&loc.encode());
    cases.push(("1 GiB claim, 40 KB frame".into(), f));
    // A Dense schema of 2^31-byte rows over a store of small records.
    let mut f = fixture("dense-u8-img-zstd");
    let schema =
        rmp_serde::to_vec_named(&serde_json::json!({"dtype": "|u1", "item_shape": [1u64 << 31]})).unwrap();
    f.0[16..20].copy_from_slice(&(schema.len() as u32).to_le_bytes());
    f.0[32..32 + schema.len()].copy_from_slice(&schema);
    cases.push(("2^31-byte rows".into(), f));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "bin") {
                cases.push((path.display().to_string(), split(&std::fs::read(&path).unwrap())));
            }
        }
    }
    for (k, (name, files)) in cases.into_iter().enumerate() {
        eprintln!("replaying {name}");
        run_case(3_000_000 + k as u64, files);
    }
}

#[test]
fn join_and_split_round_trip() {
    let files: Files = (vec![1, 2, 3], vec![4, 5], Some(vec![6]));
    assert_eq!(split(&join(&files.0, &files.1, files.2.as_deref())), files);
    let files: Files = (vec![1], vec![], None);
    assert_eq!(split(&join(&files.0, &files.1, None)), files);
    // Too short for the lengths: no meta, an empty dict.zr, no data.
    assert_eq!(split(&[0xFF; 3]), (vec![], vec![], Some(vec![])));
}

/// Writes the seeds as a starting corpus for the cargo-fuzz target:
/// `cargo test --test fuzz -- --ignored write_cargo_fuzz_corpus`.
#[test]
#[ignore]
fn write_cargo_fuzz_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/store");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, (meta, data, dict)) in seeds() {
        if meta.len() + data.len() > 256 << 10 {
            continue; // libFuzzer works best on small inputs
        }
        std::fs::write(dir.join(name), join(&meta, &data, dict.as_deref())).unwrap();
    }
}

/// A server that mangles the framing of its answers (status, Content-Range,
/// ETag, encoding, body length) or drops the connection, at random; bodies
/// of the right length are never altered (that is stored-byte corruption,
/// which the store mutations above cover).
struct Mangler {
    server: MemoryServer,
    rng: RefCell<Rng>,
    /// One answer in `odds` is mangled.
    odds: usize,
}

impl Mangler {
    fn mangle(&self, mut r: HttpResponse) -> Result<HttpResponse, HttpError> {
        let rng = &mut *self.rng.borrow_mut();
        if rng.below(self.odds) != 0 {
            return Ok(r);
        }
        let total = r.content_range.as_deref().and_then(|c| c.rsplit('/').next()?.parse::<u64>().ok());
        let total = total.unwrap_or(0);
        match rng.below(12) {
            0 => r.status = [200, 204, 304, 400, 403, 404, 416, 500, 503][rng.below(9)],
            1 => r.content_range = None,
            2 => {
                r.content_range =
                    Some(["bytes", "bytes 0-/", "bytes */*", "items 0-1/2", ""][rng.below(5)].into())
            }
            3 => {
                r.content_range =
                    Some(format!("bytes 0-{}/{}", r.body.len(), total + 1 + rng.below(9) as u64))
            }
            4 => r.content_range = Some(format!("bytes {}-{}/{total}", rng.below(9), rng.below(99_999))),
            5 => r.body.truncate(rng.below(r.body.len().max(1))),
            6 => {
                let n = 1 + rng.below(64);
                r.body.extend(rng.bytes(n));
            }
            7 => r.etag = [None, Some("\"other\"".into()), Some("W/\"fuzz\"".into())][rng.below(3)].clone(),
            8 => r.content_encoding = Some(["gzip", "br", "identity", ""][rng.below(4)].into()),
            9 => return Err(HttpError::Network("connection reset (fuzz)".into())),
            10 => return Err(HttpError::Fatal("refused (fuzz)".into())),
            _ => r.status = 206,
        }
        Ok(r)
    }
}

impl HttpGet for Mangler {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        Box::pin(async move {
            let answer = self.server.get(req).await?;
            self.mangle(answer)
        })
    }
    fn sleep(&self, _: Duration) -> LocalBoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// What a read through the remote reader may end in when the server mangles
/// its answers: the right records, or an error that says what went wrong.
fn remote_outcome_ok(what: &str, got: zrecord::Result<Vec<u8>>, want: &[u8]) {
    match got {
        Ok(bytes) => assert!(bytes == want, "{what}: a mangled answer gave wrong bytes"),
        Err(
            Error::Remote { .. }
            | Error::StoreChanged { .. }
            | Error::NotFound { .. }
            | Error::BadFormat { .. }
            | Error::Unpublished { .. }
            | Error::CorruptRecord { .. },
        ) => {}
        Err(e) => panic!("{what}: unexpected error {e:?}"),
    }
}

#[test]
fn mangled_answers_fail_cleanly_or_read_right() {
    let seeds: Vec<(String, Files)> =
        seeds().into_iter().filter(|(n, _)| !n.contains("unpublished")).collect();
    let mut rng = Rng(first_seed() ^ 0xBAD);
    let options = RemoteOptions { max_gap: 64, max_request: 4096, cache_pages: 2, ..Default::default() };
    let (mut ok, mut refused) = (0u64, 0u64);
    for case in 0..iterations() / 3 {
        let (name, files) = &seeds[rng.below(seeds.len())];
        let local = Store::from_sources(
            "fuzz",
            Box::new(zrecord::source::memory::MemorySource::new(files.0.clone())),
            Box::new(zrecord::source::memory::MemorySource::new(files.1.clone())),
            files.2.clone(),
        )
        .unwrap();
        let read_local = |idx: &[u64]| match local.item_shape() {
            Some(_) => local.gather(idx).unwrap().bytes().to_vec(),
            None => local.gather_ragged(idx).unwrap().iter().flat_map(|(_, b)| b.to_vec()).collect(),
        };
        let client = Mangler {
            server: MemoryServer { files: files.clone() },
            rng: RefCell::new(Rng(rng.next())),
            odds: [2, 5, 20][rng.below(3)],
        };
        let what = format!("case {case} ({name})");
        CASE.store(4_000_000 + case, Ordering::Relaxed);
        let remote = match block_on(RemoteStore::open_http(client, "http://fuzz.invalid/s/", options.clone()))
        {
            Ok(r) => r,
            Err(e) => {
                remote_outcome_ok(&what, Err(e), &[]);
                refused += 1;
                continue;
            }
        };
        assert_eq!(remote.info().header, local.info().header, "{what}: header");
        let n = local.len();
        let mut batches: Vec<Vec<u64>> = (0..n.min(8)).map(|i| vec![i]).collect();
        batches.push((0..n).rev().collect());
        for idx in batches.iter().filter(|b| !b.is_empty()) {
            let got = block_on(async {
                let mut batch = zrecord::Batch::for_store(remote.info());
                remote.gather_batch_into(idx, &mut batch).await?;
                Ok((0..batch.len()).flat_map(|k| batch.record(k).1.to_vec()).collect::<Vec<u8>>())
            });
            let failed = got.is_err();
            remote_outcome_ok(
                &format!("{what}, records {:?}", &idx[..idx.len().min(3)]),
                got,
                &read_local(idx),
            );
            if failed {
                refused += 1;
            } else {
                ok += 1;
            }
        }
    }
    eprintln!("mangled answers: {ok} reads right, {refused} refused");
    assert!(ok > 100 && refused > 100, "the mangling must both pass and break reads");
}
