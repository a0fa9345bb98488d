//! Shared test helpers: the loaderx fixtures and their manifest.
#![allow(dead_code)]

mod manifest;

pub use manifest::FixtureStore;
use std::path::{Path, PathBuf};

/// `../shared/fixtures/loaderx-2.0.1`
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/loaderx-2.0.1")
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

/// Copy a store directory's files.
pub fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
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
