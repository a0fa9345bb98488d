//! Shared by the `gather` and `compare` benches: the deterministic workloads,
//! writing them as stores and `.npy` files, a counting allocator, and small
//! statistics. Every generator is a pure function of its seed, so a run can be
//! reproduced (and the Python peers see exactly the bytes zrecord saw).
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use rayon::prelude::*;
use zrecord::local::writer::{CreateOptions, Writer};
use zrecord::training::dict::{self as train, Tier};
use zrecord::training::sampler::{Mode, Sampler, Sfc64};
use zrecord::Codec;
use zrecord::Records;

/// Records per gather batch, as in the issues' workloads.
pub const BATCH: usize = 256;
/// Appends are cut into chunks of about this many logical bytes (both systems).
pub const APPEND_CHUNK_BYTES: usize = 32 << 20;

// ---------------------------------------------------------------- allocator

/// The system allocator, counting calls and bytes, so a bench can show that a
/// gather into a reused buffer allocates nothing in proportion to the batch.
pub struct CountingAlloc;

static ALLOC_CALLS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOC_CALLS.fetch_add(1, Relaxed);
        ALLOC_BYTES.fetch_add(layout.size() as u64, Relaxed);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOC_CALLS.fetch_add(1, Relaxed);
        ALLOC_BYTES.fetch_add(layout.size() as u64, Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOC_CALLS.fetch_add(1, Relaxed);
        ALLOC_BYTES.fetch_add(new_size as u64, Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

/// `(allocation calls, bytes requested)` since the process started.
pub fn alloc_counts() -> (u64, u64) {
    (ALLOC_CALLS.load(Relaxed), ALLOC_BYTES.load(Relaxed))
}

/// Peak resident set of this process in bytes (`VmHWM`, what getrusage's maxrss reports).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

// ---------------------------------------------------------------- workloads

/// The four workloads of the issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `(3, 224, 224)` uint8 smooth synthetic images.
    DenseVision,
    /// `(3, H, W)` uint8, H and W lognormal (median 224), clipped to 64..512.
    RaggedVision,
    /// `int32[512]` token blocks.
    DenseTokens,
    /// 1-D int32 token sequences of 16..512 tokens, Zipf-like ids.
    RaggedTokens,
}

impl Workload {
    /// All four, in report order.
    pub const ALL: [Workload; 4] =
        [Workload::DenseVision, Workload::RaggedVision, Workload::DenseTokens, Workload::RaggedTokens];

    /// Name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Workload::DenseVision => "dense-vision",
            Workload::RaggedVision => "ragged-vision",
            Workload::DenseTokens => "dense-tokens",
            Workload::RaggedTokens => "ragged-tokens",
        }
    }

    /// Records at scale 1.
    pub fn base_records(self) -> usize {
        match self {
            Workload::DenseVision | Workload::RaggedVision => 2_500,
            Workload::DenseTokens | Workload::RaggedTokens => 200_000,
        }
    }

    /// Whether records have one fixed shape.
    pub fn is_dense(self) -> bool {
        matches!(self, Workload::DenseVision | Workload::DenseTokens)
    }

    /// Parse a name as printed by [`Workload::name`].
    pub fn parse(s: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == s)
    }

    /// Generate `n` records from `seed`.
    pub fn generate(self, n: usize, seed: u64) -> Data {
        match self {
            Workload::DenseVision => dense_vision(n, seed),
            Workload::RaggedVision => ragged_vision(n, seed),
            Workload::DenseTokens => dense_tokens(n, seed),
            Workload::RaggedTokens => ragged_tokens(n, seed),
        }
    }
}

/// Generated records: one payload buffer, record `i` at `offsets[i]..offsets[i+1]`.
pub struct Data {
    /// Which workload.
    pub workload: Workload,
    /// NumPy dtype string.
    pub dtype: &'static str,
    /// Dense: the item shape. Ragged: empty.
    pub item_shape: Vec<u64>,
    /// Ragged: dimensions per record (`rank` each).
    pub rank: usize,
    /// Ragged: `n * rank` dimensions.
    pub shapes: Vec<u64>,
    /// Every record's payload, back to back.
    pub payload: Vec<u8>,
    /// `n + 1` byte offsets into `payload`.
    pub offsets: Vec<usize>,
}

