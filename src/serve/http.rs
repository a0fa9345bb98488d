//! The HTTP/1.1 wire: reading a bounded request head, writing a response.
//!
//! Only what a static server needs: no request bodies (a request announcing
//! one is answered and the connection closed), no chunked encoding, no
//! compression. Every response carries the CORS and `nosniff` headers, so no
//! handler can forget them.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom, Write};
use std::time::SystemTime;

use super::date::http_date;

/// Most bytes a request line plus headers may take.
pub(crate) const MAX_HEAD_BYTES: u64 = 16 * 1024;
/// Most header fields a request may carry.
pub(crate) const MAX_HEADERS: usize = 100;
/// Bodies up to this size are sent in the same write as the head.
const INLINE_BODY: u64 = 64 * 1024;

/// One parsed request head.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    pub target: String,
    /// `true` for HTTP/1.0, whose connections close unless asked otherwise.
    pub http10: bool,
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn connection_has(&self, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// Whether the client wants the connection kept open after this exchange.
    pub fn keep_alive(&self) -> bool {
        if self.http10 {
            self.connection_has("keep-alive")
        } else {
            !self.connection_has("close")
        }
    }

    /// Whether a body follows the head (which we never read, so the
    /// connection cannot be reused).
    pub fn has_body(&self) -> bool {
        self.header("transfer-encoding").is_some()
            || self.header("content-length").is_some_and(|v| v.trim() != "0")
    }
}

/// Why no request could be read; each maps to an answer, then a close.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Head larger than [`MAX_HEAD_BYTES`] or more than [`MAX_HEADERS`]: 431.
    TooLarge,
    /// Not HTTP: 400.
    Malformed,
    /// HTTP, but not 1.0 or 1.1: 505.
    Version,
    /// The socket failed or timed out part-way through a head: no answer.
    Io(io::Error),
}

