//! From a request head to a response: routing, the viewer-first precedence,
//! conditional requests, ranges and content types. No socket code here.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use bytes::BytesMut;
use httpdate::HttpDate;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Method, Response, StatusCode};

use super::body::Body;
use super::files::OpenFiles;
use super::path::{parse_url_path, NotServed, Refused};
use super::proxy::Proxy;
use super::range::{parse_range, RangeReply};
use super::stores::stores_json;
use super::Assets;
use crate::local::sys::inode;

/// What every connection shares.
pub(crate) struct Site {
    /// Canonical root directory.
    pub root: PathBuf,
    pub assets: Option<Assets>,
    pub store_depth: usize,
    /// Files of the root kept open between requests.
    pub files: OpenFiles,
    /// A remote prefix served in place of (or beside) the root's files.
    pub proxy: Option<Proxy>,
}

/// Most bytes a request line plus headers may take (hyper's own buffer
/// limit sits above it, so the answer here can carry the CORS headers).
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;

const ALLOW: &str = "GET, HEAD, OPTIONS";

type Resp = Response<Body>;

/// Why a proxied file is refused under a host name: see [`addressed_directly`].
const NOT_BY_NAME: &str =
    "zrecord view answers files it reads with your credentials only at an IP address or \
     localhost (http://127.0.0.1:PORT/), never under a host name: a page whose name was made to resolve here \
     (DNS rebinding) would otherwise read your bucket.\n";

/// Whether the request's `Host` is an IP address or `localhost`. The
/// proxy reads with the process's credentials; a page of another site
/// whose name is made to resolve to this machine (DNS rebinding) is then
/// same-origin with the server and would read the bucket through it, but
/// its requests carry its own name as `Host`. (No `Host`: not a browser.)
fn addressed_directly(req: &Parts) -> bool {
    let Some(host) = req.headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return req.headers.get(header::HOST).is_none();
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// Answer one request (its body, if any, is never read).
pub(crate) async fn respond(site: Arc<Site>, req: &Parts) -> Resp {
    let oversized = head_bytes(req) > MAX_HEAD_BYTES;
    let mut resp =
        if oversized { text(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE) } else { route(&site, req).await };
    if oversized || has_body(req) {
        // hyper would read and discard the body; a static server has no use
        // for one, so the connection ends after this answer instead.
        resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    common_headers(&mut resp);
    resp
}

async fn route(site: &Arc<Site>, req: &Parts) -> Resp {
    match req.method {
        Method::OPTIONS => {
            let mut r = status(StatusCode::NO_CONTENT);
            let h = r.headers_mut();
            h.insert(header::ALLOW, HeaderValue::from_static(ALLOW));
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(ALLOW));
            h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
            return r;
        }
        Method::GET | Method::HEAD => {}
        _ => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED);
            r.headers_mut().insert(header::ALLOW, HeaderValue::from_static(ALLOW));
            return r;
        }
    }
    let url = match parse_url_path(req.uri.path()) {
        Ok(u) => u,
        Err(Refused::Malformed) => return text(StatusCode::BAD_REQUEST),
        Err(Refused::Forbidden) => return text(StatusCode::FORBIDDEN),
    };
    let head = req.method == Method::HEAD;
    if url.relative() == "api/stores" {
        let s = Arc::clone(site);
        if s.proxy.as_ref().is_some_and(Proxy::whole_site) {
            // The whole site is remote: no local folder to list.
            return json_answer(head, "[]".into());
        }
        let json = tokio::task::spawn_blocking(move || stores_json(&s.root, s.store_depth)).await;
        let Ok(json) = json else { return text(StatusCode::INTERNAL_SERVER_ERROR) };
        return json_answer(head, json);
    }
    // The viewer's own files come first: a file in the served folder never
    // replaces the page or its code.
    let name = match url.trailing_slash() {
        true => Cow::Owned(format!("{}index.html", url.relative())),
        false => Cow::Borrowed(url.relative()),
    };
    if let Some((bytes, content_type)) = site.assets.as_ref().and_then(|a| a(&name)) {
        return serve_asset(req, bytes, content_type);
    }
    // A directory-style URL never names a file.
    if url.trailing_slash() {
        return text(StatusCode::NOT_FOUND);
    }
    if let Some((proxy, path)) = site.proxy.as_ref().and_then(|p| Some((p, p.below(url.relative())?))) {
        if !addressed_directly(req) {
            return text_with(StatusCode::MISDIRECTED_REQUEST, NOT_BY_NAME);
        }
        let mut r = proxy.respond(req, path).await;
        r.extensions_mut().insert(Proxied);
        return r;
    }
    match site.files.open(&site.root, url.relative()) {
        Ok(f) => serve_file(req, f.file, &f.meta, &f.path),
        Err(NotServed::Outside) => text(StatusCode::FORBIDDEN),
        Err(NotServed::Missing) => text(StatusCode::NOT_FOUND),
    }
}

