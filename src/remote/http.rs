//! Range reads over HTTP: one GET with a `Range` header per read, judged
//! strictly. An [`HttpGet`] only moves bytes (the native client, the
//! browser's `fetch`, the misbehaving servers of the tests); [`HttpRanges`]
//! turns its answers into range reads and owns every check of them: a 206
//! with the Content-Range asked for and exactly that many body bytes, stored
//! as is, the ETag carried along, and transient failures retried with a
//! bounded back-off.

use super::transport::{LocalBoxFuture, RangeRead, Ranged, ReadRequest};
use crate::format::StoreFile;
use crate::{Error, Result};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One ranged GET.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    /// Absolute URL of the file.
    pub url: String,
    /// Bytes wanted, sent as `Range: bytes={start}-{end - 1}`; never empty.
    pub range: Range<u64>,
    /// `If-Match` value to send, if any (off by default; see `RemoteOptions::if_match`).
    pub if_match: Option<String>,
}

impl HttpRequest {
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
pub struct HttpResponse {
    /// HTTP status.
    pub status: u16,
    /// `Content-Range`, if the client could see it.
    pub content_range: Option<String>,
    /// `Content-Encoding`, if any.
    pub content_encoding: Option<String>,
    /// `ETag`, if any.
    pub etag: Option<String>,
    /// The body, at most [`HttpRequest::body_limit`] bytes of it.
    pub body: Vec<u8>,
}

/// A request that got no HTTP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// Connection refused or reset, timeout, DNS, or a browser network/CORS
    /// failure. Retried a bounded number of times.
    Network(String),
    /// The request was aborted by the caller.
    Aborted,
    /// Anything that retrying cannot fix (a bad URL, a custom fetch that threw).
    Fatal(String),
}

/// Sends one GET and reports the answer, unjudged.
///
/// ```
/// use zrecord::remote::{HttpError, HttpGet, HttpRequest, HttpResponse, LocalBoxFuture};
/// use std::time::Duration;
///
/// /// Serves one in-memory file under every URL, like a well-behaved server.
/// struct OneFile(Vec<u8>);
///
/// impl HttpGet for OneFile {
///     fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, Result<HttpResponse, HttpError>> {
///         let total = self.0.len() as u64;
///         let end = req.range.end.min(total);
///         let body = self.0[req.range.start as usize..end as usize].to_vec();
///         Box::pin(async move {
///             Ok(HttpResponse {
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
pub trait HttpGet {
    /// Send one ranged GET and report the answer.
    ///
    /// # Errors
    /// [`HttpError`] when no HTTP answer arrived. HTTP error statuses are
    /// answers, not errors: return them in [`HttpResponse::status`].
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, std::result::Result<HttpResponse, HttpError>>;

    /// Wait `duration` (the back-off between retries).
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()>;

    /// A monotonic clock, if the client has one (see [`RangeRead::now`]).
    fn now(&self) -> Option<Duration> {
        None
    }
}

impl<G: HttpGet + ?Sized> HttpGet for Box<G> {
    fn get(&self, req: HttpRequest) -> LocalBoxFuture<'_, std::result::Result<HttpResponse, HttpError>> {
        (**self).get(req)
    }
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'_, ()> {
        (**self).sleep(duration)
    }
    fn now(&self) -> Option<Duration> {
        (**self).now()
    }
}

/// How an [`HttpRanges`] retries a transient failure (5xx, 408, 429 and
/// S3's 503 `SlowDown`, network): exponential back-off with jitter, bounded
/// in count and so in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Retries after the first attempt.
    pub retries: u32,
    /// Wait before the first retry; doubled each time, at most 10 s, and
    /// each wait drawn uniformly from its upper half (jitter, so clients
    /// refused together do not come back together).
    pub backoff: Duration,
}

impl Retry {
    /// The wait before retry `attempt` (1-based), jittered by `salt`.
    pub fn wait(&self, attempt: u32, salt: u64) -> Duration {
        let full = self
            .backoff
            .saturating_mul(1 << (attempt.saturating_sub(1)).min(16))
            .min(Duration::from_secs(10));
        // splitmix64: no clock or OS randomness needed (wasm32 has neither at hand).
        let mut z = salt.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let frac = (z >> 11) as f64 / (1u64 << 53) as f64;
        full.mul_f64(0.5 + 0.5 * frac)
    }
}

