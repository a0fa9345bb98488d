//! The static file server behind `zrecord serve DIR`.
//!
//! Serves a directory of stores over HTTP/1.1 so the remote reader and the
//! web viewer can read them exactly as they would from S3 or nginx: single
//! byte ranges, strong ETags, CORS on every response but the proxy's, no
//! compression.
//! HTTP/1.1 itself is hyper's, on a multi-threaded tokio runtime the server
//! owns (one worker per core); what is served, and how, is decided in
//! `handler.rs`.
//!
//! # What is served, in order of precedence
//!
//! 1. `OPTIONS` on any path: the CORS preflight answer, `204`.
//! 2. `GET /api/stores`: a JSON list of the store directories under the root
//!    (a directory holding `meta.zr`), found to [`ServeConfig::store_depth`]:
//!    `[{"path": "a/b", "url": "/a/b/", "files": {"meta.zr": 120, "data.zr": 4096}}]`.
//!    A file named `api/stores` under the root is shadowed.
//! 3. The [`ServeConfig::assets`] callback (the viewer), asked for the decoded
//!    path without its leading `/`; a path ending in `/` (the root included)
//!    asks for `…/index.html`. **The viewer's files always win**: a served
//!    folder holding `index.html`, `app.js` or `pkg/zrecord.js` cannot replace
//!    the viewer's code (those files of the folder are not reachable).
//! 4. With [`ServeConfig::proxy`], a path below its mount: read from the
//!    remote prefix (`proxy.rs`: one pinned version per file, ranged reads of
//!    at most [`PROXY_MAX_RANGE`] bytes, [`PROXY_IN_FLIGHT`] at once). Mounted
//!    at `""`, it answers every path but the viewer's, and `/api/stores` is `[]`.
//! 5. A regular file under the root, at the same path as in the directory
//!    (`/a/b/data.zr` is `DIR/a/b/data.zr`).
//! 6. `404`.
//!
//! Directories are never listed and only regular files are served.
//!
//! A served folder (a downloaded dataset, say) is not trusted content, and
//! the viewer runs on the same origin. So its files never run there: each
//! carries `X-Content-Type-Options: nosniff` and
//! `Content-Security-Policy: sandbox`, and any type a browser would run or
//! render as a document (HTML, SVG, XML, JavaScript, ...) is sent as
//! `application/octet-stream`.
//!
//! # HTTP behaviour
//!
//! - `GET`, `HEAD`, `OPTIONS`; anything else is `405`.
//! - `Range: bytes=a-b`, `a-` and `-N` give `206` with `Content-Range`; a
//!   range past the end gives `416` with `Content-Range: bytes */size`.
//!   **Multi-range requests are answered with the full `200` body**, as S3
//!   does: RFC 9110 lets a server ignore `Range`, and clients coalesce their
//!   reads into single ranges anyway. Invalid `Range` values are ignored too.
//!   `HEAD` ignores `Range` (RFC 9110 defines ranges for `GET` only).
//! - Strong `ETag` (size, modification time in ns and inode), `Last-Modified`,
//!   `Cache-Control: no-cache`. `If-None-Match` gives `304`, a failed
//!   `If-Match` gives `412`, and `If-Range` is honoured, so a client can detect
//!   a store rewritten under it.
//! - Keep-alive per HTTP/1.1 (and HTTP/1.0 with `Connection: keep-alive`,
//!   answered as HTTP/1.0); pipelined requests are answered in order.
//!   Request heads are limited to 16 KiB (`431`) and 100 fields; requests
//!   with a body are answered and the connection closed. Malformed heads get
//!   hyper's own `400` (or `431`), without the CORS headers.
//! - Idle connections cost no thread: a request head must be complete
//!   [`ServeConfig::head_timeout`] after the connection opens or its first
//!   byte arrives, and a connection with no traffic for
//!   [`ServeConfig::idle_timeout`] is closed. So half-open connections lock
//!   out nobody.
//! - At most [`ServeConfig::max_connections`] connections at a time (10,000
//!   by default, far above what readers use; the open-file limit is raised to
//!   fit); past that a new connection gets `503` and is closed.
//!
//! # Security
//!
//! Paths are checked after percent-decoding: `..`, `.`, empty segments,
//! encoded `/` or `\`, backslashes and NUL are refused with `403`. The file
//! is then opened in one call that refuses any symlink on its path (Linux's
//! `openat2`, `RESOLVE_NO_SYMLINKS`): a path of plain names with no symlink
//! stays under the root. A path that holds a symlink (or a platform without
//! that call) is walked down from the canonical root, and every symlink on
//! it must resolve under the root, so a symlink inside the root pointing
//! outside it is refused too (`403`). That walk and its `open` are not
//! atomic: someone who can rename directories inside the root while it is
//! served could race it. Whoever can write the root can do that; a
//! downloaded folder's *content* is another matter, and is never run (see
//! above). On Linux files are opened without blocking: a FIFO is no regular
//! file (`404`), and never holds a worker until some writer comes.
//!
//! A file opened through no symlink is kept open for later requests, and
//! reused only while an `lstat` of its path finds a regular file with the
//! same device and inode (`files.rs`): a file replaced, deleted or turned
//! into a symlink is resolved afresh; one changed in place keeps its inode,
//! and its ETag follows its new size and time. Kept files unused for 5 to
//! 10 s are closed.

