//! Stores in an S3 bucket: moto's server on loopback, signatures checked.
//! Every fixture pushed with `zrecord push` reads back byte-exactly through
//! `s3://`; wrong keys, unsigned requests, a missing store, a missing
//! `dict.zr` and an object replaced under a reader each fail their own way;
//! four processes reading shards r/4 cover an epoch exactly once.

#[path = "common/buckets.rs"]
mod buckets;
mod common;
#[path = "common/moto.rs"]
mod moto;

use buckets::{failed, ok, run_with, Emulator};
use common::fixtures;
use moto::Moto;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::process::{Command, Output};
use zrecord::remote::objstore::{BucketRetry, ObjectRanges};
use zrecord::remote::{BlockingStore, RemoteOptions};
use zrecord::training::loader::Loader;
use zrecord::training::sampler::Mode;
use zrecord::{Batch, Records, Store};

/// The CLI against moto, signing with `secret` (default: the right one).
fn zrecord(moto: &Moto, secret: Option<&str>, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    moto.env_with(&mut cmd, secret.unwrap_or(&moto.secret));
    run_with(cmd, args)
}

#[test]
fn every_fixture_pushes_and_reads_back_byte_exactly() {
    let moto = Moto::start();
    buckets::every_fixture_reads_back(&moto);
    // Pushing again uploads nothing.
    let f = &fixtures()[0];
    let again = ok(&moto, &[&"push", &f.path(), &moto.url(&format!("fixtures/{}", f.name))]);
    assert!(again.contains("(0 uploaded"), "{again}");
    assert!(!again.lines().any(|l| l.starts_with("uploaded")), "{again}");
}

#[test]
fn every_command_that_reads_a_store_takes_s3_urls() {
    buckets::every_command_takes_bucket_urls(&Moto::start());
}

#[test]
fn push_sends_every_file_meta_last_and_big_files_in_parts() {
    buckets::big_files_go_up_in_parts(&Moto::start());
}

/// A store sealed on disk and pushed verifies from the bucket, and a record
/// changed there afterwards is named by `verify` and refused by checked reads.
#[test]
fn sealed_stores_verify_from_the_bucket() {
    buckets::sealed_store_verifies_from_the_bucket(&Moto::start());
}

#[test]
fn wrong_keys_and_unsigned_requests_are_refused() {
    let moto = Moto::start();
    let f = &fixtures()[0];
    let path = format!("keys/{}", f.name);
    ok(&moto, &[&"push", &f.path(), &moto.url(&path)]);
    // A wrong secret: the error names the credentials.
    let err = failed(zrecord(&moto, Some("not-the-secret"), &[&"info", &moto.url(&path)]));
    assert!(err.contains("credentials") && err.contains("AWS_SECRET_ACCESS_KEY"), "{err}");
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    // An unsigned GET of the same object is refused.
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let resp = agent.get(moto.http_url(&format!("{path}/meta.zr"))).call().unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let err = failed(zrecord(&moto, None, &[&"info", &moto.http_url(&path)]));
    assert!(err.contains("forbidden (HTTP 403)"), "{err}");
}