/// A store's files at a URL, read with ranged GETs through `G`.
#[derive(Debug)]
pub struct HttpRanges<G> {
    get: G,
    /// The store directory's URL, ending in `/`.
    base: String,
    /// A query string kept on every file's URL (signed URLs).
    query: String,
    retry: Retry,
    retries: AtomicU64,
}

/// Split a store URL into its directory (ending in `/`) and query string.
fn split_url(url: &str) -> (String, String) {
    let url = url.split('#').next().unwrap_or_default();
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, format!("?{q}")),
        None => (url, String::new()),
    };
    let mut base = path.strip_suffix(StoreFile::Meta.name()).unwrap_or(path).to_string();
    if !base.ends_with('/') {
        base.push('/');
    }
    (base, query)
}

impl<G: HttpGet> HttpRanges<G> {
    /// The store at `url`: a directory URL (`https://host/stores/a/`), or the
    /// URL of its `meta.zr`. A query string is kept on every file's URL.
    pub fn new(get: G, url: &str, retry: Retry) -> Self {
        let (base, query) = split_url(url);
        HttpRanges { get, base, query, retry, retries: AtomicU64::new(0) }
    }
    /// The store's directory URL (ending in `/`).
    pub fn base(&self) -> &str {
        &self.base
    }
    /// The client.
    pub fn client(&self) -> &G {
        &self.get
    }

    /// The transport of the store at `path` below this one's directory
    /// (a dataset's shard), with the same client, query string and retries.
    pub fn child(&self, path: &str) -> HttpRanges<G>
    where
        G: Clone,
    {
        let base = format!("{}{}/", self.base, path.trim_matches('/'));
        HttpRanges {
            get: self.get.clone(),
            base,
            query: self.query.clone(),
            retry: self.retry,
            retries: AtomicU64::new(0),
        }
    }

    async fn read_with_retries(&self, req: ReadRequest) -> Result<Ranged> {
        let url = self.locate(req.file);
        self.read_url(url, req).await
    }

    async fn read_url(&self, url: String, req: ReadRequest) -> Result<Ranged> {
        let attempts = self.retry.retries + 1;
        let mut last = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                let salt = self.retries.fetch_add(1, Ordering::Relaxed) ^ req.range.start;
                self.get.sleep(self.retry.wait(attempt, salt)).await;
            }
            let http =
                HttpRequest { url: url.clone(), range: req.range.clone(), if_match: req.if_version.clone() };
            match self.get.get(http.clone()).await {
                Err(HttpError::Network(why)) => last = why,
                Err(HttpError::Aborted) => return Err(Error::Cancelled),
                Err(HttpError::Fatal(why)) => return Err(Error::Remote { url, why }),
                Ok(resp) => match judge(&http, resp) {
                    Ok(got) => return Ok(got),
                    Err(Verdict::Retry(why)) => last = why,
                    Err(Verdict::Fatal(e)) => return Err(e),
                },
            }
        }
        Err(Error::Remote { url, why: format!("{last} (gave up after {attempts} attempts)") })
    }
}

impl<G: HttpGet> RangeRead for HttpRanges<G> {
    fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>> {
        Box::pin(self.read_with_retries(req))
    }
    fn locate(&self, file: StoreFile) -> String {
        format!("{}{}{}", self.base, file.name(), self.query)
    }
    fn read_path(&self, path: &str, range: Range<u64>) -> LocalBoxFuture<'_, Result<Ranged>> {
        let url = format!("{}{}{}", self.base, path, self.query);
        // The request's file is only named in errors; the URL is the path's.
        let req = ReadRequest { file: StoreFile::Meta, range, if_version: None };
        Box::pin(self.read_url(url, req))
    }
    fn name(&self) -> String {
        self.base.clone()
    }
    fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
    fn now(&self) -> Option<Duration> {
        self.get.now()
    }
}

