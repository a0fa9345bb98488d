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
