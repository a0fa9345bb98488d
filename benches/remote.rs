//! Remote reading, natively and in the browser, side by side in one run
//! (`cargo bench --bench remote`):
//!
//! 1. **Decode**, one thread, MB/s of decoded bytes: C zstd and ruzstd
//!    decoding the frames of the same zstd stores natively, zrecord's native
//!    reader gathering them in consecutive batches, and the wasm reader in
//!    `pkg/` (ruzstd) doing the same inside headless Chromium from memory.
//! 2. **Random gathers** over loopback HTTP from nginx, records/s of IID
//!    batches of 256: local mmap, the native HTTP reader, and the wasm reader
//!    in Chromium with the page on the store's origin and on another one.
//!
//! ```text
//! cargo bench --bench remote                          # full run, about 2 min
//! cargo bench --bench remote -- --json out.json       # also write the results as JSON
//! cargo bench --bench remote -- --no-browser          # native rows only
//! cargo bench --bench remote -- --keep DIR            # keep the stores (and the served tree) in DIR
//! cargo test --release --bench remote -- --quick      # smoke run (the test suite's)
//! ZRECORD_BENCH_PKG=/tmp/pkg-o3 cargo bench --bench remote   # another build of pkg/
//! ```
//!
//! Chromium runs through `benches/browser/run.mjs` (playwright-core and
//! `/usr/bin/chromium`, as the viewer tests). Every browser row is checked
//! against the native reader: the hash of its first batch must match.

mod common;
#[path = "../tests/common/nginx.rs"]
mod nginx;

use common::{iid_batches, load_average, write_store, Workload, BATCH};
use serde_json::{json, Value};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use zrecord::codec::{c, pure};
use zrecord::remote::RemoteOptions;
use zrecord::Records;
use zrecord::{Codec, Store};

struct Args {
    quick: bool,
    browser: bool,
    json: Option<PathBuf>,
    /// Write the stores (and the served tree) here and keep them.
    keep: Option<PathBuf>,
    secs: f64,
}

fn parse_args() -> Option<Args> {
    let mut a = Args { quick: false, browser: true, json: None, keep: None, secs: f64::NAN };
    let mut bench = false;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--bench" => bench = true,
            "--quick" => a.quick = true,
            "--no-browser" => a.browser = false,
            "--json" => a.json = Some(it.next().expect("--json FILE").into()),
            "--keep" => a.keep = Some(it.next().expect("--keep DIR").into()),
            "--secs" => a.secs = it.next().and_then(|s| s.parse().ok()).expect("--secs SECONDS"),
            other => {
                panic!("unknown option {other} (--quick, --no-browser, --json FILE, --keep DIR, --secs S)")
            }
        }
    }
    if a.secs.is_nan() {
        a.secs = if a.quick { 0.1 } else { 2.0 };
    }
    // `cargo test --benches` runs every bench without --bench: keep that quick.
    (bench || a.quick).then_some(a)
}

/// Records of each store, full run / quick run.
struct Sizes {
    gather: usize,
    decode_tokens: usize,
    decode_vision: usize,
}

const FULL: Sizes = Sizes { gather: 100_000, decode_tokens: 10_000, decode_vision: 100 };
const QUICK: Sizes = Sizes { gather: 5_000, decode_tokens: 1_000, decode_vision: 8 };
const SEED: u64 = 20_240_501;
/// Batches read with no location page cached, before the timed warm ones.
const COLD: usize = 4;

/// What a store is measured for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Consecutive batches on one thread, from memory.
    Decode,
    /// Random batches over HTTP.
    Gather,
}

/// A store the bench writes, under `ROOT/stores/NAME/`.
struct Bench {
    name: &'static str,
    role: Role,
    workload: Workload,
    codec: Codec,
    /// Records per batch.
    batch: usize,
}

