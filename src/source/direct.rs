//! Direct reads (`O_DIRECT`): from the device straight to this process,
//! past the page cache, for stores far bigger than memory
//! (`reader::DIRECT_BEYOND`). Buffered reads of such a store fill the page
//! cache with records mostly evicted before they are read again, charge the
//! cache's insertion and reclaim to the reading cores, and push out every
//! other file's pages. Measured on this VM's disk (session 12, load 8-25,
//! benches/results/bigger_than_memory.md), direct reads through the whole
//! reader were 1.05-1.14x faster on cold 64 KiB records, the same on 2 KiB
//! token blocks; on a machine loaded by builds (load 10-30) they were
//! slower (see the same file), so only a store whose cache hits would be
//! rare reads this way by default.
//!
//! Direct I/O reads whole aligned blocks into aligned memory: each read
//! goes through a bounce buffer of its thread, then the record's bytes are
//! copied out (the copy a buffered read makes too).

use super::ByteSource;
use crate::local::sys;
use std::cell::RefCell;
use std::fs::File;
use std::io;

/// Offsets, lengths and memory of a direct read are multiples of this: the
/// page size, which every device's logical block divides.
const ALIGN: usize = 4096;
/// A thread keeps a bounce buffer up to this size between reads; a bigger
/// record's is freed once read (64 threads may each have read one).
const KEEP: usize = 1 << 20;

thread_local! {
    static BOUNCE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A file read with `O_DIRECT`, falling back to buffered reads where the
/// file system refuses one; its size is fixed at open (stores are immutable
/// once published).
#[derive(Debug)]
pub struct DirectSource {
    direct: File,
    buffered: File,
    size: u64,
}

impl DirectSource {
    /// Read `file` directly.
    ///
    /// # Errors
    /// When the file cannot be opened for direct I/O (the file system or
    /// platform has none) or its metadata cannot be read.
    pub fn new(file: File) -> io::Result<Self> {
        let size = file.metadata()?.len();
        Ok(DirectSource { direct: sys::open_direct(&file)?, buffered: file, size })
    }
}

impl ByteSource for DirectSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        super::check_range(self.size, offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let start = offset - offset % ALIGN as u64;
        let skip = (offset - start) as usize;
        let need = skip + buf.len();
        let blocks = need.next_multiple_of(ALIGN);
        BOUNCE.with(|bounce| {
            let mut bounce = bounce.borrow_mut();
            if bounce.len() < blocks + ALIGN {
                bounce.resize(blocks + ALIGN, 0);
            }
            let at = bounce.as_ptr().align_offset(ALIGN);
            let aligned = &mut bounce[at..at + blocks];
            let read = match read_blocks(&self.direct, aligned, start, need) {
                // A file system (or device) whose blocks 4 KiB does not align.
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                    sys::read_exact_at(&self.buffered, buf, offset)
                }
                Err(e) => Err(e),
                Ok(()) => {
                    buf.copy_from_slice(&aligned[skip..need]);
                    Ok(())
                }
            };
            if bounce.len() > KEEP {
                *bounce = Vec::new();
            }
            read
        })
    }
}

/// Fill at least `need` bytes of `blocks` (aligned) from `file` at `start`
/// (aligned): direct reads return whole blocks, fewer only at the end of
/// the file.
fn read_blocks(file: &File, blocks: &mut [u8], start: u64, need: usize) -> io::Result<()> {
    let mut got = 0;
    while got < need {
        match sys::read_at(file, &mut blocks[got..], start + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(e),
        }
        if got % ALIGN != 0 {
            break; // the end of the file
        }
    }
    match got >= need {
        true => Ok(()),
        false => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends before the range read")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_any_range_as_a_buffered_read_does() {
        let dir = std::env::temp_dir().join(format!("zrecord-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data");
        let bytes: Vec<u8> = (0..3 * ALIGN + 123).map(|i| (i * 7 + i / 251) as u8).collect();
        std::fs::File::create(&path).unwrap().write_all(&bytes).unwrap();
        let Ok(src) = DirectSource::new(File::open(&path).unwrap()) else {
            eprintln!("no direct I/O on {}: skipped", dir.display());
            return;
        };
        let n = bytes.len() as u64;
        let ends = [0, 1, 100, 4095, 4096, 4097, 8191, 8192, 2 * 4096 + 5, n - 1, n];
        for &a in &ends {
            for &b in ends.iter().filter(|&&b| b >= a) {
                let mut got = vec![0u8; (b - a) as usize];
                src.read_exact_at(a, &mut got).unwrap();
                assert_eq!(got, bytes[a as usize..b as usize], "{a}..{b}");
            }
        }
        let err = src.read_exact_at(n - 10, &mut [0u8; 11]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        // Three blocks' worth, not starting on one.
        let mut big = vec![0u8; 2 * ALIGN + 1];
        src.read_exact_at(1, &mut big).unwrap();
        assert_eq!(big, bytes[1..2 * ALIGN + 2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
