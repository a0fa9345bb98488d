//! The static server over real TCP: a plain HTTP/1.1 client on std sockets
//! against `zrecord::serve` on 127.0.0.1 with a free port.
#![cfg(feature = "native")]

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zrecord::serve::{self, ServeConfig, ServerHandle};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loaderx-2.0.1");

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    fn has(&self, name: &str, value: &str) -> bool {
        self.header(name) == Some(value)
    }
}

/// One client connection; requests on it reuse the socket (keep-alive).
struct Conn {
    r: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Conn { r: BufReader::new(s) }
    }

    /// Send raw bytes and read one response (no body for HEAD/204/304).
    fn raw(&mut self, request: &[u8], head_only: bool) -> Resp {
        self.r.get_mut().write_all(request).unwrap();
        self.read_response(head_only)
    }

    fn read_response(&mut self, head_only: bool) -> Resp {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        // HTTP/1.0 requests are answered as HTTP/1.0 (hyper); all others 1.1.
        assert!(line.starts_with("HTTP/1.1 ") || line.starts_with("HTTP/1.0 "), "status line {line:?}");
        let status: u16 = line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.r.read_line(&mut line).unwrap();
            let l = line.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.to_owned(), v.trim().to_owned()));
        }
        let mut resp = Resp { status, headers, body: Vec::new() };
        if head_only || status == 204 || status == 304 {
            return resp;
        }
        let len: usize = resp.header("content-length").expect("content-length").parse().unwrap();
        resp.body.resize(len, 0);
        self.r.read_exact(&mut resp.body).unwrap();
        resp
    }

    fn req(&mut self, method: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
        // A browser's Host: the address it connected to, unless the test names one.
        let mut s = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            s.push_str("Host: 127.0.0.1\r\n");
        }
        for (n, v) in headers {
            s.push_str(&format!("{n}: {v}\r\n"));
        }
        s.push_str("\r\n");
        self.raw(s.as_bytes(), method == "HEAD")
    }

    fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> Resp {
        self.req("GET", path, headers)
    }

    /// True if the server closed the connection (EOF with nothing pending).
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0))
    }
}

fn start(root: impl Into<PathBuf>) -> ServerHandle {
    serve::start(ServeConfig::new(root)).unwrap()
}

fn get(server: &ServerHandle, path: &str, headers: &[(&str, &str)]) -> Resp {
    Conn::open(server.addr()).get(path, headers)
}

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(rel)).unwrap()
}

fn assert_cors(r: &Resp) {
    assert!(r.has("Access-Control-Allow-Origin", "*"), "{r:?}");
    assert!(r.has("Access-Control-Allow-Headers", "Range, If-Match, Authorization"), "{r:?}");
    assert!(
        r.has("Access-Control-Expose-Headers", "Content-Range, Content-Length, ETag, Accept-Ranges"),
        "{r:?}"
    );
    assert!(r.has("X-Content-Type-Options", "nosniff"), "{r:?}");
}

/// Every store directory under the fixtures: (relative dir, [(file, size)]).
fn fixture_stores() -> Vec<(String, Vec<(String, u64)>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(FIXTURES).unwrap() {
        let e = e.unwrap();
        if !e.file_type().unwrap().is_dir() || !e.path().join("meta.zr").is_file() {
            continue;
        }
        let files = ["meta.zr", "data.zr", "dict.zr"]
            .iter()
            .filter_map(|f| std::fs::metadata(e.path().join(f)).ok().map(|m| (f.to_string(), m.len())))
            .collect();
        out.push((e.file_name().into_string().unwrap(), files));
    }
    out.sort();
    out
}

#[test]
fn full_get_equals_file_bytes() {
    let server = start(FIXTURES);
    let mut conn = Conn::open(server.addr());
    let stores = fixture_stores();
    assert!(stores.len() >= 20);
    for (dir, files) in &stores {
        for (f, size) in files {
            let path = format!("/{dir}/{f}");
            let r = conn.get(&path, &[("Accept-Encoding", "gzip, br")]);
            assert_eq!(r.status, 200, "{path}");
            assert_eq!(r.body, fixture(&format!("{dir}/{f}")), "{path}");
            assert_eq!(r.body.len() as u64, *size);
            assert!(r.has("Content-Type", "application/octet-stream"));
            assert!(r.has("Accept-Ranges", "bytes"));
            assert!(r.header("Content-Encoding").is_none());
            let etag = r.header("ETag").unwrap();
            assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2, "{etag}");
            assert!(r.header("Last-Modified").unwrap().ends_with(" GMT"));
            assert_cors(&r);
        }
    }
    let r = conn.get("/manifest.json", &[]);
    assert_eq!((r.status, r.body), (200, fixture("manifest.json")));
}

