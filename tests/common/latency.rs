//! A static file server on 127.0.0.1 that answers every request after a
//! fixed delay — an object store's first-byte latency — with unlimited
//! concurrency (one task per connection, keep-alive) and single-range 206
//! answers. It counts requests and the most it ever had in flight, so tests
//! can check how many requests a reader really keeps going.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct Counts {
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    requests: AtomicU64,
}

struct Shared {
    root: PathBuf,
    delay: Duration,
    /// Answer this many requests first with S3's `503 SlowDown`.
    slow_down: AtomicU64,
    files: Mutex<HashMap<PathBuf, Arc<Vec<u8>>>>,
    counts: Counts,
    /// Every request: its path and `Range` header.
    log: Mutex<Vec<(String, Option<String>)>>,
}

/// A running server; stopped when dropped.
pub struct LatencyServer {
    pub port: u16,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl LatencyServer {
    /// Serve `root` after `delay` per request, on a free loopback port.
    pub fn start(root: &Path, delay: Duration) -> LatencyServer {
        Self::start_with(root, delay, 0)
    }

    /// As [`LatencyServer::start`], answering the first `slow_down`
    /// requests with S3's `503 SlowDown` (as a throttled bucket does).
    pub fn start_with(root: &Path, delay: Duration, slow_down: u64) -> LatencyServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("latency-server")
            .enable_all()
            .build()
            .unwrap();
        let shared = Arc::new(Shared {
            root: root.canonicalize().unwrap(),
            delay,
            slow_down: AtomicU64::new(slow_down),
            files: Mutex::default(),
            counts: Counts::default(),
            log: Mutex::default(),
        });
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let port = listener.local_addr().unwrap().port();
        let s = shared.clone();
        runtime.spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let _ = conn.set_nodelay(true);
                tokio::spawn(serve_connection(conn, s.clone()));
            }
        });
        LatencyServer { port, shared, runtime: Some(runtime) }
    }

    /// `http://127.0.0.1:PORT/{path}`
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Requests answered or under way so far.
    pub fn requests(&self) -> u64 {
        self.shared.counts.requests.load(Ordering::Relaxed)
    }

    /// The most requests ever waiting at once.
    pub fn peak_in_flight(&self) -> usize {
        self.shared.counts.peak.load(Ordering::Relaxed)
    }

    /// Every request so far: its path and `Range` header.
    pub fn log(&self) -> Vec<(String, Option<String>)> {
        self.shared.log.lock().unwrap().clone()
    }

    /// Forget the files read so far, so replaced files are read again.
    pub fn forget_files(&self) {
        self.shared.files.lock().unwrap().clear();
    }

    /// Forget the peak (e.g. after a warm-up).
    pub fn reset_peak(&self) {
        self.shared.counts.peak.store(0, Ordering::Relaxed);
    }
}

impl Drop for LatencyServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn file(shared: &Shared, path: &str) -> Option<Arc<Vec<u8>>> {
    let rel = path.split('?').next()?.trim_start_matches('/');
    if rel.split('/').any(|part| part == "..") {
        return None;
    }
    let full = shared.root.join(rel);
    let mut files = shared.files.lock().unwrap();
    if let Some(f) = files.get(&full) {
        return Some(f.clone());
    }
    let bytes = Arc::new(std::fs::read(&full).ok().filter(|_| full.is_file())?);
    files.insert(full, bytes.clone());
    Some(bytes)
}

/// `bytes=a-b` (or `a-`) into `(a, b)` inclusive, clamped to `len`; `Err` if unsatisfiable.
fn range_of(value: &str, len: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = value.trim().strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let a: u64 = a.trim().parse().ok()?;
    let b: u64 = if b.trim().is_empty() { u64::MAX } else { b.trim().parse().ok()? };
    if a >= len || b < a {
        return Some(Err(()));
    }
    Some(Ok((a, b.min(len - 1))))
}

async fn serve_connection(mut conn: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        // Read one request head.
        let end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default();
        let mut parts = request_line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or("/"));
        let range = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("range"))
            .map(|(_, v)| v.trim().to_string());

        let c = &shared.counts;
        c.requests.fetch_add(1, Ordering::Relaxed);
        shared.log.lock().unwrap().push((path.to_string(), range.clone()));
        let now = c.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        c.peak.fetch_max(now, Ordering::Relaxed);
        tokio::time::sleep(shared.delay).await;
        c.in_flight.fetch_sub(1, Ordering::Relaxed);

        let (status, mut headers, body): (&str, Vec<String>, &[u8]);
        let throttled =
            shared.slow_down.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
        let found =
            if (method == "GET" || method == "HEAD") && !throttled { file(&shared, path) } else { None };
        let etag;
        match &found {
            None if throttled => {
                status = "503 Slow Down";
                headers = vec!["Content-Type: application/xml".into()];
                body = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
                etag = String::new();
            }
            None => {
                status = "404 Not Found";
                headers = Vec::new();
                body = b"";
                etag = String::new();
            }
            Some(bytes) => {
                let len = bytes.len() as u64;
                etag = format!("\"{len:x}-zr\"");
                match range.as_deref().map(|r| range_of(r, len)) {
                    None | Some(None) => {
                        status = "200 OK";
                        headers = Vec::new();
                        body = bytes;
                    }
                    Some(Some(Ok((a, b)))) => {
                        status = "206 Partial Content";
                        headers = vec![format!("Content-Range: bytes {a}-{b}/{len}")];
                        body = &bytes[a as usize..=b as usize];
                    }
                    Some(Some(Err(()))) => {
                        status = "416 Range Not Satisfiable";
                        headers = vec![format!("Content-Range: bytes */{len}")];
                        body = b"";
                    }
                }
            }
        }
        if !etag.is_empty() {
            headers.push(format!("ETag: {etag}"));
        }
        let mut out =
            format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n", body.len());
        for h in &headers {
            out.push_str(h);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        let mut reply = out.into_bytes();
        if method != "HEAD" {
            reply.extend_from_slice(body);
        }
        if conn.write_all(&reply).await.is_err() {
            return;
        }
    }
}
