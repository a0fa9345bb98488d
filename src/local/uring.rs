//! A cold batch's reads through io_uring, where the kernel has it: every
//! read of the batch submitted from the calling thread with one system
//! call, the completions reaped as they come, and each record handed on
//! the moment its bytes are in (to be decoded by a pool thread, or by the
//! caller while it waits: `cold::each_uring`). The pool of `pread` threads
//! (`cold.rs`) paid two context switches and a wake-up per read, and a
//! virtio doorbell per read on this VM: cold random 2 KiB zstd token blocks
//! (400,000, batches of 256, `benches/cold_io`) read 67,600-68,300
//! records/s this way against 55,200-60,100 for the pool, with 200-216 ms
//! of CPU against 471-574 and 460 context switches against 47,000. For 64
//! KiB records the two read alike (13,600-16,400 against 15,800-16,500
//! records/s, within this VM's noise) and io_uring takes a third less CPU.
//!
//! Where io_uring is missing or refused (an old kernel, a container's
//! seccomp filter, `ZRECORD_IO_URING=0`), [`each`] says so and the pool
//! reads the batch.

use crate::{Error, Result};
use std::fs::File;
use std::io;
use std::sync::atomic::AtomicU64;

/// Reads in flight at most, one ring's submission entries: a batch of 256
/// records all at once (the device's best depth here is 16 to 64; deeper
/// queues cost it nothing).
const ENTRIES: u32 = 256;

/// Reads made through io_uring by this process (for tests: which path ran).
static READS: AtomicU64 = AtomicU64::new(0);

/// Reads made through io_uring by this process so far.
#[cfg(test)]
pub(crate) fn reads() -> u64 {
    READS.load(std::sync::atomic::Ordering::Relaxed)
}

/// One read of a cold batch: `buf.len()` bytes of `file` at `offset`.
pub(crate) struct Target<'a> {
    pub file: &'a File,
    pub offset: u64,
    pub buf: *mut u8,
    pub len: usize,
}

/// Whether reads go through io_uring here (its ring made on first ask).
pub(crate) fn available() -> bool {
    imp::with_ring(|_| ()).is_some()
}

