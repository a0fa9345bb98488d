//! Sharing: many threads gathering from one Store, and the store lock between
//! our writers and readers, in this process and against loaderx 2.0.1 running
//! in another one.

mod common;

use common::{fixtures_dir, loaderx_python, run_loaderx, Rng};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use zrecord::Records;
use zrecord::{Backend, Codec, CreateOptions, Error, OpenOptions, Store, Writer};

/// Records of a gather as (shape, payload) pairs.
fn gather(store: &Store, indices: &[u64]) -> Vec<(Vec<u64>, Vec<u8>)> {
    match store.item_shape() {
        Some(shape) => {
            let batch = store.gather(indices).unwrap();
            let row = batch.bytes().len() / indices.len().max(1);
            batch.bytes().chunks(row.max(1)).map(|r| (shape.to_vec(), r.to_vec())).collect()
        }
        None => store.gather_ragged(indices).unwrap().iter().map(|(s, b)| (s.to_vec(), b.to_vec())).collect(),
    }
}

#[test]
fn store_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Store>();
}

/// Eight threads gather random batches (of 1 to 16 records, and of about
/// 160 KiB, past every compressed fan-out threshold) from one Store at
/// once, and get exactly what one thread gets.
#[test]
fn many_threads_gather_like_one() {
    const THREADS: u64 = 8;
    for name in [
        "dense-u8-img-raw",
        "dense-u8-img-zstd",
        "dense-u8-img-zstd_dict",
        "dense-big-record-zstd",
        "ragged-i32-tokens-raw",
        "ragged-i32-tokens-zstd",
        "ragged-i32-tokens-zstd_dict",
        "ragged-u8-chw-images-zstd",
    ] {
        for backend in [Backend::Mmap, Backend::Pread] {
            let store =
                Store::open_with(fixtures_dir().join(name), OpenOptions { backend, ..Default::default() })
                    .unwrap();
            let n = store.len();
            // Large batches hold about 160 KiB: past the zstd parallel threshold, cheap in debug builds.
            let large = (160 << 10) / (store.logical_bytes().unwrap() / n).max(1);
            let batches: Vec<Vec<Vec<u64>>> = (0..THREADS)
                .map(|t| {
                    let mut rng = Rng(t * 7919 + n);
                    (0..8)
                        .map(|b| {
                            // Every fourth batch is large enough to go parallel inside the gather.
                            let len = if b % 4 == 3 { large.max(2) } else { 1 + rng.below(16) as u64 };
                            (0..len).map(|_| rng.below(n as usize) as u64).collect()
                        })
                        .collect()
                })
                .collect();
            let want: Vec<Vec<_>> =
                batches.iter().map(|bs| bs.iter().map(|b| gather(&store, b)).collect()).collect();
            std::thread::scope(|s| {
                let store = &store;
                let handles: Vec<_> = batches
                    .iter()
                    .map(|bs| s.spawn(move || bs.iter().map(|b| gather(store, b)).collect::<Vec<_>>()))
                    .collect();
                for (t, h) in handles.into_iter().enumerate() {
                    assert!(h.join().unwrap() == want[t], "{name} {backend:?}: thread {t} differs");
                }
            });
        }
    }
}

/// `len` bytes that compress but are record `k`'s own: `k` is written at
/// the start of every 64 bytes, random bytes of 0..4 fill the rest.
fn tagged(k: u32, len: usize, rng: &mut Rng) -> Vec<u8> {
    (0..len).map(|i| if i % 64 < 4 { k.to_le_bytes()[i % 4] } else { rng.below(4) as u8 }).collect()
}

