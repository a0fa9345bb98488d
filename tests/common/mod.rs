//! Shared test helpers: the loaderx fixtures and their manifest.
#![allow(dead_code)]

mod manifest;

pub use manifest::FixtureStore;
use std::path::{Path, PathBuf};

/// `tests/fixtures/loaderx-2.0.1`: the stores loaderx 2.0.1 wrote, with their manifest
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loaderx-2.0.1")
}

impl FixtureStore {
    pub fn path(&self) -> PathBuf {
        fixtures_dir().join(&self.name)
    }
}

fn manifest_bytes() -> Vec<u8> {
    std::fs::read(fixtures_dir().join("manifest.json")).unwrap()
}

/// Every published store of the manifest, with its expected bytes.
pub fn fixtures() -> Vec<FixtureStore> {
    let m = manifest_bytes();
    let expected = manifest::expected_files(&m)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(fixtures_dir().join(&f)).unwrap();
            (f, bytes)
        })
        .collect();
    manifest::parse(&m, &expected)
}

/// Names of the unpublished builds in the manifest.
pub fn unpublished() -> Vec<String> {
    manifest::unpublished(&manifest_bytes())
}

/// Where the Python with loaderx 2.0.1 that `.ci/install` sets up lives:
/// `$ZRECORD_LOADERX_PYTHON`, else `bin/python` of the venv at `$ZRECORD_VENV`
/// (default `~/.cache/zrecord/venv-loaderx`, as in `.ci/install`). It may not exist.
pub fn loaderx_python_path() -> PathBuf {
    if let Ok(p) = std::env::var("ZRECORD_LOADERX_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = std::env::var("ZRECORD_VENV").map(PathBuf::from).unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        Path::new(&home).join(".cache/zrecord/venv-loaderx")
    });
    venv.join("bin/python")
}

/// The Python with loaderx 2.0.1 (see [`loaderx_python_path`]). Panics, never
/// skips, when it is missing.
pub fn loaderx_python() -> PathBuf {
    let python = loaderx_python_path();
    assert!(
        python.exists(),
        "{} missing: run .ci/install to set up the loaderx 2.0.1 venv",
        python.display()
    );
    python
}

/// `tests/compat/loaderx_verify.py`: opens every store a manifest lists with
/// the real loaderx and checks its records' bytes.
pub fn loaderx_verify_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/loaderx_verify.py")
}

/// Have loaderx 2.0.1 check every store `manifest` lists (the format of the
/// fixtures' `manifest.json`); its report, one line per store and then
/// `P passed, F failed`.
pub fn loaderx_verify(manifest: &Path) -> std::process::Output {
    run_loaderx([loaderx_verify_script().as_os_str(), manifest.as_os_str()])
}

/// Copy every file of the store at `src` into `dst` (created).
pub fn copy_store(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
    }
}

/// A private copy of fixture `name` in a fresh tempdir (fixtures are never patched in place).
pub fn fixture_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_store(&fixtures_dir().join(name), &dir);
    (tmp, dir)
}

/// Overwrite `bytes` at `offset` of the file at `path` (which must already hold them).
pub fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    assert!(offset + bytes.len() as u64 <= f.metadata().unwrap().len(), "patch past the end of {path:?}");
    f.write_all_at(bytes, offset).unwrap();
}

/// Cut the file at `path` to `len` bytes.
pub fn truncate(path: &Path, len: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

/// Run the loaderx venv's Python with `args` and return its output.
///
/// loaderx 2.0.1 occasionally dies with SIGSEGV at interpreter exit after
/// its work is done (seen about once in 100 runs, under load); such a run is
/// retried once, so CI does not fail on loaderx's teardown. Any other exit is
/// returned as it is for the caller to judge.
pub fn run_loaderx<I, S>(args: I) -> std::process::Output
where
    I: IntoIterator<Item = S> + Clone,
    S: AsRef<std::ffi::OsStr>,
{
    use std::os::unix::process::ExitStatusExt;
    let run = || std::process::Command::new(loaderx_python()).args(args.clone()).output().unwrap();
    let out = run();
    if out.status.signal().is_some() {
        eprintln!("loaderx died by a signal ({:?}); retrying once", out.status);
        return run();
    }
    out
}

/// Overwrite the start of record `i`'s stored zstd frame (its magic number).
///
/// Flipping bytes inside a frame is not always detectable: loaderx writes
/// frames without checksums, so damaged literals can decode to the right
/// length with the wrong content. Damage to the frame's structure always is.
pub fn damage_record(store: &Path, i: u64) {
    let meta = std::fs::read(store.join("meta.zr")).unwrap();
    let at = 4096 + 16 * i as usize;
    let offset = u64::from_le_bytes(meta[at..at + 8].try_into().unwrap()) as usize;
    let mut data = std::fs::read(store.join("data.zr")).unwrap();
    data[offset..offset + 4].copy_from_slice(b"oops");
    std::fs::write(store.join("data.zr"), data).unwrap();
}

/// A small deterministic generator (splitmix64) for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The columns of the dataset fixture `tests/fixtures/dataset-v1`: `x`
/// (Dense `<f4` `[2]`, `x_codec`) and `tokens` (Ragged `<u2`, raw), for
/// tests that write datasets of its schema.
pub fn dataset_columns(x_codec: zrecord::Codec) -> Vec<zrecord::dataset::writer::ColumnDef> {
    use zrecord::dataset::writer::ColumnDef;
    use zrecord::{Codec, CreateOptions, Geometry};
    vec![
        ColumnDef {
            name: "x".into(),
            dtype: "<f4".into(),
            geometry: Geometry::Dense { item_shape: vec![2] },
            options: CreateOptions::codec(x_codec),
        },
        ColumnDef {
            name: "tokens".into(),
            dtype: "<u2".into(),
            geometry: Geometry::Ragged,
            options: CreateOptions::codec(Codec::Raw),
        },
    ]
}
