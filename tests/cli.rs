//! The `zrecord` binary against the loaderx fixtures, golden sampler
//! streams, `.npy` files written here (and by NumPy when the loaderx venv is
//! installed), and damaged or bad inputs.

mod common;

use common::{copy_store, damage_record, fixtures, fixtures_dir, unpublished, FixtureStore};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use zrecord::convert::npy;
use zrecord::DType;

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zrecord")).args(args.iter().map(|a| a.as_ref())).output().unwrap()
}

/// Run and expect success; stdout.
fn ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = run(args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}{}",
        args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>(),
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Run and expect failure with one `error: ` line; stderr.
fn fails(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let out = run(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success(),
        "{:?} should fail: {}",
        args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(err.starts_with("error: "), "{err:?}");
    err
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Expected checksum lines (`--json`) of a fixture.
fn expected_checksums(f: &FixtureStore) -> Vec<String> {
    (0..f.len as usize)
        .map(|i| {
            let shape: Vec<String> = f.records[i].0.iter().map(u64::to_string).collect();
            format!(
                "{{\"i\": {i}, \"shape\": [{}], \"sha256\": \"{}\"}}",
                shape.join(", "),
                sha(&f.record_bytes(i))
            )
        })
        .collect()
}

fn checksum_lines(store: &Path) -> Vec<String> {
    ok(&[&"checksum", &"--json", &store]).lines().map(str::to_string).collect()
}

#[test]
fn info_json_describes_every_fixture() {
    for f in fixtures() {
        let v: Value = serde_json::from_str(&ok(&[&"info", &"--json", &f.path()])).unwrap();
        assert_eq!(v["kind"], f.kind.as_str(), "{}", f.name);
        assert_eq!(v["dtype"], f.dtype.as_str(), "{}", f.name);
        assert_eq!(v["codec"], f.codec.as_str(), "{}", f.name);
        assert_eq!(v["len"], f.len, "{}", f.name);
        match &f.item_shape {
            Some(shape) => assert_eq!(v["item_shape"], serde_json::json!(shape), "{}", f.name),
            None => assert!(v.get("item_shape").is_none(), "{}", f.name),
        }
        let size = |n: &str| std::fs::metadata(f.path().join(n)).map(|m| m.len()).ok();
        assert_eq!(v["sizes"]["meta"].as_u64(), size("meta.zr"));
        assert_eq!(v["sizes"]["data"].as_u64(), size("data.zr"));
        assert_eq!(v["sizes"]["dict"].as_u64(), size("dict.zr"));
        assert!(v["sizes"]["allocated"].as_u64().is_some());
        let logical: u64 = (0..f.len as usize)
            .map(|i| {
                let prefix = if f.kind == "ragged" { 1 + 8 * f.records[i].0.len() } else { 0 };
                (prefix + f.record_bytes(i).len()) as u64
            })
            .sum();
        assert_eq!(v["logical_bytes"], logical, "{}", f.name);
        if f.len > 0 {
            let ratio = v["compression_ratio"].as_f64().unwrap();
            assert!((ratio - logical as f64 / v["stored_bytes"].as_f64().unwrap()).abs() < 1e-9);
        } else {
            assert!(v["compression_ratio"].is_null());
        }
    }
}

/// A `file://` URL names the same store as its path, for every command,
/// the local-only ones included; other hosts and unknown schemes are refused.
#[test]
fn file_urls_are_paths_and_unknown_schemes_are_refused() {
    let tmp = tmp();
    let dir = tmp.path().join("s");
    copy_store(&fixtures_dir().join("dense-u8-img-zstd"), &dir);
    let url = format!("file://{}", dir.canonicalize().unwrap().display());
    assert_eq!(ok(&[&"checksum", &url]), ok(&[&"checksum", &dir]));
    ok(&[&"seal", &url]);
    assert!(dir.join("sums.zr").exists());
    assert!(ok(&[&"verify", &url]).contains("ok"));
    let err = fails(&[&"info", &"file://elsewhere/s"]);
    assert!(err.contains("file:///path"), "{err}");
    let err = fails(&[&"info", &"ftp://host/s"]);
    assert!(err.contains("unknown URL scheme ftp://"), "{err}");
}

#[test]
fn info_text_and_refusals() {
    let f = fixtures_dir().join("dense-u8-img-zstd_dict");
    let text = ok(&[&"info", &f]);
    for want in [
        "kind         dense",
        "dtype        |u1 (uint8)",
        "item_shape   (3, 16, 16)",
        "codec        zstd_dict",
    ] {
        assert!(text.contains(want), "{text}");
    }
    assert!(text.contains("dict.zr") && text.contains("compression ratio"), "{text}");
    for name in unpublished() {
        let err = fails(&[&"info", &fixtures_dir().join(name)]);
        assert!(err.contains("unpublished build"), "{err}");
    }
    let err = fails(&[&"info", &"/no/such/store"]);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn checksum_matches_manifest_for_every_fixture() {
    for f in fixtures() {
        assert_eq!(checksum_lines(&f.path()), expected_checksums(&f), "{}", f.name);
        // Text form: `INDEX SHAPE SHA256`.
        let text = ok(&[&"checksum", &f.path()]);
        for (i, line) in text.lines().enumerate() {
            let parts: Vec<&str> = line.split(' ').collect();
            assert_eq!(parts[0], i.to_string());
            assert_eq!(parts[1], serde_json::to_string(&f.records[i].0).unwrap());
            assert_eq!(parts[2], sha(&f.record_bytes(i)));
        }
    }
}

#[test]
fn recode_keeps_every_record_for_each_codec() {
    let dir = tmp();
    let dict = fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr");
    for f in fixtures() {
        let want = expected_checksums(&f);
        for codec in ["raw", "zstd", "zstd_dict"] {
            let out = dir.path().join(format!("{}-{codec}", f.name));
            let src = f.path();
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"recode", &"-q", &src, &out, &"--codec"];
            args.push(&codec);
            // Fixtures of fewer than 7 records are too few to train a dictionary: lend them one.
            if codec == "zstd_dict" {
                args.extend([&"--dict" as &dyn AsRef<std::ffi::OsStr>, &dict]);
            }
            ok(&args);
            let v: Value = serde_json::from_str(&ok(&[&"info", &"--json", &out])).unwrap();
            assert_eq!(v["codec"], codec);
            assert_eq!(checksum_lines(&out), want, "{} as {codec}", f.name);
            ok(&[&"verify", &out]);
        }
    }
    // Training from the source, for stores big enough to train on.
    for name in ["dense-u8-img-raw", "ragged-i32-tokens-zstd"] {
        let src = fixtures_dir().join(name);
        let out = dir.path().join(format!("{name}-trained"));
        ok(&[&"recode", &src, &out, &"--codec", &"zstd_dict", &"--dict-tier", &"fast"]);
        assert_eq!(checksum_lines(&out), checksum_lines(&src));
        assert!(std::fs::read(out.join("dict.zr")).unwrap().starts_with(&[0x37, 0xA4, 0x30, 0xEC]));
    }
}

#[test]
fn recode_refuses_existing_output_and_cleans_up_on_failure() {
    let dir = tmp();
    let src = fixtures_dir().join("dense-u8-img-zstd");
    let err = fails(&[&"recode", &src, &fixtures_dir().join("dense-u8-img-raw"), &"--codec", &"raw"]);
    assert!(err.contains("already exists"), "{err}");
    // A store that fails mid-way (record 20 damaged): the output goes away.
    let damaged = dir.path().join("damaged");
    copy_store(&src, &damaged);
    damage_record(&damaged, 20);
    let out = dir.path().join("out");
    let err = fails(&[&"recode", &damaged, &out, &"--codec", &"raw"]);
    assert!(err.contains("record 20"), "{err}");
    assert!(!out.exists(), "a failed recode leaves nothing behind");
    // An empty directory given as the output is kept, emptied.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    fails(&[&"recode", &damaged, &empty, &"--codec", &"raw"]);
    assert!(empty.is_dir() && std::fs::read_dir(&empty).unwrap().next().is_none());
    ok(&[&"recode", &src, &empty, &"--codec", &"raw"]);
    // Training failure names the way out.
    let err = fails(&[
        &"recode",
        &fixtures_dir().join("dense-S5-raw"),
        &dir.path().join("s5"),
        &"--codec",
        &"zstd_dict",
    ]);
    assert!(err.contains("--dict FILE"), "{err}");
    assert!(!dir.path().join("s5").exists());
}

#[test]
fn sample_matches_golden_streams() {
    let path = fixtures_dir().join("../zsampler-golden.json");
    let golden: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let modes = ["sequential", "iid", "cyclic"];
    for case in golden["cases"].as_array().unwrap() {
        let batches = case["batches"].as_array().unwrap();
        let mut args: Vec<String> = vec![
            "sample".into(),
            format!("--len={}", case["length"]),
            format!("--batch={}", case["batch_size"]),
            format!("--mode={}", modes[case["mode"].as_u64().unwrap() as usize]),
            format!("--seed={}", case["seed"]),
            format!("--steps={}", batches.len()),
        ];
        if let Some(seek) = case["seek"].as_u64() {
            args.push(format!("--seek={seek}"));
        }
        let refs: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|a| a as _).collect();
        let got = json_lines(&ok(&refs));
        assert_eq!(&got, batches, "{case}");
        // Lines are exactly Python's `json.dumps` of the list.
        let first = ok(&refs).lines().next().unwrap().to_string();
        assert_eq!(first, serde_json::to_string(&batches[0]).unwrap().replace(',', ", "));
    }
    // Sharding: ranks split each global batch into contiguous halves.
    let all = json_lines(&ok(&[
        &"sample", &"--len", &"10", &"--batch", &"4", &"--mode", &"cyclic", &"--seed", &"123", &"--steps",
        &"3",
    ]));
    for rank in 0..2u64 {
        let shard = format!("{rank}/2");
        let part = json_lines(&ok(&[
            &"sample",
            &"--len=10",
            &"--batch=4",
            &"--mode=cyclic",
            &"--seed=123",
            &"--steps=3",
            &"--shard",
            &shard,
        ]));
        for (p, a) in part.iter().zip(&all) {
            assert_eq!(
                p.as_array().unwrap()[..],
                a.as_array().unwrap()[2 * rank as usize..2 * rank as usize + 2]
            );
        }
    }
    // Default steps: one pass.
    assert_eq!(ok(&[&"sample", &"--len=10", &"--batch=4"]).lines().count(), 3);
    for bad in [["--len=0", "--batch=4"], ["--len=10", "--batch=0"]] {
        fails(&[&"sample", &bad[0], &bad[1]]);
    }
    let err = fails(&[&"sample", &"--len=10", &"--batch=4", &"--shard=0/3"]);
    assert!(err.contains("equal shards"), "{err}");
}

// ---------------------------------------------------------------- .npy files

/// Write a `.npy` file with our encoder.
fn write_npy(path: &Path, dtype: &str, fortran: bool, shape: &[u64], data: &[u8]) {
    let mut bytes = npy::encode_header(&DType::parse(dtype).unwrap(), fortran, shape);
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

/// A C-ordered array's bytes in Fortran order.
fn to_fortran(c: &[u8], shape: &[usize], item: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut f = vec![0u8; c.len()];
    for k in 0..n {
        // C multi-index of k, then its Fortran position.
        let mut rest = k;
        let mut idx = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = rest % shape[d];
            rest /= shape[d];
        }
        let mut pos = 0;
        for d in (0..shape.len()).rev() {
            pos = pos * shape[d] + idx[d];
        }
        f[pos * item..(pos + 1) * item].copy_from_slice(&c[k * item..(k + 1) * item]);
    }
    f
}

struct Case {
    name: &'static str,
    dtype: &'static str,
    shape: Vec<usize>,
    fortran: bool,
}

fn cases() -> Vec<Case> {
    let c = |name, dtype, shape: &[usize], fortran| Case { name, dtype, shape: shape.to_vec(), fortran };
    vec![
        c("f32-c", "<f4", &[5, 2, 3], false),
        c("i32-big-endian", ">i4", &[4, 3], false),
        c("f64-fortran", "<f8", &[6, 2, 3], true),
        c("u8-fortran-2d", "|u1", &[7, 5], true),
        c("i16-fortran-big", ">i2", &[3, 4, 2, 2], true),
        c("u16-1d", "<u2", &[9], false),
        c("u16-1d-fortran", "<u2", &[9], true),
        c("s5", "|S5", &[4], false),
        c("u3", "<U3", &[3, 2], false),
        c("datetime", "<M8[ns]", &[5], false),
        c("bool", "|b1", &[6, 2], false),
        c("c64", "<c8", &[2, 2], true),
        c("f16", "<f2", &[3, 3], false),
        c("void", "|V3", &[4], false),
    ]
}

/// Deterministic bytes for `n` of them.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect()
}

