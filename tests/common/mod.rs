//! Shared test helpers: the loaderx fixtures and their manifest.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};

/// `../shared/fixtures/loaderx-2.0.1`
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/loaderx-2.0.1")
}

/// One store of the manifest.
#[derive(Debug, Clone)]
pub struct FixtureStore {
    pub name: String,
    pub kind: String,
    pub dtype: String,
    pub item_shape: Option<Vec<u64>>,
    pub codec: String,
    pub len: u64,
    pub expected: Vec<u8>,
    /// (shape, offset, nbytes) per record.
    pub records: Vec<(Vec<u64>, usize, usize)>,
}

impl FixtureStore {
    pub fn path(&self) -> PathBuf {
        fixtures_dir().join(&self.name)
    }
    /// Record `i`'s payload as stored. The manifest holds NumPy's view of
    /// `|S` scalars, which drops trailing NUL bytes; stores keep the full item.
    pub fn record_bytes(&self, i: usize) -> Vec<u8> {
        let (shape, off, n) = &self.records[i];
        let mut bytes = self.expected[*off..*off + *n].to_vec();
        if let Some(size) = self.dtype.strip_prefix("|S") {
            let items: usize = shape.iter().product::<u64>() as usize;
            bytes.resize(items * size.parse::<usize>().unwrap(), 0);
        }
        bytes
    }
}

fn shape(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect()
}

/// Every published store of the manifest, with its expected bytes.
pub fn fixtures() -> Vec<FixtureStore> {
    let dir = fixtures_dir();
    let m: Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["stores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| FixtureStore {
            name: s["name"].as_str().unwrap().into(),
            kind: s["kind"].as_str().unwrap().into(),
            dtype: s["dtype"].as_str().unwrap().into(),
            item_shape: s.get("item_shape").map(shape),
            codec: s["codec"].as_str().unwrap().into(),
            len: s["len"].as_u64().unwrap(),
            expected: std::fs::read(dir.join(s["expected"].as_str().unwrap())).unwrap(),
            records: s["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        shape(&r["shape"]),
                        r["offset"].as_u64().unwrap() as usize,
                        r["nbytes"].as_u64().unwrap() as usize,
                    )
                })
                .collect(),
        })
        .collect()
}

/// Names of the unpublished builds in the manifest.
pub fn unpublished() -> Vec<String> {
    let m: Value =
        serde_json::from_slice(&std::fs::read(fixtures_dir().join("manifest.json")).unwrap()).unwrap();
    m["unpublished"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// The Python with loaderx 2.0.1 that `.ci/install` sets up
/// (`ZRECORD_LOADERX_PYTHON` overrides it). Panics, never skips, when it is missing.
pub fn loaderx_python() -> PathBuf {
    let python = match std::env::var("ZRECORD_LOADERX_PYTHON") {
        Ok(p) => PathBuf::from(p),
        Err(_) => {
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
            Path::new(&home).join(".cache/zrecord/venv-loaderx/bin/python")
        }
    };
    assert!(
        python.exists(),
        "{} missing: run .ci/install to set up the loaderx 2.0.1 venv",
        python.display()
    );
    python
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
