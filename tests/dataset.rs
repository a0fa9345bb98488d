//! Datasets on the local file system: shards written apart and committed,
//! read as one against the same records, every commit mode, and each error
//! a broken dataset gives.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use zrecord::dataset::writer::{self, ColumnDef};
use zrecord::dataset::{commit, CommitMode, Dataset, DatasetOptions, ShardInfo, ShardWriter};
use zrecord::format::schema::Geometry;
use zrecord::format::Verify;
use zrecord::{Codec, CreateOptions, Error, Records, Writer};

/// Record `i`: a Dense row of two f32 and a Ragged run of `i % 7` u16.
fn dense_row(i: u64) -> [f32; 2] {
    [i as f32, -(i as f32) * 0.5]
}
fn ragged_rec(i: u64) -> Vec<u16> {
    (0..i % 7 + 1).map(|k| (i * 31 + k) as u16).collect()
}

use common::dataset_columns as columns;

/// Write records `range` as one shard of the dataset at `root`.
fn write_shard(root: &Path, range: std::ops::Range<u64>, codec: Codec) -> ShardInfo {
    let mut w = ShardWriter::create(root, columns(codec)).unwrap();
    for i in range {
        w.column("x").unwrap().append_typed(&dense_row(i)).unwrap();
        let r = ragged_rec(i);
        let shape = [r.len() as u64];
        w.column("tokens").unwrap().append_ragged(&[(&shape[..], bytemuck::cast_slice(&r))]).unwrap();
    }
    w.finish().unwrap()
}

/// One store holding records `0..n` of column `x`.
fn one_store(dir: &Path, n: u64, codec: Codec) -> zrecord::Store {
    let mut w = Writer::create_dense(dir, "<f4", &[2], CreateOptions::codec(codec)).unwrap();
    for i in 0..n {
        w.append_typed(&dense_row(i)).unwrap();
    }
    w.close().unwrap();
    zrecord::Store::open(dir).unwrap()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn build(root: &Path, cuts: &[u64], codec: Codec) -> Vec<ShardInfo> {
    let infos: Vec<ShardInfo> = cuts.windows(2).map(|w| write_shard(root, w[0]..w[1], codec)).collect();
    commit(root.to_str().unwrap(), &infos, CommitMode::Create).unwrap();
    infos
}

fn check_records(ds: &Dataset, indices: &[u64]) {
    let x = ds.column("x").unwrap();
    let got = x.gather(indices).unwrap();
    let want: Vec<f32> = indices.iter().flat_map(|&i| dense_row(i)).collect();
    assert_eq!(got.as_slice::<f32>().unwrap(), &want[..]);
    assert_eq!(got.shape(), &[indices.len() as u64, 2]);
    let mut buf = vec![0u8; indices.len() * 8];
    x.gather_into(indices, &mut buf).unwrap();
    assert_eq!(bytemuck::pod_collect_to_vec::<u8, f32>(&buf), want);
    let t = ds.column("tokens").unwrap().gather_ragged(indices).unwrap();
    for (k, &i) in indices.iter().enumerate() {
        let (shape, bytes) = t.record(k);
        assert_eq!(shape, &[i % 7 + 1]);
        assert_eq!(bytemuck::pod_collect_to_vec::<u8, u16>(bytes), ragged_rec(i), "record {i}");
    }
}

/// A dataset of more shards than the old fixed cache of 512: random batches
/// read every record right, and every shard stays open where the process
/// has room for them (a cache of 512 closed and reopened most of a batch's
/// shards, batch after batch), as few as the room allows where it has not.
#[test]
fn many_shards_stay_open_when_the_process_has_room() {
    let dir = tmp();
    let root = dir.path().join("ds");
    let cuts: Vec<u64> = (0..=600).collect();
    build(&root, &cuts, Codec::Raw);
    let ds = Dataset::open(root.to_str().unwrap()).unwrap();
    let mut x = 3u64;
    for _ in 0..8 {
        let idx: Vec<u64> = (0..256)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (x >> 33) % 600
            })
            .collect();
        check_records(&ds, &idx);
    }
    check_records(&ds, &(0..600).collect::<Vec<_>>());
    let open = ds.column("x").unwrap().open_shards();
    match zrecord::local::sys::open_room() {
        // Half the room, shared by the two columns, 4 files and 2 maps a shard.
        Some((files, maps)) if files / 2 / 4 / 2 >= 600 && maps / 2 / 2 / 2 >= 600 => assert_eq!(open, 600),
        Some(_) => assert!(open < 600, "{open} shards open, more than the room for them"),
        None => assert_eq!(open, zrecord::dataset::concat::OPEN_SHARDS),
    }
}