/// Dense gathers of every size around the points where they fan out (few
/// large rows or many of them, raw and compressed, both backends) read
/// exactly the rows asked for, in order: each thread's part of the batch is
/// its own rows.
#[test]
fn parallel_dense_gathers_read_each_row_where_it_belongs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(5);
    const ROW: usize = 20 << 10;
    let rows: Vec<Vec<u8>> = (0..64).map(|k| tagged(k, ROW, &mut rng)).collect();
    for codec in [Codec::Raw, Codec::Zstd] {
        let dir = tmp.path().join(format!("{codec:?}"));
        let mut w = Writer::create_dense(&dir, "|u1", &[ROW as u64], CreateOptions::codec(codec)).unwrap();
        w.append(&rows.concat()).unwrap();
        w.close().unwrap();
        // Dense batches fan out from 16 KiB compressed (two rows here) and
        // 1 MiB raw (src/local/reader.rs).
        let at = if codec == Codec::Raw { (1 << 20) / ROW } else { 2 };
        let sizes = (1..=12).chain(at.saturating_sub(2)..=at + 9).chain([3 * at + 5, 64 * 8 + 3]);
        for backend in [Backend::Mmap, Backend::Pread] {
            let store = Store::open_with(&dir, OpenOptions { backend, ..Default::default() }).unwrap();
            for len in sizes.clone() {
                let indices: Vec<u64> = (0..len).map(|_| rng.below(rows.len()) as u64).collect();
                let got = store.gather(&indices).unwrap();
                for (j, (row, &i)) in got.bytes().chunks(ROW).zip(&indices).enumerate() {
                    assert!(
                        row == rows[i as usize],
                        "{codec:?} {backend:?}: batch of {len}, row {j} is not record {i}"
                    );
                }
            }
        }
    }
}

/// Ragged gathers of every size around the points where they fan out (8
/// KiB compressed, 4 MiB raw; records of 64 B to 40 KiB, both backends)
/// read exactly the records asked for, in order, each with its own shape.
#[test]
fn parallel_ragged_gathers_read_each_record_where_it_belongs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(6);
    let records: Vec<Vec<u8>> = (0..96)
        .map(|k| {
            let len = 64 + rng.below(40 << 10);
            tagged(k, len, &mut rng)
        })
        .collect();
    for codec in [Codec::Raw, Codec::Zstd] {
        let dir = tmp.path().join(format!("{codec:?}"));
        let mut w = Writer::create_ragged(&dir, "|u1", CreateOptions::codec(codec)).unwrap();
        let shapes: Vec<[u64; 1]> = records.iter().map(|r| [r.len() as u64]).collect();
        let refs: Vec<(&[u64], &[u8])> = shapes.iter().zip(&records).map(|(s, r)| (&s[..], &r[..])).collect();
        w.append_ragged(&refs).unwrap();
        w.close().unwrap();
        for backend in [Backend::Mmap, Backend::Pread] {
            let store = Store::open_with(&dir, OpenOptions { backend, ..Default::default() }).unwrap();
            for len in (1..=24).chain([100, 180, 250, 400]) {
                let indices: Vec<u64> = (0..len).map(|_| rng.below(records.len()) as u64).collect();
                let got = store.gather_ragged(&indices).unwrap();
                assert_eq!(got.iter().count(), indices.len());
                for (j, ((shape, bytes), &i)) in got.iter().zip(&indices).enumerate() {
                    let want = &records[i as usize];
                    assert!(
                        shape == [want.len() as u64] && bytes == &want[..],
                        "{codec:?} {backend:?}: batch of {len}, record {j} is not record {i}"
                    );
                }
            }
        }
    }
}

fn create(path: &Path) -> zrecord::Result<Writer> {
    Writer::create_dense(path, "<f4", &[2], CreateOptions::codec(Codec::Zstd))
}

/// A published store of three `<f4` rows of 2 at `path`.
fn published(path: &Path) {
    let mut w = create(path).unwrap();
    w.append_typed(&[1f32, 2., 3., 4., 5., 6.]).unwrap();
    w.close().unwrap();
}

fn assert_busy(r: zrecord::Result<impl std::fmt::Debug>, path: &Path, what: &str) {
    match r {
        Err(e @ Error::Busy { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&path.display().to_string()) && msg.contains("store busy"), "{what}: {msg}")
        }
        other => panic!("{what}: expected Busy, got {other:?}"),
    }
}