/// Read one request head. `Ok(None)` when the peer closed (or went idle past
/// the read timeout) before sending a byte of a new request.
pub(crate) fn read_request<R: BufRead>(r: &mut R) -> Result<Option<Request>, ReadError> {
    let mut budget = MAX_HEAD_BYTES;
    let mut line = Vec::new();
    // RFC 9112 §2.2: ignore empty lines before the request line.
    let request_line = loop {
        line.clear();
        match read_line(r, &mut budget, &mut line) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(ReadError::Io(e)) if line.is_empty() && is_idle_end(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
        let trimmed = trim_eol(&line);
        if !trimmed.is_empty() {
            break trimmed.to_vec();
        }
    };
    let (method, target, http10) = parse_request_line(&request_line)?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if read_line(r, &mut budget, &mut line)? == 0 {
            return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let l = trim_eol(&line);
        if l.is_empty() {
            break;
        }
        if headers.len() == MAX_HEADERS {
            return Err(ReadError::TooLarge);
        }
        headers.push(parse_header(l)?);
    }
    Ok(Some(Request { method, target, http10, headers }))
}

fn is_idle_end(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// Read through the next `\n` without letting the whole head pass `budget`.
fn read_line<R: BufRead>(r: &mut R, budget: &mut u64, buf: &mut Vec<u8>) -> Result<usize, ReadError> {
    if *budget == 0 {
        return Err(ReadError::TooLarge);
    }
    let n = r.by_ref().take(*budget).read_until(b'\n', buf).map_err(ReadError::Io)?;
    *budget -= n as u64;
    if n > 0 && buf.last() != Some(&b'\n') {
        // Either the budget ran out or the peer closed mid-line.
        return Err(if *budget == 0 {
            ReadError::TooLarge
        } else {
            ReadError::Io(io::ErrorKind::UnexpectedEof.into())
        });
    }
    Ok(n)
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let l = line.strip_suffix(b"\n").unwrap_or(line);
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

fn parse_request_line(line: &[u8]) -> Result<(String, String, bool), ReadError> {
    let mut parts = line.split(|&c| c == b' ');
    let (Some(m), Some(t), Some(v), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(ReadError::Malformed);
    };
    if m.is_empty() || !m.iter().all(|&c| is_tchar(c)) {
        return Err(ReadError::Malformed);
    }
    // Targets are ASCII without controls; clients percent-encode the rest.
    if t.is_empty() || !t.iter().all(|&c| c.is_ascii_graphic()) {
        return Err(ReadError::Malformed);
    }
    let http10 = match v {
        b"HTTP/1.1" => false,
        b"HTTP/1.0" => true,
        _ if v.starts_with(b"HTTP/") => return Err(ReadError::Version),
        _ => return Err(ReadError::Malformed),
    };
    // Both were checked to be ASCII above.
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Ok((s(m), s(t), http10))
}

fn parse_header(line: &[u8]) -> Result<(String, String), ReadError> {
    let colon = line.iter().position(|&c| c == b':').ok_or(ReadError::Malformed)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    // Rejects obs-fold (a line starting with whitespace) and `Name : v`.
    if name.is_empty() || !name.iter().all(|&c| is_tchar(c)) {
        return Err(ReadError::Malformed);
    }
    if value.iter().any(|&c| c == 0 || c == b'\r' || c == b'\n') {
        return Err(ReadError::Malformed);
    }
    let value = String::from_utf8_lossy(value.trim_ascii()).into_owned();
    Ok((String::from_utf8_lossy(name).into_owned(), value))
}

/// What follows the response head.
#[derive(Debug)]
pub(crate) enum Body {
    /// No body and no `Content-Length` (204, 304).
    None,
    /// In-memory bytes.
    Bytes(Cow<'static, [u8]>),
    /// `len` bytes of `file` from `start`.
    File { file: File, start: u64, len: u64 },
}

impl Body {
    fn len(&self) -> Option<u64> {
        match self {
            Body::None => None,
            Body::Bytes(b) => Some(b.len() as u64),
            Body::File { len, .. } => Some(*len),
        }
    }
}

/// A response before the common headers are added.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Body,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response { status, headers: Vec::new(), body: Body::None }
    }

    /// A short `text/plain` answer naming the status (404, 403, …).
    pub fn text(status: u16) -> Self {
        let msg = format!("{status} {}\n", reason(status));
        Response::new(status)
            .header("Content-Type", "text/plain; charset=utf-8")
            .body(Body::Bytes(Cow::Owned(msg.into_bytes())))
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn body(mut self, body: Body) -> Self {
        self.body = body;
        self
    }
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        412 => "Precondition Failed",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Headers on every response: cross-origin reads of any store from any page
/// (the viewer may be hosted elsewhere), and no content sniffing.
const COMMON_HEADERS: &str = "Access-Control-Allow-Origin: *\r\n\
    Access-Control-Allow-Headers: Range, If-Match, Authorization\r\n\
    Access-Control-Expose-Headers: Content-Range, Content-Length, ETag, Accept-Ranges\r\n\
    X-Content-Type-Options: nosniff\r\n";

/// How a response should end the exchange.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Framing {
    /// Send the body (false for HEAD).
    pub send_body: bool,
    /// Keep the connection open afterwards.
    pub keep_alive: bool,
    /// The client spoke HTTP/1.0 (needs an explicit `Connection: keep-alive`).
    pub http10: bool,
}

/// Write `resp` and return how many body bytes went out.
///
/// # Errors
///
/// Any socket or file error; a file that shrank under us is `UnexpectedEof`.
/// After an error the connection must be closed: the framing is broken.
pub(crate) fn write_response<W: Write>(w: &mut W, resp: Response, f: Framing) -> io::Result<u64> {
    let mut head = Vec::with_capacity(512);
    write!(head, "HTTP/1.1 {} {}\r\n", resp.status, reason(resp.status))?;
    write!(head, "Date: {}\r\n", http_date(SystemTime::now()))?;
    head.extend_from_slice(COMMON_HEADERS.as_bytes());
    for (name, value) in &resp.headers {
        write!(head, "{name}: {value}\r\n")?;
    }
    if let Some(len) = resp.body.len() {
        write!(head, "Content-Length: {len}\r\n")?;
    }
    if !f.keep_alive {
        head.extend_from_slice(b"Connection: close\r\n");
    } else if f.http10 {
        head.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    head.extend_from_slice(b"\r\n");
    if !f.send_body {
        w.write_all(&head)?;
        w.flush()?;
        return Ok(0);
    }
    let sent = match resp.body {
        Body::None => {
            w.write_all(&head)?;
            0
        }
        Body::Bytes(b) => {
            head.extend_from_slice(&b);
            w.write_all(&head)?;
            b.len() as u64
        }
        Body::File { mut file, start, len } => {
            file.seek(SeekFrom::Start(start))?;
            if len <= INLINE_BODY {
                // One write for head and body: no Nagle/delayed-ACK stall and
                // one packet for the small ranged reads a store client makes.
                let at = head.len();
                head.resize(at + len as usize, 0);
                file.read_exact(&mut head[at..])?;
                w.write_all(&head)?;
            } else {
                w.write_all(&head)?;
                let copied = io::copy(&mut file.take(len), w)?;
                if copied != len {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
            len
        }
    };
    w.flush()?;
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> Result<Option<Request>, ReadError> {
        read_request(&mut io::BufReader::new(s.as_bytes()))
    }

    #[test]
    fn parses_a_head() {
        let r = read("\r\nGET /a?b HTTP/1.1\r\nHost: x\r\nRange:  bytes=0-1 \r\n\r\n").unwrap().unwrap();
        assert_eq!((r.method.as_str(), r.target.as_str(), r.http10), ("GET", "/a?b", false));
        assert_eq!(r.header("range"), Some("bytes=0-1"));
        assert!(r.keep_alive());
        assert!(!r.has_body());
        let r = read("GET / HTTP/1.0\nConnection: Keep-Alive\n\n").unwrap().unwrap();
        assert!(r.http10 && r.keep_alive());
        let r =
            read("GET / HTTP/1.1\r\nConnection: foo, close\r\nContent-Length: 3\r\n\r\n").unwrap().unwrap();
        assert!(!r.keep_alive() && r.has_body());
    }

    #[test]
    fn closed_or_bad_heads() {
        assert!(matches!(read(""), Ok(None)));
        assert!(matches!(read("GET / HTTP/1.1\r\nHost"), Err(ReadError::Io(_))));
        assert!(matches!(read("GET /  HTTP/1.1\r\n\r\n"), Err(ReadError::Malformed)));
        assert!(matches!(read("GET / HTTP/2.0\r\n\r\n"), Err(ReadError::Version)));
        assert!(matches!(read("GET / FTP\r\n\r\n"), Err(ReadError::Malformed)));
        assert!(matches!(read("GET /\x01 HTTP/1.1\r\n\r\n"), Err(ReadError::Malformed)));
        assert!(matches!(read("GET / HTTP/1.1\r\n folded\r\n\r\n"), Err(ReadError::Malformed)));
        assert!(matches!(read("GET / HTTP/1.1\r\nA : b\r\n\r\n"), Err(ReadError::Malformed)));
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD_BYTES as usize));
        assert!(matches!(read(&long), Err(ReadError::TooLarge)));
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(MAX_HEADERS + 1));
        assert!(matches!(read(&many), Err(ReadError::TooLarge)));
    }

    #[test]
    fn head_only_keeps_content_length() {
        let mut out = Vec::new();
        let resp = Response::text(404);
        let f = Framing { send_body: false, keep_alive: false, http10: false };
        assert_eq!(write_response(&mut out, resp, f).unwrap(), 0);
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("HTTP/1.1 404 Not Found\r\n"), "{s}");
        assert!(s.contains("\r\nContent-Length: 14\r\n"), "{s}");
        assert!(s.contains("\r\nConnection: close\r\n"), "{s}");
        assert!(s.contains("\r\nAccess-Control-Allow-Origin: *\r\n"), "{s}");
        assert!(s.ends_with("\r\n\r\n"), "{s}");
    }
}
