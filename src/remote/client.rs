//! The native HTTP client: reqwest under [`super::HttpRanges`].
//!
//! reqwest (hyper, rustls) on the process's one tokio runtime
//! ([`super::runtime`]): each request is a task there, so hundreds can be in
//! flight on two threads, and the driver awaits them from its own executor.
//! Connections are kept alive and shared by every store of the process.

use super::http::{HttpError, HttpGet, HttpRequest, HttpResponse};
use super::runtime;
use super::transport::LocalBoxFuture;
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
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
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
