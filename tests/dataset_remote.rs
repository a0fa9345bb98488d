//! Datasets away from the local disk: over nginx and a 20 ms latency server
//! (HTTP Range), and in an S3 bucket on moto, where commits are conditional
//! puts. Every read is compared with the same dataset read locally.

#[path = "common/buckets.rs"]
mod buckets;
mod common;
#[path = "common/latency.rs"]
mod latency;
#[path = "common/moto.rs"]
mod moto;
#[path = "common/nginx.rs"]
mod nginx;

use buckets::Emulator;
use std::path::Path;
use std::time::Duration;
use zrecord::dataset::writer::{self, ColumnDef};
use zrecord::dataset::{commit, CommitMode, Dataset, ShardInfo, ShardWriter};
use zrecord::format::schema::Geometry;
use zrecord::{Codec, CreateOptions, Records};

/// A shard of records `range`: column `img` Dense u8 [3, 4] zstd, column
/// `tok` Ragged i32 raw.
fn write_shard(root: &Path, range: std::ops::Range<u64>) -> ShardInfo {
    let cols = vec![
        ColumnDef {
            name: "img".into(),
            dtype: "|u1".into(),
            geometry: Geometry::Dense { item_shape: vec![3, 4] },
            options: CreateOptions::codec(Codec::Zstd),
        },
        ColumnDef {
            name: "tok".into(),
            dtype: "<i4".into(),
            geometry: Geometry::Ragged,
            options: CreateOptions::codec(Codec::Raw),
        },
    ];
    let mut w = ShardWriter::create(root, cols).unwrap();
    for i in range {
        let img: Vec<u8> = (0..12).map(|k| (i * 13 + k) as u8).collect();
        w.column("img").unwrap().append(&img).unwrap();
        let tok: Vec<i32> = (0..=(i % 5)).map(|k| (i * 100 + k) as i32).collect();
        let shape = [tok.len() as u64];
        w.column("tok").unwrap().append_ragged(&[(&shape[..], bytemuck::cast_slice(&tok))]).unwrap();
    }
    w.finish().unwrap()
}

/// Both columns of `remote` equal those of `local` for `indices`.
fn same_records(local: &Dataset, remote: &Dataset, indices: &[u64]) {
    for name in ["img", "tok"] {
        let want = local.column(name).unwrap().gather_any(indices).unwrap();
        let got = remote.column(name).unwrap().gather_any(indices).unwrap();
        assert_eq!(got.len(), want.len());
        for (k, i) in indices.iter().enumerate() {
            assert_eq!(got.record(k), want.record(k), "{name} record {i}");
        }
    }
}

fn random_batch(n: u64, len: usize, seed: u64) -> Vec<u64> {
    let mut rng = common::Rng(seed);
    (0..len).map(|_| rng.next() % n).collect()
}

#[test]
fn datasets_read_over_http_from_the_manifest_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ds");
    let cuts = [0u64, 7, 7, 20, 41, 64];
    let infos: Vec<ShardInfo> = cuts.windows(2).map(|w| write_shard(&root, w[0]..w[1])).collect();
    commit(root.to_str().unwrap(), &infos, CommitMode::Create).unwrap();
    let local = Dataset::open(root.to_str().unwrap()).unwrap();

    let server = nginx::Nginx::start(dir.path());
    let remote = Dataset::open(&server.url("ds/")).unwrap();
    assert_eq!((remote.len(), remote.version()), (64, 1));
    same_records(&local, &remote, &(0..64).collect::<Vec<_>>());
    same_records(&local, &remote, &random_batch(64, 100, 3));
    same_records(&local, &remote, &[63, 0, 7, 7, 20]);
    let e = remote.column("img").unwrap().gather(&[64]).unwrap_err();
    assert!(matches!(e, zrecord::Error::IndexOutOfRange { .. }), "{e}");

    // Behind a 20 ms server: the manifest and a look for a newer version,
    // nothing else, before the first gather.
    let slow = latency::LatencyServer::start(dir.path(), Duration::from_millis(20));
    let remote = Dataset::open(&slow.url("ds/")).unwrap();
    assert_eq!(slow.requests(), 2, "open reads the manifest and probes the next version");
    same_records(&local, &remote, &random_batch(64, 32, 5));

    // A shard whose store went missing is named.
    std::fs::remove_dir_all(root.join(&infos[3].path).join("tok")).unwrap();
    let remote = Dataset::open(&server.url("ds/")).unwrap();
    let e = remote.column("tok").unwrap().gather_ragged(&[25]).unwrap_err().to_string();
    assert!(e.contains(&infos[3].path) && e.contains("missing"), "{e}");
}

