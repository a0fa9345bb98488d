//! The server's platform-specific calls, all here: the open-file limit (every
//! connection holds a socket, and thousands of them must not fail at a
//! default soft limit of 1024), positioned reads, inode numbers for ETags,
//! and the listening socket's address reuse.

use std::fs::{File, Metadata};
use std::io;
use tokio::net::TcpSocket;

cfg_if::cfg_if! {
    if #[cfg(unix)] {
        /// Raise the process's soft open-file limit (`RLIMIT_NOFILE`) towards
        /// `wanted`, as far as the hard limit allows, and return the soft
        /// limit now in force, if known. [`start`](super::start) does this for
        /// the server; a client holding many connections may want it too.
        ///
        /// ```
        /// assert!(zrecord::serve::raise_open_files(1024).is_none_or(|n| n > 0));
        /// ```
        pub fn raise_open_files(wanted: u64) -> Option<u64> {
            rlimit::increase_nofile_limit(wanted).ok()
        }

        /// The file's inode number, part of its ETag (a file replaced by
        /// another of the same size and time still changes tag).
        pub fn inode(meta: &Metadata) -> u64 {
            std::os::unix::fs::MetadataExt::ino(meta)
        }

        /// Fill `buf` from `file` at `offset`: one `pread`, no seek.
        pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
            std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
        }

        /// Rebind a port whose last connections are still in TIME_WAIT (as
        /// std's `TcpListener::bind` does on unix); a port someone listens
        /// on stays refused.
        pub fn reuse_address(socket: &TcpSocket) -> io::Result<()> {
            socket.set_reuseaddr(true)
        }
    } else {
        /// No per-process descriptor limit to raise here: `None`.
        pub fn raise_open_files(_wanted: u64) -> Option<u64> {
            None
        }

        /// No inode number here: ETags use size and time alone.
        pub fn inode(_meta: &Metadata) -> u64 {
            0
        }

        /// Fill `buf` from `file` at `offset` (seek, then read).
        pub fn read_exact_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
            use std::io::{Read as _, Seek as _};
            file.seek(io::SeekFrom::Start(offset))?;
            file.read_exact(buf)
        }

        /// On Windows `SO_REUSEADDR` would let two servers share a port: left off.
        pub fn reuse_address(_socket: &TcpSocket) -> io::Result<()> {
            Ok(())
        }
    }
}