mod body;
mod conn;
pub mod demo;
mod files;
mod handler;
mod os;
mod path;
mod proxy;
mod range;
mod stores;
pub mod viewer_assets;

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::Runtime;
use tokio::sync::{watch, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

use crate::{Error, Result};
use files::OpenFiles;
use handler::Site;
pub use os::raise_open_files;
pub use proxy::{Upstream, IN_FLIGHT as PROXY_IN_FLIGHT, MAX_RANGE as PROXY_MAX_RANGE};
pub use stores::{list_stores, ListedStore};

/// The embedded-asset lookup: a path such as `index.html` or
/// `pkg/zrecord_bg.wasm` (decoded, no leading `/`) to its bytes and
/// `Content-Type`, or `None` if there is no such asset.
pub type Assets = Box<dyn Fn(&str) -> Option<(Cow<'static, [u8]>, &'static str)> + Send + Sync>;

/// Default [`ServeConfig::head_timeout`].
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Default [`ServeConfig::idle_timeout`].
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`ServeConfig::max_connections`].
pub const MAX_CONNECTIONS: usize = 10_000;
/// Pending connections the kernel queues before `accept` (as nginx's 511,
/// rounded up): a thousand clients connecting at once get no SYN drops.
const BACKLOG: u32 = 1024;

/// What to serve and where.
///
/// ```no_run
/// use zrecord::serve::{self, ServeConfig};
/// let server = serve::start(ServeConfig::new("stores/"))?;
/// println!("serving on {}", server.url());
/// server.wait();
/// # Ok::<(), zrecord::Error>(())
/// ```
pub struct ServeConfig {
    /// The directory to serve.
    pub root: PathBuf,
    /// Address or host name to bind (`127.0.0.1` by default; `0.0.0.0` or
    /// `::` to serve the network).
    pub host: String,
    /// Port to bind; 0 lets the system pick one (see [`ServerHandle::addr`]).
    pub port: u16,
    /// The viewer: files served first, before any file of the root.
    pub assets: Option<Assets>,
    /// Log one line per request to stderr.
    pub verbose: bool,
    /// Most connections served at once; one more is answered `503`.
    pub max_connections: usize,
    /// How long a client may take to send a request head, counted from the
    /// connection's start or from the head's first byte.
    pub head_timeout: Duration,
    /// How long a connection may go without a byte read or written (between
    /// keep-alive requests, or a client that stopped reading) before it is
    /// closed.
    pub idle_timeout: Duration,
    /// Worker threads of the server's runtime; 0 is one per core.
    pub threads: usize,
    /// How many directory levels below the root `/api/stores` looks.
    pub store_depth: usize,
    /// A remote prefix to serve (see `proxy.rs`), and the path it is
    /// served below (`""`: the whole site, and the root's files are not
    /// served).
    pub proxy: Option<(String, Arc<dyn Upstream>)>,
}

