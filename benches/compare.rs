//! Side by side: zrecord (mmap, pread) against loaderx 2.0.1 and NumPy, on the
//! same data and the same index batches, in the same run.
//!
//! ```text
//! cargo bench --bench compare -- --quick                       # smoke test, about a minute
//! cargo bench --bench compare -- --scale 1 --json out.json     # the full comparison
//! cargo bench --bench compare -- --workloads dense-tokens --no-peers
//! cargo bench --bench compare -- --cold --workdir target/compare   # cold rounds too (not on tmpfs)
//! ```
//!
//! Per workload the records are generated once (deterministic seed; images
//! by loaderx 2.0.1's own generator, `make_vision_records`, run once by
//! `benches/field/vision.py` in the loaderx venv and cached as `.npy` under
//! `~/.cache/zrecord/vision/`, so compressed image rows mean what loaderx's
//! README rows mean) and written to a work directory as `.npy` files with the IID index batches
//! (zrecord's sampler; `compare_peers.py` checks loaderx's own sampler yields
//! the same ones). zrecord writes its stores here; `compare_peers.py`, run in
//! the loaderx venv (reused when valid, else created), writes loaderx's from
//! the same arrays with the same append calls, and times loaderx through its
//! public API and NumPy fancy indexing on a memory-mapped `.npy`.
//!
//! Before timing, every row reads its whole store once (warm page cache) and
//! checks sampled batches against the source records. Gathers are timed in
//! `--rounds` interleaved rounds (every row once per round, so load on the
//! machine hits all rows alike) adding up to at least `--secs` per row; a
//! `vs loaderx` ratio is the median of the per-round ratios.
//!
//! Columns: write MiB/s = logical bytes / (first append through close; raw and
//! zstd writes run twice in alternating order and keep the faster, five
//! times when under half a second);
//! gather MiB/s = logical payload bytes gathered / time in gathers; p95 of the
//! per-batch latency; disk = allocated blocks (`st_blocks * 512`); ratio =
//! logical bytes / disk bytes.
//!
//! `--cold` adds cold rounds after the warm ones: in each, every row's store
//! is closed, its files evicted from the page cache (`posix_fadvise(DONTNEED)`)
//! and reopened, then it times `--cold-batches` batches of its own (the IID
//! sampler at a seed per row and round: this VM's host caches its disk, so a
//! record another row just read would come back from the host's memory),
//! each checked after its timing; the rows take turns going first. The work
//! dir must be on a disk, not tmpfs (whose pages cannot be evicted).

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;
use zrecord::format::Verify;
use zrecord::{Backend, Codec, OpenOptions, Store};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const LOADERX: &str = "loaderx-2.0.1";
/// Writes shorter than this (seconds) are timed five times, the best kept.
const SHORT_WRITE_S: f64 = 0.5;

struct Args {
    scale: f64,
    secs: f64,
    rounds: usize,
    batches: usize,
    check: usize,
    seed: u64,
    json: Option<PathBuf>,
    workdir: PathBuf,
    workloads: Vec<Workload>,
    codecs: Vec<Codec>,
    peers: bool,
    keep: bool,
    write_reps: usize,
    venv: PathBuf,
    vision_cache: PathBuf,
    cold: bool,
    cold_batches: usize,
}

const USAGE: &str = "options: --scale F (1) --quick --secs F (2, timed seconds per row) --rounds N (3) \
    --json FILE --workdir DIR --workloads a,b --codecs raw,zstd,zstd_dict --write-reps N (2; zstd_dict always 1) --no-peers --keep --venv DIR --seed N --cold --cold-batches N (8)";