#[test]
fn import_export_npy_round_trips() {
    let dir = tmp();
    for (k, case) in cases().iter().enumerate() {
        let dtype = DType::parse(case.dtype).unwrap();
        let item = dtype.itemsize();
        let count: usize = case.shape.iter().product();
        let mut c_bytes = pattern(count * item, k as u8);
        if case.dtype == "|b1" {
            c_bytes.iter_mut().for_each(|b| *b &= 1);
        }
        let file_bytes = if case.fortran { to_fortran(&c_bytes, &case.shape, item) } else { c_bytes.clone() };
        let shape: Vec<u64> = case.shape.iter().map(|&d| d as u64).collect();
        let input = dir.path().join(format!("{}.npy", case.name));
        write_npy(&input, case.dtype, case.fortran, &shape, &file_bytes);
        for codec in ["raw", "zstd"] {
            let store = dir.path().join(format!("{}-{codec}", case.name));
            ok(&[&"import", &"npy", &input, &store, &"--codec", &codec]);
            // Every record is row i of the C-ordered array.
            let row = c_bytes.len() / case.shape[0];
            let sums = json_lines(&ok(&[&"checksum", &"--json", &store]));
            assert_eq!(sums.len(), case.shape[0]);
            for (i, s) in sums.iter().enumerate() {
                assert_eq!(s["sha256"], sha(&c_bytes[i * row..(i + 1) * row]), "{} row {i}", case.name);
                assert_eq!(s["shape"], serde_json::json!(&shape[1..]));
            }
            let info: Value = serde_json::from_str(&ok(&[&"info", &"--json", &store])).unwrap();
            assert_eq!(info["dtype"], case.dtype, "byte order and kind are kept");
            ok(&[&"verify", &store]);
            // Export gives the C-ordered file, byte for byte.
            let out = dir.path().join(format!("{}-{codec}-out.npy", case.name));
            ok(&[&"export", &store, &out]);
            let mut want = npy::encode_header(&dtype, false, &shape);
            want.extend_from_slice(&c_bytes);
            assert_eq!(std::fs::read(&out).unwrap(), want, "{}", case.name);
        }
    }
}

