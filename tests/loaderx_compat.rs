//! Our writer writes every fixture's records with each codec; our reader and
//! the real loaderx 2.0.1 (in a Python venv) read them back exactly.

mod common;

use common::{fixtures, fixtures_dir, loaderx_verify, FixtureStore};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use zrecord::format::Verify;
use zrecord::train::{train_from_samples, Tier};
use zrecord::Records;
use zrecord::{Codec, CreateOptions, Geometry, OpenOptions, Store, Writer};

/// Write `f`'s records to `dir` with `codec` (appending in three batches, so
/// records span appends as in the fixtures).
fn write_copy(f: &FixtureStore, dir: &Path, codec: Codec) {
    let records: Vec<Vec<u8>> = (0..f.len as usize).map(|i| f.record_bytes(i)).collect();
    let mut options = CreateOptions::codec(codec);
    if codec == Codec::ZstdDict {
        let logical: Vec<Vec<u8>> = records.clone();
        let dict = train_from_samples(logical.iter().map(Vec::as_slice), Tier::Fast).unwrap_or_else(|_| {
            // Too few records to train on: any valid dictionary serves.
            std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap()
        });
        options = CreateOptions::with_dict(dict);
    }
    let parts = [0, records.len() / 3, 2 * records.len() / 3, records.len()];
    match &f.item_shape {
        Some(shape) => {
            let mut w = Writer::create_dense(dir, &f.dtype, shape, options).unwrap();
            for p in parts.windows(2) {
                w.append(&records[p[0]..p[1]].concat()).unwrap();
            }
            w.close().unwrap();
        }
        None => {
            let mut w = Writer::create_ragged(dir, &f.dtype, options).unwrap();
            for p in parts.windows(2) {
                let batch: Vec<(&[u64], &[u8])> =
                    (p[0]..p[1]).map(|i| (f.records[i].0.as_slice(), records[i].as_slice())).collect();
                w.append_ragged(&batch).unwrap();
            }
            w.close().unwrap();
        }
    }
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("loaderx-compat");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn our_stores_read_back_by_us_and_by_loaderx() {
    let out = out_dir();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(fixtures_dir().join("manifest.json")).unwrap()).unwrap();
    let mut entries = Vec::new();
    for f in fixtures() {
        let original =
            manifest["stores"].as_array().unwrap().iter().find(|s| s["name"] == f.name.as_str()).unwrap();
        std::fs::copy(
            fixtures_dir().join(original["expected"].as_str().unwrap()),
            out.join(format!("{}.expected.bin", f.name)),
        )
        .unwrap();
        for codec in [Codec::Raw, Codec::Zstd, Codec::ZstdDict] {
            let name = format!("{}--as-{}", f.name, codec.name());
            write_copy(&f, &out.join(&name), codec);
            // Sealed, as our writer leaves every store: loaderx must read it all the same.
            assert!(out.join(&name).join("sums.zr").exists(), "{name}: not sealed");
            // Our reader first, every record checked against the sidecar.
            let checked = OpenOptions { verify: Verify::Always, ..Default::default() };
            let store = Store::open_with(out.join(&name), checked).unwrap();
            assert_eq!((store.len(), store.codec()), (f.len, codec));
            for i in 0..f.len {
                let (shape, bytes) = store.get(i).unwrap();
                assert_eq!(shape, f.records[i as usize].0, "{name} {i}");
                assert_eq!(bytes.as_slice(), f.record_bytes(i as usize).as_slice(), "{name} {i}");
            }
            if let Geometry::Dense { item_shape } = store.geometry() {
                assert_eq!(Some(item_shape), f.item_shape.as_ref());
            }
            let mut entry = original.clone();
            entry["name"] = json!(name);
            entry["codec"] = json!(codec.name());
            entry["expected"] = json!(format!("{}.expected.bin", f.name));
            entries.push(entry);
        }
    }
    let count = entries.len();
    let ours = json!({"loaderx": "2.0.1", "stores": entries, "unpublished": []});
    std::fs::write(out.join("manifest.json"), serde_json::to_vec_pretty(&ours).unwrap()).unwrap();

    let run = loaderx_verify(&out.join("manifest.json"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains(&format!("{count} passed, 0 failed")), "loaderx rejected our stores:\n{stdout}");
    assert!(
        run.status.success(),
        "loaderx exited with {:?}:\n{stdout}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
}