fn parse_args() -> Args {
    let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
    let venv = std::env::var("ZRECORD_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(&home).join(".cache/zrecord/venv-loaderx"));
    let mut a = Args {
        scale: 1.0,
        secs: 2.0,
        rounds: 3,
        batches: 2048,
        check: 16,
        seed: 20_240_501,
        json: None,
        workdir: std::env::temp_dir().join("zrecord-compare"),
        workloads: Workload::ALL.to_vec(),
        codecs: CODECS.to_vec(),
        peers: true,
        keep: false,
        write_reps: 2,
        vision_cache: Path::new(&home).join(".cache/zrecord/vision"),
        venv,
        cold: false,
        cold_batches: 8,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value; {USAGE}"));
        match arg.as_str() {
            "--scale" => a.scale = value().parse().expect("--scale FACTOR"),
            "--quick" => {
                a.scale = 0.04;
                a.secs = 0.3;
                a.rounds = 1;
                a.batches = 256;
                a.check = 4;
                a.cold_batches = 2;
            }
            "--cold" => a.cold = true,
            "--cold-batches" => a.cold_batches = value().parse::<usize>().expect("--cold-batches N").max(1),
            "--secs" => a.secs = value().parse().expect("--secs SECONDS"),
            "--rounds" => a.rounds = value().parse::<usize>().expect("--rounds N").max(1),
            "--seed" => a.seed = value().parse().expect("--seed N"),
            "--json" => a.json = Some(value().into()),
            "--workdir" => a.workdir = value().into(),
            "--workloads" => {
                a.workloads = value()
                    .split(',')
                    .map(|w| Workload::parse(w).unwrap_or_else(|| panic!("unknown workload {w}")))
                    .collect()
            }
            "--codecs" => {
                a.codecs = value()
                    .split(',')
                    .map(|c| {
                        CODECS
                            .into_iter()
                            .find(|k| k.name() == c)
                            .unwrap_or_else(|| panic!("unknown codec {c}"))
                    })
                    .collect()
            }
            "--no-peers" => a.peers = false,
            "--write-reps" => a.write_reps = value().parse::<usize>().expect("--write-reps N").max(1),
            "--keep" => a.keep = true,
            "--venv" => a.venv = value().into(),
            "--bench" => {}
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => panic!("unknown option {other}; {USAGE}"),
        }
    }
    a
}

// ---------------------------------------------------------------- the Python peer

/// Make sure the loaderx venv works, creating it if needed; returns its python.
fn ensure_venv(venv: &Path) -> PathBuf {
    let python = venv.join("bin/python");
    let probe = |python: &Path| {
        Command::new(python)
            .args(["-c", "import loaderx, numpy, msgpack; assert loaderx.__version__ == '2.0.1'"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if probe(&python) {
        return python;
    }
    eprintln!("creating the loaderx venv at {}", venv.display());
    let ok = Command::new("python3").arg("-m").arg("venv").arg(venv).status().is_ok_and(|s| s.success())
        && Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "loaderx==2.0.1", "numpy", "msgpack"])
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        ok && probe(&python),
        "could not set up the loaderx venv at {} (or pass --no-peers)",
        venv.display()
    );
    python
}

/// `compare_peers.py serve` for one workload, spoken to in JSON lines.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(python: &Path, work: &Path, seed: u64) -> Peer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/compare_peers.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg("serve")
            .arg("--dir")
            .arg(work)
            .arg("--seed")
            .arg(seed.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start compare_peers.py");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut peer = Peer { child, stdin, stdout };
        peer.read();
        peer
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read from compare_peers.py");
            assert!(n > 0, "compare_peers.py exited");
            if line.starts_with('{') {
                let v: Value = serde_json::from_str(&line).expect("JSON from compare_peers.py");
                if let Some(e) = v.get("error") {
                    panic!("compare_peers.py: {e}");
                }
                return v;
            }
        }
    }

    fn call(&mut self, cmd: Value) -> Value {
        writeln!(self.stdin, "{cmd}").expect("write to compare_peers.py");
        self.stdin.flush().expect("flush");
        self.read()
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"cmd": "quit"}));
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------- rows

/// One row of a table.
struct Row {
    system: &'static str,
    codec: Codec,
    write_s: Option<f64>,
    disk_bytes: u64,
    timed: Timed,
    /// Per-round gather MiB/s, for the median of per-round ratios.
    rounds: Vec<f64>,
    /// `--cold`: records/s of each cold round.
    cold: Vec<f64>,
}