#[test]
fn import_export_ragged_round_trips() {
    let dir = tmp();
    let lens = [3usize, 1, 7, 2, 5];
    let values: Vec<u8> =
        (0..lens.iter().sum::<usize>() as i32).flat_map(|v| (v * 7 - 3).to_be_bytes()).collect();
    let mut offsets = vec![0u64];
    for l in lens {
        offsets.push(offsets.last().unwrap() + l as u64);
    }
    let vpath = dir.path().join("values.npy");
    write_npy(&vpath, ">i4", false, &[values.len() as u64 / 4], &values);
    let offset_files: Vec<(&str, Vec<u8>)> = vec![
        ("<i8", offsets.iter().flat_map(|o| (*o as i64).to_le_bytes()).collect()),
        ("<u8", offsets.iter().flat_map(|o| o.to_le_bytes()).collect()),
        (">i8", offsets.iter().flat_map(|o| (*o as i64).to_be_bytes()).collect()),
    ];
    for (k, (odtype, obytes)) in offset_files.iter().enumerate() {
        let opath = dir.path().join(format!("offsets{k}.npy"));
        write_npy(&opath, odtype, false, &[offsets.len() as u64], obytes);
        let store = dir.path().join(format!("ragged{k}"));
        ok(&[&"import", &"ragged", &vpath, &opath, &store, &"--codec", &"zstd"]);
        let sums = json_lines(&ok(&[&"checksum", &"--json", &store]));
        for (i, s) in sums.iter().enumerate() {
            let (a, b) = (offsets[i] as usize * 4, offsets[i + 1] as usize * 4);
            assert_eq!(s["sha256"], sha(&values[a..b]));
            assert_eq!(s["shape"], serde_json::json!([lens[i]]));
        }
        let got = json_lines(&ok(&[&"get", &"--json", &store, &"2"]));
        assert_eq!(got[0]["values"], serde_json::json!((4..11).map(|v| v * 7 - 3).collect::<Vec<i32>>()));
        // Export: the same values file, and `<i8` offsets.
        let (vout, oout) = (dir.path().join(format!("v{k}.npy")), dir.path().join(format!("o{k}.npy")));
        ok(&[&"export", &store, &vout, &oout]);
        assert_eq!(std::fs::read(&vout).unwrap(), std::fs::read(&vpath).unwrap());
        let mut want = npy::encode_header(&DType::parse("<i8").unwrap(), false, &[offsets.len() as u64]);
        want.extend(offsets.iter().flat_map(|o| (*o as i64).to_le_bytes()));
        assert_eq!(std::fs::read(&oout).unwrap(), want);
    }
    // Fixtures of 1-D records export and import back to the same records.
    for name in ["ragged-i32-tokens-zstd", "ragged-u8-bytes-zstd"] {
        let src = fixtures_dir().join(name);
        let (v, o, back) = (dir.path().join("fv.npy"), dir.path().join("fo.npy"), dir.path().join(name));
        let _ = std::fs::remove_file(&v);
        let _ = std::fs::remove_file(&o);
        ok(&[&"export", &src, &v, &o]);
        ok(&[&"import", &"ragged", &v, &o, &back, &"--codec", &"raw"]);
        assert_eq!(checksum_lines(&back), checksum_lines(&src), "{name}");
    }
}

#[test]
fn bad_inputs_fail_clearly_and_leave_nothing() {
    let dir = tmp();
    let d = dir.path();
    let out = d.join("out");
    let good = d.join("good.npy");
    write_npy(&good, "<f4", false, &[4, 2], &[0u8; 32]);
    let mut cases: Vec<(PathBuf, &str)> = Vec::new();
    let mut file = |name: &str, bytes: &[u8], want: &'static str| {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        cases.push((p, want));
    };
    file("text.npy", b"just some text\n", "not a .npy file");
    file("empty.npy", b"", "not a .npy file");
    let full = std::fs::read(&good).unwrap();
    file("short-header.npy", &full[..40], "truncated .npy file");
    file("short-data.npy", &full[..full.len() - 4], "truncated .npy file");
    let head = |dict: &str| {
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((dict.len() as u16).to_le_bytes());
        b.extend(dict.as_bytes());
        b
    };
    file("object.npy", &head("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"), "object arrays");
    file(
        "structured.npy",
        &head("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (2,), }"),
        "structured dtype",
    );
    file(
        "scalar.npy",
        &[head("{'descr': '<f4', 'fortran_order': False, 'shape': (), }"), vec![0; 4]].concat(),
        "0-d array",
    );
    file(
        "bad-dict.npy",
        &head("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'evil': 1}"),
        "unexpected key",
    );
    file("version.npy", b"\x93NUMPY\x07\x00\x00\x00", "version 7.0");
    for (path, want) in &cases {
        let err = fails(&[&"import", &"npy", path, &out]);
        assert!(err.contains(want), "{}: {err}", path.display());
        assert!(!out.exists(), "{}: nothing is left behind", path.display());
        let err = fails(&[&"train-dict", path, &"-o", &d.join("dict")]);
        assert!(err.contains(want), "{}: {err}", path.display());
        assert!(!d.join("dict").exists());
    }
    // Ragged offsets.
    let values = d.join("values.npy");
    write_npy(&values, "<f4", false, &[10], &[0u8; 40]);
    let offsets = |name: &str, dtype: &str, v: &[i64]| {
        let p = d.join(name);
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let dtype = DType::parse(dtype).unwrap();
        let mut b = npy::encode_header(&dtype, false, &[(bytes.len() / dtype.itemsize()) as u64]);
        b.extend(bytes);
        std::fs::write(&p, b).unwrap();
        p
    };
    for (name, dtype, v, want) in [
        ("decreasing", "<i8", &[0i64, 6, 4, 10][..], "offsets must increase"),
        ("repeated", "<i8", &[0, 4, 4, 10][..], "record 1 would be empty"),
        ("short", "<i8", &[0, 4, 9][..], "the last offset must equal the number of values"),
        ("long", "<u8", &[0, 4, 11][..], "the last offset must equal the number of values"),
        ("start", "<i8", &[2, 4, 10][..], "must start at 0"),
        ("negative", "<i8", &[0, -1, 10][..], "negative"),
        ("empty", "<i8", &[][..], "offsets is empty"),
        ("float", "<f8", &[0, 10][..], "int64 or uint64"),
    ] {
        let p = offsets(&format!("{name}.npy"), dtype, v);
        let err = fails(&[&"import", &"ragged", &values, &p, &out]);
        assert!(err.contains(want), "{name}: {err}");
        assert!(!out.exists());
    }
    let two_d = d.join("two-d.npy");
    write_npy(&two_d, "<f4", false, &[2, 5], &[0u8; 40]);
    let ok_offsets = offsets("ok.npy", "<i8", &[0, 4, 10]);
    let err = fails(&[&"import", &"ragged", &two_d, &ok_offsets, &out]);
    assert!(err.contains("values must be 1-D"), "{err}");
    // Existing outputs.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("precious.txt"), "keep me").unwrap();
    let err = fails(&[&"import", &"npy", &good, &out]);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read_to_string(out.join("precious.txt")).unwrap(), "keep me");
    let err = fails(&[&"export", &fixtures_dir().join("dense-f32-zstd"), &good]);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read(&good).unwrap(), full, "an existing file is never overwritten");
    // Export arguments that do not fit the store.
    let err = fails(&[&"export", &fixtures_dir().join("dense-f32-zstd"), &d.join("a.npy"), &d.join("b.npy")]);
    assert!(err.contains("Dense store exports to one .npy"), "{err}");
    let err = fails(&[&"export", &fixtures_dir().join("ragged-i32-tokens-zstd"), &d.join("a.npy")]);
    assert!(err.contains("two files"), "{err}");
    // A Ragged store with records of other ranks: the error names the record, no file is left.
    let (v, o) = (d.join("mixed-v.npy"), d.join("mixed-o.npy"));
    let err = fails(&[&"export", &fixtures_dir().join("ragged-f32-mixed-rank-raw"), &v, &o]);
    assert!(err.contains("record ") && err.contains("1-D records"), "{err}");
    assert!(!v.exists() && !o.exists());
    assert!(!d.join("a.npy").exists());
}