fn assert_exists(r: zrecord::Result<Writer>, what: &str) {
    assert!(matches!(r, Err(Error::AlreadyExists { .. })), "{what}: expected AlreadyExists, got {r:?}");
}

#[test]
fn second_writer_is_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s");
    let mut first = create(&path).unwrap();
    first.append_typed(&[1f32, 2.]).unwrap();
    assert_busy(create(&path), &path, "create while a writer holds it");
    assert_busy(Writer::create_ragged(&path, "|u1", CreateOptions::default()), &path, "ragged create");
    first.close().unwrap();
    assert_exists(create(&path), "create after the writer closed");
    assert_eq!(Store::open(&path).unwrap().len(), 1);
}

#[test]
fn reader_while_writer_is_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s");
    let mut w = create(&path).unwrap();
    assert_busy(Store::open(&path), &path, "open while a writer holds it");
    w.append_typed(&[1f32, 2.]).unwrap();
    assert_busy(
        Store::open_with(&path, OpenOptions { backend: Backend::Pread, ..Default::default() }),
        &path,
        "pread open while a writer holds it",
    );
    w.close().unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.gather(&[0]).unwrap().as_slice::<f32>().unwrap(), &[1., 2.]);
}

#[test]
fn writer_while_reader_is_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s");
    published(&path);
    let reader = Store::open(&path).unwrap();
    let second_reader = Store::open(&path).unwrap(); // shared locks coexist
    assert_busy(create(&path), &path, "create while readers hold it");
    drop(reader);
    assert_busy(create(&path), &path, "create while one reader still holds it");
    drop(second_reader);
    assert_exists(create(&path), "create once no one holds it");
    // A reader that opted out of the lock does not block a writer's check.
    let unlocked = Store::open_with(&path, OpenOptions { lock: false, ..Default::default() }).unwrap();
    assert_exists(create(&path), "create beside an unlocked reader");
    assert_eq!(unlocked.len(), 3);
    // Nothing keeps a writer out of it, so it maps nothing (see source/mmap.rs).
    assert_eq!(unlocked.backend(), zrecord::Backend::Pread);
    assert_eq!(Store::open(&path).unwrap().backend(), zrecord::Backend::Mmap);
}

#[test]
fn create_rules_without_lock_holders() {
    let tmp = tempfile::tempdir().unwrap();
    // An empty directory is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    create(&empty).unwrap().close().unwrap();
    // A directory holding anything else is taken.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"x").unwrap();
    assert_exists(create(&other), "directory with another file");
    // A lone meta.zr that no one holds is a store that exists.
    let lone = tmp.path().join("lone");
    std::fs::create_dir(&lone).unwrap();
    std::fs::copy(empty.join("meta.zr"), lone.join("meta.zr")).unwrap();
    assert_exists(create(&lone), "lone meta.zr");
}

#[test]
fn overwrite_replaces_a_store_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let replace = CreateOptions { overwrite: true, ..CreateOptions::codec(Codec::Raw) };
    let create_over = |p: &Path| Writer::create_dense(p, "<f4", &[2], replace.clone());
    // An unpublished build (a writer that never closed): the error says how to replace it.
    let path = tmp.path().join("s");
    let mut w = create(&path).unwrap();
    w.append_typed(&[1f32, 2.]).unwrap();
    drop(w);
    assert!(matches!(Store::open(&path), Err(Error::Unpublished { .. })));
    let e = create(&path).unwrap_err();
    assert!(e.to_string().contains("an unpublished build") && e.to_string().contains("overwrite"), "{e}");
    let mut w = create_over(&path).unwrap();
    w.append_typed(&[7f32, 8., 9., 10.]).unwrap();
    w.close().unwrap();
    assert_eq!(Store::open(&path).unwrap().len(), 2);
    // A published store: only with the flag.
    let e = create(&path).unwrap_err();
    assert!(e.to_string().contains("a published store of 2 records"), "{e}");
    create_over(&path).unwrap().close().unwrap();
    assert_eq!(Store::open(&path).unwrap().len(), 0);
    // Never a store that is open, nor a directory holding other files.
    let reader = Store::open(&path).unwrap();
    assert_busy(create_over(&path), &path, "overwrite while this process reads it");
    assert!(create_over(&path).unwrap_err().to_string().contains("this process"));
    drop(reader);
    std::fs::write(path.join("notes.txt"), b"keep").unwrap();
    assert_exists(create_over(&path), "overwrite beside another file");
    assert_eq!(std::fs::read(path.join("notes.txt")).unwrap(), b"keep");
    assert_eq!(Store::open(&path).unwrap().len(), 0);
}

