//! Stores in an S3 bucket: moto's server on loopback, signatures checked.
//! Every fixture pushed with `zrecord push` reads back byte-exactly through
//! `s3://`; wrong keys, unsigned requests, a missing store, a missing
//! `dict.zr` and an object replaced under a reader each fail their own way;
//! four processes reading shards r/4 cover an epoch exactly once.

mod common;
#[path = "common/moto.rs"]
mod moto;

use common::{fixtures, FixtureStore};
use moto::Moto;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::Arc;
use zrecord::loader::Loader;
use zrecord::remote::objstore::{Bucket, BucketRetry, ObjectRanges};
use zrecord::remote::{BlockingStore, RemoteOptions};
use zrecord::sampler::Mode;
use zrecord::{Batch, Error, Records, Store};

fn zrecord(moto: &Moto, secret: Option<&str>, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    match secret {
        Some(s) => moto.env_with(&mut cmd, s),
        None => moto.env(&mut cmd),
    }
    cmd.args(args.iter().map(|a| a.as_ref())).output().unwrap()
}

fn ok(moto: &Moto, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = zrecord(moto, None, args);
    assert!(out.status.success(), "zrecord failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn fail(moto: &Moto, secret: Option<&str>, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = zrecord(moto, secret, args);
    assert_eq!(out.status.code(), Some(1), "expected a failure: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

fn open(moto: &Moto, path: &str) -> zrecord::Result<BlockingStore> {
    open_with(moto, path, RemoteOptions::default())
}

fn open_with(moto: &Moto, path: &str, options: RemoteOptions) -> zrecord::Result<BlockingStore> {
    let t = ObjectRanges::with_config(&moto.url(path), BucketRetry::default(), &moto.config())?;
    BlockingStore::open(Box::new(t), options)
}

fn bucket(moto: &Moto) -> Arc<dyn ObjectStore> {
    Bucket::from_url_with(&moto.url(""), BucketRetry::default(), &moto.config()).unwrap().store
}

fn check_against_local(f: &FixtureStore, remote: &BlockingStore) {
    let local = Store::open(f.path()).unwrap();
    assert_eq!(remote.len(), f.len, "{}", f.name);
    assert_eq!(remote.schema_bytes(), local.schema_bytes(), "{}", f.name);
    assert_eq!(remote.dict_bytes(), local.dict_bytes(), "{}", f.name);
    let n = f.len;
    let order: Vec<u64> = (0..n).rev().chain((0..n).step_by(3)).collect();
    let (got, want) = (remote.gather_any(&order).unwrap(), local.gather_any(&order).unwrap());
    for (k, &i) in order.iter().enumerate() {
        assert_eq!(got.record(k), want.record(k), "{} record {i}", f.name);
        assert_eq!(got.record(k).1, f.record_bytes(i as usize).as_slice(), "{} record {i}", f.name);
    }
}

#[test]
fn every_fixture_pushes_and_reads_back_byte_exactly() {
    let moto = Moto::start();
    for f in fixtures() {
        let url = moto.url(&format!("fixtures/{}", f.name));
        let pushed = ok(&moto, &[&"push", &f.path(), &url]);
        let last = pushed.lines().rev().nth(1).unwrap_or_default();
        assert!(last.contains("meta.zr"), "meta.zr goes up last:\n{pushed}");
        let remote =
            open(&moto, &format!("fixtures/{}", f.name)).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        check_against_local(&f, &remote);
        // The CLI reads it too.
        let local =
            Command::new(env!("CARGO_BIN_EXE_zrecord")).args(["checksum"]).arg(f.path()).output().unwrap();
        assert_eq!(ok(&moto, &[&"checksum", &url]).as_bytes(), local.stdout.as_slice(), "{}", f.name);
        // info asks for data.zr's size (a 1-byte read; an empty data.zr answers 416).
        let info: serde_json::Value = serde_json::from_str(&ok(&moto, &[&"info", &"--json", &url])).unwrap();
        let data = std::fs::metadata(f.path().join("data.zr")).unwrap().len();
        assert_eq!(info["sizes"]["data"], data, "{}", f.name);
    }
    // Pushing again uploads nothing.
    let f = &fixtures()[0];
    let again = ok(&moto, &[&"push", &f.path(), &moto.url(&format!("fixtures/{}", f.name))]);
    assert!(again.contains("(0 uploaded"), "{again}");
    assert!(!again.lines().any(|l| l.starts_with("uploaded")), "{again}");
}

#[test]
fn every_command_that_reads_a_store_takes_s3_urls() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let local = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zrecord"))
            .args(args.iter().map(|a| a.as_ref()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let picked: Vec<FixtureStore> = fixtures()
        .into_iter()
        .filter(|f| f.len >= 8 && (f.codec == "zstd_dict" || f.name.starts_with("ragged")))
        .take(3)
        .collect();
    assert!(
        picked.iter().any(|f| f.name.starts_with("ragged"))
            && picked.iter().any(|f| f.name.starts_with("dense"))
    );
    for f in picked {
        let url = moto.url(&format!("cmds/{}", f.name));
        ok(&moto, &[&"push", &f.path(), &url]);
        let info = ok(&moto, &[&"info", &"--json", &url]);
        let v: serde_json::Value = serde_json::from_str(&info).unwrap();
        assert_eq!(v["len"], f.len, "{}", f.name);
        assert!(ok(&moto, &[&"verify", &url]).contains("ok"), "{}", f.name);
        assert_eq!(ok(&moto, &[&"get", &"--json", &url, &"1"]), local(&[&"get", &"--json", &f.path(), &"1"]));
        // export
        let ragged = f.name.starts_with("ragged");
        let (a, b) =
            (dir.path().join(format!("{}-r.npy", f.name)), dir.path().join(format!("{}-l.npy", f.name)));
        let (ao, bo) =
            (dir.path().join(format!("{}-ro.npy", f.name)), dir.path().join(format!("{}-lo.npy", f.name)));
        if ragged {
            ok(&moto, &[&"export", &url, &a, &ao]);
            local(&[&"export", &f.path(), &b, &bo]);
            assert_eq!(std::fs::read(&ao).unwrap(), std::fs::read(&bo).unwrap());
        } else {
            ok(&moto, &[&"export", &url, &a]);
            local(&[&"export", &f.path(), &b]);
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{}", f.name);
        // recode and train-dict read the source from the bucket.
        let dst = dir.path().join(format!("{}-recoded", f.name));
        ok(&moto, &[&"recode", &url, &dst, &"--codec", &"zstd"]);
        assert_eq!(local(&[&"checksum", &dst]), local(&[&"checksum", &f.path()]), "{}", f.name);
        let dict = dir.path().join(format!("{}.dict", f.name));
        ok(&moto, &[&"train-dict", &url, &"--tier", &"fast", &"-o", &dict]);
        assert!(std::fs::metadata(&dict).unwrap().len() > 0);
        let bench: serde_json::Value = serde_json::from_str(&ok(
            &moto,
            &[&"bench", &url, &"--batch", &"4", &"--batches", &"3", &"--json"],
        ))
        .unwrap();
        for key in [
            "records_per_s",
            "mib_per_s",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "requests_per_batch",
            "bytes_per_batch",
        ] {
            assert!(bench[key].as_f64().is_some_and(|x| x >= 0.0), "{key}: {bench}");
        }
    }
}

#[test]
fn push_sends_every_file_meta_last_and_big_files_in_parts() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("big");
    // 6 MiB of raw records: more than one 5 MiB part.
    let row = 64 << 10;
    let mut w = zrecord::writer::Writer::create_dense(
        &store,
        "|u1",
        &[row as u64],
        zrecord::writer::CreateOptions::codec(zrecord::Codec::Raw),
    )
    .unwrap();
    let rows: Vec<u8> = (0..96 * row).map(|i| (i * 31 % 251) as u8).collect();
    w.append(&rows).unwrap();
    w.close().unwrap();
    assert!(store.join("sums.zr").exists(), "the writer seals the store");
    let url = moto.url("big");
    let out = ok(&moto, &[&"push", &store, &url, &"--part-size", &"5"]);
    let names: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert_eq!(&names[..3], ["data.zr", "sums.zr", "meta.zr"], "{out}");
    assert!(out.lines().next().unwrap().contains("in 2 parts"), "{out}");
    let remote = open(&moto, "big").unwrap();
    let got = remote.gather(&[95, 0, 40]).unwrap();
    let local = Store::open(&store).unwrap().gather(&[95, 0, 40]).unwrap();
    assert_eq!(got.bytes(), local.bytes());
    let again = ok(&moto, &[&"push", &store, &url, &"--part-size", &"5"]);
    assert!(again.contains("(0 uploaded, 3 unchanged"), "{again}");
}

/// A store sealed on disk and pushed verifies from the bucket, and a record
/// changed there afterwards is named by `verify` and refused by checked reads.
#[test]
fn sealed_stores_verify_from_the_bucket() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let f = fixtures().into_iter().find(|f| f.name == "ragged-i32-tokens-zstd_dict").unwrap();
    let store = dir.path().join("s");
    common::copy_store(&f.path(), &store);
    ok(&moto, &[&"seal", &store]);
    let url = moto.url("sealed");
    ok(&moto, &[&"push", &store, &url]);
    let report: serde_json::Value = serde_json::from_str(&ok(&moto, &[&"verify", &"--json", &url])).unwrap();
    assert_eq!((report["ok"].as_bool(), report["sealed"].as_bool()), (Some(true), Some(true)), "{report}");
    let checked = RemoteOptions { verify: zrecord::format::Verify::Always, ..Default::default() };
    let remote = open_with(&moto, "sealed", checked.clone()).unwrap();
    let all: Vec<u64> = (0..f.len).collect();
    assert_eq!(remote.gather_any(&all).unwrap().len(), all.len());
    // Damage record 3 on disk and push: only data.zr changes in the bucket.
    common::damage_record(&store, 3);
    let again = ok(&moto, &[&"push", &store, &url]);
    assert!(again.contains("(1 uploaded"), "{again}");
    let out = zrecord(&moto, None, &[&"verify", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && text.contains("record 3") && text.contains("data.zr"), "{text}");
    let remote = open_with(&moto, "sealed", checked).unwrap();
    match remote.gather_ragged(&[2, 3]) {
        Err(e @ Error::ChecksumMismatch { .. }) => assert!(e.to_string().contains("record 3"), "{e}"),
        other => panic!("expected a checksum mismatch, got {other:?}"),
    }
}

#[test]
fn wrong_keys_and_unsigned_requests_are_refused() {
    let moto = Moto::start();
    let f = &fixtures()[0];
    let path = format!("keys/{}", f.name);
    ok(&moto, &[&"push", &f.path(), &moto.url(&path)]);
    // A wrong secret: the error names the credentials.
    let err = fail(&moto, Some("not-the-secret"), &[&"info", &moto.url(&path)]);
    assert!(err.contains("credentials") && err.contains("AWS_SECRET_ACCESS_KEY"), "{err}");
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    // An unsigned GET of the same object is refused.
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let resp = agent.get(moto.http_url(&format!("{path}/meta.zr"))).call().unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let err = fail(&moto, None, &[&"info", &moto.http_url(&path)]);
    assert!(err.contains("forbidden (HTTP 403)"), "{err}");
}

#[test]
fn missing_store_missing_dict_and_replaced_object_fail_clearly() {
    let moto = Moto::start();
    // No store at all.
    match open(&moto, "nothing/here") {
        Err(Error::NotFound { store, .. }) => assert!(store.ends_with("nothing/here/meta.zr"), "{store}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let err = fail(&moto, None, &[&"info", &moto.url("nothing/here")]);
    assert!(err.contains("not found"), "{err}");

    // A zstd_dict store without its dict.zr.
    let f = fixtures().into_iter().find(|f| f.codec == "zstd_dict").unwrap();
    ok(&moto, &[&"push", &f.path(), &moto.url("nodict")]);
    let store = bucket(&moto);
    zrecord::remote::runtime::block_on({
        let store = store.clone();
        async move { store.delete(&ObjectPath::from("nodict/dict.zr")).await.unwrap() }
    });
    match open(&moto, "nodict") {
        Err(e @ Error::BadFormat { .. }) => assert!(e.to_string().contains("dict.zr is missing"), "{e}"),
        other => panic!("expected BadFormat for the missing dict.zr, got {other:?}"),
    }

    // data.zr replaced (same size, other bytes) between two reads.
    let f = fixtures().into_iter().find(|f| f.len >= 8 && f.codec == "raw").unwrap();
    ok(&moto, &[&"push", &f.path(), &moto.url("replaced")]);
    let remote = open(&moto, "replaced").unwrap();
    remote.gather_any(&[0]).unwrap();
    let mut data = std::fs::read(f.path().join("data.zr")).unwrap();
    data.iter_mut().for_each(|b| *b = !*b);
    zrecord::remote::runtime::block_on(async move {
        store.put(&ObjectPath::from("replaced/data.zr"), PutPayload::from(data)).await.unwrap();
    });
    match remote.gather_any(&[f.len - 1]) {
        Err(Error::StoreChanged { url, why }) => {
            assert!(url.ends_with("replaced/data.zr"), "{url}");
            assert!(why.contains("ETag"), "{why}");
        }
        other => panic!("expected StoreChanged, got {:?}", other.map(|_| ())),
    }
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// One process of the sharding test (does nothing unless the parent set
/// `ZRECORD_SHARD_WORKER`): reads shard RANK/WORLD of one epoch through the
/// loader and prints `index sha256` per record.
#[test]
fn shard_worker() {
    let Ok(spec) = std::env::var("ZRECORD_SHARD_WORKER") else { return };
    let v: serde_json::Value = serde_json::from_str(&spec).unwrap();
    let config: Vec<(String, String)> = serde_json::from_value(v["config"].clone()).unwrap();
    let t = ObjectRanges::with_config(v["url"].as_str().unwrap(), BucketRetry::default(), &config).unwrap();
    let store = BlockingStore::open(Box::new(t), RemoteOptions::default()).unwrap();
    let steps = v["steps"].as_u64().unwrap();
    let mut loader = Loader::builder()
        .stream("x", store)
        .batch_size(v["batch"].as_u64().unwrap())
        .mode(Mode::Cyclic)
        .seed(7)
        .shard(v["rank"].as_u64().unwrap(), v["world"].as_u64().unwrap())
        .build()
        .unwrap();
    let mut lines = Vec::new();
    for _ in 0..steps {
        let step = loader.next_batch().unwrap();
        let batch: &Batch = step.get("x").unwrap();
        for (k, &i) in step.indices().iter().enumerate() {
            lines.push(format!("{i} {}", hex(batch.record(k).1)));
        }
    }
    println!("SHARD-BEGIN\n{}\nSHARD-END", lines.join("\n"));
}

#[test]
fn four_processes_read_disjoint_shards_covering_the_epoch() {
    let moto = Moto::start();
    let (world, batch) = (4u64, 8u64);
    let f =
        fixtures().into_iter().filter(|f| f.len >= 32 && f.len % batch == 0).max_by_key(|f| f.len).unwrap();
    ok(&moto, &[&"push", &f.path(), &moto.url("sharded")]);
    let steps = f.len.div_ceil(batch);
    let children: Vec<_> = (0..world)
        .map(|rank| {
            let spec = serde_json::json!({
                "url": moto.url("sharded"), "config": moto.config(), "rank": rank, "world": world,
                "batch": batch, "steps": steps,
            });
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "shard_worker", "--nocapture", "--test-threads", "1"])
                .env("ZRECORD_SHARD_WORKER", spec.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let local = Store::open(f.path()).unwrap();
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "worker: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let body = text.split("SHARD-BEGIN\n").nth(1).unwrap().split("\nSHARD-END").next().unwrap();
        for line in body.lines() {
            let (i, hash) = line.split_once(' ').unwrap();
            let i: u64 = i.parse().unwrap();
            let want = hex(local.gather_any(&[i]).unwrap().record(0).1);
            assert_eq!(hash, want, "record {i}: bytes equal local reads");
            *seen.entry(i).or_default() += 1;
        }
    }
    // Cyclic mode, one epoch: every record exactly once across the four shards.
    let covered: Vec<u64> = seen.keys().copied().collect();
    assert_eq!(covered, (0..f.len).collect::<Vec<_>>(), "the shards cover the epoch");
    assert!(seen.values().all(|&n| n == 1), "the shards are disjoint: {seen:?}");
}
