//! Answering range requests from a remote prefix (`zrecord view s3://…`,
//! `zrecord serve DIR --proxy URL`): the browser asks this server, which
//! reads the bytes upstream with the process's own credentials. The
//! credentials never reach the browser.
//!
//! What the proxy guarantees:
//!
//! - **One version per file while the server runs.** The first answer for a
//!   path pins its size and version (ETag); an answer with another one is
//!   refused with `412` (the reader's "store changed" error), never passed
//!   on, so a file replaced upstream never mixes its bytes with the old ones
//!   (an HTTP upstream without ETags is pinned by size alone).
//!   The browser sees the pinned ETag, so its own checks hold too.
//! - **No whole-file download**: every upstream read is one ranged GET of at
//!   most [`MAX_RANGE`] bytes; a request without `Range` is answered whole
//!   only for a file that small.
//! - **Bounded memory and requests in flight**: at most [`IN_FLIGHT`] upstream
//!   reads at once (others wait), each holding at most [`MAX_RANGE`] bytes.
//! - **For this server's viewer only**: its answers carry no CORS headers
//!   (`handler.rs`), so no other page open in the browser can read the
//!   bucket through it; the viewer is served from the same origin. They
//!   answer only at an IP address or `localhost`, never under a host name
//!   (DNS rebinding: `handler.rs`, `addressed_directly`).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use hyper::header::{self, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Method, Response, StatusCode};
use tokio::sync::Semaphore;

use super::body::Body;
use super::handler::{folder_content_type, serve_rep, text, Rep, Values};
use super::range::{parse_range, RangeReply};
use crate::remote::Ranged;
use crate::{Error, Result};

/// Largest range one request may ask for (the browser reader's merged
/// requests are at most 8 MiB by default).
pub const MAX_RANGE: u64 = 16 << 20;
/// Upstream reads in flight at once.
pub const IN_FLIGHT: usize = 16;

/// Where proxied bytes come from: a blocking range read of a file below the
/// remote prefix (it runs on tokio's blocking pool).
pub trait Upstream: Send + Sync {
    /// `range` of the file at `path` (`/`-separated, below the prefix):
    /// all of it, or fewer bytes only where the file ends.
    ///
    /// # Errors
    /// `NotFound` for a missing file; `Remote` for a refused or failed read.
    fn read(&self, path: &str, range: Range<u64>) -> Result<Ranged>;
    /// The remote prefix, as messages name it.
    fn name(&self) -> String;
}

/// The size and version a path was first read at.
#[derive(Clone, PartialEq, Eq)]
struct Pin {
    total: u64,
    version: Option<String>,
}

/// A remote prefix served below `mount` (`""` for the whole site).
pub(crate) struct Proxy {
    mount: String,
    upstream: Arc<dyn Upstream>,
    pins: Mutex<HashMap<String, Pin>>,
    permits: Arc<Semaphore>,
}

type Resp = Response<Body>;

/// A short `text/plain` answer with a message a person can act on.
fn said(code: StatusCode, msg: String) -> Resp {
    let mut r = text(code);
    *r.body_mut() = Body::bytes(format!("{msg}\n"));
    r
}

impl Proxy {
    pub fn new(mount: &str, upstream: Arc<dyn Upstream>) -> Proxy {
        let mount = mount.trim_matches('/');
        Proxy {
            mount: if mount.is_empty() { String::new() } else { format!("{mount}/") },
            upstream,
            pins: Mutex::default(),
            permits: Arc::new(Semaphore::new(IN_FLIGHT)),
        }
    }

    /// Whether every path (but the viewer's files) is the proxy's.
    pub fn whole_site(&self) -> bool {
        self.mount.is_empty()
    }