const STORES: [Bench; 5] = [
    Bench {
        name: "tokens-zstd",
        role: Role::Decode,
        workload: Workload::DenseTokens,
        codec: Codec::Zstd,
        batch: BATCH,
    },
    Bench {
        name: "tokens-zstd_dict",
        role: Role::Decode,
        workload: Workload::DenseTokens,
        codec: Codec::ZstdDict,
        batch: BATCH,
    },
    Bench {
        name: "vision-zstd",
        role: Role::Decode,
        workload: Workload::DenseVision,
        codec: Codec::Zstd,
        batch: 16,
    },
    Bench {
        name: "tokens-raw",
        role: Role::Gather,
        workload: Workload::DenseTokens,
        codec: Codec::Raw,
        batch: BATCH,
    },
    Bench {
        name: "tokens-zstd-big",
        role: Role::Gather,
        workload: Workload::DenseTokens,
        codec: Codec::Zstd,
        batch: BATCH,
    },
];

/// FNV-1a (32 bit) as 8 hex digits; `benches/browser/bench.mjs` computes the same.
fn fnv1a(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{h:08x}")
}

/// Calls `step` until `secs` have passed (at least once); returns (calls, seconds).
fn time(secs: f64, mut step: impl FnMut(usize)) -> (usize, f64) {
    let t0 = Instant::now();
    let mut k = 0;
    loop {
        step(k);
        k += 1;
        let s = t0.elapsed().as_secs_f64();
        if s >= secs {
            return (k, s);
        }
    }
}

fn consecutive(len: u64, size: usize) -> Vec<Vec<u64>> {
    (0..len).step_by(size).map(|s| (s..(s + size as u64).min(len)).collect()).collect()
}

/// Bytes of `indices` gathered natively (the reference for the browser rows' hashes).
fn gathered(store: &Store, indices: &[u64]) -> Vec<u8> {
    store.gather(indices).expect("gather").bytes().to_vec()
}

/// One decode row: frames decoded by C zstd and ruzstd, and the native
/// reader's consecutive gathers, all on one thread. MB/s of decoded bytes.
fn decode_native(store: &Store, dir: &Path, batch: usize, secs: f64) -> Value {
    let data = std::fs::read(dir.join("data.zr")).expect("read data.zr");
    let locs: Vec<_> = (0..store.len()).map(|i| store.loc(i).expect("loc")).collect();
    let frames: Vec<&[u8]> =
        locs.iter().map(|l| &data[l.offset as usize..l.offset as usize + l.phys_length as usize]).collect();
    let logical: u64 = locs.iter().map(|l| u64::from(l.logic_length)).sum();
    let mut out = vec![0u8; locs.iter().map(|l| l.logic_length as usize).max().unwrap_or(0)];
    let c_dict = store.dict_bytes().map(|d| c::Dict::new(d).expect("dict"));
    let pure_dict = store.dict_bytes().map(|d| pure::Dict::new(d).expect("dict"));
    let mb_s = |(passes, s): (usize, f64)| (passes as u64 * logical) as f64 / s / 1e6;

    let c_rate = mb_s(time(secs, |_| {
        for (f, l) in frames.iter().zip(&locs) {
            c::decompress_exact(f, &mut out[..l.logic_length as usize], c_dict.as_ref()).expect("C zstd");
        }
        black_box(&out);
    }));
    let pure_rate = mb_s(time(secs, |_| {
        for (f, l) in frames.iter().zip(&locs) {
            pure::decompress_exact(f, &mut out[..l.logic_length as usize], pure_dict.as_ref())
                .expect("ruzstd");
        }
        black_box(&out);
    }));
    let batches = consecutive(store.len(), batch);
    let row = store.info().row_bytes().expect("dense") as usize;
    let mut buf = vec![0u8; batch * row];
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("thread pool");
    let (n, s) = one_thread.install(|| {
        time(secs, |k| {
            let b = &batches[k % batches.len()];
            store.gather_into(b, &mut buf[..b.len() * row]).expect("gather");
        })
    });
    let gathered_bytes: usize = (0..n).map(|k| batches[k % batches.len()].len() * row).sum();
    json!({
        "c_zstd_mb_s": c_rate,
        "ruzstd_native_mb_s": pure_rate,
        "native_gather_1_thread_mb_s": gathered_bytes as f64 / s / 1e6,
    })
}