#[test]
fn shards_read_as_one_store() {
    let dir = tmp();
    let root = dir.path().join("ds");
    build(&root, &[0, 10, 10, 25, 26, 60], Codec::Zstd);
    let ds = Dataset::open(root.to_str().unwrap()).unwrap();
    assert_eq!((ds.len(), ds.version(), ds.manifest().shards.len()), (60, 1, 5));
    assert_eq!(ds.column("x").unwrap().open_shards(), 0, "opening costs the manifest alone");
    let all: Vec<u64> = (0..60).collect();
    check_records(&ds, &all);
    check_records(&ds, &[59, 0, 10, 25, 25, 3, 26, 9, 40]);
    check_records(&ds, &[12]);
    check_records(&ds, &[]);
    // The same batches as from one store holding the same records.
    let one = one_store(&dir.path().join("one"), 60, Codec::Zstd);
    let batch = [7, 55, 11, 30, 0, 59];
    assert_eq!(ds.column("x").unwrap().gather(&batch).unwrap().bytes(), one.gather(&batch).unwrap().bytes());
    let e = ds.column("x").unwrap().gather(&[60]).unwrap_err();
    assert!(matches!(e, Error::IndexOutOfRange { index: 60, len: 60, .. }), "{e}");
    assert!(ds.column("nope").unwrap_err().to_string().contains("x, tokens"));
    // Every column at once.
    let both = ds.gather(&[1, 2], None).unwrap();
    assert_eq!(
        both.iter().map(|(n, b)| (n.as_str(), b.len())).collect::<Vec<_>>(),
        [("x", 2), ("tokens", 2)]
    );
}

#[test]
fn uncommitted_shards_are_invisible_and_gc_removes_them() {
    let dir = tmp();
    let root = dir.path().join("ds");
    build(&root, &[0, 5], Codec::Raw);
    let orphan = write_shard(&root, 5..9, Codec::Raw); // never committed
    let ds = Dataset::open(root.to_str().unwrap()).unwrap();
    assert_eq!(ds.len(), 5);
    let target = root.to_str().unwrap();
    let keep = writer::gc(target, std::time::Duration::from_secs(3600), false).unwrap();
    assert!(keep.is_empty(), "younger than the age: kept");
    let dry = writer::gc(target, std::time::Duration::ZERO, true).unwrap();
    assert_eq!(dry, std::slice::from_ref(&orphan.path));
    assert!(root.join(&orphan.path).is_dir());
    let gone = writer::gc(target, std::time::Duration::ZERO, false).unwrap();
    assert_eq!(gone, std::slice::from_ref(&orphan.path));
    assert!(!root.join(&orphan.path).exists());
    check_records(&Dataset::open(root.to_str().unwrap()).unwrap(), &[0, 4]);
}

#[test]
fn commit_modes_and_versions() {
    let dir = tmp();
    let root = dir.path().join("ds");
    let target = root.to_str().unwrap();
    build(&root, &[0, 4], Codec::Zstd);
    let again = write_shard(&root, 0..1, Codec::Zstd);
    assert!(matches!(commit(target, &[again], CommitMode::Create), Err(Error::AlreadyExists { .. })));
    let more = write_shard(&root, 4..9, Codec::Zstd);
    let m = commit(target, std::slice::from_ref(&more), CommitMode::Append).unwrap();
    assert_eq!((m.version, m.length), (2, 9));
    check_records(&Dataset::open(target).unwrap(), &[8, 0, 4]);
    let e = commit(target, std::slice::from_ref(&more), CommitMode::Append).unwrap_err();
    assert!(e.to_string().contains("already committed"), "{e}");
    let fresh = write_shard(&root, 0..2, Codec::Zstd);
    let m = commit(target, &[fresh], CommitMode::Overwrite).unwrap();
    assert_eq!((m.version, m.length), (3, 2));
    // Older versions stay readable by number.
    let v2 = Dataset::open_with(target, &DatasetOptions { version: Some(2), ..Default::default() }).unwrap();
    assert_eq!((v2.version(), v2.len()), (2, 9));
    check_records(&v2, &[8, 1]);
    let e =
        Dataset::open_with(target, &DatasetOptions { version: Some(9), ..Default::default() }).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    // A root manifest left behind by a committer is caught up by the versions.
    let v2_bytes = std::fs::read(root.join("versions/00000000000000000002.json")).unwrap();
    std::fs::write(root.join("zrecord.json"), v2_bytes).unwrap();
    assert_eq!(Dataset::open(target).unwrap().version(), 3);
}

