//! One connection: hyper's HTTP/1.1 state machine over the socket, watched by
//! a timer that closes it when a request head is slow to arrive or the
//! connection sits idle.
//!
//! hyper's own `header_read_timeout` starts when a connection goes idle, so it
//! would make the keep-alive idle time and the head deadline one number. We
//! want a short head deadline (a client that starts a request must finish its
//! head within seconds) and a long keep-alive (a reader pausing between
//! batches keeps its connection), so the socket is wrapped to see traffic:
//!
//! - from accept until a request head is complete, and from the first byte
//!   after an idle pause, the head deadline runs;
//! - otherwise the connection closes after the idle timeout with no byte
//!   read or written (which also bounds a client that stops reading a body).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::TcpStream;

use super::handler::{self, COMMON_HEADERS};
use super::Shared;

/// Waiting for (or reading) a request head.
const HEAD: u8 = 0;
/// A request is being answered.
const BUSY: u8 = 1;
/// Between requests.
const IDLE: u8 = 2;

/// hyper's read buffer limit: above [`handler::MAX_HEAD_BYTES`], so an
/// oversized head reaches the handler and gets a `431` with CORS headers.
const MAX_BUF: usize = 64 * 1024;

/// What the watchdog needs to know about a connection's traffic.
struct Activity {
    born: Instant,
    /// Milliseconds since `born` of the last byte read or written.
    last: AtomicU64,
    /// When the current head started (ms since `born`), for phase [`HEAD`].
    head_since: AtomicU64,
    phase: AtomicU8,
}

impl Activity {
    fn new() -> Self {
        Activity {
            born: Instant::now(),
            last: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
            phase: AtomicU8::new(HEAD),
        }
    }

    fn now(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    fn read(&self) {
        let t = self.now();
        self.last.store(t, Ordering::Relaxed);
        if self.phase.compare_exchange(IDLE, HEAD, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            self.head_since.store(t, Ordering::Relaxed);
        }
    }

    fn wrote(&self) {
        self.last.store(self.now(), Ordering::Relaxed);
    }

    /// No clock read here: the request's last read has just stamped `last`,
    /// and the answer's writes stamp it again.
    fn set_phase(&self, phase: u8) {
        self.phase.store(phase, Ordering::Relaxed);
    }

    /// When the connection should be closed if nothing happens meanwhile.
    fn deadline(&self, head_timeout: Duration, idle_timeout: Duration) -> Instant {
        let (since, limit) = match self.phase.load(Ordering::Relaxed) {
            HEAD => (self.head_since.load(Ordering::Relaxed), head_timeout),
            _ => (self.last.load(Ordering::Relaxed), idle_timeout),
        };
        self.born + Duration::from_millis(since) + limit
    }
}

/// The socket, reporting its traffic to [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
    /// The client closed its side: a `shutdown` call would only cost a
    /// syscall before the socket is closed anyway.
    eof: bool,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let (before, room) = (buf.filled().len(), buf.remaining());
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) {
            if buf.filled().len() > before {
                self.activity.read();
            } else if room > 0 {
                self.eof = true;
            }
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.eof {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serve one accepted connection until the client closes it, it times out,
/// or it breaks.
pub(crate) async fn serve(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched { inner: stream, activity: Arc::clone(&activity), eof: false });
    let (head_timeout, idle_timeout, verbose) = (shared.head_timeout, shared.idle_timeout, shared.verbose);
    let act = Arc::clone(&activity);
    let service = service_fn(move |req: Request<Incoming>| {
        let (site, act) = (Arc::clone(&shared.site), Arc::clone(&act));
        async move {
            act.set_phase(BUSY);
            let started = verbose.then(Instant::now);
            // The body, if any, is dropped unread (see `handler::respond`).
            let (parts, _body) = req.into_parts();
            let resp = handler::respond(site, &parts).await;
            if let Some(started) = started {
                eprintln!(
                    "zrecord serve: {peer} \"{} {}\" {} {:.1}ms",
                    parts.method,
                    parts.uri,
                    resp.status().as_u16(),
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
            act.set_phase(IDLE);
            Ok::<_, Infallible>(resp)
        }
    });
    let conn =
        http1::Builder::new().max_buf_size(MAX_BUF).header_read_timeout(None).serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let sleep = tokio::time::sleep(head_timeout);
    let mut sleep = std::pin::pin!(sleep);
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let (true, Err(e)) = (verbose, done) {
                    eprintln!("zrecord serve: {peer} connection: {e}");
                }
                return;
            }
            () = &mut sleep => {
                let deadline = activity.deadline(head_timeout, idle_timeout);
                if deadline <= Instant::now() {
                    if verbose {
                        eprintln!("zrecord serve: {peer} closed: timed out");
                    }
                    // Dropping the connection closes the socket.
                    return;
                }
                sleep.as_mut().reset(deadline.into());
            }
        }
    }
}

/// Answer `503` and close: the server holds as many connections as it was
/// told to.
pub(crate) async fn refuse_busy(mut stream: TcpStream) {
    let body = "503 Service Unavailable\n";
    let mut head = b"HTTP/1.1 503 Service Unavailable\r\n".to_vec();
    for (name, value) in COMMON_HEADERS {
        for part in [name.as_str().as_bytes(), b": ", value.as_bytes(), b"\r\n"] {
            head.extend_from_slice(part);
        }
    }
    head.extend_from_slice(
        format!(
            "content-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let answer = async {
        stream.write_all(&head).await?;
        stream.shutdown().await?;
        // Drain what the client sent, so closing does not reset the answer.
        let mut scratch = [0u8; 4096];
        while stream.read(&mut scratch).await? > 0 {}
        io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answer).await;
}
