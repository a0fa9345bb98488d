//! From a parsed request to a response: routing, conditional requests,
//! ranges and content types. No socket code here.

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::date::http_date;
use super::http::{Body, Request, Response};
use super::path::{parse_url_path, resolve, target_path, NotServed, Refused};
use super::range::{parse_range, RangeReply};
use super::stores::stores_json;
use super::Assets;

/// What every connection thread shares.
pub(crate) struct Site {
    /// Canonical root directory.
    pub root: PathBuf,
    pub assets: Option<Assets>,
    pub store_depth: usize,
}

const ALLOW: &str = "GET, HEAD, OPTIONS";

/// Answer one request.
pub(crate) fn respond(site: &Site, req: &Request) -> Response {
    match req.method.as_str() {
        "OPTIONS" => {
            return Response::new(204)
                .header("Allow", ALLOW)
                .header("Access-Control-Allow-Methods", ALLOW)
                .header("Access-Control-Max-Age", "86400")
        }
        "GET" | "HEAD" => {}
        _ => return Response::text(405).header("Allow", ALLOW),
    }
    let url = match parse_url_path(target_path(&req.target)) {
        Ok(u) => u,
        Err(Refused::Malformed) => return Response::text(400),
        Err(Refused::Forbidden) => return Response::text(403),
    };
    if url.segments == ["api", "stores"] && !url.trailing_slash {
        let json = stores_json(&site.root, site.store_depth);
        return Response::new(200)
            .header("Content-Type", "application/json")
            .header("Cache-Control", "no-store")
            .body(Body::Bytes(Cow::Owned(json.into_bytes())));
    }
    // A directory-style URL never names a file; it may name a viewer page.
    if !url.trailing_slash {
        match resolve(&site.root, &url.segments) {
            Ok(f) => return serve_file(req, f.file, &f.meta, &f.path),
            Err(NotServed::Outside) => return Response::text(403),
            Err(NotServed::Missing) => {}
        }
    }
    let mut name = url.relative();
    if name.is_empty() || name.ends_with('/') {
        name.push_str("index.html");
    }
    match site.assets.as_ref().and_then(|a| a(&name)) {
        Some((bytes, content_type)) => serve_asset(req, bytes, content_type),
        None => Response::text(404),
    }
}

fn serve_file(req: &Request, file: File, meta: &Metadata, path: &Path) -> Response {
    let size = meta.len();
    let mtime = meta.modified().ok();
    let mtime_ns = mtime.and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let rep = Rep {
        size,
        etag: format!("\"{size:x}-{mtime_ns:x}-{:x}\"", inode(meta)),
        last_modified: mtime.map(http_date),
        content_type: content_type(path),
    };
    serve_rep(req, &rep, |start, len| Body::File { file, start, len })
}

#[cfg(unix)]
fn inode(meta: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &Metadata) -> u64 {
    0
}

fn serve_asset(req: &Request, bytes: Cow<'static, [u8]>, content_type: &'static str) -> Response {
    let rep = Rep {
        size: bytes.len() as u64,
        etag: format!("\"a{:x}-{:016x}\"", bytes.len(), fnv1a(&bytes)),
        last_modified: None,
        content_type,
    };
    serve_rep(req, &rep, |start, len| {
        let (s, e) = (start as usize, (start + len) as usize);
        Body::Bytes(match bytes {
            Cow::Borrowed(b) => Cow::Borrowed(&b[s..e]),
            Cow::Owned(v) if s == 0 && e == v.len() => Cow::Owned(v),
            Cow::Owned(v) => Cow::Owned(v[s..e].to_vec()),
        })
    })
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// The validators and type of one servable representation.
struct Rep {
    size: u64,
    /// Quoted strong entity tag.
    etag: String,
    last_modified: Option<String>,
    content_type: &'static str,
}

/// Preconditions (RFC 9110 §13.2.2 order: If-Match, If-None-Match, then
/// If-Range), then the range, then the body from `body(start, len)`.
fn serve_rep(req: &Request, rep: &Rep, body: impl FnOnce(u64, u64) -> Body) -> Response {
    let validators = |r: Response| {
        let r = r.header("ETag", rep.etag.clone()).header("Cache-Control", "no-cache");
        match &rep.last_modified {
            Some(lm) => r.header("Last-Modified", lm.clone()),
            None => r,
        }
    };
    if let Some(im) = req.header("if-match") {
        if !etag_list_matches(im, &rep.etag, true) {
            return Response::text(412).header("ETag", rep.etag.clone());
        }
    }
    if let Some(inm) = req.header("if-none-match") {
        if etag_list_matches(inm, &rep.etag, false) {
            return validators(Response::new(304));
        }
    }
    let mut range = RangeReply::Full;
    if req.method == "GET" {
        if let Some(value) = req.header("range") {
            let if_range_ok = match req.header("if-range") {
                None => true,
                // An entity tag must match strongly; a date must be exactly
                // our Last-Modified (we never treat a date as "new enough").
                Some(v) if v.starts_with('"') || v.starts_with("W/") => etag_list_matches(v, &rep.etag, true),
                Some(v) => rep.last_modified.as_deref() == Some(v),
            };
            if if_range_ok {
                range = parse_range(value, rep.size);
            }
        }
    }
    let base = validators(Response::new(200))
        .header("Content-Type", rep.content_type)
        .header("Accept-Ranges", "bytes");
    match range {
        RangeReply::Full => base.body(body(0, rep.size)),
        RangeReply::Partial { start, end } => {
            let mut r = base.header("Content-Range", format!("bytes {start}-{end}/{}", rep.size));
            r.status = 206;
            r.body(body(start, end - start + 1))
        }
        RangeReply::Unsatisfiable => Response::text(416)
            .header("Content-Range", format!("bytes */{}", rep.size))
            .header("Accept-Ranges", "bytes")
            .header("ETag", rep.etag.clone()),
    }
}

/// Does an `If-Match`/`If-None-Match`/`If-Range` value match `etag`?
/// `*` matches anything; `strong` refuses weak (`W/`) tags. A malformed list
/// matches nothing.
fn etag_list_matches(list: &str, etag: &str, strong: bool) -> bool {
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
        if tag == etag && !(strong && weak) {
            return true;
        }
        rest = &body[close + 1..];
    }
}

/// The `Content-Type` for a file name; unknown types are opaque bytes.
pub(crate) fn content_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "application/javascript",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_lists() {
        let e = "\"1-2-3\"";
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
    fn content_types() {
        let ct = |p: &str| content_type(Path::new(p));
        assert_eq!(ct("a/meta.zr"), "application/octet-stream");
        assert_eq!(ct("pkg/x_bg.wasm"), "application/wasm");
        assert_eq!(ct("index.HTML"), "text/html; charset=utf-8");
        assert_eq!(ct("app.js"), "application/javascript");
        assert_eq!(ct("s.css"), "text/css; charset=utf-8");
        assert_eq!(ct("m.json"), "application/json");
        assert_eq!(ct("i.png"), "image/png");
        assert_eq!(ct("i.svg"), "image/svg+xml");
        assert_eq!(ct("noext"), "application/octet-stream");
    }
}
