//! Positional reads (`pread`): no mapping, one system call per range.

use super::ByteSource;
use std::fs::File;
use std::io;

/// A file read with `pread`; its size is fixed at open (stores are immutable
/// once published).
#[derive(Debug)]
pub struct PreadSource {
    file: File,
    size: u64,
}

impl PreadSource {
    /// Use an open file.
    ///
    /// # Errors
    /// When the file's metadata cannot be read.
    pub fn new(file: File) -> io::Result<Self> {
        let size = file.metadata()?.len();
        Ok(PreadSource { file, size })
    }
}

impl ByteSource for PreadSource {
    fn size(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        super::check_range(self.size, offset, buf.len())?;
        crate::local::sys::read_exact_at(&self.file, buf, offset)
    }
    fn will_need(&self, offset: u64, len: u64) {
        crate::local::sys::will_need(&self.file, offset, len);
    }
    /// A timed one-byte read ([`crate::local::sys::read_probe`]): no map
    /// to ask `mincore` about.
    fn is_resident(&self, offset: u64) -> Option<bool> {
        crate::local::sys::read_probe(&self.file, offset)
    }
    fn file(&self) -> Option<&File> {
        Some(&self.file)
    }
}