#[test]
fn single_ranges() {
    let server = start(FIXTURES);
    let path = "/dense-u8-img-zstd_dict/dict.zr";
    let full = fixture("dense-u8-img-zstd_dict/dict.zr");
    let size = full.len();
    let mut conn = Conn::open(server.addr());
    let cases: [(&str, usize, usize); 6] = [
        ("bytes=0-0", 0, 0),
        ("bytes=10-99", 10, 99),
        ("bytes=100-", 100, size - 1),
        ("bytes=-50", size - 50, size - 1),
        ("bytes=-999999", 0, size - 1),
        ("bytes=1000-99999999", 1000, size - 1),
    ];
    for (range, a, b) in cases {
        let r = conn.get(path, &[("Range", range)]);
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(r.header("Content-Range").unwrap(), format!("bytes {a}-{b}/{size}"), "{range}");
        assert_eq!(r.header("Content-Length").unwrap(), (b - a + 1).to_string());
        assert_eq!(r.body, &full[a..=b], "{range}");
        assert!(r.has("Accept-Ranges", "bytes"));
        assert_cors(&r);
    }
    // A big file, past the inline-write size, through the copy path.
    let big = fixture("dense-big-record-zstd/data.zr");
    assert!(big.len() > 64 * 1024);
    let r = conn.get("/dense-big-record-zstd/data.zr", &[("Range", "bytes=1-")]);
    assert_eq!((r.status, r.body.as_slice()), (206, &big[1..]));
}

#[test]
fn unsatisfiable_and_multi_range() {
    let server = start(FIXTURES);
    let path = "/dense-S5-raw/meta.zr";
    let full = fixture("dense-S5-raw/meta.zr");
    let size = full.len();
    let mut conn = Conn::open(server.addr());
    for range in [format!("bytes={size}-"), format!("bytes={}-{}", size + 5, size + 9), "bytes=-0".into()] {
        let r = conn.get(path, &[("Range", &range)]);
        assert_eq!(r.status, 416, "{range}");
        assert_eq!(r.header("Content-Range").unwrap(), format!("bytes */{size}"));
        assert_cors(&r);
    }
    // Multi-range and invalid ranges: ignored, full 200 (as S3).
    for range in ["bytes=0-1,5-9", "bytes=9-2", "lines=1-2"] {
        let r = conn.get(path, &[("Range", range)]);
        assert_eq!((r.status, &r.body), (200, &full), "{range}");
        assert!(r.header("Content-Range").is_none());
    }
}

#[test]
fn head_has_headers_no_body() {
    let server = start(FIXTURES);
    let path = "/dense-f32-zstd/data.zr";
    let mut conn = Conn::open(server.addr());
    let g = conn.get(path, &[]);
    let h = conn.req("HEAD", path, &[]);
    assert_eq!(h.status, 200);
    for name in ["Content-Length", "ETag", "Last-Modified", "Content-Type", "Accept-Ranges"] {
        assert_eq!(h.header(name), g.header(name), "{name}");
    }
    assert_cors(&h);
    // HEAD ignores Range (RFC 9110 defines ranges for GET only).
    let h = conn.req("HEAD", path, &[("Range", "bytes=0-3")]);
    assert_eq!((h.status, h.header("Content-Length")), (200, g.header("Content-Length")));
    let h = conn.req("HEAD", "/nope", &[]);
    assert_eq!(h.status, 404);
    // No stray body bytes: the connection still parses the next response.
    let r = conn.get(path, &[("Range", "bytes=0-3")]);
    assert_eq!((r.status, r.body.as_slice()), (206, &g.body[..4]));
}

fn copy_store(from: &str, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(Path::new(FIXTURES).join(from)).unwrap() {
        let e = e.unwrap();
        std::fs::write(to.join(e.file_name()), std::fs::read(e.path()).unwrap()).unwrap();
    }
}

