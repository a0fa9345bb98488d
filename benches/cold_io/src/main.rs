//! The experiment behind src/local/cold.rs: io_uring against a pool of
//! pread threads (and the reader's old WILLNEED + pread path) on cold random
//! records of one zrecord store. Every (method, round) reads records of its
//! own (one random permutation of the store, cut in turn: this VM's host
//! caches its disk, so no record is read twice), `data.zr` is evicted
//! before each round, and the methods take turns going first. Not part of
//! the crate (it needs the `io-uring` crate, which the reader does not use):
//!
//!   cargo run --release --manifest-path benches/cold_io/Cargo.toml -- STORE [BATCHES] [ROUNDS] METHOD...
//!
//! Methods (N: threads or reads in flight): `willneedN` (POSIX_FADV_WILLNEED
//! for the batch, then N threads spawned for the batch read it), `poolN`
//! (N threads spawned per batch), `ppoolN` (N persistent threads fed by
//! channels), `uringN` (io_uring buffered reads, N in flight), and with
//! `O_DIRECT` (4 KiB-aligned records only, e.g. raw 64 KiB): `dpoolN`,
//! `duringN`; and without a batch's end to wait for, `streamN` (the
//! round's reads as one queue, N in flight) and `twoN` (two threads, each
//! its own ring, taking turns at batches, as two loader workers would).
//! Batches of 256; records/s per round, and the median.
use io_uring::{opcode, types, IoUring};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

struct Loc {
    off: u64,
    len: usize,
}

fn locs(store: &str) -> Vec<Loc> {
    let meta = std::fs::read(format!("{store}/meta.zr")).unwrap();
    let body = &meta[4096..];
    let n = body.len() / 16;
    (0..n)
        .map(|i| {
            let e = &body[i * 16..i * 16 + 16];
            Loc {
                off: u64::from_le_bytes(e[0..8].try_into().unwrap()),
                len: u32::from_le_bytes(e[8..12].try_into().unwrap()) as usize,
            }
        })
        .filter(|l| l.len > 0)
        .collect()
}

fn evict(f: &File) {
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// xorshift64*: enough to shuffle records.
struct Xorshift(u64);
impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Read one batch; `out` holds a buffer per record.
fn pool(f: &File, batch: &[&Loc], out: &mut [&'static mut [u8]], threads: usize) {
    let next = AtomicUsize::new(0);
    let outs: Vec<usize> = out.iter_mut().map(|b| b.as_mut_ptr() as usize).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= batch.len() {
                    return;
                }
                let buf = unsafe { std::slice::from_raw_parts_mut(outs[k] as *mut u8, batch[k].len) };
                f.read_exact_at(buf, batch[k].off).unwrap();
            });
        }
    });
}

