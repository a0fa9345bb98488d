//! The native transport and a blocking facade for the CLI.
//!
//! ureq (blocking, rustls, no async runtime: a few crates that build in well
//! under a minute on two cores, where reqwest would bring tokio and hyper)
//! sends each request on a small pool of worker threads; the driver awaits
//! them as futures, so the bounded concurrency of the async driver is real
//! concurrency here too. Connections are kept alive and shared by the pool.

use super::exec::block_on;
use super::http::{HttpError, HttpGet, HttpRanges, HttpRequest, HttpResponse};
use super::store::{RemoteOptions, RemoteSizes, RemoteStats, RemoteStore};
use super::transport::LocalBoxFuture;
use crate::batch::{DenseBatch, RaggedBatch};
use crate::format::{FileSizes, RecordLoc, StoreInfo};
use crate::records::Records;
use crate::Result;
use std::future::Future;
use std::io::Read;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

/// Settings of the native HTTP client.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Extra headers sent with every request (`Authorization`, ...).
    pub headers: Vec<(String, String)>,
    /// Whole-request time limit (default 30 s); a timeout is retried.
    pub timeout: Duration,
    /// Connect time limit (default 10 s).
    pub connect_timeout: Duration,
    /// Worker threads, i.e. requests that can be in flight (default 8).
    pub threads: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            headers: Vec::new(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            threads: 8,
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// An HTTP(S) [`HttpGet`] on ureq and a few worker threads.
pub struct HttpClient {
    agent: ureq::Agent,
    headers: Arc<Vec<(String, String)>>,
    jobs: Mutex<mpsc::Sender<Job>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpClient")
    }
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::new(HttpOptions::default())
    }
}

impl HttpClient {
    /// A client with its worker threads (they end when the client is dropped).
    pub fn new(options: HttpOptions) -> Self {
        let threads = options.threads.max(1);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(options.timeout))
            .timeout_connect(Some(options.connect_timeout))
            .max_idle_connections_per_host(threads)
            .user_agent(concat!("zrecord/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for k in 0..threads {
            let rx = rx.clone();
            thread::Builder::new()
                .name(format!("zrecord-http-{k}"))
                .spawn(move || loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => break,
                    }
                })
                .expect("spawning an HTTP worker thread");
        }
        HttpClient { agent, headers: Arc::new(options.headers), jobs: Mutex::new(tx) }
    }

    fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> Oneshot<T> {
        let slot = Arc::new(Mutex::new(Slot { value: None, waker: None, done: false }));
        let sender = Sender(slot.clone());
        let job: Job = Box::new(move || sender.send(job()));
        // If the workers are gone the job is dropped, and so is its sender:
        // the receiver then sees the slot closed.
        let _ = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).send(job);
        Oneshot(slot)
    }
}

fn send(
    agent: &ureq::Agent,
    headers: &[(String, String)],
    req: &HttpRequest,
) -> Result<HttpResponse, HttpError> {
    let mut r = agent.get(&req.url).header("Range", req.range_header());
    for (k, v) in headers {
        r = r.header(k.as_str(), v.as_str());
    }
    if let Some(tag) = &req.if_match {
        r = r.header("If-Match", tag.as_str());
    }
    let resp = r.call().map_err(|e| match e {
        ureq::Error::BadUri(u) => HttpError::Fatal(format!("bad URL: {u}")),
        e => HttpError::Network(e.to_string()),
    })?;
    let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut out = HttpResponse {
        status: resp.status().as_u16(),
        content_range: header("content-range"),
        content_encoding: header("content-encoding"),
        etag: header("etag"),
        body: Vec::new(),
    };
    if out.status == 206 || out.status == 200 {
        let limit = req.body_limit();
        let expect = header("content-length").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0).min(limit);
        out.body.reserve(expect as usize);
        resp.into_body()
            .into_reader()
            .take(limit)
            .read_to_end(&mut out.body)
            .map_err(|e| HttpError::Network(format!("reading the body: {e}")))?;
    }
    Ok(out)
}

