//! Remote-reading benchmarks (`cargo bench --bench remote`):
//!
//! 1. zstd decode throughput, ruzstd (the wasm decoder) vs C zstd (native), on
//!    the same frames: level 3 without and level 19 with a dictionary.
//! 2. Random-batch gathers, records/s: local mmap vs loopback HTTP (nginx),
//!    with the location pages cold and warm.
//!
//! Plain `main` (harness = false): prints one line per measurement.
//! `ZRECORD_BENCH_LATENCY=1` adds the latency of one-record gathers, one
//! request at a time.

#[path = "../tests/common/nginx.rs"]
mod nginx;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};
use zrecord::codec::{c, pure};
use zrecord::format::{Codec, DType, Geometry, Header, RecordLoc, Schema};
use zrecord::remote::{HttpOptions, RemoteOptions, RemoteStore};
use zrecord::Store;

/// Deterministic, moderately compressible bytes (like small images/tokens).
fn record(i: u64, len: usize) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = 0u8;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(4) {
                v = v.wrapping_add((x >> 8) as u8 % 7);
            }
            v
        })
        .collect()
}

/// Run `f` repeatedly for about `budget`; returns (iterations, seconds).
fn time(budget: Duration, mut f: impl FnMut()) -> (u64, f64) {
    f();
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < budget {
        f();
        n += 1;
    }
    (n, t0.elapsed().as_secs_f64())
}

fn decode_bench() {
    const LEN: usize = 16 << 10;
    let records: Vec<Vec<u8>> = (0..256).map(|i| record(i, LEN)).collect();
    let samples: Vec<u8> = records.concat();
    let sizes: Vec<usize> = records.iter().map(Vec::len).collect();
    let dict_bytes = zstd::dict::from_continuous(&samples, &sizes, 32 << 10).unwrap();
    let plain: Vec<Vec<u8>> = records.iter().map(|r| zstd::bulk::compress(r, 3).unwrap()).collect();
    let mut with_dict = zstd::bulk::Compressor::with_dictionary(19, &dict_bytes).unwrap();
    let dicted: Vec<Vec<u8>> = records.iter().map(|r| with_dict.compress(r).unwrap()).collect();
    let c_dict = c::Dict::new(&dict_bytes).unwrap();
    let pure_dict = pure::Dict::new(&dict_bytes).unwrap();
    let mut out = vec![0u8; LEN];
    let total = (records.len() * LEN) as f64;
    for (label, frames) in [("zstd level 3", &plain), ("zstd_dict level 19", &dicted)] {
        let use_dict = label.starts_with("zstd_dict");
        let (n, s) = time(Duration::from_secs(2), || {
            for f in frames {
                c::decompress_exact(f, &mut out, use_dict.then_some(&c_dict)).unwrap();
            }
            black_box(&out);
        });
        let c_rate = total * n as f64 / s / 1e6;
        let (n, s) = time(Duration::from_secs(2), || {
            for f in frames {
                pure::decompress_exact(f, &mut out, use_dict.then_some(&pure_dict)).unwrap();
            }
            black_box(&out);
        });
        let pure_rate = total * n as f64 / s / 1e6;
        println!(
            "decode {label:<19} 16 KiB records: C zstd {c_rate:8.0} MB/s, ruzstd {pure_rate:8.0} MB/s ({:.2}x)",
            c_rate / pure_rate
        );
    }
}

/// A zstd Dense store of `n` records of `len` bytes (`|u1`), written with the format core.
fn write_store(dir: &Path, n: u64, len: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let schema = Schema {
        dtype: DType::parse("|u1").unwrap(),
        geometry: Geometry::Dense { item_shape: vec![len as u64] },
    }
    .encode();
    let mut meta = Vec::new();
    let mut data = Vec::new();
    let mut locs = Vec::new();
    for i in 0..n {
        let frame = zstd::bulk::compress(&record(i, len), 3).unwrap();
        locs.extend_from_slice(
            &RecordLoc {
                offset: data.len() as u64,
                phys_length: frame.len() as u32,
                logic_length: len as u32,
            }
            .encode(),
        );
        data.extend_from_slice(&frame);
    }
    let header = Header {
        length: n,
        tail_offset: data.len() as u64,
        schema_length: schema.len() as u32,
        codec: Codec::Zstd,
    };
    meta.extend_from_slice(&header.encode());
    meta.extend_from_slice(&schema);
    meta.resize(4096, 0);
    meta.extend_from_slice(&locs);
    std::fs::write(dir.join("meta.zr"), meta).unwrap();
    std::fs::write(dir.join("data.zr"), data).unwrap();
}

fn batches(n: u64, count: usize, batch: usize) -> Vec<Vec<u64>> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..count)
        .map(|_| {
            (0..batch)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % n
                })
                .collect()
        })
        .collect()
}

fn gather_bench() {
    use std::os::unix::fs::PermissionsExt;
    const N: u64 = 200_000;
    const LEN: usize = 512;
    const BATCH: usize = 256;
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = root.path().join("bench");
    write_store(&dir, N, LEN);
    let data_size = std::fs::metadata(dir.join("data.zr")).unwrap().len();
    println!(
        "store: {N} zstd records of {LEN} bytes ({:.1} MB stored), random batches of {BATCH}",
        data_size as f64 / 1e6
    );
    let sets = batches(N, 40, BATCH);

    let local = Store::open(&dir).unwrap();
    let mut k = 0;
    let (n, s) = time(Duration::from_secs(3), || {
        black_box(local.gather(&sets[k % sets.len()]).unwrap());
        k += 1;
    });
    println!("gather local mmap:                 {:>10.0} records/s", (n as usize * BATCH) as f64 / s);

    let server = nginx::Nginx::start(root.path());
    let url = server.url("bench/");
    if std::env::var_os("ZRECORD_BENCH_LATENCY").is_some() {
        let remote = RemoteStore::open_blocking(&url).unwrap();
        remote.gather(&[0]).unwrap();
        let t0 = Instant::now();
        for i in 0..2000u64 {
            black_box(remote.gather(&[i]).unwrap());
        }
        println!("one-record gathers: {:.0} us each", t0.elapsed().as_secs_f64() * 1e6 / 2000.0);
    }
    for (label, max_gap) in [("default (gap 64 KiB)", 64 << 10), ("no coalescing (gap 0)", 0)] {
        let options = RemoteOptions { max_gap, cache_pages: 1024, ..Default::default() };
        let remote = RemoteStore::open_blocking_with(&url, options, HttpOptions::default()).unwrap();
        // Cold: every location page is fetched on demand during the first batches.
        let t0 = Instant::now();
        for b in &sets[..4] {
            black_box(remote.gather(b).unwrap());
        }
        let cold = (4 * BATCH) as f64 / t0.elapsed().as_secs_f64();
        let mut k = 0;
        let (n, s) = time(Duration::from_secs(3), || {
            black_box(remote.gather(&sets[k % sets.len()]).unwrap());
            k += 1;
        });
        let st = remote.stats();
        println!(
            "gather HTTP {label:<22} {:>10.0} records/s warm ({cold:.0} cold), {:.1} requests/batch",
            (n as usize * BATCH) as f64 / s,
            st.data_requests as f64 / (n + 5) as f64
        );
    }
}

fn main() {
    // `cargo test --benches` runs benches with --bench absent: keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        println!("remote bench: run with `cargo bench --bench remote`");
        return;
    }
    decode_bench();
    gather_bench();
}