// ------------------------------------------------------------------- verify

#[test]
fn verify_passes_every_fixture() {
    for f in fixtures() {
        let text = ok(&[&"verify", &f.path()]);
        assert!(text.contains(": ok: ") && text.contains("0 problems, 0 warnings"), "{}: {text}", f.name);
        let v: Value = serde_json::from_str(&ok(&[&"verify", &"--json", &f.path()])).unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(v["len"], f.len);
    }
    for name in unpublished() {
        let out = run(&[&"verify", &fixtures_dir().join(name)]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("problem: unpublished build"));
    }
}

#[test]
fn verify_reports_every_damaged_record() {
    let dir = tmp();
    let store = dir.path().join("damaged");
    copy_store(&fixtures_dir().join("dense-u8-img-zstd"), &store);
    damage_record(&store, 7);
    damage_record(&store, 31);
    let out = run(&[&"verify", &store]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("problem: ") && text.contains("record 7"), "{text}");
    assert!(text.contains("record 31"), "continues past the first damaged record: {text}");
    assert!(text.contains("FAILED"), "{text}");
    let out = run(&[&"verify", &"--json", &store]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let indices: Vec<u64> =
        v["problems"].as_array().unwrap().iter().filter_map(|p| p["index"].as_u64()).collect();
    assert!(indices.contains(&7) && indices.contains(&31), "{v}");
    assert!(indices.iter().all(|&i| i == 7 || i == 31), "{v}");

    // A location pointing past tail_offset.
    let store = dir.path().join("bad-loc");
    copy_store(&fixtures_dir().join("ragged-i32-tokens-raw"), &store);
    let mut meta = std::fs::read(store.join("meta.zr")).unwrap();
    let at = 4096 + 16 * 5;
    meta[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(store.join("meta.zr"), meta).unwrap();
    let out = run(&[&"verify", &store]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("record 5") && text.contains("tail_offset"), "{text}");

    // Leftovers are warnings, not problems.
    let store = dir.path().join("leftovers");
    copy_store(&fixtures_dir().join("dense-f32-zstd"), &store);
    std::fs::write(store.join("notes.txt"), "hi").unwrap();
    let mut data = std::fs::read(store.join("data.zr")).unwrap();
    data.extend([1, 2, 3]);
    std::fs::write(store.join("data.zr"), data).unwrap();
    let mut meta = std::fs::read(store.join("meta.zr")).unwrap();
    meta.extend([0u8; 32]);
    std::fs::write(store.join("meta.zr"), meta).unwrap();
    let text = ok(&[&"verify", &store]);
    assert!(text.contains("warning: \"notes.txt\""), "{text}");
    assert!(text.contains("3 bytes past tail_offset"), "{text}");
    assert!(text.contains("(2 locations) past the 33 published records"), "{text}");
    assert!(text.contains("0 problems, 3 warnings"), "{text}");
}

// ---------------------------------------------------------------------- get

#[test]
fn get_prints_values() {
    let f = fixtures().into_iter().find(|f| f.name == "dense-i64-scalar-labels-zstd").unwrap();
    let lines = json_lines(&ok(&[&"get", &"--json", &f.path(), &"0", &"5", &"99"]));
    for (line, i) in lines.iter().zip([0usize, 5, 99]) {
        let want = i64::from_le_bytes(f.record_bytes(i).try_into().unwrap());
        assert_eq!(line["values"], want);
        assert_eq!(line["i"], i);
        assert_eq!(line["shape"], serde_json::json!([]));
    }
    let text = ok(&[&"get", &f.path(), &"5"]);
    let want = i64::from_le_bytes(f.record_bytes(5).try_into().unwrap());
    assert_eq!(text, format!("record 5: shape (), dtype <i8\n{want}\n"));

    // Big-endian values come out as numbers.
    let f = fixtures().into_iter().find(|f| f.name == "dense-i32-bigendian-zstd").unwrap();
    let v = &json_lines(&ok(&[&"get", &"--json", &f.path(), &"1"]))[0];
    let flat: Vec<i64> =
        f.record_bytes(1).chunks(4).map(|c| i32::from_be_bytes(c.try_into().unwrap()) as i64).collect();
    let got: Vec<i64> = flatten(&v["values"]).iter().map(|x| x.as_i64().unwrap()).collect();
    assert_eq!(got, flat);

    // Records up to 1000 values print whole; longer ones are summarised in text, complete in JSON.
    let f = fixtures().into_iter().find(|f| f.name == "dense-u8-img-raw").unwrap();
    let text = ok(&[&"get", &f.path(), &"2"]);
    assert!(text.starts_with("record 2: shape (3, 16, 16), dtype |u1\n[[["), "{text}");
    assert!(!text.contains("..."), "{text}");
    let f = fixtures().into_iter().find(|f| f.name == "dense-big-record-zstd").unwrap();
    let text = ok(&[&"get", &f.path(), &"1"]);
    let b = f.record_bytes(1);
    let n = b.len();
    let edge = |v: &[u8]| v.iter().map(|x| format!("{x:>3}")).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&format!("[{} ... {}]", edge(&b[..3]), edge(&b[n - 3..]))), "{text}");
    assert!(text.contains("1048576 values; showing 3 at each end"), "{text}");
    let v = &json_lines(&ok(&[&"get", &"--json", &f.path(), &"1"]))[0];
    let got: Vec<u8> = flatten(&v["values"]).iter().map(|x| x.as_u64().unwrap() as u8).collect();
    assert_eq!(got, b);

    // Ragged, strings.
    let f = fixtures().into_iter().find(|f| f.name == "ragged-f32-mixed-rank-raw").unwrap();
    for (i, line) in
        json_lines(&ok(&[&"get", &"--json", &f.path(), &"0", &"1", &"2", &"3"])).iter().enumerate()
    {
        assert_eq!(line["shape"], serde_json::json!(f.records[i].0));
    }
    let f = fixtures().into_iter().find(|f| f.name == "dense-S5-raw").unwrap();
    let v = &json_lines(&ok(&[&"get", &"--json", &f.path(), &"0"]))[0];
    let want = String::from_utf8(f.record_bytes(0).into_iter().filter(|&b| b != 0).collect()).unwrap();
    assert_eq!(v["values"], want);
    assert!(ok(&[&"get", &f.path(), &"0"]).contains(&format!("b'{want}'")));

    let err = fails(&[&"get", &f.path(), &"4"]);
    assert!(err.contains("index 4 out of range"), "{err}");
}

fn flatten(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.iter().flat_map(flatten).collect(),
        other => vec![other.clone()],
    }
}

// --------------------------------------------------------------- train-dict