impl ServeConfig {
    /// Serve `root` on `127.0.0.1`, a free port, no assets, quiet,
    /// [`MAX_CONNECTIONS`] connections, [`HEAD_TIMEOUT`], [`IDLE_TIMEOUT`],
    /// a thread per core, stores up to 6 levels down.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ServeConfig {
            root: root.into(),
            host: "127.0.0.1".to_owned(),
            port: 0,
            assets: None,
            verbose: false,
            max_connections: MAX_CONNECTIONS,
            head_timeout: HEAD_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            threads: 0,
            store_depth: 6,
            proxy: None,
        }
    }
}

impl fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServeConfig")
            .field("root", &self.root)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("assets", &self.assets.as_ref().map(|_| "<fn>"))
            .field("verbose", &self.verbose)
            .field("max_connections", &self.max_connections)
            .field("head_timeout", &self.head_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("threads", &self.threads)
            .field("store_depth", &self.store_depth)
            .field("proxy", &self.proxy.as_ref().map(|(mount, up)| (mount, up.name())))
            .finish()
    }
}

/// What every connection shares.
pub(crate) struct Shared {
    site: Arc<Site>,
    verbose: bool,
    head_timeout: Duration,
    idle_timeout: Duration,
    counts: Arc<Counts>,
}

/// Connection counters, read through [`ServerHandle::stats`].
#[derive(Debug, Default)]
struct Counts {
    accepted: AtomicU64,
    refused: AtomicU64,
}

/// What a server has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Connections answered `503` because [`ServeConfig::max_connections`]
    /// were open.
    pub refused_busy: u64,
}

/// Bind the socket and start serving on a runtime of the server's own.
///
/// Returns once the socket is listening, so [`ServerHandle::url`] can be
/// requested at once. Raises the process's soft open-file limit (where there
/// is one) to fit [`ServeConfig::max_connections`] if the hard limit allows.
///
/// # Errors
///
/// [`Error::NotFound`] if `root` is not a directory, [`Error::Io`] if it
/// cannot be resolved, the host does not resolve, the address cannot be bound
/// (the `path` of the error then holds `host:port`), or the runtime cannot
/// start.
pub fn start(cfg: ServeConfig) -> Result<ServerHandle> {
    let root = cfg.root.canonicalize().map_err(|e| Error::io(&cfg.root, "open serve root", e))?;
    if !root.is_dir() {
        return Err(Error::NotFound {
            store: cfg.root.display().to_string(),
            what: "serve root is not a directory".to_owned(),
        });
    }
    let hostport = format!("{}:{}", cfg.host, cfg.port);
    let addrs: Vec<SocketAddr> = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| Error::io(&hostport, "resolve host", e))?
        .collect();
    let max_connections = cfg.max_connections.max(1);
    os::raise_open_files(max_connections as u64 + 256);
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if cfg.threads > 0 {
        rt.worker_threads(cfg.threads);
    }
    let rt = rt
        .thread_name("zrecord-serve")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::io(&hostport, "start the server runtime", e))?;
    let listener = {
        let _in_runtime = rt.enter();
        bind(&addrs).map_err(|e| Error::io(&hostport, "bind", e))?
    };
    let addr = listener.local_addr().map_err(|e| Error::io(&hostport, "bind", e))?;
    let (stop, stopped) = watch::channel(false);
    let counts = Arc::new(Counts::default());
    let shared = Arc::new(Shared {
        site: Arc::new(Site {
            root,
            assets: cfg.assets,
            store_depth: cfg.store_depth,
            files: OpenFiles::default(),
            proxy: cfg.proxy.map(|(mount, upstream)| proxy::Proxy::new(&mount, upstream)),
        }),
        verbose: cfg.verbose,
        head_timeout: cfg.head_timeout,
        idle_timeout: cfg.idle_timeout,
        counts: Arc::clone(&counts),
    });
    let task = rt.spawn(accept_loop(listener, shared, max_connections, stopped));
    Ok(ServerHandle {
        addr,
        stopper: Stopper { stop: Arc::new(stop) },
        counts,
        runtime: Some(rt),
        task: Some(task),
    })
}

