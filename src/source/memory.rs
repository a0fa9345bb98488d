//! An in-memory byte source.

use super::{check_range, ByteSource};
use std::io;

/// Bytes held in memory (a `Vec`, a fetched blob, a test fixture).
#[derive(Clone, Debug, Default)]
pub struct MemorySource {
    bytes: Vec<u8>,
}

impl MemorySource {
    /// Wrap bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        MemorySource { bytes: bytes.into() }
    }
}

impl ByteSource for MemorySource {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let s = self.slice(offset, buf.len()).ok_or_else(|| {
            check_range(self.size(), offset, buf.len())
                .expect_err("slice failed, so the range is out of bounds")
        })?;
        buf.copy_from_slice(s);
        Ok(())
    }
    fn slice(&self, offset: u64, len: usize) -> Option<&[u8]> {
        check_range(self.size(), offset, len).ok()?;
        let start = offset as usize;
        Some(&self.bytes[start..start + len])
    }
}