/// A persistent pool: threads wait on a channel for batches (no spawn per batch).
struct Pool {
    tx: Vec<std::sync::mpsc::Sender<(usize, usize, u64, std::sync::mpsc::Sender<()>)>>,
}
impl Pool {
    fn new(f: &File, n: usize) -> Pool {
        let mut tx = Vec::new();
        for _ in 0..n {
            let (t, r) = std::sync::mpsc::channel::<(usize, usize, u64, std::sync::mpsc::Sender<()>)>();
            let f = f.try_clone().unwrap();
            std::thread::spawn(move || {
                while let Ok((ptr, len, off, done)) = r.recv() {
                    let buf = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
                    f.read_exact_at(buf, off).unwrap();
                    done.send(()).unwrap();
                }
            });
            tx.push(t);
        }
        Pool { tx }
    }
    fn read(&self, batch: &[&Loc], out: &mut [&'static mut [u8]]) {
        let (dt, dr) = std::sync::mpsc::channel();
        for (k, l) in batch.iter().enumerate() {
            self.tx[k % self.tx.len()]
                .send((out[k].as_mut_ptr() as usize, l.len, l.off, dt.clone()))
                .unwrap();
        }
        for _ in 0..batch.len() {
            dr.recv().unwrap();
        }
    }
}

static ADVISE_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
fn willneed_pread(f: &File, batch: &[&Loc], out: &mut [&'static mut [u8]], threads: usize) {
    let t = Instant::now();
    for l in batch {
        unsafe { libc::posix_fadvise(f.as_raw_fd(), l.off as i64, l.len as i64, libc::POSIX_FADV_WILLNEED) };
    }
    ADVISE_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    pool(f, batch, out, threads);
}

fn uring(ring: &mut IoUring, f: &File, batch: &[&Loc], out: &mut [&'static mut [u8]], depth: usize) {
    let fd = types::Fd(f.as_raw_fd());
    ring_reads(ring, batch, depth, |k| opcode::Read::new(fd, out[k].as_mut_ptr(), batch[k].len as u32).offset(batch[k].off).build());
}

/// Read `batch` through `ring`, `depth` in flight, read `k` being `sqe(k)`.
fn ring_reads(ring: &mut IoUring, batch: &[&Loc], depth: usize, mut sqe: impl FnMut(usize) -> io_uring::squeue::Entry) {
    let (mut next, mut done, mut inflight) = (0, 0, 0);
    while done < batch.len() {
        while inflight < depth && next < batch.len() {
            let e = sqe(next).user_data(next as u64);
            unsafe { ring.submission().push(&e).unwrap() };
            next += 1;
            inflight += 1;
        }
        ring.submit_and_wait(1).unwrap();
        for c in ring.completion() {
            let k = c.user_data() as usize;
            assert_eq!(c.result(), batch[k].len as i32, "short read {k}");
            done += 1;
            inflight -= 1;
        }
    }
}

/// Like [`uring`] with `O_DIRECT`, but each record read into 4 KiB pages
/// scattered over `pages` (one iovec a page): as a buffered read fills
/// order-0 page-cache folios, to tell whether scattered pages are what
/// makes buffered reads slower on this VM.
fn uring_scattered(ring: &mut IoUring, f: &File, batch: &[&Loc], pages: &[*mut u8], depth: usize) {
    let fd = types::Fd(f.as_raw_fd());
    let per = batch[0].len / 4096;
    assert!(batch.iter().all(|l| l.len == per * 4096), "scattered reads want records of one length, pages whole");
    let iovs: Vec<libc::iovec> = (0..batch.len() * per)
        .map(|k| libc::iovec { iov_base: pages[k % pages.len()].cast(), iov_len: 4096 })
        .collect();
    ring_reads(ring, batch, depth, |k| opcode::Readv::new(fd, iovs[k * per..].as_ptr(), per as u32).offset(batch[k].off).build());
}

/// Physically contiguous runs of 4 KiB pages in `buf` (root reads
/// /proc/self/pagemap's frame numbers; 0 when it cannot).
fn physical_runs(buf: &[u8]) -> usize {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut pm) = File::open("/proc/self/pagemap") else { return 0 };
    let mut runs = 0;
    let mut last = u64::MAX;
    for page in buf.chunks(4096) {
        let va = page.as_ptr() as u64 / 4096;
        let mut e = [0u8; 8];
        pm.seek(SeekFrom::Start(va * 8)).unwrap();
        pm.read_exact(&mut e).unwrap();
        let pfn = u64::from_le_bytes(e) & ((1 << 55) - 1);
        if pfn == 0 {
            return 0;
        }
        if pfn != last.wrapping_add(1) {
            runs += 1;
        }
        last = pfn;
    }
    runs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = &args[1];
    let batches: usize = args.get(2).map_or(8, |s| s.parse().unwrap());
    let rounds: usize = args.get(3).map_or(3, |s| s.parse().unwrap());
    let methods: Vec<String> = if args.len() > 4 {
        args[4..].to_vec()
    } else {
        ["willneed2", "ppool64", "uring64"].iter().map(|s| s.to_string()).collect()
    };
    let all = locs(store);
    let f = File::open(format!("{store}/data.zr")).unwrap();
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    // A permutation of the records, cut into batches in turn.
    let mut perm: Vec<usize> = (0..all.len()).collect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let mut rng = Xorshift((std::process::id() as u64 ^ now.as_nanos() as u64) | 1);
    for i in (1..perm.len()).rev() {
        perm.swap(i, rng.next() as usize % (i + 1));
    }
    let need = batches * 256 * rounds * methods.len();
    assert!(need <= perm.len(), "store has {} records, run needs {need}", perm.len());
    let mut cursor = 0;
    let mut ring = IoUring::new(256).unwrap();
    let pools: Vec<(usize, Pool)> = methods
        .iter()
        .filter_map(|m| m.strip_prefix("ppool").map(|n| n.parse().unwrap()))
        .map(|n| (n, Pool::new(&f, n)))
        .collect();
    let maxlen = all.iter().map(|l| l.len).max().unwrap().div_ceil(4096) * 4096;
    // Buffers aligned for O_DIRECT (leaked: they live as long as the run).
    let mut out: Vec<&'static mut [u8]> = (0..256)
        .map(|_| unsafe {
            let p = std::alloc::alloc_zeroed(std::alloc::Layout::from_size_align(maxlen, 4096).unwrap());
            std::slice::from_raw_parts_mut(p, maxlen)
        })
        .collect();
    // Pages for `dscatter`: every other page of a region touched in a
    // shuffled order, handed out shuffled.
    let region = Vec::leak(vec![0u8; 256 * (maxlen / 4096) * 2 * 4096 + 4096]);
    let base = region.as_ptr().align_offset(4096);
    let mut pages: Vec<*mut u8> =
        (0..256 * (maxlen / 4096)).map(|k| unsafe { region.as_mut_ptr().add(base + 2 * k * 4096) }).collect();
    for i in (1..pages.len()).rev() {
        pages.swap(i, rng.next() as usize % (i + 1));
    }
    for &p in &pages {
        unsafe { p.write_volatile(1) };
    }
    let scattered: Vec<u8> = pages[..16].iter().map(|&p| unsafe { *p }).collect();
    out.iter_mut().for_each(|b| b.fill(0));
    let runs: Vec<usize> = out.iter().take(8).map(|b| physical_runs(&b[..maxlen])).collect();
    eprintln!("physical runs of 4 KiB pages in the first O_DIRECT buffers: {runs:?} ({} scattered pages)", scattered.len());
    let direct = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(format!("{store}/data.zr"))
            .unwrap()
    };
    let mut results: Vec<Vec<f64>> = vec![vec![]; methods.len()];
    for r in 0..rounds {
        for j in 0..methods.len() {
            let mi = (j + r) % methods.len();
            let m = &methods[mi];
            evict(&f);
            std::thread::sleep(std::time::Duration::from_millis(50));
            evict(&f);
            let mut secs = 0.0;
            if let Some(n) = m.strip_prefix("two") {
                // Two threads, each its own ring, each reading every other
                // batch (as two loader workers would).
                let n: usize = n.parse().unwrap();
                let round: Vec<&Loc> = perm[cursor..cursor + 256 * batches].iter().map(|&i| &all[i]).collect();
                cursor += 256 * batches;
                let t = Instant::now();
                std::thread::scope(|sc| {
                    for w in 0..2 {
                        let (round, f, maxlen) = (&round, &f, maxlen);
                        sc.spawn(move || {
                            let mut ring = IoUring::new(256).unwrap();
                            let mut out: Vec<&'static mut [u8]> = (0..256).map(|_| Vec::leak(vec![0u8; maxlen])).collect();
                            for (b, batch) in round.chunks(256).enumerate() {
                                if b % 2 == w {
                                    uring(&mut ring, f, batch, &mut out, n);
                                }
                            }
                        });
                    }
                });
                secs = t.elapsed().as_secs_f64();
                results[mi].push((batches * 256) as f64 / secs);
                continue;
            }
            if let Some((n, aligned)) =
                m.strip_prefix("probe").map(|n| (n, 4096u64)).or_else(|| m.strip_prefix("prec").map(|n| (n, 0)))
            {
                // N threads of O_DIRECT preads, as `zrecord bench`'s device
                // probe: at random 4 KiB-aligned offsets (`probe`) or at the
                // round's records (`prec`).
                let n: usize = n.parse().unwrap();
                let size = f.metadata().unwrap().len();
                let round: Vec<u64> = perm[cursor..cursor + 256 * batches]
                    .iter()
                    .map(|&i| match aligned {
                        0 => all[i].off,
                        a => rng.next() % ((size - maxlen as u64) / a) * a,
                    })
                    .collect();
                cursor += 256 * batches;
                let next = AtomicUsize::new(0);
                let t = Instant::now();
                std::thread::scope(|sc| {
                    for _ in 0..n {
                        let (round, next, direct) = (&round, &next, &direct);
                        sc.spawn(move || {
                            let buf = unsafe {
                                let p = std::alloc::alloc_zeroed(std::alloc::Layout::from_size_align(maxlen, 4096).unwrap());
                                std::slice::from_raw_parts_mut(p, maxlen)
                            };
                            loop {
                                let k = next.fetch_add(1, Ordering::Relaxed);
                                let Some(&off) = round.get(k) else { break };
                                direct.read_exact_at(buf, off).unwrap();
                            }
                        });
                    }
                });
                secs = t.elapsed().as_secs_f64();
                results[mi].push((batches * 256) as f64 / secs);
                continue;
            }
            if let Some(n) = m.strip_prefix("stream") {
                // The round's reads as one queue, no batch boundary (what
                // overlapping batches could reach); buffers reused.
                let round: Vec<&Loc> = perm[cursor..cursor + 256 * batches].iter().map(|&i| &all[i]).collect();
                cursor += 256 * batches;
                let mut bufs: Vec<&'static mut [u8]> = (0..round.len()).map(|k| unsafe { std::slice::from_raw_parts_mut(out[k % 256].as_ptr() as *mut u8, out[k % 256].len()) }).collect();
                let t = Instant::now();
                uring(&mut ring, &f, &round, &mut bufs, n.parse().unwrap());
                secs = t.elapsed().as_secs_f64();
                results[mi].push((batches * 256) as f64 / secs);
                continue;
            }
            for _ in 0..batches {
                let batch: Vec<&Loc> = perm[cursor..cursor + 256].iter().map(|&i| &all[i]).collect();
                cursor += 256;
                let t = Instant::now();
                if let Some(n) = m.strip_prefix("willneed") {
                    willneed_pread(&f, &batch, &mut out, n.parse().unwrap());
                } else if let Some(n) = m.strip_prefix("ppool") {
                    let n: usize = n.parse().unwrap();
                    pools.iter().find(|p| p.0 == n).unwrap().1.read(&batch, &mut out);
                } else if let Some(n) = m.strip_prefix("pool") {
                    pool(&f, &batch, &mut out, n.parse().unwrap());
                } else if let Some(n) = m.strip_prefix("dpool") {
                    pool(&direct, &batch, &mut out, n.parse().unwrap());
                } else if let Some(n) = m.strip_prefix("dscatter") {
                    uring_scattered(&mut ring, &direct, &batch, &pages, n.parse().unwrap());
                } else if let Some(n) = m.strip_prefix("during") {
                    uring(&mut ring, &direct, &batch, &mut out, n.parse().unwrap());
                } else if let Some(n) = m.strip_prefix("uring") {
                    uring(&mut ring, &f, &batch, &mut out, n.parse().unwrap());
                } else {
                    panic!("method {m}");
                }
                secs += t.elapsed().as_secs_f64();
            }
            results[mi].push((batches * 256) as f64 / secs);
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap();
    println!(
        "{store}: {} records of {} bytes (first), {batches} batches of 256 a round, {rounds} rounds; load {}",
        all.len(),
        all[0].len,
        load.trim()
    );
    for (m, v) in methods.iter().zip(&results) {
        let mut s = v.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let rounds: Vec<String> = v.iter().map(|x| format!("{x:.0}")).collect();
        if m.starts_with("willneed") {
            println!("  (advising took {:.3} s in all)", ADVISE_NS.load(Ordering::Relaxed) as f64 / 1e9);
        }
        println!("{m:<12} median {:>8.0} records/s   rounds {}", s[s.len() / 2], rounds.join(", "));
    }
}