impl Row {
    fn new(system: &'static str, codec: Codec, write_s: Option<f64>, disk_bytes: u64) -> Row {
        Row {
            system,
            codec,
            write_s,
            disk_bytes,
            timed: Timed::default(),
            rounds: Vec::new(),
            cold: Vec::new(),
        }
    }
    fn add(&mut self, t: Timed) {
        self.rounds.push(mib_s(t.bytes, t.seconds()));
        self.timed.extend(&t);
    }
    fn gather_mib_s(&self) -> f64 {
        mib_s(self.timed.bytes, self.timed.seconds())
    }
    fn krecords_s(&self) -> f64 {
        self.timed.records as f64 / self.timed.seconds() / 1e3
    }
}

/// Median over rounds of `a`'s gather rate over `b`'s.
fn round_ratio(a: &Row, b: &Row) -> f64 {
    median(a.rounds.iter().zip(&b.rounds).map(|(x, y)| x / y).collect())
}

fn is_zrecord(system: &str) -> bool {
    system.starts_with("zrecord")
}

// ---------------------------------------------------------------- one workload

struct Outcome {
    rows: Vec<Row>,
    logical: u64,
    rust_rss: u64,
    peer_rss: Option<u64>,
}

fn write_inputs(data: &Data, batches: &[Vec<u64>], work: &Path) {
    let n = data.len();
    if data.workload.is_dense() {
        let mut shape = vec![n];
        shape.extend(data.item_shape.iter().map(|&d| d as usize));
        write_npy(&work.join("data.npy"), data.dtype, &shape, &data.payload).expect("write data.npy");
    } else {
        let itemsize = if data.dtype.ends_with('4') { 4 } else { 1 };
        write_npy(&work.join("payload.npy"), data.dtype, &[data.payload.len() / itemsize], &data.payload)
            .expect("write payload.npy");
        let shapes: Vec<u8> = data.shapes.iter().flat_map(|d| d.to_le_bytes()).collect();
        write_npy(&work.join("shapes.npy"), "<u8", &[n, data.rank], &shapes).expect("write shapes.npy");
    }
    let flat: Vec<u8> = batches.iter().flatten().flat_map(|i| i.to_le_bytes()).collect();
    write_npy(&work.join("batches.npy"), "<u8", &[batches.len(), BATCH], &flat).expect("write batches.npy");
}

