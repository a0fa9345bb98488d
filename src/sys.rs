//! The operating-system calls that are Unix-only, in one place: positional
//! file reads and writes (`pread`/`pwrite`, no shared cursor, so threads share
//! one `File`) and the allocated size of a file.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};

/// Read exactly `buf.len()` bytes of `file` at `offset`.
///
/// # Errors
/// The read's error, `UnexpectedEof` when the file ends first.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

/// Write all of `buf` to `file` at `offset`.
///
/// # Errors
/// The write's error.
pub fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    file.write_all_at(buf, offset)
}

/// Bytes the file system allocated for a file (sparse files hold fewer).
pub fn allocated_bytes(meta: &Metadata) -> u64 {
    meta.blocks() * 512
}

/// The file's inode number (part of a strong ETag).
pub fn inode(meta: &Metadata) -> u64 {
    meta.ino()
}
