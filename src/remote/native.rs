//! The native transport and a blocking facade for the CLI.
//!
//! ureq (blocking, rustls, no async runtime: a few crates that build in well
//! under a minute on two cores, where reqwest would bring tokio and hyper)
//! sends each request on a small pool of worker threads; the driver awaits
//! them as futures, so the bounded concurrency of the async driver is real
//! concurrency here too. Connections are kept alive and shared by the pool.

use super::client::{LocalBoxFuture, RangeClient, RangeRequest, RangeResponse, TransportError};
use super::exec::block_on;
use super::store::{RemoteOptions, RemoteSizes, RemoteStats, RemoteStore};
use crate::batch::{Batch, DenseBatch, RaggedBatch};
use crate::format::decode::AlignedBytes;
use crate::format::{RecordLoc, StoreInfo};
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

/// An HTTP(S) [`RangeClient`] on ureq and a few worker threads.
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
    req: &RangeRequest,
) -> Result<RangeResponse, TransportError> {
    let mut r = agent.get(&req.url).header("Range", req.range_header());
    for (k, v) in headers {
        r = r.header(k.as_str(), v.as_str());
    }
    if let Some(tag) = &req.if_match {
        r = r.header("If-Match", tag.as_str());
    }
    let resp = r.call().map_err(|e| match e {
        ureq::Error::BadUri(u) => TransportError::Fatal(format!("bad URL: {u}")),
        e => TransportError::Network(e.to_string()),
    })?;
    let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut out = RangeResponse {
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
            .map_err(|e| TransportError::Network(format!("reading the body: {e}")))?;
    }
    Ok(out)
}

impl RangeClient for HttpClient {
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
        let agent = self.agent.clone();
        let headers = self.headers.clone();
        let done = self.run(move || send(&agent, &headers, &req));
        Box::pin(async move {
            done.await.unwrap_or_else(|| Err(TransportError::Fatal("the HTTP worker thread stopped".into())))
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

impl RemoteStore<HttpClient> {
    /// Open a store over HTTP(S) with default options, behind a blocking API
    /// shaped like the local `Store`'s.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub fn open_blocking(url: &str) -> Result<BlockingStore> {
        Self::open_blocking_with(url, RemoteOptions::default(), HttpOptions::default())
    }

    /// Open a store over HTTP(S), blocking.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub fn open_blocking_with(url: &str, options: RemoteOptions, http: HttpOptions) -> Result<BlockingStore> {
        let inner = block_on(RemoteStore::open(HttpClient::new(http), url, options))?;
        Ok(BlockingStore { inner })
    }
}

/// A remote store read with blocking calls (each runs the async driver to
/// completion on the calling thread). Mirrors the local `Store`'s API.
#[derive(Debug)]
pub struct BlockingStore {
    inner: RemoteStore<HttpClient>,
}

impl BlockingStore {
    /// The async store underneath.
    pub fn as_async(&self) -> &RemoteStore<HttpClient> {
        &self.inner
    }
    /// Validated Header, schema and sizes (see [`RemoteStore::info`]).
    pub fn info(&self) -> &StoreInfo {
        self.inner.info()
    }
    /// The store's directory URL.
    pub fn url(&self) -> &str {
        self.inner.url()
    }
    crate::format::store_info::info_accessors!();

    /// The dictionary bytes of a `zstd_dict` store.
    pub fn dict_bytes(&self) -> Option<&[u8]> {
        self.inner.dict_bytes()
    }
    /// See [`RemoteStore::static_page`].
    pub fn static_page(&self) -> &[u8] {
        self.inner.static_page()
    }
    /// `tail_offset`.
    pub fn stored_bytes(&self) -> u64 {
        self.inner.stored_bytes()
    }
    /// Requests and bytes spent so far.
    pub fn stats(&self) -> RemoteStats {
        self.inner.stats()
    }
    /// File sizes as far as known.
    pub fn file_sizes(&self) -> RemoteSizes {
        self.inner.file_sizes()
    }
    /// See [`RemoteStore::logical_bytes`].
    ///
    /// # Errors
    /// As [`RemoteStore::logical_bytes`].
    pub fn logical_bytes(&self) -> Result<u64> {
        block_on(self.inner.logical_bytes())
    }
    /// See [`RemoteStore::locs`].
    ///
    /// # Errors
    /// As [`RemoteStore::locs`].
    pub fn locs(&self, start: u64, count: u64) -> Result<Vec<RecordLoc>> {
        block_on(self.inner.locs(start, count))
    }
    /// See [`RemoteStore::raw_locs`].
    ///
    /// # Errors
    /// As [`RemoteStore::raw_locs`].
    pub fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        block_on(self.inner.raw_locs(indices))
    }
    /// See [`RemoteStore::read_stored`].
    ///
    /// # Errors
    /// As [`RemoteStore::read_stored`].
    pub fn read_stored(&self, ranges: &[std::ops::Range<u64>]) -> Result<Vec<u8>> {
        block_on(self.inner.read_stored(ranges))
    }
    /// See [`RemoteStore::data_size`].
    ///
    /// # Errors
    /// As [`RemoteStore::data_size`].
    pub fn data_size(&self) -> Result<u64> {
        block_on(self.inner.data_size())
    }
    /// Record `index`'s validated location.
    ///
    /// # Errors
    /// As [`RemoteStore::locs`].
    pub fn loc(&self, index: u64) -> Result<RecordLoc> {
        Ok(self.locs(index, 1)?[0])
    }
    /// See [`RemoteStore::gather_into`].
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`].
    pub fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        block_on(self.inner.gather_into(indices, out))
    }
    /// See [`RemoteStore::gather`].
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`].
    pub fn gather(&self, indices: &[u64]) -> Result<DenseBatch> {
        block_on(self.inner.gather(indices))
    }
    /// See [`RemoteStore::gather_dense_batch`].
    ///
    /// # Errors
    /// As [`RemoteStore::gather_into`].
    pub fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        block_on(self.inner.gather_dense_batch(indices, batch))
    }
    /// See [`RemoteStore::gather_ragged`].
    ///
    /// # Errors
    /// As [`RemoteStore::gather_ragged`].
    pub fn gather_ragged(&self, indices: &[u64]) -> Result<RaggedBatch> {
        block_on(self.inner.gather_ragged(indices))
    }
    /// See [`RemoteStore::gather_ragged_into`].
    ///
    /// # Errors
    /// As [`RemoteStore::gather_ragged`].
    pub fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        block_on(self.inner.gather_ragged_into(indices, batch))
    }
    /// See [`RemoteStore::gather_batch_into`].
    ///
    /// # Errors
    /// As the gathers.
    pub fn gather_batch_into(&self, indices: &[u64], batch: &mut Batch) -> Result<()> {
        block_on(self.inner.gather_batch_into(indices, batch))
    }
    /// See [`RemoteStore::get`].
    ///
    /// # Errors
    /// As the gathers.
    pub fn get(&self, index: u64) -> Result<(Vec<u64>, AlignedBytes)> {
        block_on(self.inner.get(index))
    }
}