fn run_workload(workload: Workload, args: &Args, python: Option<&Path>) -> Outcome {
    let n = ((workload.base_records() as f64 * args.scale).round() as usize).max(BATCH);
    let t0 = Instant::now();
    let data = match workload {
        // loaderx's own image generator, run once into the cache (see common::loaderx_vision).
        Workload::DenseVision | Workload::RaggedVision => {
            let python = python.map_or_else(|| ensure_venv(&args.venv), Path::to_path_buf);
            loaderx_vision(workload, n, args.seed, &python, &args.vision_cache)
        }
        _ => workload.generate(n, args.seed),
    };
    let logical = data.payload.len() as u64;
    let [p10, p50, mean, p90] = data.items_stats();
    println!(
        "\n## {} — {n} records, {:.1} MiB logical (items per record: p10 {p10:.0}, median {p50:.0}, \
         mean {mean:.1}, p90 {p90:.0}); generated in {:.1} s",
        workload.name(),
        logical as f64 / 1048576.0,
        t0.elapsed().as_secs_f64()
    );
    let work = args.workdir.join(workload.name());
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("create work dir");
    let batches = iid_batches(n, args.batches, args.seed);
    write_inputs(&data, &batches, &work);
    let mut peer = python.map(|py| Peer::start(py, &work, args.seed));
    if let Some(p) = peer.as_mut() {
        p.call(json!({"cmd": "sampler", "count": args.batches.min(64)}));
    }
    let chunks: Vec<[usize; 2]> = data.append_chunks().iter().map(|r| [r.start, r.end]).collect();

    // Writes: each system its own, same records, same append calls.
    let mut rows = Vec::new();
    for &codec in &args.codecs {
        let dir = work.join(format!("zrecord-{}", codec.name()));
        let t = Instant::now();
        let dict = (codec == Codec::ZstdDict).then(|| train_dict(&data));
        let train_s = t.elapsed().as_secs_f64();
        // Cheap writes run twice, in alternating order, and keep the faster:
        // on this VM the first touch of fresh memory (page cache for a new
        // file) is slow at random moments, and whoever writes first pays.
        // Writes under SHORT_WRITE_S run three more times (best of five, as
        // in the Python benches): page-cache write-back made one 390 MiB
        // raw write take 0.39 s against 0.09 s.
        let reps = if codec == Codec::ZstdDict { 1 } else { args.write_reps };
        let (mut zr, mut lx, mut lx_disk, mut lx_train) = (f64::INFINITY, f64::INFINITY, 0, None);
        let has_peer = peer.is_some();
        let short = |zr: f64, lx: f64| zr.max(if has_peer { lx } else { 0.0 }) < SHORT_WRITE_S;
        let mut rep = 0;
        while rep < reps || (codec != Codec::ZstdDict && rep < reps + 3 && short(zr, lx)) {
            let ours = |zr: &mut f64| {
                let _ = std::fs::remove_dir_all(&dir);
                *zr = zr.min(write_store(&data, &dir, codec, dict.clone()));
            };
            if rep % 2 == 0 {
                ours(&mut zr);
            }
            if let Some(p) = peer.as_mut() {
                let r = p.call(json!({"cmd": "write", "codec": codec.name(), "chunks": chunks}));
                lx = lx.min(r["write_s"].as_f64().expect("write_s"));
                lx_disk = r["disk_bytes"].as_u64().expect("disk_bytes");
                lx_train = r["train_s"].as_f64();
            }
            if rep % 2 == 1 {
                ours(&mut zr);
            }
            rep += 1;
        }
        let disk = disk_bytes(&dir);
        rows.push(Row::new("zrecord-mmap", codec, Some(zr), disk));
        rows.push(Row::new(CHECKED, codec, None, disk));
        rows.push(Row::new("zrecord-pread", codec, Some(zr), disk));
        let mut note = format!("  write {:<9} zrecord {zr:7.2} s", codec.name());
        if codec == Codec::ZstdDict {
            note += &format!(" (+ train {train_s:.2} s)");
        }
        if peer.is_some() {
            rows.push(Row::new(LOADERX, codec, Some(lx), lx_disk));
            note += &format!(" | loaderx {lx:7.2} s");
            if let Some(tr) = lx_train {
                note += &format!(" (+ train {tr:.2} s)");
            }
        }
        if reps > 1 {
            note += &format!("  (best of {rep}, alternating order)");
        }
        println!("{note}");
    }
    if peer.is_some() && workload.is_dense() && args.codecs.contains(&Codec::Raw) {
        rows.push(Row::new("numpy-mmap", Codec::Raw, None, disk_bytes(&work.join("data.npy"))));
    }

    // Open, warm and check every row before any timing.
    let mut readers: Vec<Option<(Store, Output, usize)>> = Vec::new();
    for row in &rows {
        let options = match zrecord_options(row.system) {
            Some(options) => options,
            None => {
                let system = if row.system == LOADERX { "loaderx" } else { "numpy" };
                let p = peer.as_mut().expect("peer rows need the peer");
                p.call(json!({"cmd": "prepare", "system": system, "codec": row.codec.name(), "check": args.check}));
                readers.push(None);
                continue;
            }
        };
        let dir = work.join(format!("zrecord-{}", row.codec.name()));
        let store = Store::open_with(&dir, options).expect("open");
        warm_sweep(&store, &data);
        let mut out = Output::for_data(&data, BATCH);
        for b in &batches[..args.check.min(batches.len())] {
            out.gather(&store, b);
            out.check(&data, b);
        }
        readers.push(Some((store, out, 0)));
    }
    println!("  every row read its whole store and matched {} sampled batches", args.check);

    // Timed rounds, rows interleaved.
    let per_round = args.secs / args.rounds as f64;
    for _ in 0..args.rounds {
        for (row, reader) in rows.iter_mut().zip(readers.iter_mut()) {
            let t = match reader {
                Some((store, out, cursor)) => time_gathers(store, &data, out, &batches, cursor, per_round),
                None => {
                    let system = if row.system == LOADERX { "loaderx" } else { "numpy" };
                    let p = peer.as_mut().expect("peer");
                    let r = p.call(json!({"cmd": "gather", "system": system, "codec": row.codec.name(),
                                         "min_s": per_round}));
                    let first = r["first"].as_u64().expect("first") as usize;
                    let count = r["count"].as_u64().expect("count") as usize;
                    let mut t = Timed {
                        latencies: r["lat"]
                            .as_array()
                            .expect("lat")
                            .iter()
                            .filter_map(Value::as_f64)
                            .collect(),
                        ..Timed::default()
                    };
                    for k in first..first + count {
                        let b = &batches[k % batches.len()];
                        t.records += b.len() as u64;
                        t.bytes += data.bytes_of(b);
                    }
                    t
                }
            };
            row.add(t);
        }
    }
    if args.cold {
        cold_rounds(&mut rows, &mut readers, peer.as_mut(), &work, &data, args);
    }
    drop(readers);
    let peer_rss = peer.as_mut().map(|p| p.call(json!({"cmd": "rss"}))["maxrss_bytes"].as_u64().unwrap_or(0));
    if let Some(p) = peer {
        p.quit();
    }
    if !args.keep {
        std::fs::remove_dir_all(&work).expect("remove work dir");
    }
    Outcome { rows, logical, rust_rss: peak_rss_bytes().unwrap_or(0), peer_rss }
}