/// One gather row's native columns: local mmap (all threads) and the native
/// HTTP reader from nginx, cold and warm, IID batches.
fn gather_native(store: &Store, url: &str, batches: &[Vec<u64>], secs: f64) -> Value {
    let row = store.info().row_bytes().expect("dense") as usize;
    let mut buf = vec![0u8; BATCH * row];
    let warm = &batches[COLD..];
    let (n, s) = time(secs, |k| {
        let b = &warm[k % warm.len()];
        store.gather_into(b, &mut buf[..b.len() * row]).expect("gather");
    });
    let mmap = (n * BATCH) as f64 / s;

    let options = RemoteOptions { cache_pages: 1 << 16, ..Default::default() };
    let remote =
        zrecord::open::remote(url, &zrecord::open::Options { remote: options, ..Default::default() })
            .expect("open over HTTP");
    let t0 = Instant::now();
    for b in &batches[..COLD] {
        black_box(remote.gather(b).expect("gather over HTTP"));
    }
    let cold = (COLD * BATCH) as f64 / t0.elapsed().as_secs_f64();
    let before = remote.stats().data_requests;
    let (n, s) = time(secs, |k| {
        black_box(remote.gather(&warm[k % warm.len()]).expect("gather over HTTP"));
    });
    json!({
        "mmap_records_s": mmap,
        "http_native_records_s": (n * BATCH) as f64 / s,
        "http_native_cold_records_s": cold,
        "http_native_requests_per_batch": (remote.stats().data_requests - before) as f64 / n as f64,
    })
}

/// Run the browser tasks in headless Chromium; results by task name.
fn run_browser(page: &str, plan: &Value, scratch: &Path) -> Vec<Value> {
    let plan_file = scratch.join("browser-plan.json");
    std::fs::write(&plan_file, plan.to_string()).expect("write plan");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/browser/run.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(page)
        .arg(&plan_file)
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}); install Node.js, or pass --no-browser"));
    assert!(
        out.status.success(),
        "the browser run failed ({}); it needs chromium and playwright-core (bash .ci/install), or pass --no-browser",
        out.status
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("browser results (JSON)")
}