impl Data {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    /// Record `i`'s payload.
    pub fn record(&self, i: usize) -> &[u8] {
        &self.payload[self.offsets[i]..self.offsets[i + 1]]
    }
    /// Record `i`'s shape.
    pub fn shape(&self, i: usize) -> &[u64] {
        if self.workload.is_dense() {
            &self.item_shape
        } else {
            &self.shapes[i * self.rank..(i + 1) * self.rank]
        }
    }
    /// Dense row width in bytes.
    pub fn row_bytes(&self) -> usize {
        self.offsets[1] - self.offsets[0]
    }
    /// Logical payload bytes of the records `indices` name.
    pub fn bytes_of(&self, indices: &[u64]) -> u64 {
        indices.iter().map(|&i| (self.offsets[i as usize + 1] - self.offsets[i as usize]) as u64).sum()
    }
    /// Record ranges of about [`APPEND_CHUNK_BYTES`] each: the append calls of a write.
    pub fn append_chunks(&self) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < self.len() {
            let mut end = start + 1;
            while end < self.len() && self.offsets[end] - self.offsets[start] < APPEND_CHUNK_BYTES {
                end += 1;
            }
            out.push(start..end);
            start = end;
        }
        out
    }
    /// Lengths (in items) statistics, for the report: p10, median, mean, p90 of the
    /// first dimension product per record.
    pub fn items_stats(&self) -> [f64; 4] {
        let itemsize = if self.dtype.ends_with('4') { 4 } else { 1 };
        let mut v: Vec<f64> =
            (0..self.len()).map(|i| ((self.offsets[i + 1] - self.offsets[i]) / itemsize) as f64).collect();
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        [percentile(&v, 10.0), percentile(&v, 50.0), mean, percentile(&v, 90.0)]
    }
}