/// How a zrecord row opens its store; `None` for a peer's row.
fn zrecord_options(system: &str) -> Option<OpenOptions> {
    let (backend, verify) = match system {
        "zrecord-mmap" => (Backend::Mmap, Verify::Off),
        CHECKED => (Backend::Mmap, Verify::Always),
        "zrecord-pread" => (Backend::Pread, Verify::Off),
        _ => return None,
    };
    Some(OpenOptions { backend, verify, ..Default::default() })
}

/// `--cold` (see the module documentation): per round, every row closes,
/// evicts and reopens its store, then times batches of its own.
fn cold_rounds(
    rows: &mut [Row],
    readers: &mut [Option<(Store, Output, usize)>],
    mut peer: Option<&mut Peer>,
    work: &Path,
    data: &Data,
    args: &Args,
) {
    for round in 0..args.rounds {
        for turn in 0..rows.len() {
            let k = (turn + round) % rows.len(); // the rows take turns going first
            let seed = args.seed + 1 + (round * rows.len() + k) as u64;
            let row = &mut rows[k];
            let rate = match (zrecord_options(row.system), readers[k].take()) {
                (Some(options), Some((store, mut out, cursor))) => {
                    drop(store); // unmaps: pages a live map holds cannot be evicted
                    let dir = work.join(format!("zrecord-{}", row.codec.name()));
                    zrecord::local::cache::evict(&dir).expect("evict");
                    let store = Store::open_with(&dir, options).expect("reopen");
                    let batches = iid_batches(data.len(), args.cold_batches, seed);
                    let t =
                        time_batches(&store, data, &mut out, &batches, &mut 0, f64::INFINITY, batches.len());
                    for b in &batches {
                        out.gather(&store, b);
                        out.check(data, b);
                    }
                    readers[k] = Some((store, out, cursor));
                    t.records as f64 / t.seconds()
                }
                _ => {
                    let system = if row.system == LOADERX { "loaderx" } else { "numpy" };
                    let p = peer.as_deref_mut().expect("peer rows need the peer");
                    let r = p.call(json!({"cmd": "cold", "system": system, "codec": row.codec.name(),
                                         "seed": seed, "count": args.cold_batches}));
                    r["records"].as_f64().expect("records") / r["secs"].as_f64().expect("secs")
                }
            };
            row.cold.push(rate);
        }
    }
}

