//! The checksum sidecar: written by the writer and by `seal`, checked by
//! checked reads (local and over HTTP) and by `verify`; a corruption
//! campaign over sealed copies of every fixture.

mod common;
#[path = "common/nginx.rs"]
mod nginx;

use common::{copy_store, fixture_copy, fixtures, patch, Rng};
use std::path::Path;
use std::process::Command;
use zrecord::format::sums::{Sums, SUMS};
use zrecord::format::{Geometry, RecordLoc, Verify, LOC_SIZE, PAGE_SIZE};
use zrecord::local::seal::{seal, Sealed};
use zrecord::local::writer::{CreateOptions, Writer};
use zrecord::remote::RemoteOptions;
use zrecord::{Backend, Codec, Error, OpenOptions, Records, Store};

fn checked(dir: &Path) -> zrecord::Result<Store> {
    Store::open_with(dir, OpenOptions { verify: Verify::Always, ..Default::default() })
}

/// Read every record of `store`; the first error.
fn read_all(store: &dyn Records) -> zrecord::Result<()> {
    let all: Vec<u64> = (0..store.len()).collect();
    store.gather_any(&all).map(|_| ())
}

#[test]
fn the_writer_seals_what_seal_would_write() {
    let tmp = tempfile::tempdir().unwrap();
    for codec in [Codec::Raw, Codec::Zstd] {
        let dense = tmp.path().join(format!("dense-{}", codec.name()));
        let mut w = Writer::create_dense(&dense, "<i4", &[3], CreateOptions::codec(codec)).unwrap();
        // Appends in several calls and windows: the sidecar follows each.
        for k in 0..5i32 {
            w.append_typed(&(0..300 * (k + 1)).collect::<Vec<i32>>()).unwrap();
        }
        w.close().unwrap();
        let ragged = tmp.path().join(format!("ragged-{}", codec.name()));
        let mut w = Writer::create_ragged(&ragged, "<u2", CreateOptions::codec(codec)).unwrap();
        let payloads: Vec<Vec<u8>> = (0..50u16).map(|i| vec![i as u8; 2 * (1 + i as usize % 7)]).collect();
        let shapes: Vec<[u64; 1]> = payloads.iter().map(|p| [p.len() as u64 / 2]).collect();
        let records: Vec<(&[u64], &[u8])> =
            shapes.iter().zip(&payloads).map(|(s, p)| (&s[..], &p[..])).collect();
        w.append_ragged(&records[..20]).unwrap();
        w.append_ragged(&records[20..]).unwrap();
        w.close().unwrap();
        for dir in [&dense, &ragged] {
            let written = std::fs::read(dir.join(SUMS)).unwrap();
            let store = Store::open(dir).unwrap();
            assert_eq!(written, store.sidecar().unwrap(), "{dir:?}: the writer's sidecar is the store's");
            assert_eq!(seal(dir, false).unwrap(), Sealed::UpToDate(store.len()));
            assert!(!dir.join("sums.zr.partial").exists());
            read_all(&checked(dir).unwrap()).unwrap();
        }
    }
    // A store written without a sidecar opens checked only if asked to when sealed.
    let plain = tmp.path().join("plain");
    let options = CreateOptions { seal: false, ..CreateOptions::codec(Codec::Raw) };
    let mut w = Writer::create_dense(&plain, "|u1", &[4], options).unwrap();
    w.append(&[1, 2, 3, 4]).unwrap();
    w.close().unwrap();
    assert!(!plain.join(SUMS).exists());
    match checked(&plain) {
        Err(e @ Error::NotFound { .. }) => assert!(e.to_string().contains("zrecord seal"), "{e}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let lenient = Store::open_with(&plain, OpenOptions { verify: Verify::IfSealed, ..Default::default() });
    assert!(!lenient.unwrap().is_checked());
}

#[test]
fn seal_keeps_a_matching_sidecar_and_refuses_to_bless_a_changed_store() {
    let (_tmp, dir) = fixture_copy("dense-u8-img-zstd");
    assert_eq!(seal(&dir, false).unwrap(), Sealed::Written(40));
    assert_eq!(seal(&dir, false).unwrap(), Sealed::UpToDate(40));
    common::damage_record(&dir, 3);
    match seal(&dir, false) {
        Err(e @ Error::ChecksumMismatch { .. }) => assert!(e.to_string().contains("--force"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(seal(&dir, true).unwrap(), Sealed::Written(40));
}

/// A sidecar that covers another number of records is reported, never trusted.
#[test]
fn a_sidecar_of_another_length_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, n: u8| {
        let dir = tmp.path().join(name);
        let mut w = Writer::create_dense(&dir, "|u1", &[2], CreateOptions::codec(Codec::Raw)).unwrap();
        w.append(&vec![7; 2 * n as usize]).unwrap();
        w.close().unwrap();
        dir
    };
    let (short, long) = (write("short", 3), write("long", 5));
    std::fs::copy(short.join(SUMS), long.join(SUMS)).unwrap();
    match checked(&long) {
        Err(e @ Error::ChecksumMismatch { .. }) => {
            assert!(e.to_string().contains("covers 3 records but the store holds 5"), "{e}")
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    let out = zrecord_cli(&["verify", "--json", long.to_str().unwrap()]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("covers 3 records but the store holds 5"), "{text}");
}

fn zrecord_cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zrecord")).args(args).output().unwrap()
}

/// Where a flipped byte lies, and so who must report it.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// Record `i`'s stored bytes in data.zr.
    Record(u64),
    /// Location entry of record `i`.
    Location(u64),
    /// dict.zr.
    Dict,
    /// Bytes no reader looks at.
    Unused,
}

fn owner(locs: &[RecordLoc], file: &str, at: u64) -> Owner {
    match file {
        "dict.zr" => Owner::Dict,
        "meta.zr" => Owner::Location((at - PAGE_SIZE) / LOC_SIZE),
        _ => locs
            .iter()
            .position(|l| (l.offset..l.end()).contains(&at))
            .map_or(Owner::Unused, |i| Owner::Record(i as u64)),
    }
}

/// Flip bytes at random places of sealed copies of every fixture: every
/// flip of a byte a reader uses is caught by a checked open or gather and
/// by `verify`, naming the record or the file; no flip panics.
#[test]
fn corruption_campaign_over_sealed_fixtures() {
    let iters: usize = std::env::var("ZRECORD_SUMS_FLIPS").ok().and_then(|v| v.parse().ok()).unwrap_or(12);
    let mut rng = Rng(0x5eed_5005);
    let (mut caught, mut unused, mut verified) = (0usize, Vec::new(), 0usize);
    for f in fixtures().into_iter().filter(|f| f.len > 0) {
        let tmp = tempfile::tempdir().unwrap();
        let pristine = tmp.path().join("pristine");
        copy_store(&f.path(), &pristine);
        assert_eq!(seal(&pristine, false).unwrap(), Sealed::Written(f.len));
        let store = Store::open(&pristine).unwrap();
        let locs = store.raw_locs(&(0..f.len).collect::<Vec<_>>()).unwrap();
        drop(store);
        let mut targets = vec![("data.zr", 0, std::fs::metadata(pristine.join("data.zr")).unwrap().len())];
        targets.push(("meta.zr", PAGE_SIZE, PAGE_SIZE + LOC_SIZE * f.len));
        if pristine.join("dict.zr").exists() {
            targets.push(("dict.zr", 0, std::fs::metadata(pristine.join("dict.zr")).unwrap().len()));
        }
        for k in 0..iters {
            let (file, start, end) = targets[k % targets.len()];
            let at = start + rng.below((end - start) as usize) as u64;
            let dir = tmp.path().join(format!("flip{k}"));
            copy_store(&pristine, &dir);
            let path = dir.join(file);
            let old = std::fs::read(&path).unwrap()[at as usize];
            patch(&path, at, &[old ^ (1 << rng.below(8))]);
            let who = owner(&locs, file, at);
            let result = checked(&dir).and_then(|s| read_all(&s));
            match (&who, &result) {
                (Owner::Unused, _) => {
                    unused.push(format!("{} {file}@{at}", f.name));
                    continue;
                }
                (_, Ok(())) => panic!("{}: flip at {file}@{at} ({who:?}) read back without an error", f.name),
                (Owner::Record(i), Err(e)) => assert!(
                    e.to_string().contains(&format!("record {i}")),
                    "{}: flip in record {i} reported as: {e}",
                    f.name
                ),
                (Owner::Location(_), Err(e)) => assert!(e.to_string().contains("meta.zr"), "{}: {e}", f.name),
                (Owner::Dict, Err(e)) => assert!(e.to_string().contains("dict.zr"), "{}: {e}", f.name),
            }
            caught += 1;
            // verify names the same record or file (a process per flip: every third).
            if k % 3 == 0 {
                let out = zrecord_cli(&["verify", dir.to_str().unwrap()]);
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(!out.status.success(), "{}: verify passed a flip at {file}@{at}: {text}", f.name);
                let named = match who {
                    Owner::Record(i) => text.contains(&format!("record {i}")) && text.contains("data.zr"),
                    Owner::Location(_) => text.contains("meta.zr"),
                    _ => text.contains("dict.zr"),
                };
                assert!(named, "{}: flip at {file}@{at} ({who:?}): {text}", f.name);
                verified += 1;
            }
        }
    }
    eprintln!("{caught} flips caught ({verified} also by verify); unused bytes flipped: {unused:?}");
    assert!(caught > 100, "the campaign flipped too few used bytes ({caught})");
    // loaderx and zrecord write data.zr without gaps: no flip found unused bytes.
    assert!(unused.is_empty(), "flips in unused bytes: {unused:?}");
}

/// Checked raw gathers hash each record while they copy it (one pass, AVX2
/// where present): a flipped byte anywhere in a long record, a Ragged
/// record's shape prefix included (hashed, never copied), fails the gather
/// naming the record; the unflipped store reads back exactly.
#[test]
fn checked_raw_gathers_catch_a_flip_anywhere_in_long_records() {
    let tmp = tempfile::tempdir().unwrap();
    let ints = |i: u32, n: u32| (0..n).flat_map(|j| (i * 7919 + j).to_le_bytes()).collect::<Vec<u8>>();
    let dense = tmp.path().join("dense");
    let mut w = Writer::create_dense(&dense, "<i4", &[700], CreateOptions::codec(Codec::Raw)).unwrap();
    (0..6).for_each(|i| w.append(&ints(i, 700)).unwrap());
    w.close().unwrap();
    let ragged = tmp.path().join("ragged");
    let mut w = Writer::create_ragged(&ragged, "<i4", CreateOptions::codec(Codec::Raw)).unwrap();
    let records: Vec<(Vec<u64>, Vec<u8>)> =
        (0..6).map(|i| (vec![u64::from(40 + i * 300)], ints(i, 40 + i * 300))).collect();
    let refs: Vec<_> = records.iter().map(|(s, b)| (s.as_slice(), b.as_slice())).collect();
    w.append_ragged(&refs).unwrap();
    w.close().unwrap();
    for dir in [&dense, &ragged] {
        let store = checked(dir).unwrap();
        let all: Vec<u64> = (0..6).collect();
        let (got, want) =
            (store.gather_any(&all).unwrap(), Store::open(dir).unwrap().gather_any(&all).unwrap());
        for k in 0..6 {
            assert_eq!(got.record(k), want.record(k), "{}: record {k}", dir.display());
            assert_eq!(got.record(k).1, &ints(k as u32, got.record(k).1.len() as u32 / 4)[..]);
        }
        let locs = store.raw_locs(&all).unwrap();
        drop(store);
        // Record 4's first byte (a Ragged record's prefix), a middle one, its last.
        let loc = locs[4];
        for at in [loc.offset, loc.offset + u64::from(loc.phys_length) / 2, loc.end() - 1] {
            let flipped = tmp.path().join("flipped");
            copy_store(dir, &flipped);
            let path = flipped.join("data.zr");
            let old = std::fs::read(&path).unwrap()[at as usize];
            patch(&path, at, &[old ^ 0x10]);
            // Both backends: pread copies a raw record straight into the
            // batch, which must not skip the check.
            for backend in [Backend::Mmap, Backend::Pread] {
                let options = OpenOptions { verify: Verify::Always, backend, ..Default::default() };
                let err = Store::open_with(&flipped, options)
                    .and_then(|s| read_all(&s))
                    .expect_err("a flipped byte read back");
                assert!(
                    err.to_string().contains("record 4"),
                    "{}: {backend:?}: flip at {at}: {err}",
                    dir.display()
                );
            }
            std::fs::remove_dir_all(&flipped).unwrap();
        }
    }
}

/// Checked reads over HTTP fetch the sidecar's pages like location pages.
#[test]
fn checked_reads_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let f = fixtures().into_iter().find(|f| f.name == "ragged-i32-tokens-zstd").unwrap();
    let dir = tmp.path().join("s");
    copy_store(&f.path(), &dir);
    let server = nginx::Nginx::start(tmp.path());
    let url = server.url("s");
    let options = |verify| RemoteOptions { verify, ..Default::default() };
    let open = |verify| {
        zrecord::open::remote(&url, &zrecord::open::Options { remote: options(verify), ..Default::default() })
    };
    match open(Verify::Always) {
        Err(e @ Error::NotFound { .. }) => assert!(e.to_string().contains("zrecord seal"), "{e}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(!open(Verify::IfSealed).unwrap().as_async().is_checked());
    seal(&dir, false).unwrap();
    let remote = open(Verify::Always).unwrap();
    read_all(&remote).unwrap();
    let s = remote.stats();
    assert_eq!(s.sums_requests, 2, "the sidecar's header at open, then one page of checksums: {s:?}");
    assert_eq!(s.meta_requests + s.data_requests + s.dict_requests + s.sums_requests, s.requests);
    let sidecar = Sums::parse("s", &std::fs::read(dir.join(SUMS)).unwrap()).unwrap();
    assert_eq!(remote.read_sidecar().unwrap().map(|b| Sums::parse("s", &b).unwrap()), Some(sidecar));
    // A record changed on the server after sealing: its gather fails, naming it.
    common::damage_record(&dir, 5);
    let remote = open(Verify::Always).unwrap();
    match remote.gather_ragged(&[4, 5]) {
        Err(e @ Error::ChecksumMismatch { .. }) => assert!(e.to_string().contains("record 5"), "{e}"),
        other => panic!("expected a mismatch, got {other:?}"),
    }
    // verify over HTTP names it too.
    let out = zrecord_cli(&["verify", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && text.contains("record 5") && text.contains("data.zr"), "{text}");
}

/// Unsealed stores: verify says what it cannot see and how to fix it.
#[test]
fn verify_without_a_sidecar_says_how_to_seal() {
    let (_tmp, dir) = fixture_copy("dense-f32-zstd");
    let out = zrecord_cli(&["verify", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("silent corruption") && text.contains("zrecord seal"), "{text}");
    let out = zrecord_cli(&["verify", "--json", dir.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sealed"], false);
    seal(&dir, false).unwrap();
    let out = zrecord_cli(&["verify", "--json", dir.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["sealed"].as_bool(), v["ok"].as_bool()), (Some(true), Some(true)));
    // Ragged stores read checked too.
    let (_t, r) = fixture_copy("ragged-i32-tokens-zstd");
    seal(&r, false).unwrap();
    let store = checked(&r).unwrap();
    assert!(matches!(store.geometry(), Geometry::Ragged));
    read_all(&store).unwrap();
}