#[test]
fn etag_is_stable_and_changes_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    copy_store("dense-S5-raw", &dir.path().join("s"));
    let server = start(dir.path());
    let path = "/s/data.zr";
    let e1 = get(&server, path, &[]).header("ETag").unwrap().to_owned();
    let e2 = get(&server, path, &[("Range", "bytes=0-3")]).header("ETag").unwrap().to_owned();
    assert_eq!(e1, e2);
    let file = dir.path().join("s/data.zr");
    // Same size, new mtime.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, vec![7u8; bytes.len()]).unwrap();
    let f = std::fs::File::options().write(true).open(&file).unwrap();
    f.set_modified(std::time::SystemTime::now() + Duration::from_secs(5)).unwrap();
    drop(f);
    let r = get(&server, path, &[]);
    let e3 = r.header("ETag").unwrap().to_owned();
    assert_ne!(e1, e3);
    assert_eq!(r.body, vec![7u8; bytes.len()]);
    // New size.
    std::fs::write(&file, b"shorter").unwrap();
    let e4 = get(&server, path, &[]).header("ETag").unwrap().to_owned();
    assert!(e4 != e3 && e4 != e1);
}

/// The server keeps files open between requests: a file replaced by a
/// rename, deleted, or whose path became a symlink out of the root must not
/// be answered from the file it held.
#[cfg(unix)]
#[test]
fn a_replaced_deleted_or_relinked_file_is_not_served_from_the_kept_one() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir_all(root.join("s")).unwrap();
    std::fs::write(outer.path().join("secret.txt"), b"TOP SECRET").unwrap();
    let file = root.join("s/data.zr");
    std::fs::write(&file, b"first").unwrap();
    let server = start(&root);
    let mut conn = Conn::open(server.addr());
    let r1 = conn.get("/s/data.zr", &[]);
    assert_eq!(r1.body, b"first");
    assert_eq!(conn.get("/s/data.zr", &[("Range", "bytes=1-2")]).body, b"ir");
    // Replaced by a rename (a new inode at the same path).
    std::fs::write(root.join("s/data.zr.tmp"), b"second!").unwrap();
    std::fs::rename(root.join("s/data.zr.tmp"), &file).unwrap();
    let r2 = conn.get("/s/data.zr", &[]);
    assert_eq!(r2.body, b"second!");
    assert_ne!(r1.header("ETag"), r2.header("ETag"));
    let stale = r1.header("ETag").unwrap();
    assert_eq!(conn.get("/s/data.zr", &[("If-Match", stale)]).status, 412);
    // Deleted, then back.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(conn.get("/s/data.zr", &[]).status, 404);
    std::fs::write(&file, b"third").unwrap();
    assert_eq!(conn.get("/s/data.zr", &[]).body, b"third");
    // The path turned into a symlink out of the root.
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), &file).unwrap();
    let r = conn.get("/s/data.zr", &[]);
    assert!(r.status == 403 || r.status == 404, "{}", r.status);
    assert!(!String::from_utf8_lossy(&r.body).contains("SECRET"));
    // A directory on the path turned into a symlink out of the root.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, b"fourth").unwrap();
    assert_eq!(conn.get("/s/data.zr", &[]).body, b"fourth");
    std::fs::create_dir(outer.path().join("elsewhere")).unwrap();
    std::fs::write(outer.path().join("elsewhere/data.zr"), b"TOP SECRET").unwrap();
    std::fs::rename(root.join("s"), outer.path().join("old-s")).unwrap();
    std::os::unix::fs::symlink(outer.path().join("elsewhere"), root.join("s")).unwrap();
    let r = conn.get("/s/data.zr", &[]);
    assert!(r.status == 403 || r.status == 404, "{}", r.status);
    assert!(!String::from_utf8_lossy(&r.body).contains("SECRET"));
}

/// Opening a FIFO for reading would wait for a writer; the server opens
/// without blocking and serves only regular files.
#[cfg(target_os = "linux")]
#[test]
fn a_fifo_is_not_served_and_blocks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo").arg(dir.path().join("pipe")).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no mkfifo");
        return;
    }
    std::fs::write(dir.path().join("ok.txt"), b"fine").unwrap();
    let server = serve::start(ServeConfig { threads: 1, ..ServeConfig::new(dir.path()) }).unwrap();
    let mut conn = Conn::open(server.addr());
    assert_eq!(conn.get("/pipe", &[]).status, 404);
    assert_eq!(conn.get("/ok.txt", &[]).body, b"fine");
}