#[test]
fn train_dict_from_store_and_npy() {
    let dir = tmp();
    let d = dir.path();
    let from_store = d.join("store.dict");
    ok(&[&"train-dict", &fixtures_dir().join("dense-u8-img-raw"), &"--tier", &"fast", &"-o", &from_store]);
    let dict = std::fs::read(&from_store).unwrap();
    assert!(dict.starts_with(&[0x37, 0xA4, 0x30, 0xEC]) && dict.len() <= 32 << 10);
    // loaderx trained the fixture's dictionary from the same records with the default tier.
    let balanced = d.join("balanced.dict");
    ok(&[&"train-dict", &fixtures_dir().join("dense-u8-img-raw"), &"-o", &balanced]);
    assert_eq!(
        std::fs::read(&balanced).unwrap(),
        std::fs::read(fixtures_dir().join("dense-u8-img-zstd_dict/dict.zr")).unwrap()
    );
    let err = fails(&[&"train-dict", &fixtures_dir().join("dense-u8-img-raw"), &"-o", &from_store]);
    assert!(err.contains("already exists"), "{err}");
    // From a .npy (Fortran order), then used to build a store.
    let f = fixtures().into_iter().find(|f| f.name == "dense-u8-img-raw").unwrap();
    let c: Vec<u8> = (0..f.len as usize).flat_map(|i| f.record_bytes(i)).collect();
    let npy_path = d.join("imgs.npy");
    write_npy(&npy_path, "|u1", true, &[40, 3, 16, 16], &to_fortran(&c, &[40, 3, 16, 16], 1));
    let from_npy = d.join("npy.dict");
    ok(&[&"train-dict", &npy_path, &"-o", &from_npy]);
    assert_eq!(
        std::fs::read(&from_npy).unwrap(),
        std::fs::read(&balanced).unwrap(),
        "same rows, same dictionary"
    );
    let store = d.join("with-dict");
    ok(&[&"import", &"npy", &npy_path, &store, &"--codec", &"zstd_dict", &"--dict", &from_store]);
    assert_eq!(std::fs::read(store.join("dict.zr")).unwrap(), dict);
    assert_eq!(checksum_lines(&store), expected_checksums(&f));
    let err =
        fails(&[&"import", &"npy", &npy_path, &d.join("x"), &"--codec", &"zstd", &"--dict", &from_store]);
    assert!(err.contains("--dict needs --codec zstd_dict"), "{err}");
}

/// Stores of a few records train as in loaderx (issue 10: these were refused).
#[test]
fn recode_and_train_dict_take_small_stores() {
    let dir = tmp();
    for name in ["dense-f64-raw", "dense-f16-zstd", "dense-i32-bigendian-zstd", "dense-bool-raw"] {
        let src = fixtures_dir().join(name);
        let dict = dir.path().join(format!("{name}.dict"));
        ok(&[&"train-dict", &src, &"--tier", &"fast", &"-o", &dict]);
        let dict = std::fs::read(&dict).unwrap();
        assert!(
            dict.starts_with(&[0x37, 0xA4, 0x30, 0xEC]) && dict.len() < 1024,
            "{name}: {} bytes",
            dict.len()
        );
        let out = dir.path().join(format!("{name}-zstd_dict"));
        ok(&[&"recode", &"-q", &src, &out, &"--codec", &"zstd_dict", &"--dict-tier", &"fast"]);
        assert_eq!(
            std::fs::read(out.join("dict.zr")).unwrap(),
            dict,
            "{name}: recode trains the same dictionary"
        );
        assert_eq!(checksum_lines(&out), checksum_lines(&src), "{name}");
        ok(&[&"verify", &out]);
    }
    // loaderx 2.0.1 made the 7 x 3 float64 store's fast dictionary 246 bytes long.
    let f64_dict = std::fs::read(dir.path().join("dense-f64-raw.dict")).unwrap();
    assert_eq!(f64_dict.len(), 246);
    // A Ragged store trains on its payloads as loaderx does: the fixture's
    // dictionary is loaderx's train_dict of the same 200 records.
    let tokens = dir.path().join("tokens.dict");
    ok(&[&"train-dict", &fixtures_dir().join("ragged-i32-tokens-raw"), &"--tier", &"fast", &"-o", &tokens]);
    assert_eq!(
        std::fs::read(&tokens).unwrap(),
        std::fs::read(fixtures_dir().join("ragged-i32-tokens-zstd_dict/dict.zr")).unwrap()
    );
    // Four records are too few for zstd (and for loaderx): a clear refusal.
    let err =
        fails(&[&"train-dict", &fixtures_dir().join("dense-S5-raw"), &"-o", &dir.path().join("s5.dict")]);
    assert!(err.contains("zstd needs at least 7 samples"), "{err}");
    assert!(!dir.path().join("s5.dict").exists());
}

// --------------------------------------------------------------------- demo

#[test]
fn demo_writes_stores_that_verify() {
    let dir = tmp();
    let out_dir = dir.path().join("demo");
    let text = ok(&[&"demo", &"--no-serve", &"--dir", &out_dir]);
    assert!(text.contains("try:  zrecord info"), "{text}");
    let mut codecs = std::collections::BTreeSet::new();
    let mut kinds = std::collections::BTreeSet::new();
    // The stores, and the dataset's streams (next to its tokenizer.json).
    let mut stores = Vec::new();
    for entry in std::fs::read_dir(&out_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.join("meta.zr").exists() {
            stores.push(path);
        } else {
            assert!(path.join("tokenizer.json").is_file(), "{}", path.display());
            for stream in std::fs::read_dir(&path).unwrap() {
                let stream = stream.unwrap().path();
                if stream.is_dir() {
                    stores.push(stream);
                }
            }
        }
    }
    assert_eq!(stores.len(), 10);
    for path in stores {
        ok(&[&"verify", &path]);
        let v: Value = serde_json::from_str(&ok(&[&"info", &"--json", &path])).unwrap();
        codecs.insert(v["codec"].as_str().unwrap().to_string());
        kinds.insert(v["kind"].as_str().unwrap().to_string());
        assert!(v["len"].as_u64().unwrap() > 0);
    }
    assert_eq!(codecs.len(), 3);
    assert_eq!(kinds.len(), 2);
    let err = fails(&[&"demo", &"--no-serve", &"--dir", &out_dir]);
    assert!(err.contains("already exists"), "{err}");
}

// ------------------------------------------------------------ NumPy interop

fn numpy_python() -> Option<PathBuf> {
    let p = common::loaderx_python_path();
    p.exists().then_some(p)
}

