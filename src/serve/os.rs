//! The server's own platform-specific calls (file calls are in
//! [`crate::sys`]): the open-file limit (every connection holds a socket, and
//! thousands of them must not fail at a default soft limit of 1024) and the
//! listening socket's address reuse.

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


        /// On Windows `SO_REUSEADDR` would let two servers share a port: left off.
        pub fn reuse_address(_socket: &TcpSocket) -> io::Result<()> {
            Ok(())
        }
    }
}