#[test]
fn schema_mismatch_is_refused_at_commit() {
    let dir = tmp();
    let root = dir.path().join("ds");
    let target = root.to_str().unwrap();
    build(&root, &[0, 3], Codec::Zstd);
    let other_codec = write_shard(&root, 3..5, Codec::Raw);
    let e = commit(target, std::slice::from_ref(&other_codec), CommitMode::Append).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, Error::BadShard { .. })
            && text.contains(&other_codec.path)
            && text.contains("\"x\": codec"),
        "{text}"
    );
    let mut missing = write_shard(&root, 3..5, Codec::Zstd);
    missing.columns.retain(|c| c.name != "tokens");
    let e = commit(target, &[missing], CommitMode::Append).unwrap_err().to_string();
    assert!(e.contains("column \"tokens\" is missing"), "{e}");
    assert_eq!(Dataset::open(target).unwrap().version(), 1, "nothing committed");
}

#[test]
fn unequal_columns_are_refused() {
    let dir = tmp();
    let mut w = ShardWriter::create(dir.path(), columns(Codec::Raw)).unwrap();
    w.column("x").unwrap().append_typed(&dense_row(0)).unwrap();
    let e = w.finish().unwrap_err().to_string();
    assert!(e.contains("x: 1, tokens: 0"), "{e}");
}

#[test]
fn two_committers_never_lose_shards() {
    let dir = tmp();
    let root = Arc::new(dir.path().join("ds"));
    build(&root, &[0, 2], Codec::Raw);
    let handles: Vec<_> = (0..8u64)
        .map(|t| {
            let root = root.clone();
            std::thread::spawn(move || {
                let info = write_shard(&root, 2 + t * 3..5 + t * 3, Codec::Raw);
                commit(root.to_str().unwrap(), std::slice::from_ref(&info), CommitMode::Append).unwrap();
                info.path
            })
        })
        .collect();
    let paths: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ds = Dataset::open(root.to_str().unwrap()).unwrap();
    assert_eq!((ds.len(), ds.version()), (26, 9));
    for p in paths {
        assert!(ds.manifest().shards.iter().any(|s| s.path == p), "{p} lost");
    }
}

/// A dataset of 3 shards whose files the test then breaks.
fn broken(fix: impl FnOnce(&Path, &[ShardInfo])) -> (tempfile::TempDir, PathBuf) {
    let dir = tmp();
    let root = dir.path().join("ds");
    let infos = build(&root, &[0, 3, 6, 9], Codec::Zstd);
    fix(&root, &infos);
    (dir, root)
}

fn first_error(root: &Path) -> String {
    let ds = match Dataset::open(root.to_str().unwrap()) {
        Ok(ds) => ds,
        Err(e) => return e.to_string(),
    };
    let all: Vec<u64> = (0..ds.len()).collect();
    match ds
        .column("x")
        .unwrap()
        .gather(&all)
        .and(ds.column("tokens").unwrap().gather_ragged(&all).map(|_| ()))
    {
        Ok(_) => panic!("no error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_datasets_say_what_is_wrong() {
    type Break = Box<dyn FnOnce(&Path, &[ShardInfo])>;
    let cases: Vec<(Break, &str)> = vec![
        (Box::new(|r, s| std::fs::remove_dir_all(r.join(&s[1].path)).unwrap()), "is missing"),
        (
            Box::new(|r, s| std::fs::remove_dir_all(r.join(&s[2].path).join("tokens")).unwrap()),
            "column \"tokens\"",
        ),
        (
            Box::new(|r, s| {
                // Shard 1's x replaced by a longer store.
                let d = r.join(&s[1].path).join("x");
                std::fs::remove_dir_all(&d).unwrap();
                one_store(&d, 4, Codec::Zstd);
            }),
            "the store holds 4 records, the manifest says 3",
        ),
        (
            Box::new(|r, s| {
                let f = r.join(&s[0].path).join("x/data.zr");
                let mut bytes = std::fs::read(&f).unwrap();
                bytes.push(0);
                std::fs::write(f, bytes).unwrap();
            }),
            "data.zr is",
        ),
        (
            Box::new(|r, _| {
                std::fs::write(r.join("zrecord.json"), b"{\"format\": \"zrecord-dataset\"").unwrap()
            }),
            "not JSON",
        ),
        (Box::new(|r, _| std::fs::write(r.join("zrecord.json"), b"{}").unwrap()), "not a zrecord dataset"),
        (Box::new(|r, _| std::fs::remove_file(r.join("zrecord.json")).unwrap()), "no dataset here"),
    ];
    for (fix, want) in cases {
        let (_dir, root) = broken(fix);
        let e = first_error(&root);
        assert!(e.contains(want) && e.contains("ds"), "{e} (wanted {want})");
    }
}

#[test]
fn sealed_shards_are_checked() {
    let (_dir, root) = broken(|r, s| {
        // Flip one stored byte of shard 2's last record (8) in each
        // column: the sidecar catches it.
        for column in ["x", "tokens"] {
            let f = r.join(&s[2].path).join(column).join("data.zr");
            let mut bytes = std::fs::read(&f).unwrap();
            let at = bytes.len() - 1;
            bytes[at] ^= 0x55;
            std::fs::write(f, bytes).unwrap();
        }
    });
    let options = DatasetOptions {
        open: zrecord::open::Options::default().verify(Verify::IfSealed),
        ..Default::default()
    };
    let ds = Dataset::open_with(root.to_str().unwrap(), &options).unwrap();
    let e = ds.column("x").unwrap().gather(&[8]).unwrap_err();
    assert!(matches!(e, Error::ChecksumMismatch { .. } | Error::CorruptRecord { .. }), "{e}");
    assert!(ds.column("x").unwrap().gather(&[0, 3]).is_ok());
    // A Dense batch over several shards too, the error naming the shard's store.
    let e = ds.column("x").unwrap().gather(&[0, 8, 3]).unwrap_err();
    assert!(matches!(e, Error::ChecksumMismatch { .. } | Error::CorruptRecord { .. }), "{e}");
    assert!(e.to_string().contains("shards/"), "{e}");
    // A Ragged batch over several shards checks each shard's records.
    let e = ds.column("tokens").unwrap().gather_ragged(&[0, 8, 3]).unwrap_err();
    assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}");
    assert!(ds.column("tokens").unwrap().gather_ragged(&[0, 7, 3]).is_ok());
}

/// Remakes `tests/fixtures/dataset-v1` (the README's and the viewer's
/// small dataset): `cargo test --test dataset write_fixture -- --ignored`.
#[test]
#[ignore]
fn write_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1");
    let _ = std::fs::remove_dir_all(&root);
    build(&root, &[0, 4, 6, 10], Codec::Zstd);
}