#[test]
fn numpy_files_round_trip() {
    let Some(python) = numpy_python() else {
        eprintln!("skipping: no loaderx venv python with NumPy");
        return;
    };
    let dir = tmp();
    let d = dir.path();
    let make = r#"
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
arrays = {
    "f32": rng.standard_normal((6, 3, 4)).astype("<f4"),
    "i32be": np.arange(60, dtype=">i4").reshape(5, 12),
    "f64f": np.asfortranarray(rng.standard_normal((7, 2, 5))),
    "u8f": np.asfortranarray(rng.integers(0, 255, (9, 4), dtype=np.uint8)),
    "i16bef": np.asfortranarray(np.arange(48, dtype=">i2").reshape(3, 4, 4)),
    "u64": np.arange(11, dtype="<u8"),
    "s": np.array([b"a", b"bcd", b"", b"xyz\x00w"], dtype="S5"),
    "u": np.array([["hé", "x"], ["", "abc"]], dtype="<U3"),
    "dt": np.array(["2024-01-02T03:04:05.123456789", "NaT", "1969-12-31"], dtype="M8[ns]"),
    "td": np.array([1, -2, 3], dtype="m8[s]"),
    "b": rng.integers(0, 2, (4, 3)).astype(bool),
    "c16": (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype("<c16"),
    "f16": rng.standard_normal((5,)).astype("<f2"),
    "v": np.array([b"\x01\x02\x03", b"\xff\x00\x10"], dtype="V3"),
}
for name, a in arrays.items():
    np.save(f"{d}/{name}.npy", a)
lens = [3, 1, 8, 2]
np.save(f"{d}/rv.npy", rng.standard_normal(sum(lens)).astype("<f8"))
np.save(f"{d}/ro.npy", np.concatenate([[0], np.cumsum(lens)]).astype("<i8"))
print(" ".join(arrays))
"#;
    let out = Command::new(&python).args(["-c", make, d.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<String> =
        String::from_utf8(out.stdout).unwrap().split_whitespace().map(String::from).collect();
    for name in &names {
        let (input, store, back) = (
            d.join(format!("{name}.npy")),
            d.join(format!("{name}-store")),
            d.join(format!("{name}-back.npy")),
        );
        ok(&[&"import", &"npy", &input, &store]);
        ok(&[&"verify", &store]);
        ok(&[&"export", &store, &back]);
    }
    ok(&[&"import", &"ragged", &d.join("rv.npy"), &d.join("ro.npy"), &d.join("rstore")]);
    ok(&[&"export", &d.join("rstore"), &d.join("rv-back.npy"), &d.join("ro-back.npy")]);
    let check = r#"
import sys, numpy as np
d = sys.argv[1]
for name in sys.argv[2:]:
    a = np.load(f"{d}/{name}.npy")
    b = np.load(f"{d}/{name}-back.npy")
    assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
    assert a.shape == b.shape, (name, a.shape, b.shape)
    assert not b.flags.f_contiguous or b.ndim < 2 or b.flags.c_contiguous
    same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    assert same or a.tobytes(order="C") == b.tobytes(order="C"), name
for suffix in ["v", "o"]:
    a, b = np.load(f"{d}/r{suffix}.npy"), np.load(f"{d}/r{suffix}-back.npy")
    assert a.dtype == b.dtype and np.array_equal(a, b), suffix
print("ok")
"#;
    let mut args = vec!["-c".to_string(), check.to_string(), d.to_str().unwrap().to_string()];
    args.extend(names.iter().cloned());
    let out = Command::new(&python).args(&args).output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // What `get --json` says equals what NumPy says.
    let values = json_lines(&ok(&[&"get", &"--json", &d.join("i32be-store"), &"2"]));
    assert_eq!(values[0]["values"], serde_json::json!((24..36).collect::<Vec<i32>>()));
    let text = ok(&[&"get", &d.join("dt-store"), &"0", &"1"]);
    assert!(text.contains("2024-01-02T03:04:05.123456789") && text.contains("NaT"), "{text}");
}

#[test]
fn closed_stdout_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["sample", "--len=1000000", "--batch=1", "--steps=1000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success() && err.is_empty(), "{status} {err}");
}

/// A private copy of fixture `name` under target/ (not /tmp, which may be
/// tmpfs: nothing to evict there, and no O_DIRECT).
fn disk_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path().join(name);
    copy_store(&fixtures_dir().join(name), &dir);
    (tmp, dir)
}

#[test]
fn bench_cold_reports_rounds_and_the_device_limit() {
    // A sealed zstd_dict store: every one of its four files is evicted.
    let (_tmp, dir) = disk_copy("ragged-i32-tokens-zstd_dict");
    ok(&[&"seal", &dir]);
    assert!(dir.join("dict.zr").exists() && dir.join("sums.zr").exists());
    let args = ["bench", "--cold", "--batches", "4", "--batch", "8", "--device-secs", "0.05", "--json"];
    let v = &json_lines(&ok(&[
        &args[0], &dir, &args[1], &args[2], &args[3], &args[4], &args[5], &args[6], &args[7], &args[8],
    ]))[0];
    assert_eq!(v["cold"], true);
    assert_eq!(v["rounds"], 3);
    assert_eq!(v["warmup"], 0, "a cold round starts with no warm-up");
    assert_eq!(v["backend"], "mmap");
    assert_eq!(v["cold_reads"], "buffered", "a small store's cold batches keep what they read");
    assert!(v["records_per_s"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["first_batch_ms"].as_f64().unwrap() > 0.0, "{v}");
    let rounds = v["per_round"].as_array().unwrap();
    assert_eq!(rounds.len(), 3);
    for r in rounds {
        assert!(r["records_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["open_ms"].as_f64().unwrap() > 0.0, "{r}");
        // Read from the device (where /proc/self/io counts it): the store
        // was evicted, so each cold round reads its records again.
        if let Some(read) = r["device_read_bytes"].as_u64() {
            assert!(read > 0 && r["read_amplification"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    let median = v["records_per_s"].as_f64().unwrap();
    let mut each: Vec<f64> = rounds.iter().map(|r| r["records_per_s"].as_f64().unwrap()).collect();
    each.sort_by(f64::total_cmp);
    assert_eq!(median, each[1]);

    let d = &v["device_limit"];
    assert_eq!(d["file"], dir.join("data.zr").display().to_string());
    let info = &json_lines(&ok(&[&"info", &"--json", &dir]))[0];
    let (stored, len) = (info["stored_bytes"].as_u64().unwrap(), info["len"].as_u64().unwrap());
    assert_eq!(d["record_bytes"], stored.div_ceil(len));
    assert_eq!(d["read_bytes"], 4096);
    match d["error"].as_str() {
        None => {
            let depths: Vec<u64> =
                d["depths"].as_array().unwrap().iter().map(|r| r["depth"].as_u64().unwrap()).collect();
            assert_eq!(depths, [1, 2, 4, 8, 16, 32, 64]);
            // Probed after each round; each depth the median of its probes.
            assert_eq!(d["probes"], 3, "{d}");
            for r in d["depths"].as_array().unwrap() {
                let mut each: Vec<f64> =
                    r["per_probe"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
                each.sort_by(f64::total_cmp);
                assert_eq!(each.len(), 3, "{r}");
                assert_eq!(r["reads_per_s"].as_f64().unwrap(), each[1], "{r}");
            }
            let best = d["best"]["reads_per_s"].as_f64().unwrap();
            assert!(best > 0.0, "{d}");
            assert!(d["depths"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["reads_per_s"].as_f64().unwrap() <= best));
            let pct = v["percent_of_device"].as_f64().unwrap();
            assert!((pct - 100.0 * median / best).abs() < 1e-6 * pct.max(1.0), "{v}");
        }
        Some(e) => {
            assert!(e.contains("does not support O_DIRECT"), "{e}");
            assert!(d["best"].is_null() && v["percent_of_device"].is_null(), "{v}");
        }
    }

    // Text: each round, then the device.
    let text =
        ok(&[&"bench", &dir, &"--cold", &"--rounds", &"2", &"--batches", &"2", &"--device-secs", &"0.02"]);
    assert!(text.contains("median of 2 rounds") && text.contains("round 2 "), "{text}");
    // A small store: its rounds read much of it (where the OS counts reads).
    if text.contains("from device") {
        assert!(text.contains("later batches were partly warm"), "{text}");
    }
    assert!(text.contains("O_DIRECT random reads of 4.00 KiB"), "{text}");
    // --device-secs 0 skips the device; a warm bench has none.
    let v = &json_lines(&ok(&[
        &"bench",
        &dir,
        &"--cold",
        &"--rounds",
        &"1",
        &"--batches",
        &"2",
        &"--device-secs",
        &"0",
        &"--json",
    ]))[0];
    assert!(v["device_limit"].is_null() && v["percent_of_device"].is_null(), "{v}");
    let v = &json_lines(&ok(&[&"bench", &dir, &"--batches", &"2", &"--backend", &"pread", &"--json"]))[0];
    assert_eq!(
        (v["cold"].as_bool(), v["rounds"].as_u64(), v["warmup"].as_u64()),
        (Some(false), Some(1), Some(1))
    );
    assert_eq!(v["backend"], "pread");
    assert!(v["device_limit"].is_null() && v["records_per_s"].as_f64().unwrap() > 0.0, "{v}");

    // --workers: through the loader, cold rounds and a shard of each batch
    // included (the batches are the sampler's, as without it).
    let loader = |more: &[&str]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"bench", &dir];
        let fixed = ["--cold", "--rounds", "2", "--batches", "3", "--batch", "8", "--device-secs", "0"];
        args.extend(fixed.iter().chain(more).map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        ok(&args)
    };
    let v = &json_lines(&loader(&["--workers", "2", "--shard", "1/2", "--json"]))[0];
    assert_eq!((v["workers"].as_u64(), v["shard"].as_str()), (Some(2), Some("1/2")), "{v}");
    for r in v["per_round"].as_array().unwrap() {
        assert!(r["records_per_s"].as_f64().unwrap() > 0.0 && r["cold_batches"].as_u64() >= Some(1), "{r}");
    }
    let text = loader(&["--workers", "2"]);
    assert!(text.contains("loader       2 workers gathering ahead (prefetch 4)"), "{text}");
    let err = fails(&[&"bench", &dir, &"--workers", &"0"]);
    assert!(err.contains("--workers must be at least 1"), "{err}");
}

#[test]
fn bench_cold_is_for_local_stores() {
    // Refused before any connection is tried.
    let err = fails(&[&"bench", &"http://127.0.0.1:9/stores/s/", &"--cold"]);
    assert!(err.contains("--cold is for local stores"), "{err}");
    let err = fails(&[&"bench", &"s3://bucket/s", &"--cold"]);
    assert!(err.contains("--cold is for local stores"), "{err}");
    let store = fixtures_dir().join("dense-f32-zstd");
    let err = fails(&[&"bench", &store, &"--cold", &"--rounds", &"0"]);
    assert!(err.contains("--rounds must be at least 1"), "{err}");
}

// ---------------------------------------------------------------- datasets

fn dataset_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dataset-v1")
}

/// A copy of the fixture dataset, to break or collect.
fn dataset_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tmp();
    let root = dir.path().join("ds");
    let status = Command::new("cp").arg("-r").arg(dataset_fixture()).arg(&root).status().unwrap();
    assert!(status.success());
    (dir, root)
}

/// `bench --cold` on a local dataset evicts every shard of its column before
/// each round and reads them back from the device; no device probe (a
/// dataset's shards are small files).
#[test]
fn bench_cold_takes_a_local_dataset() {
    // On disk, not tmpfs: nothing to evict there.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().join("ds");
    assert!(Command::new("cp").arg("-r").arg(dataset_fixture()).arg(&root).status().unwrap().success());
    let v = &json_lines(&ok(&[
        &"bench",
        &root,
        &"--column",
        &"x",
        &"--cold",
        &"--rounds",
        &"2",
        &"--batch",
        &"8",
        &"--batches",
        &"2",
        &"--json",
    ]))[0];
    assert_eq!(
        (v["cold"].as_bool(), v["rounds"].as_u64(), v["warmup"].as_u64()),
        (Some(true), Some(2), Some(0))
    );
    assert!(v["device_limit"].is_null() && v["records_per_s"].as_f64().unwrap() > 0.0, "{v}");
    for r in v["per_round"].as_array().unwrap() {
        // Where /proc/self/io counts it.
        if let Some(read) = r["device_read_bytes"].as_u64() {
            assert!(read > 0, "round read nothing from the device: {r}");
        }
    }
    let err = fails(&[&"bench", &root, &"--cold"]);
    assert!(err.contains("--column"), "{err}");
    let err = fails(&[&"bench", &root, &"--column", &"x", &"--backend", &"pread"]);
    assert!(err.contains("--backend is for stores, not datasets"), "{err}");
}

/// Write a two-column dataset (x: Dense <f4 [2], tokens: Ragged <u2) of
/// `cuts` shards at `root` and commit it; append `more` as version 2.
fn write_dataset(root: &Path, cuts: &[u64], more: Option<std::ops::Range<u64>>) {
    use zrecord::dataset::{commit, CommitMode, ShardWriter};
    let shard = |range: std::ops::Range<u64>| {
        let mut w = ShardWriter::create(root, common::dataset_columns(zrecord::Codec::Zstd)).unwrap();
        for i in range {
            w.column("x").unwrap().append_typed(&[i as f32, -(i as f32)]).unwrap();
            let t: Vec<u16> = (0..i % 5 + 1).map(|k| (i * 10 + k) as u16).collect();
            let shape = [t.len() as u64];
            let bytes: Vec<u8> = t.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.column("tokens").unwrap().append_ragged(&[(&shape[..], &bytes[..])]).unwrap();
        }
        w.finish().unwrap()
    };
    let infos: Vec<_> = cuts.windows(2).map(|w| shard(w[0]..w[1])).collect();
    commit(root.to_str().unwrap(), &infos, CommitMode::Create).unwrap();
    if let Some(range) = more {
        commit(root.to_str().unwrap(), &[shard(range)], CommitMode::Append).unwrap();
    }
}

#[test]
fn dataset_info_get_checksum_export_bench_and_verify() {
    for (_dir, root) in [(None, dataset_fixture()), {
        let d = tmp();
        let root = d.path().join("written");
        write_dataset(&root, &[0, 4, 4, 9, 10], None);
        (Some(d), root)
    }] {
        let info: Value = serde_json::from_str(&ok(&[&"info", &"--json", &root])).unwrap();
        assert_eq!(info["dataset"], true);
        assert_eq!(info["len"], 10, "{info}");
        assert_eq!(info["version"], 1);
        let names: Vec<&str> =
            info["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["x", "tokens"]);
        assert_eq!(info["columns"][0]["kind"], "dense");
        assert_eq!(info["columns"][0]["item_shape"], serde_json::json!([2]));
        assert_eq!(info["columns"][1]["dtype"], "<u2");
        let text = ok(&[&"info", &root]);
        assert!(
            text.contains("version      1") && text.contains("tokens") && text.contains("codec zstd"),
            "{text}"
        );
        let one: Value =
            serde_json::from_str(&ok(&[&"info", &"--json", &"--column", &"tokens", &root])).unwrap();
        assert_eq!((one["kind"].as_str(), one["len"].as_u64()), (Some("ragged"), Some(10)));

        // get: every column of a record, or one.
        let got = json_lines(&ok(&[&"get", &"--json", &root, &"5", &"0"]));
        assert_eq!(got[0]["i"], 5);
        assert_eq!(got[0]["columns"]["x"]["values"][0].as_f64(), Some(5.0));
        assert!(got[1]["columns"]["tokens"]["values"].is_array(), "{}", got[1]);
        let x = json_lines(&ok(&[&"get", &"--json", &"--column", &"x", &root, &"9"]));
        assert_eq!(x[0]["values"][0].as_f64(), Some(9.0));
        let text = ok(&[&"get", &root, &"3"]);
        assert!(text.contains("record 3: column x:") && text.contains("record 3: column tokens:"), "{text}");

        // checksum: each column's lines equal those of its records gathered one by one.
        let lines = json_lines(&ok(&[&"checksum", &"--json", &root]));
        assert_eq!(lines.len(), 20);
        assert_eq!((lines[0]["column"].as_str(), lines[10]["column"].as_str()), (Some("x"), Some("tokens")));
        let ds = zrecord::Dataset::open(root.to_str().unwrap()).unwrap();
        use zrecord::Records;
        for (k, line) in lines.iter().enumerate() {
            let column = ds.column(line["column"].as_str().unwrap()).unwrap();
            let batch = column.gather_any(&[line["i"].as_u64().unwrap()]).unwrap();
            assert_eq!(line["sha256"].as_str().unwrap(), sha(batch.record(0).1), "line {k}");
        }
        let tokens = ok(&[&"checksum", &"--column", &"tokens", &root]);
        assert_eq!(tokens.lines().count(), 10);
        assert!(tokens.lines().all(|l| l.starts_with("tokens ")), "{tokens}");

        // export: every column into a new directory, or one column like a store.
        let out = tmp();
        let dir = out.path().join("all");
        ok(&[&"export", &root, &dir]);
        let header = npy::parse("x.npy", &std::fs::read(dir.join("x.npy")).unwrap()).unwrap();
        assert_eq!(header.shape, [10, 2]);
        assert!(dir.join("tokens.values.npy").is_file() && dir.join("tokens.offsets.npy").is_file());
        ok(&[&"export", &"--column", &"x", &root, &out.path().join("x.npy")]);
        let err = fails(&[&"export", &root, &dir]);
        assert!(err.contains("already exists"), "{err}");

        // bench: one column, gathered here and through the loader.
        let one: [&dyn AsRef<std::ffi::OsStr>; 8] =
            [&"bench", &"--json", &"--column", &"tokens", &"--batch", &"4", &"--batches", &"3"];
        for workers in [None, Some("2")] {
            let mut args = one.to_vec();
            if let Some(w) = &workers {
                args.extend([&"--workers" as &dyn AsRef<std::ffi::OsStr>, w]);
            }
            args.push(&root);
            let b: Value = serde_json::from_str(&ok(&args)).unwrap();
            assert_eq!(b["len"], 10, "{b}");
            assert_eq!(b["workers"].as_u64(), workers.map(|w| w.parse().unwrap()), "{b}");
            assert!(b["records_per_s"].as_f64().unwrap() > 0.0, "{b}");
        }
        let err = fails(&[&"bench", &root]);
        assert!(err.contains("--column") && err.contains("x, tokens"), "{err}");

        // verify: every shard of every column.
        let v: Value = serde_json::from_str(&ok(&[&"verify", &"--json", &root])).unwrap();
        assert_eq!(
            (v["ok"].as_bool(), v["stores"].as_u64()),
            (Some(true), Some(2 * info["shards"].as_u64().unwrap()))
        );
        assert!(ok(&[&"verify", &root]).contains(": ok: version 1"));
    }
    // --column and --version are for datasets.
    let f = &fixtures()[0];
    let err = fails(&[&"info", &"--column", &"x", &f.path()]);
    assert!(err.contains("--column is for datasets"), "{err}");
    let err = fails(&[&"info", &"--column", &"nope", &dataset_fixture()]);
    assert!(err.contains("no column \"nope\""), "{err}");
}

#[test]
fn dataset_versions_open_by_number() {
    let d = tmp();
    let root = d.path().join("ds");
    write_dataset(&root, &[0, 3, 6], Some(6..8));
    let newest: Value = serde_json::from_str(&ok(&[&"info", &"--json", &root])).unwrap();
    assert_eq!((newest["version"].as_u64(), newest["len"].as_u64()), (Some(2), Some(8)));
    let old: Value = serde_json::from_str(&ok(&[&"info", &"--json", &"--version", &"1", &root])).unwrap();
    assert_eq!((old["version"].as_u64(), old["len"].as_u64()), (Some(1), Some(6)));
    assert_eq!(ok(&[&"checksum", &"--version", &"1", &"--column", &"x", &root]).lines().count(), 6);
    ok(&[&"verify", &"--version", &"1", &root]);
    let err = fails(&[&"info", &"--version", &"7", &root]);
    assert!(err.contains("no version 7"), "{err}");
}

#[test]
fn dataset_verify_names_the_broken_shard_and_column() {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dataset_fixture().join("zrecord.json")).unwrap()).unwrap();
    let shards: Vec<(String, u64)> = manifest["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap().to_string(), s["length"].as_u64().unwrap()))
        .collect();
    // A missing file.
    let (_d, root) = dataset_copy();
    std::fs::remove_file(root.join(&shards[0].0).join("x/data.zr")).unwrap();
    let out = run(&[&"verify", &root]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!out.status.success(), "{text}");
    let want = format!("problem: shard {} column x: ", shards[0].0);
    assert!(text.lines().any(|l| l.starts_with(&want) && l.contains("data.zr")), "{text}");
    assert!(text.contains("FAILED"), "{text}");
    // A store of another length in its place.
    let (_d, root) = dataset_copy();
    let (other, _) = shards.iter().find(|(_, len)| *len != shards[1].1).unwrap();
    let target = root.join(&shards[1].0).join("tokens");
    std::fs::remove_dir_all(&target).unwrap();
    let status =
        Command::new("cp").arg("-r").arg(root.join(other).join("tokens")).arg(&target).status().unwrap();
    assert!(status.success());
    let out = run(&[&"verify", &"--json", &root]);
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["shard"] == shards[1].0.as_str()
            && p["column"] == "tokens"
            && p["message"].as_str().unwrap().contains("records, the manifest says")),
        "{v}"
    );
}

#[test]
fn gc_dry_run_then_removes_only_old_uncommitted_shards() {
    let (_d, root) = dataset_copy();
    let old = root.join("shards/0000000000001-00000000000000ab");
    let fresh = root.join(format!(
        "shards/{:013}-00000000000000cd",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
    ));
    for d in [&old, &fresh] {
        std::fs::create_dir_all(d.join("x")).unwrap();
    }
    let dry = ok(&[&"gc", &root, &"--older-than", &"1h", &"--dry-run"]);
    assert!(dry.contains("would remove") && dry.contains("0000000000001-00000000000000ab"), "{dry}");
    assert!(!dry.contains("00000000000000cd"), "{dry}");
    assert!(old.is_dir());
    let done: Value = serde_json::from_str(&ok(&[&"gc", &root, &"--older-than", &"1h", &"--json"])).unwrap();
    assert_eq!(done["removed"], serde_json::json!(["shards/0000000000001-00000000000000ab"]));
    assert!(!old.exists() && fresh.is_dir());
    ok(&[&"verify", &root]);
    let err = fails(&[&"gc", &root, &"--older-than", &"1w"]);
    assert!(err.contains("unknown unit") || err.contains("1w"), "{err}");
    let err = fails(&[&"gc", &fixtures()[0].path(), &"--older-than", &"1h"]);
    assert!(err.contains("not a dataset"), "{err}");
}