/// Read every item's [`Target`] (`target(item)`; the buffers of different
/// items must not overlap, and must stay put until the call returns), then
/// run `then(k, item)` on this thread as each read completes, until one
/// fails. While reads are in flight and none has completed, `idle()` runs
/// instead of waiting, as long as it finds work (it returns whether it
/// did). `None` when io_uring cannot be used here: nothing was read, and
/// the caller reads the batch another way.
///
/// Every read submitted has completed before this returns, errors and
/// panics in `then` or `idle` included: the kernel writes into the items'
/// buffers.
pub(crate) fn each<'f, T>(
    items: &mut [T],
    target: impl Fn(&mut T) -> Target<'f>,
    mut then: impl FnMut(usize, &mut T) -> Result<()>,
    mut idle: impl FnMut() -> bool,
    io_err: impl Fn(usize, io::Error) -> Error,
) -> Option<Result<()>> {
    imp::with_ring(|ring| imp::run(ring, items, &target, &mut then, &mut idle, &io_err))
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Target, ENTRIES, READS};
    use crate::{Error, Result};
    use io_uring::{opcode, types, IoUring};
    use std::cell::RefCell;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    thread_local! {
        /// This thread's ring, and the process it was made in (a child made
        /// by `fork` makes its own: a ring is shared with the parent).
        static RING: RefCell<Option<(u32, IoUring)>> = const { RefCell::new(None) };
    }

    /// Whether io_uring failed to set up here once: then never again.
    static REFUSED: AtomicBool = AtomicBool::new(false);

    /// Whether `ZRECORD_IO_URING=0` turned io_uring off.
    fn turned_off() -> bool {
        static OFF: OnceLock<bool> = OnceLock::new();
        *OFF.get_or_init(|| std::env::var_os("ZRECORD_IO_URING").is_some_and(|v| v == "0"))
    }

    /// Run `f` with this thread's ring, made on first use; `None` when
    /// io_uring is off or refused.
    pub(super) fn with_ring<R>(f: impl FnOnce(&mut IoUring) -> R) -> Option<R> {
        if turned_off() || REFUSED.load(Ordering::Relaxed) {
            return None;
        }
        RING.with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?; // (not re-entered: `then` reads no cold batch)
            let pid = std::process::id();
            if slot.as_ref().is_none_or(|(owner, _)| *owner != pid) {
                if let Some((_, inherited)) = slot.take() {
                    // The parent's ring: its memory is shared with the parent,
                    // so leave it alone rather than unmap what it uses.
                    std::mem::forget(inherited);
                }
                match IoUring::new(ENTRIES) {
                    Ok(ring) => *slot = Some((pid, ring)),
                    Err(_) => {
                        REFUSED.store(true, Ordering::Relaxed);
                        return None;
                    }
                }
            }
            slot.as_mut().map(|(_, ring)| f(ring))
        })
    }

    /// [`super::each`] on `ring`.
    pub(super) fn run<'f, T>(
        ring: &mut IoUring,
        items: &mut [T],
        target: &impl Fn(&mut T) -> Target<'f>,
        then: &mut impl FnMut(usize, &mut T) -> Result<()>,
        idle: &mut impl FnMut() -> bool,
        io_err: &impl Fn(usize, io::Error) -> Error,
    ) -> Result<()> {
        let n = items.len();
        // Bytes read so far of each item.
        let mut got = vec![0usize; n];
        let (mut next, mut inflight) = (0usize, 0usize);
        let mut failed: Option<Error> = None;
        let mut panicked = None;
        let mut done = Vec::with_capacity(ENTRIES as usize);
        loop {
            while failed.is_none() && panicked.is_none() && next < n && inflight < ENTRIES as usize {
                let t = match panic::catch_unwind(AssertUnwindSafe(|| target(&mut items[next]))) {
                    Ok(t) => t,
                    Err(p) => {
                        panicked = Some(p); // (the reads in flight complete first)
                        break;
                    }
                };
                if t.len == 0 {
                    // Nothing to read (an empty raw record): done already (a
                    // read of 0 bytes would look like the file's end).
                    if let Err(e) = then(next, &mut items[next]) {
                        failed = Some(e);
                    }
                } else if submit(ring, &t, next, 0) {
                    inflight += 1;
                } else {
                    break; // the queue is full: reap first
                }
                next += 1;
            }
            if inflight == 0 {
                break;
            }
            // The reads queued on their way to the device, then the
            // caller's own work until one completes.
            if !ring.submission().is_empty() {
                let _ = ring.submit(); // (`wait` submits them when this fails)
            }
            if ring.completion().is_empty() {
                if failed.is_none() && panicked.is_none() {
                    match panic::catch_unwind(AssertUnwindSafe(&mut *idle)) {
                        Ok(true) => continue,
                        Ok(false) => {}
                        Err(p) => panicked = Some(p),
                    }
                }
                wait(ring);
            }
            done.clear();
            done.extend(ring.completion().map(|c| (c.user_data() as usize, c.result())));
            for &(k, res) in &done {
                let stopped = failed.is_some() || panicked.is_some();
                let retry = res == -libc::EINTR || res == -libc::EAGAIN;
                if res > 0 {
                    got[k] += res as usize;
                } else if !retry {
                    let e = match res {
                        0 => io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends before the record"),
                        e => io::Error::from_raw_os_error(-e),
                    };
                    failed.get_or_insert_with(|| io_err(k, e));
                    inflight -= 1;
                    continue;
                }
                let t = match panic::catch_unwind(AssertUnwindSafe(|| target(&mut items[k]))) {
                    Ok(t) => t,
                    Err(p) => {
                        panicked.get_or_insert(p);
                        inflight -= 1;
                        continue;
                    }
                };
                if got[k] < t.len {
                    // A short read: the rest of it (or the same again).
                    if !stopped && submit(ring, &t, k, got[k]) {
                        continue;
                    }
                    if !stopped {
                        failed = Some(io_err(
                            k,
                            io::Error::other("no io_uring entry free to finish a short read"),
                        ));
                    }
                    inflight -= 1;
                    continue;
                }
                inflight -= 1;
                READS.fetch_add(1, Ordering::Relaxed);
                if !stopped {
                    match panic::catch_unwind(AssertUnwindSafe(|| then(k, &mut items[k]))) {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => failed = Some(e),
                        Err(p) => panicked = Some(p),
                    }
                }
            }
        }
        if let Some(p) = panicked {
            panic::resume_unwind(p);
        }
        failed.map_or(Ok(()), Err)
    }

    /// Queue the read of `t` from byte `from` on, item `k`; false when the
    /// submission queue is full.
    fn submit(ring: &mut IoUring, t: &Target<'_>, k: usize, from: usize) -> bool {
        let len = u32::try_from(t.len - from).unwrap_or(u32::MAX);
        // SAFETY: `from < t.len`, so the pointer stays within the item's buffer.
        #[allow(unsafe_code)]
        let buf = unsafe { t.buf.add(from) };
        let read = opcode::Read::new(types::Fd(t.file.as_raw_fd()), buf, len)
            .offset(t.offset + from as u64)
            .build()
            .user_data(k as u64);
        // SAFETY: the buffer is the item's own (no other item's overlaps it)
        // and outlives the read: `run` returns only once every read it
        // submitted has completed, whatever `then` does.
        #[allow(unsafe_code)]
        let pushed = unsafe { ring.submission().push(&read) }.is_ok();
        pushed
    }

    /// Submit what is queued and wait for a completion. A failure here
    /// with reads in flight leaves no sound way out (their buffers would be
    /// freed while the kernel writes them), so it aborts.
    fn wait(ring: &mut IoUring) {
        loop {
            match ring.submit_and_wait(1) {
                Ok(_) => return,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {
                    if !ring.completion().is_empty() {
                        return;
                    }
                }
                Err(e) => {
                    eprintln!("zrecord: io_uring_enter failed with reads in flight: {e}");
                    std::process::abort();
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    /// No io_uring here.
    pub(super) fn with_ring<R>(_f: impl FnOnce(&mut ()) -> R) -> Option<R> {
        None
    }
    pub(super) fn run<'f, T>(
        _ring: &mut (),
        _items: &mut [T],
        _target: &impl Fn(&mut T) -> super::Target<'f>,
        _then: &mut impl FnMut(usize, &mut T) -> crate::Result<()>,
        _io_err: &impl Fn(usize, std::io::Error) -> crate::Error,
    ) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::Ordering;

    /// A file of `len` bytes, byte `i` being `i * 7 % 251`.
    fn file(len: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bytes).unwrap();
        (f, bytes)
    }

    fn io_err(k: usize, e: io::Error) -> Error {
        Error::io(format!("read {k}"), "read", e)
    }

    /// Whether this kernel gives us io_uring (it does on Linux since 5.1,
    /// unless a sandbox refuses it: then these tests say so and stop).
    fn available() -> bool {
        let ok = super::available();
        if !ok {
            eprintln!("io_uring is not available here (ZRECORD_IO_URING=0, or refused): not tested");
        }
        ok
    }

    /// Batches of every size up to past one ring's entries: every item read
    /// whole into its own buffer, `then` run once for each, each read
    /// counted as an io_uring read.
    #[test]
    fn every_read_lands_in_its_own_buffer_and_then_runs_once_each() {
        if !available() {
            return;
        }
        let (f, bytes) = file(1 << 20);
        for n in [0usize, 1, 2, 255, 256, 257, 700] {
            // (Item 0, and every 385th, is empty: nothing to read.)
            let mut bufs: Vec<Vec<u8>> = (0..n).map(|k| vec![0; k * 13 % 5005]).collect();
            let mut items: Vec<(u64, &mut Vec<u8>, usize)> =
                bufs.iter_mut().enumerate().map(|(k, b)| ((k as u64 * 1499) % 900_000, b, 0)).collect();
            let before = reads();
            let result = each(
                &mut items,
                |(offset, buf, _)| Target {
                    file: f.as_file(),
                    offset: *offset,
                    buf: buf.as_mut_ptr(),
                    len: buf.len(),
                },
                |k, (_, _, seen)| {
                    *seen += k + 1;
                    Ok(())
                },
                || false,
                io_err,
            );
            result.expect("io_uring available").unwrap();
            let nonempty = (0..n).filter(|k| k * 13 % 5005 > 0).count() as u64;
            assert!(reads() - before >= nonempty, "{nonempty} reads of {n} through io_uring");
            for (k, (offset, buf, seen)) in items.iter().enumerate() {
                assert_eq!(*seen, k + 1, "then ran once for item {k} of {n}");
                assert_eq!(
                    &buf[..],
                    &bytes[*offset as usize..*offset as usize + buf.len()],
                    "item {k} of {n}"
                );
            }
        }
    }

    /// 300 reads of 1,000 bytes, whose 101st has no target (a panic),
    /// through `each` or (`shared`) with the decoding shared
    /// (`cold::each_uring`): whether the panic came out, the buffers, and
    /// the file's bytes.
    fn a_panic_at_item_100(shared: bool) -> (bool, Vec<Vec<u8>>, Vec<u8>) {
        let (f, bytes) = file(100_000);
        let mut bufs = vec![vec![0u8; 1000]; 300];
        let mut items: Vec<(u64, &mut Vec<u8>)> =
            bufs.iter_mut().enumerate().map(|(k, b)| (k as u64 * 300, b)).collect();
        let target = |(offset, buf): &mut (u64, &mut Vec<u8>)| {
            assert!(*offset != 100 * 300, "no target for item 100");
            Target { file: f.as_file(), offset: *offset, buf: buf.as_mut_ptr(), len: buf.len() }
        };
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match shared {
            true => crate::local::cold::each_uring(&mut items, target, |_, _| Ok(()), io_err),
            false => each(&mut items, target, |_, _| Ok(()), || false, io_err),
        }));
        (out.is_err(), bufs, bytes)
    }

    /// A panic asking for an item's target, after others were submitted,
    /// comes out of `each` once their reads have completed, and a shared
    /// decoding (on a thread of its own: a hang fails the test) does not
    /// hang on it.
    #[test]
    fn a_panic_for_a_target_waits_for_the_reads_in_flight() {
        if !available() {
            return;
        }
        for shared in [false, true] {
            let (panicked, bufs, bytes) = within_30s(move || a_panic_at_item_100(shared));
            assert!(panicked, "the panic comes out (shared decoding: {shared})");
            // Every read submitted (items before 100) completed before the
            // panic came out: their bytes are whole.
            for (k, buf) in bufs.iter().enumerate().take(100) {
                assert_eq!(&buf[..], &bytes[k * 300..k * 300 + 1000], "item {k} (shared decoding: {shared})");
            }
        }
    }

    /// A read past the end of the file is its item's error; an error from
    /// `then` stops the batch (no `then` after it) and is the one returned.
    /// Either way every read submitted completes first (the buffers are
    /// checked afterwards, and would be written after the return if not).
    #[test]
    fn a_failed_read_or_then_stops_the_batch_with_its_error() {
        if !available() {
            return;
        }
        let (f, _) = file(100_000);
        let mut bufs = vec![vec![0u8; 1000]; 300];
        let mut items: Vec<(u64, &mut Vec<u8>)> =
            bufs.iter_mut().enumerate().map(|(k, b)| (k as u64 * 300, b)).collect();
        items[7].0 = 99_500; // ends 400 bytes past the file's end
        let target = |(offset, buf): &mut (u64, &mut Vec<u8>)| Target {
            file: f.as_file(),
            offset: *offset,
            buf: buf.as_mut_ptr(),
            len: buf.len(),
        };
        let err = each(&mut items, target, |_, _| Ok(()), || false, io_err).unwrap().unwrap_err();
        assert!(err.to_string().contains("read 7"), "{err}");

        items[7].0 = 0;
        let (mut erred, mut after) = (false, 0);
        let result = each(
            &mut items,
            target,
            |k, _| {
                after += usize::from(erred);
                if k == 42 {
                    erred = true;
                    return Err(Error::InvalidArgument { store: "t".into(), why: "stop at 42".into() });
                }
                Ok(())
            },
            || false,
            io_err,
        );
        let err = result.unwrap().unwrap_err();
        assert!(err.to_string().contains("stop at 42"), "{err}");
        assert_eq!(after, 0, "then ran after the error");
    }

    /// A pipe: reads from its end wait until something is written.
    fn pipe() -> (File, File) {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe` writes.
        #[allow(unsafe_code)]
        let made = unsafe { libc::pipe(fds.as_mut_ptr()) };
        assert_eq!(made, 0, "pipe: {}", io::Error::last_os_error());
        // SAFETY: both descriptors were just made, and are owned here alone.
        #[allow(unsafe_code)]
        unsafe {
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        }
    }

    /// Run `f` on a thread of its own, failing if it takes over 30 s (a
    /// hang fails the test instead of stalling the suite).
    fn within_30s<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(30)).expect("each hung")
    }

    /// Two reads of 5 bytes each from a pipe, through `each` with
    /// `idle(write_end)` (on a thread of its own, so that a hang fails the
    /// test): whether a panic came out, and the two buffers, sorted.
    fn two_pipe_reads(mut idle: impl FnMut(&mut File) -> bool + Send + 'static) -> (bool, Vec<[u8; 5]>) {
        within_30s(move || {
            let (read_end, mut write_end) = pipe();
            let mut bufs = vec![[0u8; 5]; 2];
            let mut items: Vec<&mut [u8; 5]> = bufs.iter_mut().collect();
            let target =
                |buf: &mut &mut [u8; 5]| Target { file: &read_end, offset: 0, buf: buf.as_mut_ptr(), len: 5 };
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                each(&mut items, target, |_, _| Ok(()), || idle(&mut write_end), io_err)
                    .expect("io_uring available")
                    .unwrap()
            }));
            bufs.sort();
            (out.is_err(), bufs)
        })
    }

    /// While its reads are in flight and none has completed, the caller
    /// does its own work (`idle`): here the reads are from a pipe, and only
    /// `idle` writes what they wait for, so the batch ends only if `idle`
    /// ran while they were in flight. It stops being asked once it finds
    /// no work.
    #[test]
    fn the_caller_works_while_its_reads_are_in_flight() {
        if !available() {
            return;
        }
        let calls = std::sync::Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let (panicked, bufs) = two_pipe_reads(move |write_end| {
            if counted.fetch_add(1, Ordering::Relaxed) == 0 {
                write_end.write_all(b"0123456789").unwrap(); // both reads' bytes
                return true;
            }
            false
        });
        assert!(!panicked && calls.load(Ordering::Relaxed) >= 1, "idle ran");
        assert_eq!(bufs, vec![*b"01234", *b"56789"], "each read got its own 5 bytes");
    }

    /// A panic in `idle` comes out of `each` only once every read in flight
    /// has completed (the kernel writes into the buffers until then).
    #[test]
    fn a_panic_in_idle_waits_for_the_reads_in_flight() {
        if !available() {
            return;
        }
        let (panicked, bufs) = two_pipe_reads(|write_end| {
            write_end.write_all(b"abcdefghij").unwrap();
            panic!("idle failed");
        });
        assert!(panicked, "the panic comes out");
        assert_eq!(bufs, vec![*b"abcde", *b"fghij"], "both reads completed before it did");
    }
}
