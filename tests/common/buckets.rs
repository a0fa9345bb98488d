//! What the bucket tests share, whatever serves the bucket (moto for
//! `s3://`, Azurite for `az://`, fake-gcs-server for `gs://`): starting an
//! emulator on loopback, running the CLI against it, opening a store through
//! its URL, and the scenarios every scheme must pass — each fixture reads
//! back byte-exactly, a missing store and a missing `dict.zr` fail clearly,
//! an object replaced under a reader is refused, a pushed store verifies
//! from the bucket. `.ci/install` installs the emulators; a missing one is
//! a failure naming it, never a skip.
#![allow(dead_code)]

use crate::common::{self, fixtures, FixtureStore};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::ffi::OsStr;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zrecord::remote::objstore::{Bucket, BucketRetry, ObjectRanges};
use zrecord::remote::{BlockingStore, RemoteOptions};
use zrecord::{Error, Records, Store};

/// A bucket on loopback and how to reach it.
pub trait Emulator {
    /// `scheme://bucket/{path}`
    fn url(&self, path: &str) -> String;
    /// Give a child process the environment that reaches the bucket with
    /// the right credentials (the variables a user would set).
    fn env(&self, cmd: &mut Command);
    /// The same settings as object_store configuration keys, for clients in
    /// this process (the environment is the process's, shared by tests).
    fn config(&self) -> Vec<(String, String)>;
    /// Put `bytes` at `key` of the bucket, replacing what is there.
    fn put(&self, key: &str, bytes: Vec<u8>) {
        let store = bucket(self);
        let key = ObjectPath::from(key);
        zrecord::remote::runtime::block_on(
            async move { store.put(&key, PutPayload::from(bytes)).await.unwrap() },
        );
    }
    /// Whether `zrecord push` works against it (then [`Emulator::publish`]
    /// is `zrecord push` and its report is checked).
    fn pushes(&self) -> bool {
        true
    }
    /// Publish the store in `dir` at `path` of the bucket: `zrecord push`.
    fn publish(&self, dir: &Path, path: &str) -> String {
        ok(self, &[&"push", &dir, &self.url(path)])
    }
}

/// An emulator process on a loopback port, its output in a log file;
/// stopped (by PID) when dropped.
pub struct Service {
    child: Child,
    log: tempfile::NamedTempFile,
    pub port: u16,
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Service {
    /// Spawn `cmd`, which must listen on 127.0.0.1:`port`, and wait (at
    /// most 60 s) until it accepts connections.
    pub fn start(name: &str, mut cmd: Command, port: u16) -> Service {
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}; run .ci/install"));
        let mut service = Service { child, log, port };
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = service.child.try_wait() {
                panic!("{name} exited with {status}: {}", service.log());
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "{name} did not start: {}", service.log());
            std::thread::sleep(Duration::from_millis(25));
        }
        service
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the process printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `path` if it exists, else a panic telling to run `.ci/install`.
pub fn installed(path: &Path, what: &str) -> std::path::PathBuf {
    assert!(path.exists(), "{} missing: run .ci/install (it installs {what})", path.display());
    path.to_path_buf()
}

/// Run the CLI with `cmd`'s environment and `args`.
pub fn run_with(mut cmd: Command, args: &[&dyn AsRef<OsStr>]) -> Output {
    cmd.args(args.iter().map(|a| a.as_ref())).output().unwrap()
}

/// The CLI, its environment reaching the emulator's bucket.
pub fn zrecord<E: Emulator + ?Sized>(emu: &E) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zrecord"));
    emu.env(&mut cmd);
    cmd
}

/// Run the CLI against the bucket; its stdout, after asserting success.
pub fn ok<E: Emulator + ?Sized>(emu: &E, args: &[&dyn AsRef<OsStr>]) -> String {
    succeeded(run_with(zrecord(emu), args))
}

