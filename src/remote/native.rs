//! The native HTTP client and a blocking facade for the CLI.
//!
//! reqwest (hyper, rustls) on the process's one tokio runtime
//! ([`super::runtime`]): each request is a task there, so hundreds can be in
//! flight on two threads, and the driver awaits them from its own executor.
//! Connections are kept alive and shared by every store of the process.

use super::exec::block_on;
use super::http::{HttpError, HttpGet, HttpRanges, HttpRequest, HttpResponse};
use super::runtime;
use super::store::{RemoteOptions, RemoteSizes, RemoteStats, RemoteStore};
use super::transport::{LocalBoxFuture, RangeRead};
use crate::format::batch::{DenseBatch, RaggedBatch};
use crate::format::{FileSizes, RecordLoc, StoreInfo};
use crate::records::Records;
use crate::Result;
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
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            headers: Vec::new(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// An HTTP(S) [`HttpGet`] on reqwest, its requests running as tasks on the
/// shared tokio runtime.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpClient")
    }
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::new(HttpOptions::default()).expect("the default HTTP client builds")
    }
}

impl HttpClient {
    /// A client (cheap to clone; clones share connections).
    ///
    /// # Errors
    /// `InvalidArgument` for a header that is not valid HTTP.
    pub fn new(options: HttpOptions) -> Result<Self> {
        let bad = |why: String| crate::Error::InvalidArgument { store: "http client".into(), why };
        let mut headers = reqwest::header::HeaderMap::new();
        for (k, v) in &options.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| bad(format!("header name {k:?}: {e}")))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|e| bad(format!("header {k} value: {e}")))?;
            headers.append(name, value);
        }
        let client = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.connect_timeout)
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            .user_agent(concat!("zrecord/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| bad(format!("building the HTTP client: {e}")))?;
        Ok(HttpClient { client, headers })
    }
}

async fn send(
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    req: HttpRequest,
) -> std::result::Result<HttpResponse, HttpError> {
    let mut r = client.get(&req.url).headers(headers).header("Range", req.range_header());
    if let Some(tag) = &req.if_match {
        r = r.header("If-Match", tag.as_str());
    }
    let network = |e: reqwest::Error| {
        if e.is_builder() {
            HttpError::Fatal(format!("bad request: {e}"))
        } else {
            HttpError::Network(error_chain(&e))
        }
    };
    let mut resp = r.send().await.map_err(network)?;
    let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut out = HttpResponse {
        status: resp.status().as_u16(),
        content_range: header("content-range"),
        content_encoding: header("content-encoding"),
        etag: header("etag"),
        body: Vec::new(),
    };
    if out.status == 206 || out.status == 200 {
        let limit = req.body_limit() as usize;
        let expect = resp.content_length().unwrap_or(0).min(limit as u64);
        out.body.reserve(expect as usize);
        while out.body.len() < limit {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let take = chunk.len().min(limit - out.body.len());
                    out.body.extend_from_slice(&chunk[..take]);
                }
                Ok(None) => break,
                Err(e) => return Err(HttpError::Network(format!("reading the body: {}", error_chain(&e)))),
            }
        }
    }
    Ok(out)
}

/// An error and its causes, on one line (reqwest's own message is terse).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_s = c.to_string();
        if !s.contains(&c_s) {
            s.push_str(": ");
            s.push_str(&c_s);
        }
        cause = c.source();
    }
    s
}

impl HttpGet for HttpClient {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, std::result::Result<HttpResponse, HttpError>> {
        let task = runtime::spawn(send(self.client.clone(), self.headers.clone(), req));
        Box::pin(async move {
            task.await.unwrap_or_else(|| Err(HttpError::Fatal("the HTTP task stopped".into())))
        })
    }

    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        Box::pin(runtime::sleep(duration))
    }

    fn now(&self) -> Option<Duration> {
        Some(runtime::now())
    }
}

/// Any native transport, as a [`BlockingStore`] holds it.
pub type AnyTransport = Box<dyn RangeRead + Send + Sync>;

/// The transport for `url`: object_store for `s3://`, `gs://`, `az://`
/// (feature `cloud`), HTTP Range requests for `http(s)://`.
///
/// # Errors
/// `InvalidArgument` for a URL no transport takes or a client that cannot
/// be configured.
pub fn transport_for(url: &str, options: &RemoteOptions, http: HttpOptions) -> Result<AnyTransport> {
    #[cfg(feature = "cloud")]
    if super::objstore::is_bucket_url(url) {
        let retry = super::objstore::BucketRetry::default();
        return Ok(Box::new(super::objstore::ObjectRanges::new(url, retry)?));
    }
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let retry = super::http::Retry { retries: options.retries, backoff: options.backoff };
        return Ok(Box::new(HttpRanges::new(HttpClient::new(http)?, url, retry)));
    }
    Err(crate::Error::InvalidArgument {
        store: url.to_string(),
        why: if cfg!(feature = "cloud") {
            "not a store URL (s3://, gs://, az://, http://, https://)".into()
        } else {
            "not a store URL (http://, https://; s3://, gs:// and az:// need the `cloud` feature)".into()
        },
    })
}

impl RemoteStore<AnyTransport> {
    /// Open the store at `url` — `s3://bucket/prefix/store`, `gs://…`,
    /// `az://…` or `http(s)://…`, the directory or its `meta.zr` — with the
    /// native defaults (64 requests in flight), behind the blocking
    /// [`Records`] API. Buckets are configured from the environment
    /// (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, ...).
    ///
    /// # Errors
    /// As [`RemoteStore::open`], and [`transport_for`]'s.
    pub fn open_blocking(url: &str) -> Result<BlockingStore> {
        Self::open_blocking_with(url, RemoteOptions::default(), HttpOptions::default())
    }

    /// As [`RemoteStore::open_blocking`], with options (`http` applies to
    /// `http(s)://` URLs).
    ///
    /// # Errors
    /// As [`RemoteStore::open_blocking`].
    pub fn open_blocking_with(url: &str, options: RemoteOptions, http: HttpOptions) -> Result<BlockingStore> {
        let transport = transport_for(url, &options, http)?;
        BlockingStore::open(transport, options)
    }
}

/// A remote store behind the blocking [`Records`] API: each call runs the
/// async reader to completion on the calling thread while its requests run
/// on the shared tokio runtime.
#[derive(Debug)]
pub struct BlockingStore {
    inner: RemoteStore<AnyTransport>,
    url: String,
}

impl BlockingStore {
    /// Open the store `transport` reads.
    ///
    /// # Errors
    /// As [`RemoteStore::open`].
    pub fn open(transport: AnyTransport, options: RemoteOptions) -> Result<BlockingStore> {
        let inner = block_on(RemoteStore::open(transport, options))?;
        let url = inner.transport().name();
        Ok(BlockingStore { inner, url })
    }
    /// The async reader underneath.
    pub fn as_async(&self) -> &RemoteStore<AnyTransport> {
        &self.inner
    }
    /// The store's directory URL (ending in `/`).
    pub fn url(&self) -> &str {
        &self.url
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