/// Listen on the first of `addrs` that binds.
fn bind(addrs: &[SocketAddr]) -> std::io::Result<TcpListener> {
    let mut last = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the host resolved to no address");
    for &addr in addrs {
        let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() };
        let bound = socket.and_then(|s| {
            os::reuse_address(&s)?;
            s.bind(addr)?;
            s.listen(BACKLOG)
        });
        match bound {
            Ok(l) => return Ok(l),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A running server. Dropping it stops the server (as [`shutdown`](Self::shutdown)).
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stopper: Stopper,
    counts: Arc<Counts>,
    runtime: Option<Runtime>,
    task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the socket is bound to (with the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port/` for a browser: an unspecified bind address
    /// (`0.0.0.0`, `::`) is shown as the loopback address.
    pub fn url(&self) -> String {
        let port = self.addr.port();
        match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => format!("http://{}:{port}/", Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => format!("http://[{}]:{port}/", Ipv6Addr::LOCALHOST),
            IpAddr::V4(ip) => format!("http://{ip}:{port}/"),
            IpAddr::V6(ip) => format!("http://[{ip}]:{port}/"),
        }
    }

    /// Connections accepted and refused so far.
    pub fn stats(&self) -> ServeStats {
        ServeStats {
            accepted: self.counts.accepted.load(Ordering::Relaxed),
            refused_busy: self.counts.refused.load(Ordering::Relaxed),
        }
    }

    /// A handle that can stop the server from another thread (a signal
    /// handler, a test) while this one is in [`wait`](Self::wait).
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Block until the server stops (through a [`Stopper`]), then end its
    /// runtime.
    pub fn wait(mut self) {
        self.join();
    }

    /// Stop accepting, close every connection and end the runtime.
    /// Responses being written are cut off.
    pub fn shutdown(mut self) {
        self.stopper.stop();
        self.join();
    }

    fn join(&mut self) {
        if let (Some(rt), Some(task)) = (self.runtime.take(), self.task.take()) {
            let _ = rt.block_on(task);
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stopper.stop();
        self.join();
    }
}

/// Stops a server from any thread; cheap to clone.
#[derive(Debug, Clone)]
pub struct Stopper {
    stop: Arc<watch::Sender<bool>>,
}

impl Stopper {
    /// Ask the server to stop; returns at once. [`ServerHandle::wait`] then
    /// returns once every connection is closed.
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    max_connections: usize,
    mut stopped: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(max_connections));
    let mut conns = JoinSet::new();
    let mut sweep = tokio::time::interval(files::SWEEP_EVERY);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        while conns.try_join_next().is_some() {}
        let accepted = tokio::select! {
            biased;
            _ = stopped.wait_for(|s| *s) => break,
            _ = sweep.tick() => {
                shared.site.files.sweep();
                continue;
            }
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                if shared.verbose {
                    eprintln!("zrecord serve: accept: {e}");
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => {
                shared.counts.accepted.fetch_add(1, Ordering::Relaxed);
                let sh = Arc::clone(&shared);
                conns.spawn(async move {
                    conn::serve(stream, peer, sh).await;
                    drop(permit);
                });
            }
            Err(_) => {
                shared.counts.refused.fetch_add(1, Ordering::Relaxed);
                conns.spawn(conn::refuse_busy(stream));
            }
        }
    }
    drop(listener);
    // Aborting a connection's task drops its socket: idle keep-alive
    // connections close at once, answers in flight are cut off.
    conns.shutdown().await;
}