#[test]
fn conditional_requests() {
    let server = start(FIXTURES);
    let path = "/ragged-i32-tokens-zstd/data.zr";
    let full = fixture("ragged-i32-tokens-zstd/data.zr");
    let mut conn = Conn::open(server.addr());
    let etag = conn.get(path, &[]).header("ETag").unwrap().to_owned();
    let r = conn.get(path, &[("If-None-Match", &etag)]);
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("ETag"), Some(etag.as_str()));
    assert_cors(&r);
    let r = conn.get(path, &[("If-None-Match", &format!("\"other\", W/{etag}"))]);
    assert_eq!(r.status, 304);
    let r = conn.get(path, &[("If-None-Match", "\"other\"")]);
    assert_eq!((r.status, &r.body), (200, &full));
    // If-Match: a client checking the store did not change under it.
    let r = conn.get(path, &[("If-Match", &etag), ("Range", "bytes=0-7")]);
    assert_eq!((r.status, r.body.as_slice()), (206, &full[..8]));
    let r = conn.get(path, &[("If-Match", "\"stale\""), ("Range", "bytes=0-7")]);
    assert_eq!(r.status, 412);
    assert_cors(&r);
    // If-Range: a stale validator gets the whole new representation.
    let r = conn.get(path, &[("If-Range", &etag), ("Range", "bytes=0-7")]);
    assert_eq!(r.status, 206);
    let r = conn.get(path, &[("If-Range", "\"stale\""), ("Range", "bytes=0-7")]);
    assert_eq!((r.status, &r.body), (200, &full));
}

#[test]
fn options_preflight() {
    let server = start(FIXTURES);
    let mut conn = Conn::open(server.addr());
    let r = conn.req(
        "OPTIONS",
        "/dense-S5-raw/data.zr",
        &[
            ("Origin", "http://example.com"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "range"),
        ],
    );
    assert_eq!(r.status, 204);
    assert!(r.has("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"));
    assert!(r.header("Content-Length").is_none());
    assert_cors(&r);
    // Other methods are refused, still with CORS.
    let r = conn.raw(b"DELETE /dense-S5-raw/data.zr HTTP/1.1\r\nHost: t\r\n\r\n", false);
    assert_eq!(r.status, 405);
    assert!(r.has("Allow", "GET, HEAD, OPTIONS"));
    assert_cors(&r);
}

#[test]
fn cors_on_partial_and_errors() {
    let server = start(FIXTURES);
    let mut conn = Conn::open(server.addr());
    let r = conn.get("/dense-S5-raw/data.zr", &[("Range", "bytes=0-1")]);
    assert_eq!(r.status, 206);
    assert_cors(&r);
    let r = conn.get("/dense-S5-raw/missing.zr", &[]);
    assert_eq!(r.status, 404);
    assert_cors(&r);
    let r = conn.get("/%2e%2e/x", &[]);
    assert_eq!(r.status, 403);
    assert_cors(&r);
}

#[test]
fn directories_are_not_served() {
    let server = start(FIXTURES);
    let mut conn = Conn::open(server.addr());
    for p in ["/", "/dense-S5-raw", "/dense-S5-raw/", "/dense-S5-raw/meta.zr/"] {
        assert_eq!(conn.get(p, &[]).status, 404, "{p}");
    }
}

#[cfg(unix)]
#[test]
fn traversal_is_refused() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(outer.path().join("secret.txt"), b"TOP SECRET").unwrap();
    std::fs::write(root.join("sub/ok.txt"), b"fine").unwrap();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), root.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(outer.path(), root.join("leakdir")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
    std::os::unix::fs::symlink(root.join("sub/ok.txt"), root.join("inside.txt")).unwrap();
    let server = start(&root);
    let mut conn = Conn::open(server.addr());
    for p in [
        "/../secret.txt",
        "/sub/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/sub/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/..%5csecret.txt",
        "/..\\secret.txt",
        "//etc/passwd",
        "/%2fetc%2fpasswd",
        "/sub/ok.txt%00",
        "/leak.txt",
        "/leakdir/secret.txt",
        "/passwd",
        "http://test/../secret.txt",
        "/./sub/ok.txt",
    ] {
        let r = conn.get(p, &[]);
        assert!(r.status == 403 || r.status == 404, "{p}: {}", r.status);
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("SECRET") && !body.contains("root:"), "{p}");
        assert_cors(&r);
    }
    assert_eq!(conn.get("/etc/passwd", &[]).status, 404);
    // A target that is no path at all: hyper refuses it (400) and closes.
    let r = Conn::open(server.addr()).get("etc/passwd", &[]);
    assert!(matches!(r.status, 400 | 403 | 404), "etc/passwd: {}", r.status);
    // Symlinks that stay inside the root are fine.
    assert_eq!(conn.get("/inside.txt", &[]).body, b"fine");
    assert_eq!(conn.get("/sub/ok.txt", &[]).body, b"fine");
    // Bad percent-encoding is a 400.
    assert_eq!(conn.get("/%zz", &[]).status, 400);
}

