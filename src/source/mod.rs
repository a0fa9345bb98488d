//! Byte sources: where a store's file bytes come from.
//!
//! One small trait with absolute `u64` offsets. Backends: `mmap` (zero-copy),
//! `pread` (positional reads), `direct` (`O_DIRECT` reads, for stores
//! bigger than memory), `memory` (tests, fuzzing, browser blobs already
//! in memory). The native reader runs over any of them.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod memory;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod direct;
        pub mod mmap;
        pub mod pread;
    }
}

/// A random-access, immutable run of bytes (one file of a store).
pub trait ByteSource: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> u64;

    /// Fill `buf` with the bytes at `offset`.
    ///
    /// # Errors
    /// I/O errors, and `UnexpectedEof` when the range reaches past the end.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// The bytes at `offset..offset+len` without copying, when the backend
    /// holds them in memory (mmap, memory). `None` means "use `read_exact_at`".
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let _ = (offset, len);
        None
    }

    /// Start reading `offset..offset+len` into memory without waiting for
    /// it (a cold batch asks for every record at once, so the device works
    /// on all of them together instead of one fault at a time). Best
    /// effort; the default does nothing.
    fn will_need(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }

    /// Whether the byte at `offset` is in memory now, so reading it costs no
    /// I/O; `None` when the backend cannot tell (the default).
    fn is_resident(&self, offset: u64) -> Option<bool> {
        let _ = offset;
        None
    }

    /// The open file whose bytes [`ByteSource::read_exact_at`] reads as
    /// they are (a plain `pread` source), for a cold batch to read through
    /// io_uring; `None` (the default) where reads go another way.
    fn file(&self) -> Option<&std::fs::File> {
        None
    }
}

/// Check that `offset..offset+len` lies within `size`, as every backend must.
pub(crate) fn check_range(size: u64, offset: u64, len: usize) -> io::Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("range {offset}..+{len} reaches past the end ({size} bytes)"),
        )),
    }
}

/// A wrapper that counts reads and bytes, so tests can assert what a gather cost.
pub struct Counting<S> {
    inner: S,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl<S: ByteSource> Counting<S> {
    /// Wrap a source.
    pub fn new(inner: S) -> Self {
        Counting { inner, reads: AtomicU64::new(0), bytes: AtomicU64::new(0) }
    }
    /// `(reads, bytes)` so far; zero-copy slices count as reads too.
    pub fn counts(&self) -> (u64, u64) {
        (self.reads.load(Ordering::Relaxed), self.bytes.load(Ordering::Relaxed))
    }
    fn count(&self, len: usize) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
    }
}

impl<S: ByteSource> ByteSource for Counting<S> {
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.count(buf.len());
        self.inner.read_exact_at(offset, buf)
    }
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let s = self.inner.slice(offset, len);
        if s.is_some() {
            self.count(len);
        }
        s
    }
    fn will_need(&self, offset: u64, len: u64) {
        self.inner.will_need(offset, len)
    }
    fn is_resident(&self, offset: u64) -> Option<bool> {
        self.inner.is_resident(offset)
    }
}

impl<S: ByteSource + ?Sized> ByteSource for std::sync::Arc<S> {
    fn size(&self) -> u64 {
        (**self).size()
    }
    fn file(&self) -> Option<&std::fs::File> {
        (**self).file()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_exact_at(offset, buf)
    }
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        (**self).slice(offset, len)
    }
    fn will_need(&self, offset: u64, len: u64) {
        (**self).will_need(offset, len)
    }
    fn is_resident(&self, offset: u64) -> Option<bool> {
        (**self).is_resident(offset)
    }
}

impl<S: ByteSource + ?Sized> ByteSource for Box<S> {
    fn size(&self) -> u64 {
        (**self).size()
    }
    fn file(&self) -> Option<&std::fs::File> {
        (**self).file()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_exact_at(offset, buf)
    }
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        (**self).slice(offset, len)
    }
    fn will_need(&self, offset: u64, len: u64) {
        (**self).will_need(offset, len)
    }
    fn is_resident(&self, offset: u64) -> Option<bool> {
        (**self).is_resident(offset)
    }
}