/// Why an answer was not accepted.
#[derive(Debug)]
enum Verdict {
    /// Worth another try (5xx, 408, 429).
    Retry(String),
    /// Retrying cannot help.
    Fatal(Error),
}

const HEADERS_HINT: &str = "a server in another origin must send Access-Control-Allow-Origin, \
    Access-Control-Allow-Headers: Range and Access-Control-Expose-Headers: Content-Range, ETag";

/// Parse `bytes a-b/total` (or `bytes */total`) into `(Some((a, b)), total)`.
fn parse_content_range(value: &str) -> Option<(Option<(u64, u64)>, u64)> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (span, total) = rest.split_once('/')?;
    let total: u64 = total.trim().parse().ok()?;
    let span = span.trim();
    if span == "*" {
        return Some((None, total));
    }
    let (a, b) = span.split_once('-')?;
    let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b && b < total).then_some((Some((a, b)), total))
}

/// Judge `resp`, the answer to `req`.
fn judge(req: &HttpRequest, resp: HttpResponse) -> Result<Ranged, Verdict> {
    let url = &req.url;
    let fatal = |why: String| Verdict::Fatal(Error::Remote { url: url.clone(), why });
    if let Some(enc) = resp.content_encoding.as_deref() {
        if !enc.trim().is_empty() && !enc.trim().eq_ignore_ascii_case("identity") {
            return Err(fatal(format!(
                "the server sent Content-Encoding: {enc}; store files must be served as stored \
                 (byte ranges of compressed transfers do not line up with the file): turn \
                 {enc} compression off for .zr files on the host (e.g. nginx `gzip off`)"
            )));
        }
    }
    match resp.status {
        206 => {}
        // An empty file is its own whole range: nginx answers a Range
        // request on a 0-byte file with 200 and no body.
        200 if resp.body.is_empty() && req.range.start == 0 && resp.content_range.is_none() => {
            return Ok(Ranged { bytes: Vec::new(), total: 0, version: resp.etag })
        }
        200 => {
            return Err(fatal(
                "the server answered 200 OK with the whole file to a Range request: this server \
                 does not support HTTP Range requests (or a proxy drops the Range header); serve \
                 the store from one that does (nginx, Apache, S3, GCS, most CDNs)"
                    .into(),
            ))
        }
        416 => {
            return match resp.content_range.as_deref().and_then(parse_content_range) {
                Some((None, total)) if req.range.start >= total => {
                    Ok(Ranged { bytes: Vec::new(), total, version: resp.etag })
                }
                _ => Err(fatal(format!(
                    "416 Range Not Satisfiable for bytes={}-{} without a usable \
                     Content-Range: bytes */SIZE",
                    req.range.start,
                    req.range.end - 1
                ))),
            }
        }
        404 | 410 => {
            return Err(Verdict::Fatal(Error::NotFound {
                store: url.clone(),
                what: format!("HTTP {}", resp.status),
            }))
        }
        401 => {
            return Err(fatal(
                "unauthorized (HTTP 401): the server wants credentials (pass them as extra headers)".into(),
            ))
        }
        403 => {
            return Err(fatal(
                "forbidden (HTTP 403): the server refuses to serve this file (check its \
                 permissions, the bucket policy or the credentials)"
                    .into(),
            ))
        }
        412 => {
            return Err(Verdict::Fatal(Error::StoreChanged {
                url: url.clone(),
                why: "If-Match failed (HTTP 412)".into(),
            }))
        }
        408 | 429 | 500..=599 => return Err(Verdict::Retry(format!("HTTP {} from the server", resp.status))),
        s => return Err(fatal(format!("unexpected HTTP status {s} to a Range request"))),
    }
    let Some(cr) = resp.content_range.as_deref() else {
        return Err(fatal(format!(
            "206 Partial Content without a readable Content-Range header ({HEADERS_HINT})"
        )));
    };
    let Some((Some((a, b)), total)) = parse_content_range(cr) else {
        return Err(fatal(format!("unreadable Content-Range: {cr:?}")));
    };
    let want_end = req.range.end - 1;
    // A server may end the range early only where the file ends.
    if a != req.range.start || !(b == want_end || (b < want_end && b + 1 == total)) {
        return Err(fatal(format!(
            "asked for bytes {}-{want_end}, the server sent Content-Range: {cr}",
            req.range.start
        )));
    }
    let len = b - a + 1;
    if resp.body.len() as u64 != len {
        return Err(fatal(format!(
            "Content-Range: {cr} announces {len} bytes but the body has {}{}",
            resp.body.len(),
            if (resp.body.len() as u64) < len { " (truncated response)" } else { " or more" }
        )));
    }
    Ok(Ranged { bytes: resp.body, total, version: resp.etag })
}