fn browser_row<'a>(results: &'a [Value], name: &str, expected_hash: &str) -> &'a Value {
    let r = results.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("no browser result {name}"));
    assert_eq!(r["hash"], expected_hash, "{name}: the browser gathered other bytes than the native reader");
    r
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn main() {
    let Some(args) = parse_args() else {
        println!("remote bench: run with `cargo bench --bench remote` (or `-- --quick`)");
        return;
    };
    let sizes = if args.quick { QUICK } else { FULL };
    let root = tempfile::tempdir().expect("temp dir");
    if let Some(keep) = &args.keep {
        assert!(!keep.exists(), "--keep {}: already exists", keep.display());
        std::fs::create_dir_all(keep).expect("create --keep directory");
    }
    let root_path = args.keep.as_deref().unwrap_or(root.path()).canonicalize().expect("root directory");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&root_path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The committed pkg/, or another build of it to compare (e.g. another opt-level).
    let pkg = std::env::var_os("ZRECORD_BENCH_PKG").map_or_else(|| repo.join("pkg"), PathBuf::from);
    std::os::unix::fs::symlink(&pkg, root_path.join("pkg")).expect("link pkg/");
    std::fs::create_dir(root_path.join("benches")).expect("mkdir");
    std::os::unix::fs::symlink(repo.join("benches/browser"), root_path.join("benches/browser"))
        .expect("link benches/browser");

    println!(
        "# zrecord remote bench{}{}: {} rayon threads, load {}",
        if args.quick { " (quick)" } else { "" },
        if cfg!(debug_assertions) { " (debug build: a smoke run, not numbers to quote)" } else { "" },
        rayon::current_num_threads(),
        load_average()
    );
    let t0 = Instant::now();
    let tokens = Workload::DenseTokens.generate(sizes.gather, SEED);
    let decode_tokens = Workload::DenseTokens.generate(sizes.decode_tokens, SEED);
    let vision = Workload::DenseVision.generate(sizes.decode_vision, SEED);
    let dict = common::train_dict(&decode_tokens);
    let store_dir = |name: &str| root_path.join("stores").join(name);
    std::fs::create_dir_all(store_dir("")).expect("mkdir");
    for b in &STORES {
        let data = match (b.workload, b.role) {
            (Workload::DenseVision, _) => &vision,
            (_, Role::Gather) => &tokens,
            (_, Role::Decode) => &decode_tokens,
        };
        let dict = (b.codec == Codec::ZstdDict).then(|| dict.clone());
        write_store(data, &store_dir(b.name), b.codec, dict);
    }
    println!("stores written in {:.1} s", t0.elapsed().as_secs_f64());

    // Two servers on one root: the page comes from `site`, the stores from
    // `site` (same origin) or `other` (cross-origin, as a viewer reading a bucket).
    let site = nginx::Nginx::start(&root_path);
    let other = nginx::Nginx::start(&root_path);
    let url = |server: &nginx::Nginx, name: &str| server.url(&format!("stores/{name}/"));

    let stores: Vec<(&Bench, Store)> =
        STORES.iter().map(|b| (b, Store::open(store_dir(b.name)).expect("open store"))).collect();
    let batches = iid_batches(sizes.gather, COLD + 40, SEED);

    // Native rows.
    let mut rows = Vec::new();
    for (b, store) in &stores {
        let decode = b.role == Role::Decode;
        eprintln!("  native: {} ({})", b.name, if decode { "decode" } else { "gather" });
        let mut row = if decode {
            decode_native(store, &store_dir(b.name), b.batch, args.secs)
        } else {
            gather_native(store, &url(&site, b.name), &batches, args.secs)
        };
        let first =
            if decode { consecutive(store.len(), b.batch).swap_remove(0) } else { batches[COLD].clone() };
        row["name"] = json!(b.name);
        row["records"] = json!(store.len());
        row["record_bytes"] = json!(store.info().row_bytes());
        row["hash"] = json!(fnv1a(&gathered(store, &first)));
        rows.push(row);
    }

    // Browser rows: the same stores and batches, checked against the native hashes.
    if args.browser {
        let budget_ms = args.secs * 1000.0;
        let mut plan = Vec::new();
        for (b, _) in &stores {
            if b.role == Role::Decode {
                plan.push(json!({"name": format!("{}/memory", b.name), "kind": "decode", "args": {
                    "url": url(&site, b.name), "batch": b.batch,
                    "dict": b.codec == Codec::ZstdDict, "budgetMs": budget_ms}}));
            } else {
                for (origin, server) in [("same-origin", &site), ("cross-origin", &other)] {
                    plan.push(json!({"name": format!("{}/{origin}", b.name), "kind": "gather", "args": {
                        "url": url(server, b.name), "batches": batches, "cold": COLD, "budgetMs": budget_ms}}));
                    plan.push(
                        json!({"name": format!("{}/{origin}/fetch", b.name), "kind": "fetchRate", "args": {
                        "file": format!("{}data.zr", url(server, b.name)), "size": 2048,
                        "concurrency": RemoteOptions::browser().concurrency, "budgetMs": budget_ms}}),
                    );
                }
            }
        }
        let results = run_browser(&site.url("benches/browser/index.html"), &Value::from(plan), &root_path);
        for row in &mut rows {
            let name = row["name"].as_str().unwrap_or_default().to_string();
            let hash = row["hash"].as_str().unwrap_or_default().to_string();
            if row.get("c_zstd_mb_s").is_some() {
                let r = browser_row(&results, &format!("{name}/memory"), &hash);
                row["wasm_gather_mb_s"] = json!(f(&r["bytesPerSec"]) / 1e6);
                row["chromium"] = r["chromium"].clone();
            } else {
                for origin in ["same-origin", "cross-origin"] {
                    let r = browser_row(&results, &format!("{name}/{origin}"), &hash);
                    let bare = results
                        .iter()
                        .find(|r| r["name"] == format!("{name}/{origin}/fetch"))
                        .expect("fetch rate result");
                    row[format!("chromium_{origin}")] = json!({
                        "records_s": r["recordsPerSec"], "cold_records_s": r["coldRecordsPerSec"],
                        "requests_per_batch": r["requestsPerBatch"],
                        "bare_fetch_requests_s": bare["requestsPerSec"]});
                    row["chromium"] = r["chromium"].clone();
                }
            }
        }
    }
    report(&rows, &sizes, args.browser);
    if let Some(path) = &args.json {
        let doc = json!({"quick": args.quick, "secs": args.secs, "threads": rayon::current_num_threads(),
            "load_average_end": load_average(), "rows": rows});
        std::fs::write(path, serde_json::to_string_pretty(&doc).expect("json")).expect("write --json file");
        println!("\nresults written to {}", path.display());
    }
}

