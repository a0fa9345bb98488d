//! The static file server behind `zrecord serve DIR`.
//!
//! Serves a directory of stores over HTTP/1.1 so the remote reader and the
//! web viewer can read them exactly as they would from S3 or nginx: single
//! byte ranges, strong ETags, CORS on every response, no compression.
//!
//! # What is served, in order of precedence
//!
//! 1. `OPTIONS` on any path: the CORS preflight answer, `204`.
//! 2. `GET /api/stores`: a JSON list of the store directories under the root
//!    (a directory holding `meta.zr`), found to [`ServeConfig::store_depth`]:
//!    `[{"path": "a/b", "url": "/a/b/", "files": {"meta.zr": 120, "data.zr": 4096}}]`.
//!    A file named `api/stores` under the root is shadowed.
//! 3. A regular file under the root, at the same path as in the directory
//!    (`/a/b/data.zr` is `DIR/a/b/data.zr`).
//! 4. The [`ServeConfig::assets`] callback, asked for the decoded path without
//!    its leading `/`; a path ending in `/` (the root included) asks for
//!    `…/index.html`. So the viewer is at `/` even when the root holds an
//!    `index.html` file, which stays reachable as `/index.html`.
//! 5. `404`.
//!
//! Directories are never listed and only regular files are served.
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
//! - Keep-alive per HTTP/1.1 (and HTTP/1.0 with `Connection: keep-alive`);
//!   idle connections close after [`IDLE_TIMEOUT`]. Request heads are limited
//!   to 16 KiB and 100 fields (`431`); requests with a body are answered and
//!   the connection closed.
//! - One thread per connection, at most [`ServeConfig::max_connections`] at a
//!   time; past that a new connection gets `503` and is closed.
//!
//! # Security
//!
//! Paths are checked after percent-decoding: `..`, `.`, empty segments,
//! encoded `/` or `\`, backslashes and NUL are refused with `403`. The file
//! path is then canonicalized and must lie under the canonical root, so a
//! symlink inside the root pointing outside it is refused too (`403`). The
//! check and the `open` are not atomic: someone who can rename directories
//! inside the root while it is served could race it. This is a development
//! server; serve trusted directories.

mod date;
mod handler;
mod http;
mod path;
mod range;
mod stores;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufReader, Read as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::{Error, Result};
use handler::Site;
use http::{read_request, write_response, Framing, ReadError, Response};
pub use stores::{list_stores, ListedStore};

/// The embedded-asset lookup: a path such as `index.html` or
/// `pkg/zrecord_bg.wasm` (decoded, no leading `/`) to its bytes and
/// `Content-Type`, or `None` if there is no such asset.
pub type Assets = Box<dyn Fn(&str) -> Option<(Cow<'static, [u8]>, &'static str)> + Send + Sync>;

/// How long a keep-alive connection may sit idle (or a client may take to send
/// a request head) before it is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one write may block on a client that stopped reading.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// Files served when a path names no file under the root (the viewer).
    pub assets: Option<Assets>,
    /// Log one line per request to stderr.
    pub verbose: bool,
    /// Most connections served at once.
    pub max_connections: usize,
    /// How many directory levels below the root `/api/stores` looks.
    pub store_depth: usize,
}

impl ServeConfig {
    /// Serve `root` on `127.0.0.1`, a free port, no assets, quiet, 64
    /// connections, stores up to 6 levels down.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ServeConfig {
            root: root.into(),
            host: "127.0.0.1".to_owned(),
            port: 0,
            assets: None,
            verbose: false,
            max_connections: 64,
            store_depth: 6,
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
            .field("store_depth", &self.store_depth)
            .finish()
    }
}

/// Bind the socket and start serving in background threads.
///
/// Returns once the socket is listening, so [`ServerHandle::url`] can be
/// requested at once.
///
/// # Errors
///
/// [`Error::NotFound`] if `root` is not a directory, [`Error::Io`] if it
/// cannot be resolved, the host does not resolve, the address cannot be bound
/// (the `path` of the error then holds `host:port`), or a thread cannot start.
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
    let listener = TcpListener::bind(&addrs[..]).map_err(|e| Error::io(&hostport, "bind", e))?;
    let addr = listener.local_addr().map_err(|e| Error::io(&hostport, "bind", e))?;
    let stopper = Stopper { stop: Arc::new(AtomicBool::new(false)), wake: wake_addr(addr) };
    let shared = Arc::new(Shared {
        site: Site { root, assets: cfg.assets, store_depth: cfg.store_depth },
        verbose: cfg.verbose,
        max_connections: cfg.max_connections.max(1),
        stop: Arc::clone(&stopper.stop),
        live: Mutex::new(HashMap::new()),
    });
    let accept = thread::Builder::new()
        .name("zrecord-serve".to_owned())
        .spawn(move || accept_loop(&listener, &shared))
        .map_err(|e| Error::io(&hostport, "spawn server thread", e))?;
    Ok(ServerHandle { addr, stopper, accept: Some(accept) })
}