/// The hint to give when a browser request fails without an answer.
pub fn network_hint() -> &'static str {
    HEADERS_HINT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(a: u64, b: u64) -> HttpRequest {
        HttpRequest { url: "http://x/meta.zr".into(), range: a..b + 1, if_match: None }
    }

    fn resp(status: u16, cr: Option<&str>, body: usize) -> HttpResponse {
        HttpResponse {
            status,
            content_range: cr.map(str::to_string),
            body: vec![7; body],
            ..Default::default()
        }
    }

    fn why(r: Result<Ranged, Verdict>) -> String {
        match r {
            Err(Verdict::Fatal(e)) => e.to_string(),
            Err(Verdict::Retry(s)) => format!("retry: {s}"),
            Ok(r) => format!("ok {} of {}", r.bytes.len(), r.total),
        }
    }

    #[test]
    fn accepts_exact_and_clamped() {
        assert_eq!(why(judge(&req(0, 9), resp(206, Some("bytes 0-9/100"), 10))), "ok 10 of 100");
        assert_eq!(why(judge(&req(0, 99), resp(206, Some("bytes 0-4/5"), 5))), "ok 5 of 5");
        assert_eq!(why(judge(&req(5, 9), resp(416, Some("bytes */5"), 0))), "ok 0 of 5");
        // An empty file: nginx answers 200 with no body, others 416 bytes */0.
        assert_eq!(why(judge(&req(0, 9), resp(200, None, 0))), "ok 0 of 0");
        assert_eq!(why(judge(&req(0, 9), resp(416, Some("bytes */0"), 0))), "ok 0 of 0");
    }

    #[test]
    fn rejects_the_rest() {
        assert!(why(judge(&req(0, 9), resp(200, None, 10))).contains("does not support HTTP Range requests"));
        assert!(why(judge(&req(5, 9), resp(200, None, 0))).contains("does not support HTTP Range requests"));
        assert!(why(judge(&req(0, 9), resp(206, Some("bytes 1-10/100"), 10))).contains("Content-Range"));
        assert!(why(judge(&req(0, 9), resp(206, Some("bytes 0-5/100"), 6))).contains("Content-Range"));
        assert!(why(judge(&req(0, 9), resp(206, Some("bytes 0-9/100"), 4))).contains("truncated"));
        assert!(why(judge(&req(0, 9), resp(206, Some("bytes 0-9/*"), 10))).contains("unreadable"));
        assert!(why(judge(&req(0, 9), resp(206, None, 10))).contains("Access-Control-Expose-Headers"));
        assert!(why(judge(&req(0, 9), resp(503, None, 0))).starts_with("retry"));
        assert!(why(judge(&req(0, 9), resp(404, None, 0))).contains("not found"));
        assert!(why(judge(&req(0, 9), resp(403, None, 0))).contains("forbidden"));
        let mut gz = resp(206, Some("bytes 0-9/100"), 10);
        gz.content_encoding = Some("gzip".into());
        assert!(why(judge(&req(0, 9), gz)).contains("gzip"));
    }
    #[test]
    fn urls() {
        assert_eq!(split_url("http://h/s"), ("http://h/s/".into(), String::new()));
        assert_eq!(split_url("http://h/s/"), ("http://h/s/".into(), String::new()));
        assert_eq!(split_url("http://h/s/meta.zr?sig=1#x"), ("http://h/s/".into(), "?sig=1".into()));
    }
}