#[test]
fn api_stores_lists_every_fixture_store() {
    let server = start(FIXTURES);
    let r = get(&server, "/api/stores", &[]);
    assert_eq!(r.status, 200);
    assert!(r.has("Content-Type", "application/json"));
    assert_cors(&r);
    let json: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let listed: Vec<(String, Vec<(String, u64)>)> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let path = s["path"].as_str().unwrap().to_owned();
            assert_eq!(s["url"].as_str().unwrap(), format!("/{path}/"));
            let files = s["files"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect();
            (path, files)
        })
        .collect();
    let mut expected = fixture_stores();
    for (_, files) in &mut expected {
        files.sort();
    }
    let mut listed_sorted = listed.clone();
    for (_, files) in &mut listed_sorted {
        files.sort();
    }
    assert_eq!(listed_sorted, expected);
    // Each listed URL really serves the file.
    let mut conn = Conn::open(server.addr());
    for (path, files) in &listed {
        for (f, size) in files {
            let r = conn.req("HEAD", &format!("/{path}/{f}"), &[]);
            assert_eq!(r.header("Content-Length"), Some(size.to_string().as_str()));
        }
    }
}

fn viewer_assets(path: &str) -> Option<(Cow<'static, [u8]>, &'static str)> {
    match path {
        "index.html" => {
            Some((Cow::Borrowed(b"<!doctype html><title>viewer</title>"), "text/html; charset=utf-8"))
        }
        "pkg/zrecord_bg.wasm" => Some((Cow::Owned(b"\0asm\x01\0\0\0".to_vec()), "application/wasm")),
        "manifest.json" => Some((Cow::Borrowed(b"{}"), "application/json")),
        _ => None,
    }
}

#[test]
fn assets_hook_and_precedence() {
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.assets = Some(Box::new(viewer_assets));
    let server = serve::start(cfg).unwrap();
    let mut conn = Conn::open(server.addr());
    let r = conn.get("/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"<!doctype html><title>viewer</title>");
    assert!(r.has("Content-Type", "text/html; charset=utf-8"));
    assert_cors(&r);
    let r = conn.get("/?store=dense-S5-raw", &[]);
    assert_eq!(r.status, 200);
    let r = conn.get("/pkg/zrecord_bg.wasm", &[("Range", "bytes=0-3")]);
    assert_eq!((r.status, r.body.as_slice()), (206, b"\0asm".as_slice()));
    assert!(r.has("Content-Type", "application/wasm"));
    let etag = r.header("ETag").unwrap().to_owned();
    assert_eq!(conn.get("/pkg/zrecord_bg.wasm", &[("If-None-Match", &etag)]).status, 304);
    // The viewer's asset wins over a file of the root with the same name:
    // a served folder cannot replace the viewer's code.
    let r = conn.get("/manifest.json", &[]);
    assert_eq!(r.body, b"{}");
    // Traversal is refused before the hook is asked.
    assert_eq!(conn.get("/pkg/../index.html", &[]).status, 403);
    assert_eq!(conn.get("/nothing.js", &[]).status, 404);
}

#[test]
fn keep_alive_and_close() {
    let server = start(FIXTURES);
    let meta = fixture("dense-S5-raw/meta.zr");
    let mut conn = Conn::open(server.addr());
    let a = conn.get("/dense-S5-raw/meta.zr", &[]);
    let b = conn.get("/dense-S5-raw/meta.zr", &[("Range", "bytes=0-9")]);
    assert_eq!((a.status, b.status), (200, 206));
    assert_eq!(a.body, meta);
    assert!(a.header("Connection").is_none());
    // Pipelined: two requests in one write, two responses in order.
    conn.r
        .get_mut()
        .write_all(b"GET /dense-S5-raw/meta.zr HTTP/1.1\r\nHost: t\r\n\r\nHEAD /dense-S5-raw/data.zr HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(conn.read_response(false).body, meta);
    assert_eq!(conn.read_response(true).status, 200);
    // `Connection: close` is honoured.
    let r = conn.get("/dense-S5-raw/meta.zr", &[("Connection", "close")]);
    assert!(r.has("Connection", "close"));
    assert!(conn.closed());
    // HTTP/1.0 closes unless asked to keep alive.
    let mut c10 = Conn::open(server.addr());
    let r = c10.raw(b"GET /dense-S5-raw/meta.zr HTTP/1.0\r\n\r\n", false);
    assert_eq!(r.body, meta);
    assert!(c10.closed());
    let mut c10 = Conn::open(server.addr());
    let r = c10.raw(b"GET /dense-S5-raw/meta.zr HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false);
    assert!(r.has("Connection", "keep-alive"));
    let r = c10.raw(b"GET /dense-S5-raw/meta.zr HTTP/1.0\r\n\r\n", false);
    assert_eq!(r.body, meta);
}

#[test]
fn bad_requests_are_bounded() {
    let server = start(FIXTURES);
    let mut conn = Conn::open(server.addr());
    let huge = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(20_000));
    let r = conn.raw(huge.as_bytes(), false);
    assert_eq!(r.status, 431);
    assert_cors(&r);
    let mut conn = Conn::open(server.addr());
    assert_eq!(conn.raw(b"NOT HTTP AT ALL\r\n\r\n", false).status, 400);
    let mut conn = Conn::open(server.addr());
    // hyper answers an unknown HTTP version with 400 (was 505).
    assert_eq!(conn.raw(b"GET / HTTP/2.0\r\n\r\n", false).status, 400);
    // A request with a body is answered, then the connection is closed.
    let mut conn = Conn::open(server.addr());
    let r = conn.raw(b"GET /dense-S5-raw/meta.zr HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", false);
    assert_eq!(r.status, 200);
    assert!(r.has("Connection", "close"));
}

#[test]
fn connection_limit_answers_503() {
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.max_connections = 1;
    let server = serve::start(cfg).unwrap();
    let mut first = Conn::open(server.addr());
    assert_eq!(first.get("/dense-S5-raw/meta.zr", &[]).status, 200);
    let mut second = Conn::open(server.addr());
    let r = second.read_response(false);
    assert_eq!(r.status, 503);
    assert_cors(&r);
    drop(first);
    // The slot frees once the first connection's thread sees the close.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = Conn::open(server.addr());
        c.r.get_mut().write_all(b"GET /dense-S5-raw/meta.zr HTTP/1.1\r\n\r\n").unwrap();
        if c.read_response(false).status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "slot never freed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn shutdown_closes_idle_connections_promptly() {
    let server = start(FIXTURES);
    let addr = server.addr();
    let mut idle = Conn::open(addr);
    assert_eq!(idle.get("/dense-S5-raw/meta.zr", &[]).status, 200);
    let t = Instant::now();
    server.shutdown();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(idle.closed());
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}

#[test]
fn wait_returns_after_stop() {
    let server = start(FIXTURES);
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.url().ends_with('/'));
    let stopper = server.stopper();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        stopper.stop();
    });
    server.wait();
    t.join().unwrap();
}

