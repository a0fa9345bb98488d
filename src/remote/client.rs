//! The pluggable I/O edge of the remote reader: one GET with a byte range.
//!
//! A client only moves bytes: it sends `Range: bytes=a-b` and reports what
//! came back (status, the few headers that matter, the body). Every judgement
//! about the answer (is it a proper 206, does the ETag still match, is the
//! body the right length) is made once, by the driver, for every client:
//! the native HTTP client, the browser's `fetch`, a `Blob` read from disk in
//! the browser, and the misbehaving servers of the tests.
//!
//! Futures are boxed without `Send`: in the browser they hold JavaScript
//! values, and the native driver runs them on the calling thread.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future that need not be `Send` (browser futures are not).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One ranged GET.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeRequest {
    /// Absolute URL of the file.
    pub url: String,
    /// Bytes wanted, sent as `Range: bytes={start}-{end - 1}`; never empty.
    pub range: Range<u64>,
    /// `If-Match` value to send, if any (off by default; see `RemoteOptions::if_match`).
    pub if_match: Option<String>,
}

impl RangeRequest {
    /// The `Range` header value.
    pub fn range_header(&self) -> String {
        format!("bytes={}-{}", self.range.start, self.range.end - 1)
    }
    /// Most body bytes worth reading: one more than asked for, so a too-long
    /// body is seen as such without reading an unbounded amount.
    pub fn body_limit(&self) -> u64 {
        self.range.end - self.range.start + 1
    }
}

/// What a server answered, unjudged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeResponse {
    /// HTTP status.
    pub status: u16,
    /// `Content-Range`, if the client could see it.
    pub content_range: Option<String>,
    /// `Content-Encoding`, if any.
    pub content_encoding: Option<String>,
    /// `ETag`, if any.
    pub etag: Option<String>,
    /// The body, at most [`RangeRequest::body_limit`] bytes of it.
    pub body: Vec<u8>,
}

/// A request that got no HTTP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// Connection refused or reset, timeout, DNS, or a browser network/CORS
    /// failure. Retried a bounded number of times.
    Network(String),
    /// The request was aborted by the caller.
    Aborted,
    /// Anything that retrying cannot fix (a bad URL, a custom fetch that threw).
    Fatal(String),
}

/// Where a remote store's bytes come from.
///
/// ```
/// use zrecord::remote::{LocalBoxFuture, RangeClient, RangeRequest, RangeResponse, TransportError};
/// use std::time::Duration;
///
/// /// Serves one in-memory file under every URL, like a well-behaved server.
/// struct OneFile(Vec<u8>);
///
/// impl RangeClient for OneFile {
///     fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
///         let total = self.0.len() as u64;
///         let end = req.range.end.min(total);
///         let body = self.0[req.range.start as usize..end as usize].to_vec();
///         Box::pin(async move {
///             Ok(RangeResponse {
///                 status: 206,
///                 content_range: Some(format!("bytes {}-{}/{total}", req.range.start, end - 1)),
///                 body,
///                 ..Default::default()
///             })
///         })
///     }
///     fn sleep(&self, _: Duration) -> LocalBoxFuture<'_, ()> {
///         Box::pin(async {})
///     }
/// }
/// ```
pub trait RangeClient {
    /// Send one ranged GET and report the answer.
    ///
    /// # Errors
    /// [`TransportError`] when no HTTP answer arrived. HTTP error statuses are
    /// answers, not errors: return them in [`RangeResponse::status`].
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>>;

    /// Wait `duration` (the back-off between retries).
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()>;
}

impl<C: RangeClient + ?Sized> RangeClient for std::rc::Rc<C> {
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
        (**self).get(req)
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        (**self).sleep(duration)
    }
}

impl<C: RangeClient + ?Sized> RangeClient for std::sync::Arc<C> {
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
        (**self).get(req)
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        (**self).sleep(duration)
    }
}

impl<C: RangeClient + ?Sized> RangeClient for Box<C> {
    fn get(&self, req: RangeRequest) -> LocalBoxFuture<'_, Result<RangeResponse, TransportError>> {
        (**self).get(req)
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        (**self).sleep(duration)
    }
}