#[test]
fn the_fixture_reads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1");
    let ds = Dataset::open(root.to_str().unwrap()).unwrap();
    assert_eq!((ds.len(), ds.manifest().shards.len()), (10, 3));
    check_records(&ds, &(0..10).rev().collect::<Vec<_>>());
}

/// Ragged columns, raw and zstd, over 8 shards: batches large enough to
/// decode across threads land every record in its place, as one store
/// holding the same records gives them (a dataset lays out one batch for
/// all its shards, each decoding straight into its records' slots).
#[test]
fn ragged_batches_across_shards_equal_one_store() {
    let record = |i: u64| -> Vec<u32> { (0..i % 300 + 1).map(|k| (i * 7919 + k % 13) as u32).collect() };
    for codec in [Codec::Zstd, Codec::Raw] {
        let dir = tmp();
        let root = dir.path().join("ds");
        let def = || ColumnDef {
            name: "r".into(),
            dtype: "<u4".into(),
            geometry: Geometry::Ragged,
            options: CreateOptions::codec(codec),
        };
        let cuts = [0u64, 400, 401, 1200, 1500, 2000, 2100, 2999, 3000];
        let infos: Vec<ShardInfo> = cuts
            .windows(2)
            .map(|w| {
                let mut s = ShardWriter::create(&root, vec![def()]).unwrap();
                for i in w[0]..w[1] {
                    let r = record(i);
                    s.column("r")
                        .unwrap()
                        .append_ragged(&[(&[r.len() as u64][..], bytemuck::cast_slice(&r))])
                        .unwrap();
                }
                s.finish().unwrap()
            })
            .collect();
        commit(root.to_str().unwrap(), &infos, CommitMode::Create).unwrap();
        let one = dir.path().join("one");
        let mut w = Writer::create_ragged(&one, "<u4", CreateOptions::codec(codec)).unwrap();
        for i in 0..3000 {
            let r = record(i);
            w.append_ragged(&[(&[r.len() as u64][..], bytemuck::cast_slice(&r))]).unwrap();
        }
        w.close().unwrap();
        let one = zrecord::Store::open(&one).unwrap();
        let ds = Dataset::open(root.to_str().unwrap()).unwrap();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let batch: Vec<u64> = (0..1500)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % 3000
            })
            .collect();
        for indices in [&batch[..], &[2999, 0, 400, 400, 1199][..], &[]] {
            let got = ds.column("r").unwrap().gather_ragged(indices).unwrap();
            let want = one.gather_ragged(indices).unwrap();
            assert_eq!(got.len(), indices.len());
            for (k, i) in indices.iter().enumerate() {
                assert_eq!(got.record(k), want.record(k), "{codec:?} record {i}");
            }
        }
    }
}