#[test]
fn unfinished_build_is_unpublished_for_us() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, rows) in [("none", 0usize), ("some", 5)] {
        let path = tmp.path().join(name);
        let mut w = create(&path).unwrap();
        w.append_typed(&vec![1f32; rows * 2]).unwrap();
        drop(w);
        for backend in [Backend::Mmap, Backend::Pread] {
            match Store::open_with(&path, OpenOptions { backend, ..Default::default() }) {
                Err(e @ Error::Unpublished { .. }) => {
                    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
                    assert!(e.to_string().contains("unpublished build"), "{e}");
                }
                other => panic!("{name}: expected Unpublished, got {other:?}"),
            }
        }
        // Dropping the writer released its lock: the unfinished build is not busy.
        assert_exists(create(&path), "create over an unfinished build");
    }
}

// --- Against loaderx 2.0.1 in another process ---

/// A Python process running a loaderx script that holds a store until the
/// signal file appears. Killed (by its own pid) if the test ends early.
struct Holder {
    child: Child,
    stdout: BufReader<ChildStdout>,
    signal: PathBuf,
}

impl Holder {
    /// Run `body` (Python; `path` is the store) after loaderx is imported,
    /// then print "ready" and wait for the signal.
    fn start(path: &Path, body: &str) -> Holder {
        let signal = path.with_extension("release");
        let script = format!(
            "import os, sys, time\nimport numpy as np\nfrom loaderx.zrecord import Dense, Ragged\n\
             path, signal = sys.argv[1], sys.argv[2]\n{body}\nprint('ready', flush=True)\n\
             deadline = time.time() + 120\n\
             while not os.path.exists(signal) and time.time() < deadline:\n    time.sleep(0.01)\n\
             held.close()\nprint('closed', flush=True)\n"
        );
        let mut child = Command::new(loaderx_python())
            .arg("-c")
            .arg(script)
            .arg(path)
            .arg(&signal)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "loaderx holder did not start");
        Holder { child, stdout, signal }
    }

    /// Tell the holder to close the store and wait until it exited.
    fn release(mut self) {
        std::fs::write(&self.signal, b"").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "closed");
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "loaderx holder did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
        let status = self.child.try_wait().unwrap().unwrap();
        // loaderx 2.0.1 sometimes dies by SIGSEGV at interpreter exit after
        // its work is done (see `common::run_loaderx`); "closed" was printed.
        use std::os::unix::process::ExitStatusExt;
        if status.signal().is_some() {
            eprintln!("loaderx holder died by a signal after closing ({status:?}): loaderx teardown");
        } else {
            assert!(status.success(), "loaderx holder exited with {status:?}");
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Run a loaderx snippet once and return what it printed.
fn loaderx(path: &Path, body: &str) -> String {
    let script = format!(
        "import sys\nimport numpy as np\nfrom loaderx.zrecord import Dense, Ragged\npath = sys.argv[1]\n\
         def attempt(f):\n    try:\n        r = f()\n        print('ok', r)\n    except Exception as e:\n        \
         print(type(e).__name__ + ':', e)\n{body}\n"
    );
    let out = run_loaderx([std::ffi::OsStr::new("-c"), script.as_ref(), path.as_os_str()]);
    assert!(out.status.success(), "loaderx snippet failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const LOADERX_BUSY: &str = "ZrecordError: store is busy (already open by another native handle or process)";
const LOADERX_BAD_FORMAT: &str = "ZrecordError: invalid or unsupported zrecord store format";

/// (a) A loaderx reader holds a published store: our writer's create is busy
/// (loaderx checks the lock before the directory's contents, and so do we);
/// our readers share the store with it.
#[test]
fn loaderx_reader_makes_our_create_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s");
    published(&path);
    let holder = Holder::start(&path, "held = Dense.open(path)\nassert len(held) == 3");
    assert_busy(create(&path), &path, "create while loaderx reads");
    assert_eq!(Store::open(&path).unwrap().len(), 3, "shared readers coexist");
    // Even a directory stripped down to its meta.zr (the case docs/FORMAT.md's
    // create rule singles out) is busy, not taken over, while loaderx holds it.
    std::fs::remove_file(path.join("data.zr")).unwrap();
    assert_busy(create(&path), &path, "create over a lone meta.zr loaderx holds");
    holder.release();
    assert_exists(create(&path), "create once loaderx let go");
}

/// (b) A loaderx writer that has not closed makes our open busy, and our create too.
#[test]
fn loaderx_writer_makes_our_open_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s");
    let holder = Holder::start(
        &path,
        "held = Dense.create(path, '<f4', [2], codec='zstd')\n\
         held.append(np.arange(8, dtype='<f4').reshape(4, 2))",
    );
    assert_busy(Store::open(&path), &path, "open while loaderx writes");
    assert_busy(
        Store::open_with(&path, OpenOptions { backend: Backend::Pread, ..Default::default() }),
        &path,
        "pread open while loaderx writes",
    );
    assert_busy(create(&path), &path, "create while loaderx writes");
    holder.release();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.gather(&[3, 0]).unwrap().as_slice::<f32>().unwrap(), &[6., 7., 0., 1.]);
}

