//! The fixtures' manifest, parsed from bytes so both the native tests (files
//! on disk) and the wasm tests (files fetched over HTTP) share it.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::HashMap;

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
    /// Record `i`'s payload bytes, exactly as stored (`|S` and `<U` items
    /// whole, trailing NULs included).
    pub fn record_bytes(&self, i: usize) -> Vec<u8> {
        let (_, off, n) = &self.records[i];
        self.expected[*off..*off + *n].to_vec()
    }
}

fn shape(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect()
}

/// Names of the expected-bytes files the manifest refers to.
pub fn expected_files(manifest: &[u8]) -> Vec<String> {
    let m: Value = serde_json::from_slice(manifest).unwrap();
    m["stores"].as_array().unwrap().iter().map(|s| s["expected"].as_str().unwrap().to_string()).collect()
}

/// Every published store of the manifest, with its expected bytes (looked
/// up by file name in `expected`).
pub fn parse(manifest: &[u8], expected: &HashMap<String, Vec<u8>>) -> Vec<FixtureStore> {
    let m: Value = serde_json::from_slice(manifest).unwrap();
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
            expected: expected[s["expected"].as_str().unwrap()].clone(),
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
pub fn unpublished(manifest: &[u8]) -> Vec<String> {
    let m: Value = serde_json::from_slice(manifest).unwrap();
    m["unpublished"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}