/// Uniform in `(0, 1]`.
fn unit(rng: &mut Sfc64) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Standard normal (Box–Muller).
fn normal(rng: &mut Sfc64) -> f64 {
    let (u, v) = (unit(rng), unit(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Per-record seed, so records can be generated in parallel and stay deterministic.
fn record_seed(seed: u64, i: usize) -> u64 {
    seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A smooth image like loaderx's fixtures: a 2-D sinusoid per image, a
/// brightness step per channel and ±6 of noise per pixel.
pub fn smooth_image(seed: u64, c: usize, h: usize, w: usize, out: &mut [u8]) {
    let mut rng = Sfc64::new(seed);
    let fx = 1.0 + 5.0 * unit(&mut rng);
    let fy = 1.0 + 5.0 * unit(&mut rng);
    let ph = 6.3 * unit(&mut rng);
    let sx: Vec<f32> = (0..w)
        .map(|x| (fx * std::f64::consts::TAU * x as f64 / (w - 1).max(1) as f64 + ph).sin() as f32)
        .collect();
    let cy: Vec<f32> = (0..h)
        .map(|y| (fy * std::f64::consts::TAU * y as f64 / (h - 1).max(1) as f64).cos() as f32)
        .collect();
    let mut bits = 0u64;
    let mut left = 0;
    for ch in 0..c {
        for y in 0..h {
            let row = &mut out[(ch * h + y) * w..(ch * h + y + 1) * w];
            for (x, px) in row.iter_mut().enumerate() {
                if left == 0 {
                    bits = rng.next_u64();
                    left = 8;
                }
                let noise = ((bits & 0xff) % 13) as f32 - 6.0;
                bits >>= 8;
                left -= 1;
                let v = 127.0 + 100.0 * sx[x] * cy[y] + 20.0 * ch as f32 + noise;
                *px = v.clamp(0.0, 255.0) as u8;
            }
        }
    }
}

/// loaderx 2.0.1's own image model (its sdist's `make_vision_records`; Ragged
/// sizes from its `variable_vision_shapes`, H and W lognormal in 64..512,
/// median 224), generated once by `benches/field/vision.py` with `python`
/// (NumPy and loaderx's sdist) into `cache` and read back from its `.npy`
/// files: the same bytes loaderx's README measured (about 15x under zstd),
/// not [`smooth_image`]'s noisy sinusoids (about 1.04x).
///
/// # Panics
/// If the generator fails or its files are not what it promises.
pub fn loaderx_vision(workload: Workload, n: usize, seed: u64, python: &Path, cache: &Path) -> Data {
    let dense = workload.is_dense();
    let dir = cache.join(format!("{}-{n}-{seed}", if dense { "dense" } else { "ragged" }));
    if !dir.join("done").exists() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/field/vision.py");
        let ok = std::process::Command::new(python)
            .arg(&script)
            .arg(&dir)
            .args([n.to_string(), seed.to_string(), (if dense { "dense" } else { "ragged" }).into()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "{} failed (it needs NumPy and loaderx 2.0.1's sdist: .ci/install)", script.display());
    }
    let npy = |name: &str| {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let head =
            zrecord::convert::npy::parse(name, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!head.fortran_order);
        (head.dtype.to_string(), head.shape, bytes[head.data_offset..].to_vec())
    };
    if dense {
        let (dtype, shape, payload) = npy("data.npy");
        assert_eq!((dtype.as_str(), shape.as_slice()), ("|u1", &[n as u64, 3, 224, 224][..]));
        let row = 3 * 224 * 224;
        return Data {
            workload,
            dtype: "|u1",
            item_shape: vec![3, 224, 224],
            rank: 0,
            shapes: Vec::new(),
            payload,
            offsets: (0..=n).map(|i| i * row).collect(),
        };
    }
    let (dtype, _, payload) = npy("payload.npy");
    let (sdtype, sshape, sbytes) = npy("shapes.npy");
    assert_eq!((dtype.as_str(), sdtype.as_str(), sshape.as_slice()), ("|u1", "<u8", &[n as u64, 3][..]));
    let shapes: Vec<u64> =
        sbytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8"))).collect();
    let mut offsets = vec![0usize];
    for s in shapes.chunks(3) {
        offsets.push(offsets.last().unwrap() + s.iter().product::<u64>() as usize);
    }
    assert_eq!(*offsets.last().unwrap(), payload.len());
    Data { workload, dtype: "|u1", item_shape: Vec::new(), rank: 3, shapes, payload, offsets }
}

/// Zipf-like token ids (a discretised Pareto tail with exponent 1.3, modulo a GPT-2 vocabulary).
fn zipf_tokens(seed: u64, out: &mut [u8]) {
    let mut rng = Sfc64::new(seed);
    for t in out.chunks_exact_mut(4) {
        let x = unit(&mut rng).powf(-1.0 / 0.3);
        let id = (x.min(1e18) as u64 % 50_257) as i32;
        t.copy_from_slice(&id.to_le_bytes());
    }
}

fn dense_vision(n: usize, seed: u64) -> Data {
    let row = 3 * 224 * 224;
    let mut payload = vec![0u8; n * row];
    payload
        .par_chunks_mut(row)
        .enumerate()
        .for_each(|(i, img)| smooth_image(record_seed(seed, i), 3, 224, 224, img));
    Data {
        workload: Workload::DenseVision,
        dtype: "|u1",
        item_shape: vec![3, 224, 224],
        rank: 0,
        shapes: Vec::new(),
        payload,
        offsets: (0..=n).map(|i| i * row).collect(),
    }
}

fn dense_tokens(n: usize, seed: u64) -> Data {
    let row = 512 * 4;
    let mut payload = vec![0u8; n * row];
    payload.par_chunks_mut(row).enumerate().for_each(|(i, r)| zipf_tokens(record_seed(seed, i), r));
    Data {
        workload: Workload::DenseTokens,
        dtype: "<i4",
        item_shape: vec![512],
        rank: 0,
        shapes: Vec::new(),
        payload,
        offsets: (0..=n).map(|i| i * row).collect(),
    }
}

/// Fill ragged records in parallel: `fill(i, bytes)` for each record.
fn ragged(
    workload: Workload,
    dtype: &'static str,
    rank: usize,
    shapes: Vec<u64>,
    itemsize: usize,
    fill: impl Fn(usize, &mut [u8]) + Sync,
) -> Data {
    let n = shapes.len() / rank;
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    for s in shapes.chunks(rank) {
        offsets.push(offsets.last().unwrap() + s.iter().product::<u64>() as usize * itemsize);
    }
    let mut payload = vec![0u8; *offsets.last().unwrap()];
    let mut parts = Vec::with_capacity(n);
    let mut rest = payload.as_mut_slice();
    for w in offsets.windows(2) {
        let (mine, tail) = rest.split_at_mut(w[1] - w[0]);
        parts.push(mine);
        rest = tail;
    }
    parts.into_par_iter().enumerate().for_each(|(i, p)| fill(i, p));
    Data { workload, dtype, item_shape: Vec::new(), rank, shapes, payload, offsets }
}

fn ragged_vision(n: usize, seed: u64) -> Data {
    let mut rng = Sfc64::new(seed);
    let mut side = || (224.0 * (0.3 * normal(&mut rng)).exp()).round().clamp(64.0, 512.0) as u64;
    let shapes: Vec<u64> = (0..n).flat_map(|_| [3, side(), side()]).collect();
    let dims = shapes.clone();
    ragged(Workload::RaggedVision, "|u1", 3, shapes, 1, move |i, img| {
        let (h, w) = (dims[3 * i + 1] as usize, dims[3 * i + 2] as usize);
        smooth_image(record_seed(seed, i), 3, h, w, img)
    })
}

/// Sequence lengths: a piecewise-linear quantile function through
/// p0 16, p10 28, p30 75, p50 129, p70 175, p90 254, p97 330, p100 512
/// (mean ≈ 139).
fn token_length(rng: &mut Sfc64) -> u64 {
    const KX: [f64; 8] = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 1.0];
    const KY: [f64; 8] = [16.0, 28.0, 75.0, 129.0, 175.0, 254.0, 330.0, 512.0];
    let u = unit(rng);
    let k = KX.iter().rposition(|&x| x < u).unwrap_or(0).min(6);
    let t = (u - KX[k]) / (KX[k + 1] - KX[k]);
    (KY[k] + t * (KY[k + 1] - KY[k])).round() as u64
}

fn ragged_tokens(n: usize, seed: u64) -> Data {
    let mut rng = Sfc64::new(seed);
    let shapes: Vec<u64> = (0..n).map(|_| token_length(&mut rng)).collect();
    ragged(Workload::RaggedTokens, "<i4", 1, shapes, 4, |i, r| zipf_tokens(record_seed(seed, i), r))
}

// ---------------------------------------------------------------- stores

/// The three codecs, in report order.
pub const CODECS: [Codec; 3] = [Codec::Raw, Codec::Zstd, Codec::ZstdDict];

/// Train a `zstd_dict` dictionary as loaderx's `train_dict` does with its default
/// (balanced) tier: a strided sample of a Dense array, or the first records of
/// a list of Ragged records up to the sample budget.
pub fn train_dict(data: &Data) -> Vec<u8> {
    if data.workload.is_dense() {
        train::train_dense(&data.payload, data.row_bytes(), Tier::Balanced).expect("dictionary training")
    } else {
        train::train_from_samples((0..data.len()).map(|i| data.record(i)), Tier::Balanced)
            .expect("dictionary training")
    }
}

/// Write `data` as a store with `codec`; returns the seconds from the first
/// append through `close` (the dictionary, if any, is trained beforehand).
pub fn write_store(data: &Data, dir: &Path, codec: Codec, dict: Option<Vec<u8>>) -> f64 {
    let opts = CreateOptions { codec, dict, ..CreateOptions::default() };
    let mut w = if data.workload.is_dense() {
        Writer::create_dense(dir, data.dtype, &data.item_shape, opts)
    } else {
        Writer::create_ragged(dir, data.dtype, opts)
    }
    .expect("create store");
    let chunks = data.append_chunks();
    let mut records: Vec<(&[u64], &[u8])> = Vec::new();
    let start = Instant::now();
    for chunk in chunks {
        if data.workload.is_dense() {
            w.append(&data.payload[data.offsets[chunk.start]..data.offsets[chunk.end]]).expect("append");
        } else {
            records.clear();
            records.extend(chunk.map(|i| (data.shape(i), data.record(i))));
            w.append_ragged(&records).expect("append");
        }
    }
    w.close().expect("close");
    start.elapsed().as_secs_f64()
}

/// Allocated size of the files under `path` (`st_blocks * 512`).
pub fn disk_bytes(path: &Path) -> u64 {
    let meta = std::fs::metadata(path).expect("stat");
    if meta.is_dir() {
        std::fs::read_dir(path).expect("list").map(|e| disk_bytes(&e.expect("entry").path())).sum()
    } else {
        meta.blocks() * 512
    }
}

/// `count` IID batches of [`BATCH`] over `len` records, from zrecord's sampler
/// (the same stream as loaderx's `Sampler(len, 256, Mode.IID, seed)`).
pub fn iid_batches(len: usize, count: usize, seed: u64) -> Vec<Vec<u64>> {
    let mut s = Sampler::new(len as u64, BATCH as u64, Mode::Iid, seed).expect("sampler");
    (0..count).map(|_| s.next_batch()).collect()
}

/// Write a C-order `.npy` file.
pub fn write_npy(path: &Path, descr: &str, shape: &[usize], bytes: &[u8]) -> std::io::Result<()> {
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    header.push('\n');
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    f.write_all(b"\x93NUMPY\x01\x00")?;
    f.write_all(&(header.len() as u16).to_le_bytes())?;
    f.write_all(header.as_bytes())?;
    f.write_all(bytes)?;
    f.into_inner().map_err(|e| e.into_error())?.sync_data()
}

// ---------------------------------------------------------------- statistics

/// Linear-interpolated percentile of sorted values (NumPy's default method).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Median of unsorted values.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0)
}

/// `bytes` over `secs` in MiB/s.
pub fn mib_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1 << 20) as f64 / secs
}