#[test]
fn start_errors() {
    let e = serve::start(ServeConfig::new("/definitely/not/here")).unwrap_err();
    assert!(matches!(e, zrecord::Error::Io { .. }), "{e}");
    let e = serve::start(ServeConfig::new(format!("{FIXTURES}/manifest.json"))).unwrap_err();
    assert!(matches!(e, zrecord::Error::NotFound { .. }), "{e}");
    let a = start(FIXTURES);
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.port = a.addr().port();
    assert!(matches!(serve::start(cfg), Err(zrecord::Error::Io { .. })));
}

#[test]
fn slow_heads_and_idle_connections_are_closed() {
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.head_timeout = Duration::from_millis(1000);
    cfg.idle_timeout = Duration::from_millis(2500);
    let server = serve::start(cfg).unwrap();
    let t0 = Instant::now();
    // A head trickling in a byte at a time: the trickle does not extend it.
    let mut slow = Conn::open(server.addr());
    slow.r.get_mut().write_all(b"GET /dense-S5-raw/meta.zr HTTP/1.1\r\n").unwrap();
    // Silent from the start: the head deadline runs from the accept.
    let mut silent = Conn::open(server.addr());
    // Idle after an answer: kept past the head timeout, closed at the idle one.
    let mut idle = Conn::open(server.addr());
    assert_eq!(idle.get("/dense-S5-raw/meta.zr", &[]).status, 200);
    let mut slow_closed = false;
    while t0.elapsed() < Duration::from_millis(1800) {
        std::thread::sleep(Duration::from_millis(200));
        if slow.r.get_mut().write_all(b"X").is_err() {
            slow_closed = true;
            break;
        }
    }
    slow_closed = slow_closed || slow.closed();
    assert!(slow_closed, "a trickled head outlived the head timeout");
    assert!(silent.closed());
    assert!(t0.elapsed() < Duration::from_millis(2400));
    // Still open: a request goes through on the same connection.
    assert_eq!(idle.get("/dense-S5-raw/meta.zr", &[]).status, 200);
    let t1 = Instant::now();
    assert!(idle.closed(), "the idle connection was never closed");
    let waited = t1.elapsed();
    assert!(
        waited > Duration::from_millis(1500) && waited < Duration::from_secs(5),
        "closed after {waited:?}"
    );
}