#[test]
fn datasets_commit_to_and_read_from_s3() {
    let moto = moto::Moto::start();
    // This test binary's only bucket test: the process environment is its.
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", moto.key.as_str()),
        ("AWS_SECRET_ACCESS_KEY", moto.secret.as_str()),
        ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_REGION", "us-east-1"),
    ] {
        std::env::set_var(k, v);
    }
    let url = moto.url("datasets/train");
    let staging = tempfile::tempdir().unwrap();
    let upload = |info: &ShardInfo| {
        for c in &info.columns {
            let rel = format!("{}/{}", info.path, c.name);
            zrecord::remote::push::push(
                &staging.path().join(&rel),
                &format!("{url}/{rel}"),
                Default::default(),
            )
            .unwrap();
        }
    };
    let first: Vec<ShardInfo> =
        [0u64..10, 10..25].into_iter().map(|r| write_shard(staging.path(), r)).collect();
    first.iter().for_each(upload);
    let m = commit(&url, &first, CommitMode::Create).unwrap();
    assert_eq!((m.version, m.length), (1, 25));
    let e = commit(&url, &first, CommitMode::Create).unwrap_err();
    assert!(matches!(e, zrecord::Error::AlreadyExists { .. }), "{e}");

    // Two committers appending at once: conditional puts keep both.
    let more: Vec<ShardInfo> =
        [25u64..31, 31..40].into_iter().map(|r| write_shard(staging.path(), r)).collect();
    more.iter().for_each(upload);
    std::thread::scope(|s| {
        for info in &more {
            let url = &url;
            s.spawn(move || commit(url, std::slice::from_ref(info), CommitMode::Append).unwrap());
        }
    });
    let remote = Dataset::open(&url).unwrap();
    assert_eq!((remote.version(), remote.len()), (3, 40));
    for info in &more {
        assert!(remote.manifest().shards.iter().any(|s| s.path == info.path), "{} lost", info.path);
    }
    // The same records as the shards committed locally in the same order.
    let local_root = staging.path().join("local");
    std::fs::create_dir_all(&local_root).unwrap();
    let manifest = remote.manifest();
    let local_infos: Vec<ShardInfo> = manifest
        .shards
        .iter()
        .map(|s| {
            let info = [&first[..], &more[..]].concat().into_iter().find(|i| i.path == s.path).unwrap();
            let from = staging.path().join(&info.path);
            let to = local_root.join(&info.path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            copy_dir(&from, &to);
            info
        })
        .collect();
    commit(local_root.to_str().unwrap(), &local_infos, CommitMode::Create).unwrap();
    let local = Dataset::open(local_root.to_str().unwrap()).unwrap();
    same_records(&local, &remote, &(0..40).collect::<Vec<_>>());
    same_records(&local, &remote, &random_batch(40, 64, 9));
    // Version 1 by number.
    let v1 = Dataset::open_with(
        &url,
        &zrecord::dataset::DatasetOptions { version: Some(1), ..Default::default() },
    )
    .unwrap();
    assert_eq!(v1.len(), 25);

    // An uploaded shard no version names: gc removes it from the bucket
    // (dry run first), and leaves every committed shard readable.
    let orphan = write_shard(staging.path(), 40..44);
    upload(&orphan);
    let gc = |age: u64, dry: bool| writer::gc(&url, Duration::from_secs(age), dry).unwrap();
    assert!(gc(3600, false).is_empty(), "younger than the age: kept");
    assert_eq!(gc(0, true), std::slice::from_ref(&orphan.path));
    assert_eq!(gc(0, false), std::slice::from_ref(&orphan.path));
    assert!(gc(0, true).is_empty(), "the orphan's objects are gone");
    let after = Dataset::open(&url).unwrap();
    same_records(&local, &after, &(0..40).collect::<Vec<_>>());
    let e = writer::gc(&moto.url("datasets/none"), Duration::ZERO, false).unwrap_err();
    assert!(e.to_string().contains("not a dataset"), "{e}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