// ---------------------------------------------------------------- gathering

/// A reusable output for either geometry.
pub enum Output {
    /// A Dense batch buffer of `BATCH * row_bytes`.
    Dense(Vec<u8>),
    /// A Ragged batch, reused across gathers.
    Ragged(zrecord::RaggedBatch),
}

impl Output {
    /// An output sized for batches of up to `batch` records of `data`.
    pub fn for_data(data: &Data, batch: usize) -> Output {
        if data.workload.is_dense() {
            Output::Dense(vec![0u8; batch * data.row_bytes()])
        } else {
            Output::Ragged(zrecord::RaggedBatch::default())
        }
    }

    /// Gather `indices` (at most the batch size given at construction).
    pub fn gather(&mut self, store: &zrecord::Store, indices: &[u64]) {
        match self {
            Output::Dense(buf) => {
                let n = indices.len() * store.info().row_bytes().expect("dense") as usize;
                store.gather_into(indices, &mut buf[..n]).expect("gather")
            }
            Output::Ragged(b) => store.gather_ragged_into(indices, b).expect("gather"),
        }
    }

    /// Panic unless the last gather of `indices` returned exactly `data`'s records.
    pub fn check(&self, data: &Data, indices: &[u64]) {
        match self {
            Output::Dense(buf) => {
                let row = data.row_bytes();
                for (k, &i) in indices.iter().enumerate() {
                    assert!(buf[k * row..(k + 1) * row] == *data.record(i as usize), "record {i} differs");
                }
            }
            Output::Ragged(b) => {
                assert_eq!(b.len(), indices.len());
                for (k, &i) in indices.iter().enumerate() {
                    let (shape, bytes) = b.record(k);
                    assert_eq!(shape, data.shape(i as usize), "record {i} shape differs");
                    assert!(bytes == data.record(i as usize), "record {i} differs");
                }
            }
        }
    }
}