fn cold_report(workload: Workload, o: &Outcome, json_rows: &mut Vec<Value>) {
    if o.rows.iter().all(|r| r.cold.is_empty()) {
        return;
    }
    println!(
        "
**{}, cold**: every round each store closed, evicted and reopened; batches of its own
",
        workload.name()
    );
    println!("| system | codec | warm krecords/s | cold krecords/s (median) | per round | cold / warm | cold vs loaderx |");
    println!("|---|---|---:|---:|---|---:|---:|");
    for row in &o.rows {
        let cold = median(row.cold.clone());
        let lx = find(&o.rows, LOADERX, row.codec).filter(|_| is_zrecord(row.system));
        let vs_lx = lx.map(|l| median(row.cold.iter().zip(&l.cold).map(|(a, b)| a / b).collect()));
        let rounds: Vec<String> = row.cold.iter().map(|r| format!("{:.1}", r / 1e3)).collect();
        println!(
            "| {} | {} | {:.1} | {:.1} | {} | {:.2} | {} |",
            row.system,
            row.codec.name(),
            row.krecords_s(),
            cold / 1e3,
            rounds.join(", "),
            cold / 1e3 / row.krecords_s(),
            times(vs_lx)
        );
        json_rows.push(json!({
            "workload": workload.name(), "system": row.system, "codec": row.codec.name(), "mode": "cold",
            "cold_records_s": cold, "cold_per_round": row.cold, "cold_vs_loaderx": vs_lx,
        }));
    }
}

// ---------------------------------------------------------------- report

fn find<'a>(rows: &'a [Row], system: &str, codec: Codec) -> Option<&'a Row> {
    rows.iter().find(|r| r.system == system && r.codec == codec)
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

/// zrecord reading with every record checked against its sidecar.
const CHECKED: &str = "zrecord-mmap-checked";

/// A ratio as `1.23×`, or `–`.
fn times(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.2}×"))
}

/// A target check: (description, measured, goal).
type Check = (String, f64, f64);