/// (c) While our writer holds a store, loaderx can neither open nor create it;
/// once we close, loaderx reads what we wrote.
#[test]
fn our_writer_makes_loaderx_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s");
    let mut w = create(&path).unwrap();
    w.append_typed(&[1f32, 2., 3., 4.]).unwrap();
    let out = loaderx(
        &path,
        "attempt(lambda: Dense.open(path))\nattempt(lambda: Dense.create(path, '<f4', [2], codec='zstd'))",
    );
    assert_eq!(out, format!("{LOADERX_BUSY}\n{LOADERX_BUSY}\n"));
    w.close().unwrap();
    let out = loaderx(&path, "attempt(lambda: Dense.open(path)[[1, 0]].tolist())");
    assert_eq!(out, "ok [[3.0, 4.0], [1.0, 2.0]]\n");
    // And our reader holding it makes loaderx's create busy.
    let _reader = Store::open(&path).unwrap();
    let out = loaderx(&path, "attempt(lambda: Dense.create(path, '<f4', [2], codec='zstd'))");
    assert_eq!(out, format!("{LOADERX_BUSY}\n"));
}

/// Our unfinished build (writer dropped without close) is not a valid store
/// for loaderx either, where its plain Header would open as an empty store.
#[test]
fn unfinished_build_is_rejected_by_loaderx() {
    let tmp = tempfile::tempdir().unwrap();
    let dense = tmp.path().join("dense");
    let mut w = create(&dense).unwrap();
    w.append_typed(&[1f32; 10]).unwrap();
    drop(w);
    let empty = tmp.path().join("empty");
    drop(create(&empty).unwrap());
    let ragged = tmp.path().join("ragged");
    let mut w = Writer::create_ragged(&ragged, "<i4", CreateOptions::codec(Codec::Raw)).unwrap();
    w.append_ragged(&[(&[2][..], &[0u8; 8][..])]).unwrap();
    drop(w);
    for (path, class) in [(&dense, "Dense"), (&empty, "Dense"), (&ragged, "Ragged")] {
        let out = loaderx(path, &format!("attempt(lambda: len({class}.open(path)))"));
        assert_eq!(out, format!("{LOADERX_BAD_FORMAT}\n"), "{}", path.display());
        assert!(matches!(Store::open(path), Err(Error::Unpublished { .. })));
    }
}