/// Read every record once, in order (warms the page cache and decodes all of it).
pub fn warm_sweep(store: &zrecord::Store, data: &Data) {
    let mut out = Output::for_data(data, BATCH);
    let all: Vec<u64> = (0..data.len() as u64).collect();
    for chunk in all.chunks(BATCH) {
        out.gather(store, chunk);
    }
}

/// Timings of consecutive batches.
#[derive(Default, Clone)]
pub struct Timed {
    /// Seconds per batch.
    pub latencies: Vec<f64>,
    /// Records gathered.
    pub records: u64,
    /// Logical payload bytes gathered.
    pub bytes: u64,
    /// Allocator calls during the timed gathers.
    pub alloc_calls: u64,
    /// Bytes requested from the allocator during the timed gathers.
    pub alloc_bytes: u64,
    /// Bytes requested from the allocator during each batch.
    pub alloc_per_batch: Vec<u64>,
}

impl Timed {
    /// Total seconds.
    pub fn seconds(&self) -> f64 {
        self.latencies.iter().sum()
    }
    /// Add another run.
    pub fn extend(&mut self, other: &Timed) {
        self.latencies.extend_from_slice(&other.latencies);
        self.records += other.records;
        self.bytes += other.bytes;
        self.alloc_calls += other.alloc_calls;
        self.alloc_bytes += other.alloc_bytes;
        self.alloc_per_batch.extend_from_slice(&other.alloc_per_batch);
    }
    /// Median bytes allocated per batch (steady state: one-off costs such as
    /// a worker thread's first zstd context do not show here, but do in the mean).
    pub fn alloc_median(&self) -> f64 {
        median(self.alloc_per_batch.iter().map(|&b| b as f64).collect())
    }
    /// Percentile `p` of the batch latencies, in milliseconds.
    pub fn latency_ms(&self, p: f64) -> f64 {
        let mut v = self.latencies.clone();
        v.sort_by(f64::total_cmp);
        percentile(&v, p) * 1e3
    }
}