fn report(workload: Workload, o: &Outcome, json_rows: &mut Vec<Value>, checks: &mut Vec<Check>) {
    println!();
    println!(
        "| system | codec | write MiB/s | gather MiB/s | krecords/s | p95 ms | disk MiB | ratio | vs loaderx | \
         vs numpy | write vs loaderx | alloc B/batch (median) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &o.rows {
        let write = row.write_s.map(|s| mib_s(o.logical, s));
        let lx = find(&o.rows, LOADERX, row.codec);
        let np = find(&o.rows, "numpy-mmap", Codec::Raw).filter(|_| row.codec == Codec::Raw);
        let zr = is_zrecord(row.system);
        let vs_lx = lx.filter(|_| zr).map(|l| round_ratio(row, l));
        let vs_np = np.filter(|_| zr).map(|n| round_ratio(row, n));
        let write_vs = lx.filter(|_| zr).and_then(|l| Some(l.write_s? / row.write_s?));
        let alloc_mean = zr.then(|| row.timed.alloc_bytes as f64 / row.timed.latencies.len() as f64);
        let alloc = zr.then(|| row.timed.alloc_median());
        let ratio = o.logical as f64 / row.disk_bytes as f64;
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.3} | {:.1} | {ratio:.2} | {} | {} | {} | {} |",
            row.system,
            row.codec.name(),
            fmt_opt(write, 1),
            row.gather_mib_s(),
            row.krecords_s(),
            row.timed.latency_ms(95.0),
            row.disk_bytes as f64 / 1048576.0,
            times(vs_lx),
            times(vs_np),
            times(write_vs),
            fmt_opt(alloc, 0),
        );
        json_rows.push(json!({
            "workload": workload.name(),
            "system": row.system,
            "codec": row.codec.name(),
            "write_mib_s": write,
            "gather_mib_s": row.gather_mib_s(),
            "krecords_s": row.krecords_s(),
            "p95_ms": row.timed.latency_ms(95.0),
            "disk_bytes": row.disk_bytes,
            "ratio": ratio,
            "vs_loaderx": vs_lx,
            "vs_numpy": vs_np,
            "write_vs_loaderx": write_vs,
            "alloc_bytes_per_batch_median": alloc,
            "alloc_bytes_per_batch_mean": alloc_mean,
            "batches_timed": row.timed.latencies.len(),
        }));
        if row.system == CHECKED && row.codec == Codec::Raw {
            if let Some(plain) = find(&o.rows, "zrecord-mmap", row.codec) {
                let label = format!("{} raw checked gather vs unchecked", workload.name());
                checks.push((label, round_ratio(row, plain), 0.9));
            }
        }
        if row.system == "zrecord-mmap" {
            let goal_lx = match (workload, row.codec) {
                (Workload::DenseTokens, Codec::Raw) => Some(6.0),
                (Workload::DenseTokens, _) => Some(2.0),
                (Workload::DenseVision, Codec::Raw) => None,
                (Workload::DenseVision, _) => Some(1.5),
                (Workload::RaggedTokens, Codec::Raw) => Some(4.0),
                (Workload::RaggedTokens, _) => Some(2.0),
                (Workload::RaggedVision, _) => None,
            };
            let label = |what: &str| format!("{} {} {what}", workload.name(), row.codec.name());
            if let (Some(goal), Some(v)) = (goal_lx, vs_lx) {
                checks.push((label("gather vs loaderx"), v, goal));
            }
            if let Some(v) = vs_np.filter(|_| workload.is_dense()) {
                checks.push((label("gather vs numpy-mmap"), v, 1.0));
            }
            if let Some(v) = write_vs {
                checks.push((label("write vs loaderx"), v, 1.0));
            }
        }
    }
    let rss = |b: u64| format!("{:.0} MiB", b as f64 / 1048576.0);
    println!(
        "\npeak RSS: bench (Rust, generated data included) {}; Python peer {}",
        rss(o.rust_rss),
        o.peer_rss.map_or("–".into(), rss)
    );
}

fn main() {
    let args = parse_args();
    let python = args.peers.then(|| ensure_venv(&args.venv));
    println!(
        "# zrecord vs loaderx 2.0.1 vs NumPy: scale {}, batches of {BATCH} (IID, seed {}), {} timed s per row \
         in {} rounds, {} rayon threads, load average at start {}",
        args.scale,
        args.seed,
        args.secs,
        args.rounds,
        rayon::current_num_threads(),
        load_average()
    );
    let mut json_rows = Vec::new();
    let mut checks = Vec::new();
    let mut max_peer_rss = 0;
    for &workload in &args.workloads {
        let o = run_workload(workload, &args, python.as_deref());
        report(workload, &o, &mut json_rows, &mut checks);
        cold_report(workload, &o, &mut json_rows);
        max_peer_rss = max_peer_rss.max(o.peer_rss.unwrap_or(0));
        if let Some(path) = &args.json {
            // Written after every workload, so a long run that stops early keeps what it measured.
            std::fs::write(path, serde_json::to_string_pretty(&json_rows).expect("JSON"))
                .expect("write --json");
        }
    }
    println!("\n## Targets (zrecord-mmap; median of per-round ratios)\n");
    println!("| target | measured | goal | |");
    println!("|---|---:|---:|---|");
    for (what, v, goal) in &checks {
        println!("| {what} | {v:.2}× | ≥ {goal}× | {} |", if v >= goal { "met" } else { "MISSED" });
    }
    println!(
        "\npeak RSS over the run: bench (Rust) {:.0} MiB; largest Python peer {:.0} MiB",
        peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
        max_peer_rss as f64 / 1048576.0
    );
    println!("load average at end {}", load_average());
    if let Some(path) = &args.json {
        println!("wrote {} rows to {}", json_rows.len(), path.display());
    }
}
