//! Judging one HTTP answer to a ranged GET, strictly and the same way for
//! every client: a 206 with the Content-Range we asked for and exactly that
//! many body bytes, stored as is. Everything else is a named error, or a
//! transient failure to retry.

use super::client::{RangeRequest, RangeResponse};
use crate::Error;

/// A range answer that passed the checks.
#[derive(Debug)]
pub(crate) struct Ranged {
    /// The bytes from the requested start; shorter than asked only when the
    /// file ends first (`start + len == total`), empty after a 416.
    pub bytes: Vec<u8>,
    /// Size of the whole file, from Content-Range.
    pub total: u64,
    /// The file's ETag, if the client could see one.
    pub etag: Option<String>,
}

/// Why an answer was not accepted.
#[derive(Debug)]
pub(crate) enum Fail {
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
pub(crate) fn judge(req: &RangeRequest, resp: RangeResponse) -> Result<Ranged, Fail> {
    let url = &req.url;
    let fatal = |why: String| Fail::Fatal(Error::Remote { url: url.clone(), why });
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
                    Ok(Ranged { bytes: Vec::new(), total, etag: resp.etag })
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
            return Err(Fail::Fatal(Error::NotFound {
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
            return Err(Fail::Fatal(Error::StoreChanged {
                url: url.clone(),
                why: "If-Match failed (HTTP 412)".into(),
            }))
        }
        408 | 429 | 500..=599 => return Err(Fail::Retry(format!("HTTP {} from the server", resp.status))),
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
    Ok(Ranged { bytes: resp.body, total, etag: resp.etag })
}

/// The hint to give when a browser request fails without an answer.
pub(crate) fn network_hint() -> &'static str {
    HEADERS_HINT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(a: u64, b: u64) -> RangeRequest {
        RangeRequest { url: "http://x/meta.zr".into(), range: a..b + 1, if_match: None }
    }

    fn resp(status: u16, cr: Option<&str>, body: usize) -> RangeResponse {
        RangeResponse {
            status,
            content_range: cr.map(str::to_string),
            body: vec![7; body],
            ..Default::default()
        }
    }

    fn why(r: Result<Ranged, Fail>) -> String {
        match r {
            Err(Fail::Fatal(e)) => e.to_string(),
            Err(Fail::Retry(s)) => format!("retry: {s}"),
            Ok(r) => format!("ok {} of {}", r.bytes.len(), r.total),
        }
    }

    #[test]
    fn accepts_exact_and_clamped() {
        assert_eq!(why(judge(&req(0, 9), resp(206, Some("bytes 0-9/100"), 10))), "ok 10 of 100");
        assert_eq!(why(judge(&req(0, 99), resp(206, Some("bytes 0-4/5"), 5))), "ok 5 of 5");
        assert_eq!(why(judge(&req(5, 9), resp(416, Some("bytes */5"), 0))), "ok 0 of 5");
    }

    #[test]
    fn rejects_the_rest() {
        assert!(why(judge(&req(0, 9), resp(200, None, 10))).contains("does not support HTTP Range requests"));
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
}