/// An upstream in memory for the proxy: files with a version each, and what
/// was asked of it (the longest read, the most reads at once).
#[derive(Default)]
struct Upstream {
    files: std::sync::Mutex<std::collections::HashMap<String, (Vec<u8>, String)>>,
    longest: std::sync::atomic::AtomicU64,
    now: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
    reads: std::sync::atomic::AtomicUsize,
    delay: Duration,
}

impl serve::Upstream for Upstream {
    fn read(&self, path: &str, range: std::ops::Range<u64>) -> zrecord::Result<zrecord::remote::Ranged> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.reads.fetch_add(1, SeqCst);
        self.peak.fetch_max(now, SeqCst);
        self.longest.fetch_max(range.end - range.start, SeqCst);
        std::thread::sleep(self.delay);
        let got = self.files.lock().unwrap().get(path).cloned();
        self.now.fetch_sub(1, SeqCst);
        let (bytes, version) = got
            .ok_or_else(|| zrecord::Error::NotFound { store: path.into(), what: "no such object".into() })?;
        let total = bytes.len() as u64;
        let (s, e) = (range.start.min(total) as usize, range.end.min(total) as usize);
        Ok(zrecord::remote::Ranged { bytes: bytes[s..e].to_vec(), total, version: Some(version) })
    }
    fn name(&self) -> String {
        "mem://up/".into()
    }
}

fn proxied(up: &std::sync::Arc<Upstream>) -> ServerHandle {
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.proxy = Some((String::new(), up.clone() as std::sync::Arc<dyn serve::Upstream>));
    serve::start(cfg).unwrap()
}

#[test]
fn proxy_pins_each_file_and_bounds_every_read() {
    let up = std::sync::Arc::new(Upstream::default());
    let meta = fixture("dense-u8-img-raw/meta.zr");
    let big = vec![7u8; 20 << 20];
    up.files.lock().unwrap().insert("s/meta.zr".into(), (meta.clone(), "\"v1\"".into()));
    up.files.lock().unwrap().insert("s/big".into(), (big, "\"b1\"".into()));
    let server = proxied(&up);

    let r = get(&server, "/s/meta.zr", &[("Range", "bytes=10-19")]);
    assert_eq!(r.status, 206, "{r:?}");
    assert_eq!(r.body, meta[10..20]);
    assert!(r.has("Content-Range", &format!("bytes 10-19/{}", meta.len())), "{r:?}");
    assert!(r.has("ETag", "\"v1\""), "{r:?}");
    assert_eq!(r.header("Access-Control-Allow-Origin"), None, "{r:?}");
    // Whole (it is small), HEAD, past the end, missing, a failed If-Match.
    assert_eq!(get(&server, "/s/meta.zr", &[]).body, meta);
    let h = Conn::open(server.addr()).req("HEAD", "/s/meta.zr", &[]);
    assert_eq!((h.status, h.header("content-length")), (200, Some(meta.len().to_string().as_str())));
    assert_eq!(get(&server, "/s/meta.zr", &[("Range", &format!("bytes={}-", meta.len()))]).status, 416);
    assert_eq!(get(&server, "/s/none", &[("Range", "bytes=0-9")]).status, 404);
    assert_eq!(get(&server, "/s/meta.zr", &[("Range", "bytes=0-9"), ("If-Match", "\"v0\"")]).status, 412);

    // Replaced upstream: refused, never the new bytes under the old name.
    let mut other = meta.clone();
    other[10] ^= 0xff;
    up.files.lock().unwrap().insert("s/meta.zr".into(), (other, "\"v2\"".into()));
    let r = get(&server, "/s/meta.zr", &[("Range", "bytes=10-19")]);
    assert_eq!(r.status, 412, "{r:?}");
    assert!(String::from_utf8_lossy(&r.body).contains("replaced upstream"), "{r:?}");

    // A 20 MiB file: never whole, never more than PROXY_MAX_RANGE per read.
    assert_eq!(get(&server, "/s/big", &[]).status, 413);
    assert_eq!(get(&server, "/s/big", &[("Range", "bytes=0-")]).status, 413);
    let r = get(&server, "/s/big", &[("Range", "bytes=1000-1999")]);
    assert_eq!((r.status, r.body.len()), (206, 1000));
    assert!(up.longest.load(std::sync::atomic::Ordering::SeqCst) <= serve::PROXY_MAX_RANGE);
}

