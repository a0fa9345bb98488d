//! The server's own platform-specific calls (file calls are in
//! [`crate::local::sys`]): the open-file limit (every connection holds a socket, and
//! thousands of them must not fail at a default soft limit of 1024), the
//! listening socket's address reuse, and opening a requested file.

use std::fs::File;
use std::io;
use std::path::Path;
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


        /// The device and inode of a file: what says that a path still names
        /// a file the server holds open.
        pub fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
            use std::os::unix::fs::MetadataExt as _;
            Some((meta.dev(), meta.ino()))
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


        /// No stable file identity from a `Metadata` here: `None`, so no file
        /// is kept open between requests.
        pub fn file_id(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
            None
        }

        /// On Windows `SO_REUSEADDR` would let two servers share a port: left off.
        pub fn reuse_address(_socket: &TcpSocket) -> io::Result<()> {
            Ok(())
        }
    }
}

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        use std::sync::atomic::{AtomicBool, Ordering};

        use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
        use rustix::io::Errno;

        /// Set once `openat2` turned out to be missing (a kernel before 5.6,
        /// or a sandbox that filters the call): later requests walk instead.
        static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

        /// Read-only, and never blocking in `open`: a FIFO in the folder
        /// would otherwise hold a worker thread until some writer came.
        const READ: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC).union(OFlags::NONBLOCK);

        /// Open `path` for reading in one call that fails if any component
        /// of it is a symlink (`openat2` with `RESOLVE_NO_SYMLINKS`): with no
        /// symlink on it, a path of plain names under the root stays there.
        /// `Ok(None)` when a symlink is on the path or the kernel lacks the
        /// call: the caller then checks the path itself.
        ///
        /// # Errors
        /// The open's error, when no symlink was in the way (a missing file).
        pub fn open_without_symlinks(path: &Path) -> io::Result<Option<File>> {
            if NO_OPENAT2.load(Ordering::Relaxed) {
                return Ok(None);
            }
            match rustix::fs::openat2(CWD, path, READ, Mode::empty(), ResolveFlags::NO_SYMLINKS) {
                Ok(fd) => Ok(Some(File::from(fd))),
                Err(Errno::LOOP) => Ok(None),
                Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    Ok(None)
                }
                Err(e) => Err(e.into()),
            }
        }

        /// Open `path` (symlinks followed) for reading, without blocking on a FIFO.
        ///
        /// # Errors
        /// The open's error.
        pub fn open_read(path: &Path) -> io::Result<File> {
            Ok(File::from(rustix::fs::open(path, READ, Mode::empty())?))
        }
    } else {
        /// No single call here refuses symlinks on a path: always `Ok(None)`,
        /// the caller checks the path itself.
        ///
        /// # Errors
        /// Never.
        pub fn open_without_symlinks(_path: &Path) -> io::Result<Option<File>> {
            Ok(None)
        }

        /// Open `path` for reading.
        ///
        /// # Errors
        /// The open's error.
        pub fn open_read(path: &Path) -> io::Result<File> {
            File::open(path)
        }
    }
}
