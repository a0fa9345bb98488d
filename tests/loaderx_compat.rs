//! Our writer writes every fixture's records with each codec; our reader and
//! the real loaderx 2.0.1 (in a Python venv) read them back exactly.

mod common;

use common::{fixtures, fixtures_dir, loaderx_verify, FixtureStore};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use zrecord::format::Verify;
use zrecord::training::dict::{train_from_samples, Tier};
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

/// A fresh directory of the target's temp dir for one test.
fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn our_stores_read_back_by_us_and_by_loaderx() {
    let out = out_dir("loaderx-compat");
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

/// One record: its shape and payload bytes.
type Record = (Vec<u64>, Vec<u8>);

/// Records that zstd shrinks about as loaderx's images do: runs of a
/// gradient broken by sparse noise.
fn image_like(rng: &mut common::Rng, len: usize) -> Vec<u8> {
    (0..len).map(|k| if rng.below(16) == 0 { rng.next() as u8 } else { (k / 64) as u8 }).collect()
}

/// The manifest entry `loaderx_verify.py` checks a store against; writes its
/// expected bytes next to it.
fn manifest_entry(
    out: &Path,
    name: &str,
    dtype: &str,
    item_shape: Option<&[u64]>,
    codec: Codec,
    records: &[Record],
) -> Value {
    let mut offset = 0;
    let locs: Vec<Value> = records
        .iter()
        .map(|(shape, bytes)| {
            let loc = json!({"shape": shape, "offset": offset, "nbytes": bytes.len()});
            offset += bytes.len();
            loc
        })
        .collect();
    let expected = format!("{name}.expected.bin");
    let all: Vec<u8> = records.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    std::fs::write(out.join(&expected), all).unwrap();
    let mut entry = json!({"name": name, "kind": if item_shape.is_some() { "dense" } else { "ragged" },
        "dtype": dtype, "codec": codec.name(), "len": records.len(), "expected": expected, "records": locs});
    if let Some(shape) = item_shape {
        entry["item_shape"] = json!(shape);
    }
    entry
}

/// Write `records` as one store appending `per` records at a time.
fn write_in_appends(
    dir: &Path,
    item_shape: Option<&[u64]>,
    options: CreateOptions,
    records: &[Record],
    per: usize,
) {
    match item_shape {
        Some(shape) => {
            let mut w = Writer::create_dense(dir, "|u1", shape, options).unwrap();
            for part in records.chunks(per) {
                w.append(&part.iter().flat_map(|(_, b)| b.iter().copied()).collect::<Vec<u8>>()).unwrap();
            }
            w.close().unwrap();
        }
        None => {
            let mut w = Writer::create_ragged(dir, "|u1", options).unwrap();
            for part in records.chunks(per) {
                let batch: Vec<(&[u64], &[u8])> =
                    part.iter().map(|(s, b)| (s.as_slice(), b.as_slice())).collect();
                w.append_ragged(&batch).unwrap();
            }
            w.close().unwrap();
        }
    }
}

/// Appends big enough for every parallel path of the writer (blocks allocated
/// ahead, raw rows hashed beside the write, chunks compressed on the pool
/// and written in order by whichever thread finishes the one due, fine
/// chunks at level 19, more records than one round holds) store exactly the bytes that small appends (one
/// record each: all sequential) store, `data.zr` ends at the published tail,
/// and loaderx reads every record.
#[test]
fn large_appends_store_what_small_appends_store_and_loaderx_reads_them() {
    let out = out_dir("loaderx-compat-large");
    let mut rng = common::Rng(7);
    let dict = std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap();
    let row: Vec<u64> = vec![64, 1024];
    let dense: Vec<Record> = (0..100).map(|_| (row.clone(), image_like(&mut rng, 64 << 10))).collect();
    let ragged: Vec<Record> = (0..100)
        .map(|_| {
            let h = 16 + rng.below(112) as u64;
            (vec![h, 1024], image_like(&mut rng, h as usize * 1024))
        })
        .collect();
    // Level 19 is slow in a debug build: fewer, smaller records (still past
    // the pool's threshold, one chunk per few records).
    let small: Vec<Record> = (0..40).map(|_| (vec![4096], image_like(&mut rng, 4096))).collect();
    let small_row: &[u64] = &[4096];
    // More one-byte labels than one round of the writer holds.
    let labels: Vec<Record> = (0..(1 << 20) + 7).map(|k| (vec![], vec![k as u8 ^ 0x5a])).collect();
    // (name, item_shape, codec, records, records per append of the copy)
    let cases = [
        ("dense-raw", Some(row.as_slice()), Codec::Raw, dense.as_slice(), 1),
        ("dense-zstd", Some(&row), Codec::Zstd, &dense, 1),
        ("ragged-raw", None, Codec::Raw, &ragged, 1),
        ("ragged-zstd", None, Codec::Zstd, &ragged, 1),
        ("dense-zstd_dict", Some(small_row), Codec::ZstdDict, &small, 1),
        ("dense-labels", Some(&[]), Codec::Raw, &labels, 4096),
    ];
    let mut entries = Vec::new();
    for (name, item_shape, codec, records, per) in cases {
        let options = || match codec {
            Codec::ZstdDict => CreateOptions::with_dict(dict.clone()),
            _ => CreateOptions::codec(codec),
        };
        let (whole, single) = (out.join(name), out.join(format!("{name}-in-small-appends")));
        write_in_appends(&whole, item_shape, options(), records, records.len());
        write_in_appends(&single, item_shape, options(), records, per);
        for file in ["meta.zr", "data.zr", "sums.zr"] {
            let (a, b) =
                (std::fs::read(whole.join(file)).unwrap(), std::fs::read(single.join(file)).unwrap());
            assert!(a == b, "{name}: {file} differs between one append and small appends");
        }
        let meta = std::fs::read(whole.join("meta.zr")).unwrap();
        let tail = u64::from_le_bytes(meta[8..16].try_into().unwrap());
        assert_eq!(
            std::fs::metadata(whole.join("data.zr")).unwrap().len(),
            tail,
            "{name}: data.zr past the tail"
        );
        let checked = OpenOptions { verify: Verify::Always, ..Default::default() };
        let store = Store::open_with(&whole, checked).unwrap();
        // Every record of the image-like stores; a stride of the million labels
        // (both copies of them are compared byte for byte above), which
        // loaderx skips.
        for (i, (shape, bytes)) in records.iter().enumerate().step_by(records.len().div_ceil(1000)) {
            let (got_shape, got) = store.get(i as u64).unwrap();
            assert!(got_shape == *shape && got.as_slice() == bytes.as_slice(), "{name}: record {i}");
        }
        if records.len() <= 1000 {
            entries.push(manifest_entry(&out, name, "|u1", item_shape, codec, records));
        }
    }
    let count = entries.len();
    let manifest = json!({"loaderx": "2.0.1", "stores": entries, "unpublished": []});
    std::fs::write(out.join("manifest.json"), serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let run = loaderx_verify(&out.join("manifest.json"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains(&format!("{count} passed, 0 failed")), "loaderx rejected our stores:\n{stdout}");
}