#[test]
fn missing_store_missing_dict_and_replaced_object_fail_clearly() {
    let moto = Moto::start();
    buckets::missing_store_and_missing_dict_fail_clearly(&moto);
    buckets::replaced_object_is_refused(&moto);
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Stores pushed before the SHA-256 metadata key lost its `-` (Azure
/// refuses `-` in metadata names) carry `zrecord-sha256`: pushing them again
/// uploads nothing.
#[test]
fn objects_with_the_old_sha_key_are_not_uploaded_again() {
    use object_store::{Attribute, Attributes, PutOptions};
    let moto = Moto::start();
    let f = &fixtures()[0];
    let store = buckets::bucket(&moto);
    for entry in std::fs::read_dir(f.path()).unwrap() {
        let entry = entry.unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        let mut attributes = Attributes::new();
        attributes.insert(Attribute::Metadata("zrecord-sha256".into()), hex(&bytes).into());
        let key = object_store::path::Path::from(format!("old/{}", entry.file_name().to_string_lossy()));
        let store = store.clone();
        zrecord::remote::runtime::block_on(async move {
            store.put_opts(&key, bytes.into(), PutOptions { attributes, ..Default::default() }).await.unwrap()
        });
    }
    let out = ok(&moto, &[&"push", &f.path(), &moto.url("old")]);
    assert!(out.contains("(0 uploaded"), "{out}");
}

/// One process of [`four_processes_read_disjoint_shards_covering_the_epoch`],
/// which runs it (`--ignored --exact shard_worker`) with
/// `ZRECORD_SHARD_WORKER` set: reads shard RANK/WORLD of one epoch through
/// the loader and prints `index sha256` per record.
#[test]
#[ignore = "a child process of four_processes_read_disjoint_shards_covering_the_epoch, which runs it"]
fn shard_worker() {
    let spec = std::env::var("ZRECORD_SHARD_WORKER")
        .expect("ZRECORD_SHARD_WORKER: set by four_processes_read_disjoint_shards_covering_the_epoch");
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
                .args(["--ignored", "--exact", "shard_worker", "--nocapture", "--test-threads", "1"])
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

/// A dataset pushed uploads its shards' stores, then its versions, then
/// `zrecord.json` last, and opens from `s3://` afterwards.
#[test]
fn dataset_pushes_manifest_last_and_opens_from_the_bucket() {
    let moto = Moto::start();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1");
    let url = moto.url("datasets/v1");
    let out = ok(&moto, &[&"push", &"--json", &root, &url]);
    let files: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["file"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(files.last().map(String::as_str), Some("zrecord.json"), "{files:?}");
    let first_version = files.iter().position(|f| f.starts_with("versions/")).unwrap();
    assert!(files[..first_version].iter().all(|f| f.starts_with("shards/")), "{files:?}");
    assert_eq!(files.iter().filter(|f| f.starts_with("shards/")).count(), 6 * 3, "{files:?}");
    let info: serde_json::Value = serde_json::from_str(&ok(&moto, &[&"info", &"--json", &url])).unwrap();
    assert_eq!((info["dataset"].as_bool(), info["len"].as_u64()), (Some(true), Some(10)));
    let sums = ok(&moto, &[&"checksum", &"--column", &"x", &url]);
    assert_eq!(sums.lines().count(), 10);
}

/// A copy of the dataset fixture at `dir` with one more committed shard
/// (version 2) of one record whose values come from `seed`.
fn fixture_with_a_shard(dir: &std::path::Path, seed: f32) {
    use zrecord::dataset::writer::{commit, CommitMode, ShardWriter};
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1");
    let copied = Command::new("cp").arg("-r").arg(&fixture).arg(dir).status().unwrap();
    assert!(copied.success());
    let mut w = ShardWriter::create(dir, common::dataset_columns(zrecord::Codec::Zstd)).unwrap();
    w.column("x").unwrap().append_typed(&[seed, -seed]).unwrap();
    w.column("tokens").unwrap().append_ragged(&[(&[1u64][..], &[7u8, 0][..])]).unwrap();
    let info = w.finish().unwrap();
    commit(dir.to_str().unwrap(), &[info], CommitMode::Append).unwrap();
}

/// A push never replaces a bucket's dataset whose history differs from the
/// local copy's: a version of the same number with other shards (another
/// writer's commit), or a newer version (the push would roll readers
/// back). Each is refused before anything is uploaded, naming the version.
#[test]
fn a_dataset_push_never_replaces_another_writers_commit() {
    let moto = Moto::start();
    let tmp = tempfile::tempdir().unwrap();
    let (mine, theirs) = (tmp.path().join("mine"), tmp.path().join("theirs"));
    fixture_with_a_shard(&mine, 1.5);
    fixture_with_a_shard(&theirs, 2.5);
    let url = moto.url("datasets/shared");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1");
    ok(&moto, &[&"push", &fixture, &url]);
    // Version 1 is the same: version 2 goes up over it.
    ok(&moto, &[&"push", &mine, &url]);
    let x = |moto: &Moto| ok(moto, &[&"get", &"--column", &"x", &url, &"10"]);
    let pushed = x(&moto);
    assert!(pushed.contains("1.5"), "{pushed}");
    let objects = |moto: &Moto| ok(moto, &[&"info", &"--json", &url]);
    let before = objects(&moto);
    // Another copy's version 2 differs: refused, naming it; nothing changed.
    let err = failed(zrecord(&moto, None, &[&"push", &theirs, &url]));
    assert!(err.contains("version 2 differs"), "{err}");
    assert_eq!((x(&moto), objects(&moto)), (pushed.clone(), before.clone()));
    // The fixture alone (version 1) would roll the bucket back: refused.
    let err = failed(zrecord(&moto, None, &[&"push", &fixture, &url]));
    assert!(err.contains("newer than this copy's 1"), "{err}");
    assert_eq!((x(&moto), objects(&moto)), (pushed, before));
}