impl HttpGet for HttpClient {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
        let agent = self.agent.clone();
        let headers = self.headers.clone();
        let done = self.run(move || send(&agent, &headers, &req));
        Box::pin(async move {
            done.await.unwrap_or_else(|| Err(HttpError::Fatal("the HTTP worker thread stopped".into())))
        })
    }

    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        let slot = Arc::new(Mutex::new(Slot { value: None, waker: None, done: false }));
        let sender = Sender(slot.clone());
        thread::spawn(move || {
            thread::sleep(duration);
            sender.send(());
        });
        Box::pin(async move {
            Oneshot(slot).await;
        })
    }
}

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    done: bool,
}

/// The sending half of a one-value channel; dropping it unsent closes it.
struct Sender<T>(Arc<Mutex<Slot<T>>>);

impl<T> Sender<T> {
    fn send(self, value: T) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).value = Some(value);
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        slot.done = true;
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }
}

/// Resolves to the sent value, or `None` if the sender was dropped unsent.
struct Oneshot<T>(Arc<Mutex<Slot<T>>>);

impl<T> Future for Oneshot<T> {
    type Output = Option<T>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.done {
            return Poll::Ready(slot.value.take());
        }
        slot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl RemoteStore<HttpRanges<HttpClient>> {
    /// Open the store at `url` with the native HTTP client and default
    /// options, behind the blocking [`Records`] API.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub fn open_blocking(url: &str) -> Result<BlockingStore> {
        Self::open_blocking_with(url, RemoteOptions::default(), HttpOptions::default())
    }

    /// As [`RemoteStore::open_blocking`], with options.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub fn open_blocking_with(url: &str, options: RemoteOptions, http: HttpOptions) -> Result<BlockingStore> {
        let inner = block_on(RemoteStore::open_http(HttpClient::new(http), url, options))?;
        Ok(BlockingStore { inner })
    }
}

/// A remote store behind the blocking [`Records`] API (each call runs the
/// async reader to completion on the calling thread; its requests run on the
/// HTTP client's worker threads).
#[derive(Debug)]
pub struct BlockingStore {
    inner: RemoteStore<HttpRanges<HttpClient>>,
}

impl BlockingStore {
    /// The async reader underneath.
    pub fn as_async(&self) -> &RemoteStore<HttpRanges<HttpClient>> {
        &self.inner
    }
    /// The store's directory URL (ending in `/`).
    pub fn url(&self) -> &str {
        self.inner.url()
    }
    /// See [`RemoteStore::static_page`].
    pub fn static_page(&self) -> &[u8] {
        self.inner.static_page()
    }
    /// See [`RemoteStore::stats`].
    pub fn stats(&self) -> RemoteStats {
        self.inner.stats()
    }
    /// See [`RemoteStore::file_sizes`].
    pub fn file_sizes(&self) -> RemoteSizes {
        self.inner.file_sizes()
    }
    /// See [`RemoteStore::locs`].
    ///
    /// # Errors
    /// As [`RemoteStore::locs`].
    pub fn locs(&self, start: u64, count: u64) -> Result<Vec<RecordLoc>> {
        block_on(self.inner.locs(start, count))
    }
    /// See [`RemoteStore::read_stored`].
    ///
    /// # Errors
    /// As [`RemoteStore::read_stored`].
    pub fn read_stored(&self, ranges: &[std::ops::Range<u64>]) -> Result<Vec<u8>> {
        block_on(self.inner.read_stored(ranges))
    }
    /// See [`RemoteStore::read_sidecar`].
    ///
    /// # Errors
    /// As [`RemoteStore::read_sidecar`].
    pub fn read_sidecar(&self) -> Result<Option<Vec<u8>>> {
        block_on(self.inner.read_sidecar())
    }
    /// See [`RemoteStore::data_size`].
    ///
    /// # Errors
    /// As [`RemoteStore::data_size`].
    pub fn data_size(&self) -> Result<u64> {
        block_on(self.inner.data_size())
    }
}

impl Records for BlockingStore {
    fn info(&self) -> &StoreInfo {
        self.inner.info()
    }
    fn dict_bytes(&self) -> Option<&[u8]> {
        self.inner.dict_bytes()
    }
    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        block_on(self.inner.raw_locs(indices))
    }
    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        block_on(self.inner.gather_into(indices, out))
    }
    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        block_on(self.inner.gather_dense_batch(indices, batch))
    }
    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        block_on(self.inner.gather_ragged_into(indices, batch))
    }
    fn sizes(&self) -> Result<FileSizes> {
        Ok(FileSizes { data: self.data_size()?, ..self.info().sizes })
    }
}