/// A running server. Dropping it stops the server (as [`shutdown`](Self::shutdown)).
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stopper: Stopper,
    accept: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the socket is bound to (with the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port/` for a browser: an unspecified bind address
    /// (`0.0.0.0`, `::`) is shown as the loopback address.
    pub fn url(&self) -> String {
        match self.stopper.wake {
            SocketAddr::V4(a) => format!("http://{a}/"),
            SocketAddr::V6(a) => format!("http://[{}]:{}/", a.ip(), a.port()),
        }
    }

    /// A handle that can stop the server from another thread (a signal
    /// handler, a test) while this one is in [`wait`](Self::wait).
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Block until the server stops (through a [`Stopper`]), then join its
    /// threads.
    pub fn wait(mut self) {
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }

    /// Stop accepting, close every connection and join all threads.
    /// Responses being written are cut off.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(t) = self.accept.take() {
            self.stopper.stop();
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Stops a server from any thread; cheap to clone.
#[derive(Debug, Clone)]
pub struct Stopper {
    stop: Arc<AtomicBool>,
    /// A connectable address of the listener, to wake a blocked `accept`.
    wake: SocketAddr,
}

impl Stopper {
    /// Ask the server to stop; returns at once. [`ServerHandle::wait`] then
    /// returns once every thread has finished.
    pub fn stop(&self) {
        if !self.stop.swap(true, Ordering::SeqCst) {
            // `accept` has no timeout: a connection of our own wakes it.
            let _ = TcpStream::connect_timeout(&self.wake, Duration::from_secs(1));
        }
    }
}

fn wake_addr(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, addr.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, addr.port()).into(),
        _ => addr,
    }
}

struct Shared {
    site: Site,
    verbose: bool,
    max_connections: usize,
    stop: Arc<AtomicBool>,
    /// Live connections by id: a clone of each socket, so shutdown can close
    /// them and wake threads blocked reading an idle keep-alive connection.
    live: Mutex<HashMap<u64, TcpStream>>,
}

impl Shared {
    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<u64, TcpStream>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    loop {
        let accepted = listener.accept();
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                if shared.verbose {
                    eprintln!("zrecord serve: accept: {e}");
                }
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        workers.retain(|w| !w.is_finished());
        let id = next_id;
        next_id += 1;
        {
            let mut live = shared.live();
            if live.len() >= shared.max_connections {
                drop(live);
                refuse_busy(stream);
                continue;
            }
            match stream.try_clone() {
                Ok(clone) => live.insert(id, clone),
                Err(_) => continue,
            };
        }
        let sh = Arc::clone(shared);
        let spawned = thread::Builder::new().name("zrecord-serve-conn".to_owned()).spawn(move || {
            serve_connection(stream, peer, &sh);
            sh.live().remove(&id);
        });
        match spawned {
            Ok(w) => workers.push(w),
            Err(_) => {
                shared.live().remove(&id);
            }
        }
    }
    for (_, s) in shared.live().drain() {
        let _ = s.shutdown(Shutdown::Both);
    }
    for w in workers {
        let _ = w.join();
    }
}

fn refuse_busy(mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let resp = Response::text(503).header("Retry-After", "1");
    let _ = write_response(&mut stream, resp, Framing { send_body: true, keep_alive: false, http10: false });
}

fn serve_connection(stream: TcpStream, peer: SocketAddr, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::with_capacity(8 * 1024, read_half);
    let mut writer = stream;
    loop {
        let req = match read_request(&mut reader) {
            Ok(Some(req)) => req,
            Ok(None) | Err(ReadError::Io(_)) => return,
            Err(e) => {
                let status = match e {
                    ReadError::TooLarge => 431,
                    ReadError::Version => 505,
                    _ => 400,
                };
                let f = Framing { send_body: true, keep_alive: false, http10: false };
                let _ = write_response(&mut writer, Response::text(status), f);
                if shared.verbose {
                    eprintln!("zrecord serve: {peer} <bad request> {status}");
                }
                lingering_close(&writer, &mut reader);
                return;
            }
        };
        let started = Instant::now();
        let keep_alive = req.keep_alive() && !req.has_body() && !shared.stop.load(Ordering::SeqCst);
        let f = Framing { send_body: req.method != "HEAD", keep_alive, http10: req.http10 };
        let resp = handler::respond(&shared.site, &req);
        let status = resp.status;
        let sent = write_response(&mut writer, resp, f);
        if shared.verbose {
            let outcome = match &sent {
                Ok(n) => format!("{n}"),
                Err(e) => format!("error: {e}"),
            };
            eprintln!(
                "zrecord serve: {peer} \"{} {}\" {status} {outcome} {:.1}ms",
                req.method,
                req.target,
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        if sent.is_err() || !keep_alive {
            lingering_close(&writer, &mut reader);
            return;
        }
    }
}

/// Close after an answer while the client may still be sending (an oversized
/// head, a body we never read, pipelined requests): closing a socket with
/// unread input makes the kernel send RST, which can destroy the answer
/// before the client reads it. So half-close, then drain for a moment.
fn lingering_close(stream: &TcpStream, reader: &mut BufReader<TcpStream>) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut scratch = [0u8; 8192];
    let mut drained = 0usize;
    while drained < 1 << 20 && Instant::now() < deadline {
        match reader.read(&mut scratch) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}