#[test]
fn proxy_bounds_reads_in_flight() {
    let up = std::sync::Arc::new(Upstream { delay: Duration::from_millis(50), ..Default::default() });
    up.files.lock().unwrap().insert("f".into(), (vec![1u8; 4096], "\"x\"".into()));
    let server = proxied(&up);
    let addr = server.addr();
    let clients: Vec<_> = (0..48)
        .map(|k| {
            std::thread::spawn(move || {
                Conn::open(addr).get("/f", &[("Range", &format!("bytes={k}-{}", k + 9))]).status
            })
        })
        .collect();
    for c in clients {
        assert_eq!(c.join().unwrap(), 206);
    }
    let peak = up.peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak > 1 && peak <= serve::PROXY_IN_FLIGHT, "{peak} reads at once");
}

/// The proxy reads with the process's credentials: another origin (any page
/// open in the browser, `fetch("http://127.0.0.1:8750/data.zr")`) must not
/// read its answers. The viewer is served by the same server, same-origin,
/// and needs no CORS; the served folder's own files keep it.
#[test]
fn proxied_files_are_not_readable_from_other_origins() {
    let up = std::sync::Arc::new(Upstream::default());
    up.files.lock().unwrap().insert("remote/meta.zr".into(), (vec![1u8; 64], "\"p1\"".into()));
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.proxy = Some(("remote".into(), up.clone() as std::sync::Arc<dyn serve::Upstream>));
    let server = serve::start(cfg).unwrap();
    let from_elsewhere = [("Origin", "https://evil.example"), ("Range", "bytes=0-9")];
    for r in [
        get(&server, "/remote/meta.zr", &from_elsewhere),
        get(&server, "/remote/meta.zr", &[("Origin", "https://evil.example")]),
        get(&server, "/remote/none", &from_elsewhere),
        Conn::open(server.addr()).req("HEAD", "/remote/meta.zr", &[("Origin", "https://evil.example")]),
    ] {
        assert!(r.status < 500, "{r:?}");
        assert_eq!(
            r.header("Access-Control-Allow-Origin"),
            None,
            "a proxied answer readable from any origin: {r:?}"
        );
        assert_eq!(r.header("Access-Control-Expose-Headers"), None, "{r:?}");
    }
    // The folder's own files are still readable from any page.
    let r = get(&server, "/dense-u8-img-raw/meta.zr", &from_elsewhere);
    assert_eq!(r.status, 206, "{r:?}");
    assert_cors(&r);
}

/// A page whose host name was made to resolve to this machine (DNS
/// rebinding) is same-origin with the server: proxied files answer only
/// at an IP address or `localhost`, where such a page's requests never
/// arrive (they carry its own name as `Host`).
#[test]
fn proxied_files_answer_only_at_an_address_or_localhost() {
    let up = std::sync::Arc::new(Upstream::default());
    up.files.lock().unwrap().insert("meta.zr".into(), (vec![1u8; 64], "\"p1\"".into()));
    let mut cfg = ServeConfig::new(FIXTURES);
    cfg.proxy = Some(("remote".into(), up.clone() as std::sync::Arc<dyn serve::Upstream>));
    let server = serve::start(cfg).unwrap();
    let port = server.addr().port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "LOCALHOST".into(),
    ] {
        let r = get(&server, "/remote/meta.zr", &[("Host", &host)]);
        assert_eq!((r.status, r.body.len()), (200, 64), "Host {host}: {r:?}");
    }
    let reads = up.reads.load(std::sync::atomic::Ordering::SeqCst);
    for host in
        [format!("rebound.example:{port}"), "rebound.example".into(), format!("127.0.0.1.nip.io:{port}")]
    {
        let r = get(&server, "/remote/meta.zr", &[("Host", &host)]);
        assert_eq!(r.status, 421, "Host {host}: {r:?}");
        assert!(String::from_utf8_lossy(&r.body).contains("DNS rebinding"), "{r:?}");
    }
    assert_eq!(
        up.reads.load(std::sync::atomic::Ordering::SeqCst),
        reads,
        "a refused request reached the bucket"
    );
    // The folder's own files answer under any name, as before.
    let r = get(&server, "/dense-u8-img-raw/meta.zr", &[("Host", "files.example")]);
    assert_eq!(r.status, 200, "{r:?}");
}