/// The stdout of a run that must have succeeded.
pub fn succeeded(out: Output) -> String {
    assert!(out.status.success(), "zrecord failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The stderr of a run that must have failed with exit code 1.
pub fn failed(out: Output) -> String {
    assert_eq!(out.status.code(), Some(1), "expected a failure: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

/// The CLI on a local store (no bucket environment); its stdout.
pub fn local(args: &[&dyn AsRef<OsStr>]) -> String {
    succeeded(run_with(Command::new(env!("CARGO_BIN_EXE_zrecord")), args))
}

/// The store at `path` of the bucket, opened in this process.
pub fn open<E: Emulator + ?Sized>(emu: &E, path: &str) -> zrecord::Result<BlockingStore> {
    open_with(emu, path, RemoteOptions::default())
}

/// As [`open`], with `options`.
pub fn open_with<E: Emulator + ?Sized>(
    emu: &E,
    path: &str,
    options: RemoteOptions,
) -> zrecord::Result<BlockingStore> {
    let t = ObjectRanges::with_config(&emu.url(path), BucketRetry::default(), &emu.config())?;
    BlockingStore::open(Box::new(t), options)
}

/// A client of the whole bucket.
pub fn bucket<E: Emulator + ?Sized>(emu: &E) -> Arc<dyn ObjectStore> {
    Bucket::from_url_with(&emu.url(""), BucketRetry::default(), &emu.config()).unwrap().store
}

/// Delete `key` from the bucket.
pub fn delete<E: Emulator + ?Sized>(emu: &E, key: &str) {
    let store = bucket(emu);
    let key = ObjectPath::from(key);
    zrecord::remote::runtime::block_on(async move { store.delete(&key).await.unwrap() });
}

/// `remote` holds the fixture's records, schema and dictionary, byte for
/// byte as the local reader and the manifest have them.
pub fn check_against_local(f: &FixtureStore, remote: &BlockingStore) {
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

/// Every fixture, published under `fixtures/`, reads back byte-exactly in
/// this process and through the CLI (`checksum`, and `info`, which asks for
/// data.zr's size: an empty data.zr answers a range past its end).
pub fn every_fixture_reads_back<E: Emulator + ?Sized>(emu: &E) {
    for f in fixtures() {
        let path = format!("fixtures/{}", f.name);
        let published = emu.publish(&f.path(), &path);
        if emu.pushes() {
            let last = published.lines().rev().nth(1).unwrap_or_default();
            assert!(last.contains("meta.zr"), "meta.zr goes up last:\n{published}");
        }
        let remote = open(emu, &path).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        check_against_local(&f, &remote);
        let url = emu.url(&path);
        assert_eq!(ok(emu, &[&"checksum", &url]), local(&[&"checksum", &f.path()]), "{}", f.name);
        let info: serde_json::Value = serde_json::from_str(&ok(emu, &[&"info", &"--json", &url])).unwrap();
        let data = std::fs::metadata(f.path().join("data.zr")).unwrap().len();
        assert_eq!(info["sizes"]["data"], data, "{}", f.name);
    }
}

/// No store at the path: `NotFound` naming `meta.zr`, and the CLI says
/// "not found". A `zstd_dict` store without its `dict.zr`: `BadFormat`
/// saying so.
pub fn missing_store_and_missing_dict_fail_clearly<E: Emulator + ?Sized>(emu: &E) {
    match open(emu, "nothing/here") {
        Err(Error::NotFound { store, .. }) => assert!(store.ends_with("nothing/here/meta.zr"), "{store}"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let err = failed(run_with(zrecord(emu), &[&"info", &emu.url("nothing/here")]));
    assert!(err.contains("not found") && err.contains("nothing/here/meta.zr"), "{err}");

    let f = fixtures().into_iter().find(|f| f.codec == "zstd_dict").unwrap();
    emu.publish(&f.path(), "nodict");
    open(emu, "nodict").unwrap();
    delete(emu, "nodict/dict.zr");
    match open(emu, "nodict") {
        Err(e @ Error::BadFormat { .. }) => assert!(e.to_string().contains("dict.zr is missing"), "{e}"),
        other => panic!("expected BadFormat for the missing dict.zr, got {other:?}"),
    }
    let err = failed(run_with(zrecord(emu), &[&"info", &emu.url("nodict")]));
    assert!(err.contains("dict.zr is missing"), "{err}");
}

/// data.zr replaced (same size, other bytes) between two reads of an open
/// store: `StoreChanged` naming the file, never mixed data — with and
/// without `If-Match` on the requests.
pub fn replaced_object_is_refused<E: Emulator + ?Sized>(emu: &E) {
    let f = fixtures().into_iter().find(|f| f.len >= 8 && f.codec == "raw").unwrap();
    for if_match in [false, true] {
        let path = format!("replaced-{if_match}");
        emu.publish(&f.path(), &path);
        let remote = open_with(emu, &path, RemoteOptions { if_match, ..Default::default() }).unwrap();
        remote.gather_any(&[0]).unwrap();
        let mut data = std::fs::read(f.path().join("data.zr")).unwrap();
        data.iter_mut().for_each(|b| *b = !*b);
        emu.put(&format!("{path}/data.zr"), data);
        match remote.gather_any(&[f.len - 1]) {
            Err(Error::StoreChanged { url, why }) => {
                assert!(url.ends_with(&format!("{path}/data.zr")), "{url}");
                // Without If-Match the reader sees the new ETag; with it the
                // bucket may refuse first (412).
                assert!(
                    why.contains("ETag") || if_match && why.contains("If-Match"),
                    "if_match {if_match}: {why}"
                );
            }
            other => panic!("if_match {if_match}: expected StoreChanged, got {:?}", other.map(|_| ())),
        }
    }
}

/// `info`, `verify`, `get`, `export`, the source side of `recode` and
/// `train-dict`, and `bench` take the bucket's URL and answer as they do
/// for the local store.
pub fn every_command_takes_bucket_urls<E: Emulator + ?Sized>(emu: &E) {
    let dir = tempfile::tempdir().unwrap();
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
        let url = emu.url(&format!("cmds/{}", f.name));
        emu.publish(&f.path(), &format!("cmds/{}", f.name));
        let info = ok(emu, &[&"info", &"--json", &url]);
        let v: serde_json::Value = serde_json::from_str(&info).unwrap();
        assert_eq!(v["len"], f.len, "{}", f.name);
        assert!(ok(emu, &[&"verify", &url]).contains("ok"), "{}", f.name);
        assert_eq!(ok(emu, &[&"get", &"--json", &url, &"1"]), local(&[&"get", &"--json", &f.path(), &"1"]));
        // export
        let ragged = f.name.starts_with("ragged");
        let (a, b) =
            (dir.path().join(format!("{}-r.npy", f.name)), dir.path().join(format!("{}-l.npy", f.name)));
        let (ao, bo) =
            (dir.path().join(format!("{}-ro.npy", f.name)), dir.path().join(format!("{}-lo.npy", f.name)));
        if ragged {
            ok(emu, &[&"export", &url, &a, &ao]);
            local(&[&"export", &f.path(), &b, &bo]);
            assert_eq!(std::fs::read(&ao).unwrap(), std::fs::read(&bo).unwrap());
        } else {
            ok(emu, &[&"export", &url, &a]);
            local(&[&"export", &f.path(), &b]);
        }
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{}", f.name);
        // recode and train-dict read the source from the bucket.
        let dst = dir.path().join(format!("{}-recoded", f.name));
        ok(emu, &[&"recode", &url, &dst, &"--codec", &"zstd"]);
        assert_eq!(local(&[&"checksum", &dst]), local(&[&"checksum", &f.path()]), "{}", f.name);
        let dict = dir.path().join(format!("{}.dict", f.name));
        ok(emu, &[&"train-dict", &url, &"--tier", &"fast", &"-o", &dict]);
        assert!(std::fs::metadata(&dict).unwrap().len() > 0);
        let bench: serde_json::Value = serde_json::from_str(&ok(
            emu,
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

/// A store sealed on disk and published answers `info` and verifies from
/// the bucket; a record changed there afterwards is named by `verify` and
/// refused by checked reads. Where [`Emulator::pushes`], published with
/// `zrecord push`: meta.zr last, and a second push uploads nothing.
pub fn sealed_store_verifies_from_the_bucket<E: Emulator + ?Sized>(emu: &E) {
    let dir = tempfile::tempdir().unwrap();
    let f = fixtures().into_iter().find(|f| f.name == "ragged-i32-tokens-zstd_dict").unwrap();
    let store = dir.path().join("s");
    common::copy_store(&f.path(), &store);
    local(&[&"seal", &store]);
    let url = emu.url("sealed");
    let pushed = emu.publish(&store, "sealed");
    if emu.pushes() {
        let names: Vec<&str> = pushed.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
        assert_eq!(
            &names[..4],
            ["data.zr", "dict.zr", "sums.zr", "meta.zr"],
            "meta.zr goes up last:\n{pushed}"
        );
        let again = emu.publish(&store, "sealed");
        assert!(again.contains("(0 uploaded, 4 unchanged"), "{again}");
    }
    let info: serde_json::Value = serde_json::from_str(&ok(emu, &[&"info", &"--json", &url])).unwrap();
    assert_eq!(info["len"], f.len, "{info}");
    let report: serde_json::Value = serde_json::from_str(&ok(emu, &[&"verify", &"--json", &url])).unwrap();
    assert_eq!((report["ok"].as_bool(), report["sealed"].as_bool()), (Some(true), Some(true)), "{report}");
    let checked = RemoteOptions { verify: zrecord::format::Verify::Always, ..Default::default() };
    let remote = open_with(emu, "sealed", checked.clone()).unwrap();
    let all: Vec<u64> = (0..f.len).collect();
    assert_eq!(remote.gather_any(&all).unwrap().len(), all.len());
    // Damage record 3 on disk and publish: only data.zr changes in the bucket.
    common::damage_record(&store, 3);
    let again = emu.publish(&store, "sealed");
    if emu.pushes() {
        assert!(again.contains("(1 uploaded"), "{again}");
    }
    let out = run_with(zrecord(emu), &[&"verify", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && text.contains("record 3") && text.contains("data.zr"), "{text}");
    let remote = open_with(emu, "sealed", checked).unwrap();
    match remote.gather_ragged(&[2, 3]) {
        Err(e @ Error::ChecksumMismatch { .. }) => assert!(e.to_string().contains("record 3"), "{e}"),
        other => panic!("expected a checksum mismatch, got {other:?}"),
    }
}

/// A 6 MiB store pushed with 5 MiB parts: data.zr goes up in 2 parts, then
/// sums.zr, then meta.zr; it reads back, and a second push uploads nothing.
pub fn big_files_go_up_in_parts<E: Emulator + ?Sized>(emu: &E) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("big");
    let row = 64 << 10;
    let mut w = zrecord::local::writer::Writer::create_dense(
        &store,
        "|u1",
        &[row as u64],
        zrecord::local::writer::CreateOptions::codec(zrecord::Codec::Raw),
    )
    .unwrap();
    let rows: Vec<u8> = (0..96 * row).map(|i| (i * 31 % 251) as u8).collect();
    w.append(&rows).unwrap();
    w.close().unwrap();
    assert!(store.join("sums.zr").exists(), "the writer seals the store");
    let url = emu.url("big");
    let out = ok(emu, &[&"push", &store, &url, &"--part-size", &"5"]);
    let names: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert_eq!(&names[..3], ["data.zr", "sums.zr", "meta.zr"], "{out}");
    assert!(out.lines().next().unwrap().contains("in 2 parts"), "{out}");
    let remote = open(emu, "big").unwrap();
    let got = remote.gather(&[95, 0, 40]).unwrap();
    let local = Store::open(&store).unwrap().gather(&[95, 0, 40]).unwrap();
    assert_eq!(got.bytes(), local.bytes());
    let again = ok(emu, &[&"push", &store, &url, &"--part-size", &"5"]);
    assert!(again.contains("(0 uploaded, 3 unchanged"), "{again}");
}