fn report(rows: &[Value], sizes: &Sizes, browser: bool) {
    let chromium = rows.iter().find_map(|r| r["chromium"].as_str()).unwrap_or("not run");
    println!("\n## Decode, one thread, MB/s of decoded bytes (Chromium {chromium})\n");
    println!(
        "Frames of the same zstd stores decoded natively by C zstd and ruzstd; zrecord's reader gathering \
         them in consecutive batches natively (C zstd, 1 thread) and in Chromium (wasm, ruzstd, from memory)."
    );
    println!("\n| store | records | C zstd | ruzstd native | native gather | wasm gather | C / ruzstd | native / wasm gather |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows.iter().filter(|r| r.get("c_zstd_mb_s").is_some()) {
        let (c, p, n, w) = (
            f(&r["c_zstd_mb_s"]),
            f(&r["ruzstd_native_mb_s"]),
            f(&r["native_gather_1_thread_mb_s"]),
            f(&r["wasm_gather_mb_s"]),
        );
        println!(
            "| {} | {} × {} B | {c:.0} | {p:.0} | {n:.0} | {} | {:.2}× | {} |",
            r["name"].as_str().unwrap_or("?"),
            r["records"],
            r["record_bytes"],
            if browser { format!("{w:.0}") } else { "–".into() },
            c / p,
            if browser { format!("{:.2}×", n / w) } else { "–".into() },
        );
    }
    println!(
        "\n## Random gathers: IID batches of {BATCH} from {} records, records/s (warm; cold = first {COLD} batches)\n",
        sizes.gather
    );
    println!(
        "Chromium's columns also give its HTTP requests/s: the reader's, and bare `fetch` calls of 2 KiB \
         ranges with as many in flight (the browser's own ceiling)."
    );
    println!(
        "\n| store | local mmap | HTTP native | Chromium same-origin | Chromium cross-origin | \
         requests/batch | mmap / Chromium | native HTTP / Chromium |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows.iter().filter(|r| r.get("mmap_records_s").is_some()) {
        let chromium = |origin: &str| {
            let c = &r[format!("chromium_{origin}")];
            let records = f(&c["records_s"]);
            let requests = records / BATCH as f64 * f(&c["requests_per_batch"]);
            format!(
                "{records:.0} (cold {:.0}; {requests:.0} req/s, bare fetch {:.0})",
                f(&c["cold_records_s"]),
                f(&c["bare_fetch_requests_s"])
            )
        };
        let same = f(&r["chromium_same-origin"]["records_s"]);
        let dash = || "–".to_string();
        println!(
            "| {} | {:.0} | {:.0} (cold {:.0}) | {} | {} | {:.1} | {} | {} |",
            r["name"].as_str().unwrap_or("?"),
            f(&r["mmap_records_s"]),
            f(&r["http_native_records_s"]),
            f(&r["http_native_cold_records_s"]),
            if browser { chromium("same-origin") } else { dash() },
            if browser { chromium("cross-origin") } else { dash() },
            f(&r["http_native_requests_per_batch"]),
            if browser { format!("{:.0}×", f(&r["mmap_records_s"]) / same) } else { dash() },
            if browser { format!("{:.1}×", f(&r["http_native_records_s"]) / same) } else { dash() },
        );
    }
}