    /// The path below the prefix, if `relative` (a request path without
    /// its leading `/`) is one of the proxy's.
    pub fn below<'a>(&self, relative: &'a str) -> Option<&'a str> {
        relative.strip_prefix(self.mount.as_str()).filter(|p| !p.is_empty())
    }

    fn pinned(&self, path: &str) -> Option<Pin> {
        self.pins.lock().unwrap_or_else(|e| e.into_inner()).get(path).cloned()
    }

    /// One upstream read, in flight with at most [`IN_FLIGHT`] - 1 others,
    /// checked against (or pinning) the path's version.
    async fn read(&self, path: &str, range: Range<u64>) -> std::result::Result<(Pin, Ranged), Resp> {
        let permit = self.permits.clone().acquire_owned().await;
        let (upstream, p) = (Arc::clone(&self.upstream), path.to_string());
        let got = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            upstream.read(&p, range)
        })
        .await;
        let got = match got {
            Ok(Ok(g)) => g,
            Ok(Err(e)) => return Err(self.failed(e)),
            Err(_) => return Err(text(StatusCode::INTERNAL_SERVER_ERROR)),
        };
        let seen = Pin { total: got.total, version: got.version.clone() };
        let mut pins = self.pins.lock().unwrap_or_else(|e| e.into_inner());
        let pin = pins.entry(path.to_string()).or_insert_with(|| seen.clone()).clone();
        drop(pins);
        if pin != seen {
            return Err(self.replaced(path, &pin, &seen));
        }
        Ok((pin, got))
    }

    fn replaced(&self, path: &str, pin: &Pin, seen: &Pin) -> Resp {
        let msg = format!(
            "{}{path}: replaced upstream while the viewer had it open (first read: {} bytes, \
             version {}; now: {} bytes, version {}); this server keeps serving the first \
             version's bytes or none: restart it to see the new one",
            self.upstream.name(),
            pin.total,
            pin.version.as_deref().unwrap_or("none"),
            seen.total,
            seen.version.as_deref().unwrap_or("none"),
        );
        eprintln!("zrecord: {msg}");
        let mut r = said(StatusCode::PRECONDITION_FAILED, msg);
        if let Some(tag) = pin.version.as_deref().and_then(|v| HeaderValue::from_str(&quoted(v)).ok()) {
            r.headers_mut().insert(header::ETAG, tag);
        }
        r
    }

    fn failed(&self, e: Error) -> Resp {
        match e {
            Error::NotFound { .. } => said(StatusCode::NOT_FOUND, e.to_string()),
            Error::StoreChanged { .. } => said(StatusCode::PRECONDITION_FAILED, e.to_string()),
            e => {
                eprintln!("zrecord: {e}");
                said(StatusCode::BAD_GATEWAY, e.to_string())
            }
        }
    }

    /// Answer a `GET` or `HEAD` of `path` (below the prefix).
    pub async fn respond(&self, req: &Parts, path: &str) -> Resp {
        let head = req.method == Method::HEAD;
        let range = req.headers.get(header::RANGE).and_then(|v| v.to_str().ok()).filter(|_| !head);
        // The size, when known: pinned, or learnt from a one-byte read
        // first for a suffix range (`bytes=-N`).
        let mut total = self.pinned(path).map(|p| p.total);
        if total.is_none() && range.is_some_and(|v| v.trim().get(6..).is_some_and(|r| r.starts_with('-'))) {
            match self.read(path, 0..1).await {
                Ok((pin, _)) => total = Some(pin.total),
                Err(r) => return r,
            }
        }
        let want = match range.map(|v| parse_range(v, total.unwrap_or(u64::MAX / 2))) {
            _ if head => 0..1,
            Some(RangeReply::Partial { start, end }) => {
                start..end.saturating_add(1).min(start.saturating_add(MAX_RANGE))
            }
            Some(RangeReply::Unsatisfiable) => 0..1,
            // No (usable) Range: the whole file, if it is small.
            Some(RangeReply::Full) | None => 0..MAX_RANGE,
        };
        let (pin, got) = match self.read(path, want.clone()).await {
            Ok(x) => x,
            Err(r) => return r,
        };
        let too_long = match range.map(|v| parse_range(v, pin.total)) {
            _ if head => false,
            Some(RangeReply::Partial { start, end }) => end - start >= MAX_RANGE,
            Some(RangeReply::Unsatisfiable) => false,
            Some(RangeReply::Full) | None => pin.total > MAX_RANGE,
        };
        if too_long {
            return said(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "{}{path} ({} bytes): the proxy sends at most {MAX_RANGE} bytes per request; \
                     ask for smaller ranges",
                    self.upstream.name(),
                    pin.total
                ),
            );
        }
        let mut values = Values::new();
        let rep = Rep {
            size: pin.total,
            etag: pin.version.as_deref().and_then(|v| values.make(format_args!("{}", quoted(v)))),
            last_modified: None,
            content_type: folder_content_type(std::path::Path::new(path)),
        };
        let first = want.start;
        let bytes = hyper::body::Bytes::from(got.bytes);
        let mut resp = serve_rep(req, &rep, values, |start, len| {
            let from = start.checked_sub(first).map(|s| s as usize);
            match from.and_then(|s| bytes.get(s..s + len as usize)) {
                Some(_) if len == 0 => Ok(Body::empty()),
                Some(_) => {
                    let s = from.unwrap_or(0);
                    Ok(Body::bytes(bytes.slice(s..s + len as usize)))
                }
                None => Err(std::io::Error::other("the upstream answer does not cover the range")),
            }
        });
        resp.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox"));
        resp
    }
}

/// An ETag as a header value: quoted, as object stores do not always send it.
fn quoted(v: &str) -> String {
    if v.starts_with('"') || v.starts_with("W/") {
        v.to_string()
    } else {
        format!("\"{v}\"")
    }
}