fn json_answer(head: bool, json: String) -> Resp {
    let len = json.len();
    let mut r = Response::new(if head { Body::empty() } else { Body::bytes(json) });
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    r
}

fn has_body(req: &Parts) -> bool {
    req.headers.contains_key(header::TRANSFER_ENCODING)
        || req.headers.get(header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes().trim_ascii() != b"0")
}

/// About the size of the request head on the wire.
fn head_bytes(req: &Parts) -> usize {
    let target = req.uri.path_and_query().map_or(1, |p| p.as_str().len());
    let line = req.method.as_str().len() + target + 12;
    req.headers.iter().fold(line, |n, (k, v)| n + k.as_str().len() + v.len() + 4)
}

/// Headers on every response we make: cross-origin reads of any store from
/// any page (the viewer may be hosted elsewhere), and no content sniffing;
/// the proxy's answers get no CORS headers (`Proxied`).
/// (Built at compile time: no name or value is parsed per request.)
pub(crate) const COMMON_HEADERS: [(HeaderName, HeaderValue); 4] = [
    (header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
    (header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("Range, If-Match, Authorization")),
    (
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Content-Range, Content-Length, ETag, Accept-Ranges"),
    ),
    (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
];

/// Marks an answer of the proxy: read with the process's credentials, it
/// is for the viewer this server serves (same-origin), not for any page.
#[derive(Clone, Copy)]
struct Proxied;

fn common_headers(resp: &mut Resp) {
    // Any page open in the browser could otherwise read a private bucket
    // through `zrecord view`'s server; `nosniff` stays.
    let cors = resp.extensions().get::<Proxied>().is_none();
    let h = resp.headers_mut();
    for (name, value) in COMMON_HEADERS {
        if cors || name == header::X_CONTENT_TYPE_OPTIONS {
            h.insert(name, value);
        }
    }
}

fn status(code: StatusCode) -> Resp {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    r
}

/// A short `text/plain` answer naming the status (`404 Not Found`).
pub(crate) fn text(code: StatusCode) -> Resp {
    text_with(code, "")
}

/// [`text`] followed by `why`.
fn text_with(code: StatusCode, why: &str) -> Resp {
    let msg = format!("{} {}\n{why}", code.as_u16(), code.canonical_reason().unwrap_or(""));
    let mut r = Response::new(Body::bytes(msg));
    *r.status_mut() = code;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

fn serve_file(req: &Parts, file: Arc<File>, meta: &Metadata, path: &Path) -> Resp {
    let size = meta.len();
    let mtime = meta.modified().ok();
    let mtime_ns = mtime.and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let mut values = Values::new();
    let rep = Rep {
        size,
        etag: values.make(format_args!("\"{size:x}-{mtime_ns:x}-{:x}\"", inode(meta))),
        last_modified: mtime.and_then(|t| values.make(format_args!("{}", HttpDate::from(t)))),
        content_type: folder_content_type(path),
    };
    let mut resp = serve_rep(req, &rep, values, |start, len| Body::file(file, start, len));
    // A downloaded folder is not trusted content: if a browser is navigated
    // to one of its files, it renders in an opaque origin with no script.
    resp.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox"));
    resp
}

fn serve_asset(req: &Parts, bytes: Cow<'static, [u8]>, content_type: &'static str) -> Resp {
    let mut values = Values::new();
    let rep = Rep {
        size: bytes.len() as u64,
        etag: values.make(format_args!("\"a{:x}-{:016x}\"", bytes.len(), fnv1a(&bytes))),
        last_modified: None,
        content_type,
    };
    serve_rep(req, &rep, values, |start, len| {
        let (s, e) = (start as usize, (start + len) as usize);
        Ok(match bytes {
            Cow::Borrowed(b) => Body::bytes(&b[s..e]),
            Cow::Owned(mut v) => {
                v.truncate(e);
                Body::bytes(hyper::body::Bytes::from(v).slice(s..))
            }
        })
    })
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// The validators and type of one servable representation.
pub(crate) struct Rep {
    pub size: u64,
    /// Quoted strong entity tag.
    pub etag: Option<HeaderValue>,
    pub last_modified: Option<HeaderValue>,
    pub content_type: &'static str,
}

impl Rep {
    fn etag(&self) -> &[u8] {
        self.etag.as_ref().map_or(b"", HeaderValue::as_bytes)
    }
}

/// The header values made for one answer (validators, length, range),
/// written one after another into one buffer and handed to hyper as shared
/// slices of it: one allocation for them all, where a `String` and a
/// `HeaderValue` for each cost two apiece.
pub(crate) struct Values(BytesMut);

impl Values {
    pub fn new() -> Self {
        Values(BytesMut::with_capacity(192))
    }

    /// `args` as a header value; `None` if it is not one (never, for the
    /// numbers, tags and dates made here).
    pub fn make(&mut self, args: fmt::Arguments<'_>) -> Option<HeaderValue> {
        self.0.write_fmt(args).ok()?;
        HeaderValue::from_maybe_shared(self.0.split().freeze()).ok()
    }
}

fn header_str(req: &Parts, name: HeaderName) -> Option<&str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

fn set(resp: &mut Resp, name: HeaderName, value: Option<HeaderValue>) {
    if let Some(v) = value {
        resp.headers_mut().insert(name, v);
    }
}

/// Preconditions (RFC 9110 §13.2.2 order: If-Match, If-None-Match, then
/// If-Range), then the range, then the body from `body(start, len)`.
pub(crate) fn serve_rep(
    req: &Parts,
    rep: &Rep,
    mut values: Values,
    body: impl FnOnce(u64, u64) -> std::io::Result<Body>,
) -> Resp {
    let validators = |r: &mut Resp| {
        set(r, header::ETAG, rep.etag.clone());
        r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        set(r, header::LAST_MODIFIED, rep.last_modified.clone());
    };
    if let Some(im) = header_str(req, header::IF_MATCH) {
        if !etag_list_matches(im, rep.etag(), true) {
            let mut r = text(StatusCode::PRECONDITION_FAILED);
            set(&mut r, header::ETAG, rep.etag.clone());
            return r;
        }
    }
    if let Some(inm) = header_str(req, header::IF_NONE_MATCH) {
        if etag_list_matches(inm, rep.etag(), false) {
            let mut r = status(StatusCode::NOT_MODIFIED);
            validators(&mut r);
            return r;
        }
    }
    let head = req.method == Method::HEAD;
    let mut range = RangeReply::Full;
    if !head {
        if let Some(value) = header_str(req, header::RANGE) {
            let if_range_ok = match header_str(req, header::IF_RANGE) {
                None => true,
                // An entity tag must match strongly; a date must be exactly
                // our Last-Modified (we never treat a date as "new enough").
                Some(v) if v.starts_with('"') || v.starts_with("W/") => {
                    etag_list_matches(v, rep.etag(), true)
                }
                Some(v) => rep.last_modified.as_ref().map(HeaderValue::as_bytes) == Some(v.as_bytes()),
            };
            if if_range_ok {
                range = parse_range(value, rep.size);
            }
        }
    }
    let (code, start, len) = match range {
        RangeReply::Full => (StatusCode::OK, 0, rep.size),
        RangeReply::Partial { start, end } => (StatusCode::PARTIAL_CONTENT, start, end - start + 1),
        RangeReply::Unsatisfiable => {
            let mut r = text(StatusCode::RANGE_NOT_SATISFIABLE);
            set(&mut r, header::CONTENT_RANGE, values.make(format_args!("bytes */{}", rep.size)));
            r.headers_mut().insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            set(&mut r, header::ETAG, rep.etag.clone());
            return r;
        }
    };
    let b = if head { Ok(Body::empty()) } else { body(start, len) };
    let Ok(b) = b else {
        return text(StatusCode::INTERNAL_SERVER_ERROR);
    };
    let mut r = Response::new(b);
    // Room for every header this answer and `common_headers` add, at once.
    *r.headers_mut() = HeaderMap::with_capacity(16);
    *r.status_mut() = code;
    validators(&mut r);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(rep.content_type));
    r.headers_mut().insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    set(&mut r, header::CONTENT_LENGTH, values.make(format_args!("{len}")));
    if code == StatusCode::PARTIAL_CONTENT {
        let range = values.make(format_args!("bytes {start}-{}/{}", start + len - 1, rep.size));
        set(&mut r, header::CONTENT_RANGE, range);
    }
    r
}

/// Does an `If-Match`/`If-None-Match`/`If-Range` value match `etag`?
/// `*` matches anything; `strong` refuses weak (`W/`) tags. A malformed list
/// matches nothing.
fn etag_list_matches(list: &str, etag: &[u8], strong: bool) -> bool {
    let list = list.trim();
    if list == "*" {
        return true;
    }
    let mut rest = list;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return false;
        }
        let weak = rest.starts_with("W/");
        if weak {
            rest = &rest[2..];
        }
        let Some(body) = rest.strip_prefix('"') else {
            return false;
        };
        let Some(close) = body.find('"') else {
            return false;
        };
        let tag = &rest[..close + 2];
        if tag.as_bytes() == etag && !(strong && weak) {
            return true;
        }
        rest = &body[close + 1..];
    }
}

/// The `Content-Type` of a file from the served folder. Only passive types
/// keep their own: anything a browser would run or render as a document
/// (HTML, SVG, XML, scripts, PDF, ...) is sent as opaque bytes, so it is
/// downloaded, never executed on the viewer's origin.
pub(crate) fn folder_content_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "json" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "txt" | "md" | "csv" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_lists() {
        let e = b"\"1-2-3\"";
        assert!(etag_list_matches("*", e, true));
        assert!(etag_list_matches("\"1-2-3\"", e, true));
        assert!(etag_list_matches("\"x\", \"1-2-3\"", e, true));
        assert!(etag_list_matches("W/\"1-2-3\"", e, false));
        assert!(!etag_list_matches("W/\"1-2-3\"", e, true));
        assert!(!etag_list_matches("\"1-2-4\"", e, false));
        assert!(!etag_list_matches("1-2-3", e, false));
        assert!(!etag_list_matches("\"1-2-3", e, false));
        assert!(!etag_list_matches("", e, false));
    }

    #[test]
    fn folder_files_never_get_an_active_type() {
        let ct = |p: &str| folder_content_type(Path::new(p));
        assert_eq!(ct("a/meta.zr"), "application/octet-stream");
        assert_eq!(ct("pkg/x_bg.wasm"), "application/wasm");
        assert_eq!(ct("m.json"), "application/json");
        assert_eq!(ct("i.png"), "image/png");
        assert_eq!(ct("noext"), "application/octet-stream");
        for active in
            ["index.HTML", "a.htm", "app.js", "m.mjs", "evil.svg", "x.xml", "x.xhtml", "s.css", "d.pdf"]
        {
            assert_eq!(ct(active), "application/octet-stream", "{active}");
        }
    }
}