/// Gather `batches` in order from `*cursor` (wrapping) until the timed gathers
/// add up to at least `min_secs`; `*cursor` moves past the last batch.
pub fn time_gathers(
    store: &zrecord::Store,
    data: &Data,
    out: &mut Output,
    batches: &[Vec<u64>],
    cursor: &mut usize,
    min_secs: f64,
) -> Timed {
    time_batches(store, data, out, batches, cursor, min_secs, usize::MAX)
}

/// As [`time_gathers`], stopping after `max_batches` batches or `min_secs`, whichever comes first.
#[inline(never)]
pub fn time_batches(
    store: &zrecord::Store,
    data: &Data,
    out: &mut Output,
    batches: &[Vec<u64>],
    cursor: &mut usize,
    min_secs: f64,
    max_batches: usize,
) -> Timed {
    let mut t = Timed::default();
    let mut total = 0.0;
    while total < min_secs && t.latencies.len() < max_batches {
        let b = &batches[*cursor % batches.len()];
        *cursor += 1;
        let (calls0, bytes0) = alloc_counts();
        let start = Instant::now();
        out.gather(store, b);
        let secs = start.elapsed().as_secs_f64();
        let (calls1, bytes1) = alloc_counts();
        std::hint::black_box(&*out);
        total += secs;
        t.latencies.push(secs);
        t.records += b.len() as u64;
        t.alloc_calls += calls1 - calls0;
        t.alloc_bytes += bytes1 - bytes0;
        t.alloc_per_batch.push(bytes1 - bytes0);
    }
    let first = *cursor - t.latencies.len();
    t.bytes = (first..*cursor).map(|k| data.bytes_of(&batches[k % batches.len()])).sum();
    t
}

/// The 1-minute load average, as `uptime` prints it.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
