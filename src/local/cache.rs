//! A local store and the page cache, for measuring cold reads
//! (`zrecord bench STORE --cold`): drop a store's pages from the cache,
//! count what the process reads from storage, and measure what the device
//! alone delivers on a file (random `O_DIRECT` reads, no cache).
//!
//! Linux only (`posix_fadvise`, `/proc/self/io`, `O_DIRECT`); elsewhere every
//! call fails with `Unsupported` (or gives `None`). No root needed.
//!
//! Whether a page is resident is the reader's question (`mincore` on its
//! map, `local::sys`); a one-byte `preadv2(RWF_NOWAIT)` per page is no way
//! to check eviction: it still reads on a miss (Linux 6.18: probing every
//! page of an evicted 16 MiB file read all 16 MiB back). [`process_read_bytes`]
//! around a read tells whether it was cold.

use super::sys;
use crate::format::files::StoreFile;
use crate::{Error, Result};
use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// The unit of an `O_DIRECT` read's offset, length and buffer address.
pub const DIRECT_ALIGN: usize = 4096;

/// The queue depths [`device_limit`] is usually asked for.
pub const DEPTHS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Drop a local store's files (`meta.zr`, `data.zr`, and `dict.zr` and
/// `sums.zr` when present) from the page cache, so the next read of them
/// goes to the device.
///
/// Each file is flushed first (`fdatasync`: the kernel never drops a dirty
/// page, and a store just written has many), then advised away with
/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`.
///
/// Call it only after every mapping of the files is closed: drop the
/// [`Store`](crate::Store) (and anything else that maps them) first. The
/// kernel does not drop a page while it is mapped, so evicting a store that
/// is still open through mmap leaves its mapped pages cached and the next
/// "cold" read warm. Another process that maps or reads the files keeps
/// their pages just as well, and pages still being read in (readahead a
/// closed map started, completing after the call) are skipped: call it
/// again a moment later, which this function does itself: it makes two
/// passes 50 ms apart. [`process_read_bytes`] around the next read tells
/// whether it worked.
///
/// # Errors
/// `NotFound` when `dir` has no `meta.zr` or `data.zr`; `Io` for a failed
/// open, flush or advice; `Io` with `Unsupported` off Linux.
pub fn evict(dir: &Path) -> Result<()> {
    evict_all(&[dir])
}

/// [`evict`] for many stores at once (a dataset's shards), the two passes
/// over all of them.
///
/// # Errors
/// As [`evict`], for the first store that fails.
pub fn evict_all<P: AsRef<Path>>(dirs: &[P]) -> Result<()> {
    dirs.iter().try_for_each(|d| evict_once(d.as_ref()))?;
    std::thread::sleep(Duration::from_millis(50));
    dirs.iter().try_for_each(|d| evict_once(d.as_ref()))
}

fn evict_once(dir: &Path) -> Result<()> {
    let name = dir.display().to_string();
    for file in StoreFile::ALL {
        let path = dir.join(file.name());
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if matches!(file, StoreFile::Meta | StoreFile::Data) {
                    return Err(Error::NotFound { store: name, what: format!("{file} is missing") });
                }
                continue;
            }
            Err(e) => return Err(Error::io(path, "open", e)),
        };
        f.sync_data().map_err(|e| Error::io(&path, "fdatasync", e))?;
        sys::drop_cached(&f).map_err(|e| Error::io(&path, "posix_fadvise(DONTNEED)", e))?;
    }
    Ok(())
}

/// Bytes of one [`device_limit`] read for records of `record_bytes`: rounded
/// up to [`DIRECT_ALIGN`], at least one unit.
pub fn direct_read_bytes(record_bytes: usize) -> usize {
    record_bytes.max(1).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN
}

/// What the device delivered at one queue depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceRate {
    /// Reads in flight (threads).
    pub depth: usize,
    /// Bytes of each read.
    pub read_bytes: usize,
    /// Reads completed.
    pub reads: u64,
    /// Wall time of the run, seconds.
    pub secs: f64,
    /// `reads / secs`.
    pub reads_per_s: f64,
    /// `reads * read_bytes / secs`.
    pub bytes_per_s: f64,
}

/// The device's own random-read limit on the file at `path`: reads of
/// [`direct_read_bytes`]`(record_bytes)` at random aligned offsets inside
/// the file, opened with `O_DIRECT` so that neither the page cache nor
/// readahead helps, one run of about `per_depth` for each queue depth in
/// `depths`.
///
/// Queue depth Q is Q threads, each doing blocking `pread`s in a loop: simple
/// and honest, but it measures what a thread pool of that size gets, which
/// an `io_uring` queue of the same depth may beat slightly (no thread
/// switches). Every thread starts its own random stream; a read is counted
/// when it completes, the run's time ends when the last thread finishes its
/// last read (at most one read past `per_depth`). A file shorter than one
/// read is read whole, from offset 0, each time.
///
/// Whatever is cached of the file does not change the result (`O_DIRECT`
/// goes around the cache), though a virtual machine's host may cache the
/// disk image below the guest.
///
/// # Errors
/// `Io` for a failed open or read; a file system that refuses `O_DIRECT`
/// (tmpfs, some FUSE and network file systems answer `EINVAL`) gives an
/// `Io` error that says "does not support O_DIRECT". `Unsupported` off Linux.
pub fn device_limit(
    path: &Path,
    record_bytes: usize,
    depths: &[usize],
    per_depth: Duration,
) -> Result<Vec<DeviceRate>> {
    const NO_DIRECT: &str = "open with O_DIRECT (the file system does not support O_DIRECT)";
    const NO_DIRECT_READ: &str = "O_DIRECT read (the file system does not support O_DIRECT)";
    let read_bytes = direct_read_bytes(record_bytes);
    let file = File::open(path).and_then(|f| sys::open_direct(&f)).map_err(|e| {
        let op = if e.kind() == io::ErrorKind::InvalidInput { NO_DIRECT } else { "open with O_DIRECT" };
        Error::io(path, op, e)
    })?;
    let size = file.metadata().map_err(|e| Error::io(path, "stat", e))?.len();
    if size == 0 {
        return Err(Error::InvalidArgument {
            store: path.display().to_string(),
            why: "the file is empty: nothing to read".into(),
        });
    }
    // Aligned offsets at which a whole read fits (offset 0 for a short file).
    let slots = size.saturating_sub(read_bytes as u64) / DIRECT_ALIGN as u64 + 1;
    let mut rates = Vec::with_capacity(depths.len());
    // Offsets of their own for every call, depth and thread: a virtual
    // machine's host caches what the guest read of its disk, and fixed
    // streams read the same offsets again (each deeper run repeating the
    // shallower runs' threads, each call the last one's), measuring that
    // cache instead of the device.
    let fresh =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    for (run, &depth) in depths.iter().enumerate() {
        let depth = depth.max(1);
        let start = Instant::now();
        let deadline = start + per_depth;
        let counts = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..depth)
                .map(|t| {
                    let file = &file;
                    let seed = fresh ^ ((run as u64) << 32) ^ t as u64;
                    scope.spawn(move || read_loop(file, read_bytes, slots, seed, deadline))
                })
                .collect();
            threads.into_iter().map(|h| h.join().expect("device_limit reader panicked")).collect::<Vec<_>>()
        });
        let secs = start.elapsed().as_secs_f64();
        let mut reads = 0;
        for c in counts {
            reads += c.map_err(|e| {
                let op =
                    if e.kind() == io::ErrorKind::InvalidInput { NO_DIRECT_READ } else { "O_DIRECT read" };
                Error::io(path, op, e)
            })?;
        }
        rates.push(DeviceRate {
            depth,
            read_bytes,
            reads,
            secs,
            reads_per_s: reads as f64 / secs,
            bytes_per_s: (reads * read_bytes as u64) as f64 / secs,
        });
    }
    Ok(rates)
}

/// One thread of [`device_limit`]: random aligned reads until `deadline`;
/// the number of reads completed.
fn read_loop(file: &File, read_bytes: usize, slots: u64, seed: u64, deadline: Instant) -> io::Result<u64> {
    // O_DIRECT wants the buffer's address aligned too: over-allocate and
    // start at the first aligned byte (no unsafe allocation needed).
    let mut buf = vec![0u8; read_bytes + DIRECT_ALIGN];
    let skip = buf.as_ptr().align_offset(DIRECT_ALIGN);
    let buf = &mut buf[skip..skip + read_bytes];
    let mut rng = SplitMix(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED);
    let mut reads = 0;
    loop {
        let offset = rng.next() % slots * DIRECT_ALIGN as u64;
        let n = sys::read_at(file, buf, offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("nothing read at offset {offset}"),
            ));
        }
        reads += 1;
        if Instant::now() >= deadline {
            return Ok(reads);
        }
    }
}

/// SplitMix64: a tiny, good-enough random stream for offsets.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Bytes this process has made the kernel read from storage so far
/// (`read_bytes` of `/proc/self/io`, every thread: page-cache misses and
/// the readahead they start, and `O_DIRECT` reads), when the system counts
/// them. The difference over a gather, against the bytes it asked for, is
/// its read amplification.
pub fn process_read_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let line = text.lines().find(|l| l.starts_with("read_bytes:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;

    /// The temp dir's file system keeps file pages apart from the cache
    /// (tmpfs pages are the file: nothing to evict).
    fn evictable(dir: &Path) -> bool {
        const TMPFS_MAGIC: u64 = 0x0102_1994;
        rustix::fs::statfs(dir).map(|s| s.f_type as u64 != TMPFS_MAGIC).unwrap_or(false)
    }

    fn write(path: &Path, len: usize) {
        let mut f = File::create(path).unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4096) as u8).collect();
        f.write_all(&bytes).unwrap();
    }

    /// Bytes the process reads from storage while reading all of `path`.
    fn read_from_device(path: &Path) -> Option<u64> {
        let before = process_read_bytes()?;
        std::fs::read(path).unwrap();
        Some(process_read_bytes()? - before)
    }

    #[test]
    fn evict_drops_every_store_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let sizes = [("meta.zr", 64 << 10), ("data.zr", 1 << 20), ("sums.zr", 8 << 10)];
        // No dict.zr: an optional file that is missing is skipped.
        for (name, len) in sizes {
            write(&dir.join(name), len);
        }
        evict(dir).unwrap();
        if !evictable(dir) {
            eprintln!("{}: tmpfs, eviction not checked", dir.display());
            return;
        }
        // Other tests read files in this process meanwhile: at least, not exactly.
        for (name, len) in sizes {
            let Some(cold) = read_from_device(&dir.join(name)) else {
                eprintln!("no /proc/self/io: eviction not checked");
                return;
            };
            assert!(cold >= len as u64, "{name}: {cold} bytes of {len} read from the device after evict");
        }
        // A second read is served by the cache; evicting again makes it cold again.
        let warm = read_from_device(&dir.join("data.zr")).unwrap();
        evict(dir).unwrap();
        let cold = read_from_device(&dir.join("data.zr")).unwrap();
        assert!(cold >= 1 << 20 && cold > warm, "warm {warm}, cold {cold}");
    }

    #[test]
    fn evict_needs_meta_and_data() {
        let tmp = tempfile::tempdir().unwrap();
        let e = evict(tmp.path()).unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }), "{e}");
        write(&tmp.path().join("meta.zr"), 100);
        let e = evict(tmp.path()).unwrap_err();
        assert!(e.to_string().contains("data.zr is missing"), "{e}");
        write(&tmp.path().join("data.zr"), 100);
        evict(tmp.path()).unwrap();
    }

    #[test]
    fn device_limit_reads_aligned_units() {
        assert_eq!(direct_read_bytes(0), 4096);
        assert_eq!(direct_read_bytes(4096), 4096);
        assert_eq!(direct_read_bytes(4097), 8192);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("data.zr");
        write(&path, (1 << 20) + 100);
        match device_limit(&path, 2048, &[1, 4], Duration::from_millis(50)) {
            Ok(rates) => {
                assert_eq!(rates.len(), 2);
                for (r, depth) in rates.iter().zip([1, 4]) {
                    assert_eq!(r.depth, depth);
                    assert_eq!(r.read_bytes, 4096);
                    assert!(r.reads >= depth as u64 && r.reads_per_s > 0.0, "{r:?}");
                    assert!((r.bytes_per_s - r.reads_per_s * 4096.0).abs() < 1e-3 * r.bytes_per_s);
                }
            }
            Err(e) => assert!(e.to_string().contains("does not support O_DIRECT"), "{e}"),
        }
        // A file shorter than one read is read whole.
        let short = tmp.path().join("short");
        write(&short, 100);
        if let Ok(rates) = device_limit(&short, 65536, &[2], Duration::from_millis(20)) {
            assert!(rates[0].reads >= 2);
        }
    }
}
