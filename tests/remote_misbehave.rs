//! Servers that get HTTP wrong, one test each: the reader fails with a clear
//! error (or recovers, for transient failures), never panics, never hangs.
//! The server is ours: a std TcpListener answering from a fixture store.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zrecord::remote::{BlockingStore, HttpOptions, RemoteOptions};
use zrecord::Records;
use zrecord::{Error, Result};

/// One parsed request.
#[derive(Debug)]
struct Req {
    /// File name (`meta.zr`, ...).
    file: String,
    range: Option<(u64, u64)>,
    if_match: Option<String>,
}

/// One answer.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Value of Content-Length (defaults to the body length).
    content_length: Option<usize>,
    delay: Duration,
}

/// What a well-behaved server answers.
fn good(req: &Req, file: Option<&Vec<u8>>) -> Reply {
    let reply = |status: u16, headers: Vec<(String, String)>, body: Vec<u8>| Reply {
        status,
        headers,
        body,
        content_length: None,
        delay: Duration::ZERO,
    };
    let Some(bytes) = file else {
        return reply(404, vec![], b"not found".to_vec());
    };
    let total = bytes.len() as u64;
    let etag = ("ETag".to_string(), "\"v1\"".to_string());
    match req.range {
        None => reply(200, vec![etag], bytes.clone()),
        Some((a, _)) if a >= total => {
            reply(416, vec![("Content-Range".into(), format!("bytes */{total}"))], vec![])
        }
        Some((a, b)) => {
            let b = b.min(total - 1);
            reply(
                206,
                vec![etag, ("Content-Range".into(), format!("bytes {a}-{b}/{total}"))],
                bytes[a as usize..=b as usize].to_vec(),
            )
        }
    }
}

type Behaviour = dyn Fn(&Req, usize, Reply) -> Reply + Send + Sync;

/// Serve the fixture store `name`, passing each well-behaved reply (and the
/// request's number, from 0) through `behave`. Returns the URL and a counter.
fn serve(name: &str, behave: Box<Behaviour>) -> (String, Arc<AtomicUsize>) {
    let dir = common::fixtures_dir().join(name);
    let mut files = HashMap::new();
    for f in ["meta.zr", "data.zr", "dict.zr"] {
        if let Ok(b) = std::fs::read(dir.join(f)) {
            files.insert(f.to_string(), b);
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/{name}/", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    let files = Arc::new(files);
    let behave: Arc<Behaviour> = Arc::from(behave);
    std::thread::spawn(move || {
        // Bounded: the test process ends, and with it this loop.
        for stream in listener.incoming().take(10_000) {
            let Ok(stream) = stream else { continue };
            let (files, counter, behave) = (files.clone(), counter.clone(), behave.clone());
            std::thread::spawn(move || answer(stream, &files, &counter, &*behave));
        }
    });
    (url, count)
}

fn answer(
    mut stream: std::net::TcpStream,
    files: &HashMap<String, Vec<u8>>,
    counter: &AtomicUsize,
    behave: &Behaviour,
) {
    {
        {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                return;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let mut req = Req {
                file: path.rsplit('/').next().unwrap_or_default().to_string(),
                range: None,
                if_match: None,
            };
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap_or((&h, ""));
                let v = v.trim();
                if k.eq_ignore_ascii_case("range") {
                    let (a, b) = v.strip_prefix("bytes=").unwrap().split_once('-').unwrap();
                    req.range = Some((a.parse().unwrap(), b.parse().unwrap()));
                } else if k.eq_ignore_ascii_case("if-match") {
                    req.if_match = Some(v.to_string());
                }
            }
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let reply = behave(&req, n, good(&req, files.get(&req.file)));
            std::thread::sleep(reply.delay);
            let mut head = format!(
                "HTTP/1.1 {} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                reply.status,
                reply.content_length.unwrap_or(reply.body.len())
            );
            for (k, v) in &reply.headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&reply.body);
        }
    }
}

fn options() -> RemoteOptions {
    RemoteOptions { backoff: Duration::from_millis(1), ..Default::default() }
}

fn open(url: &str) -> Result<BlockingStore> {
    zrecord::open::remote(url, &zrecord::open::Options { remote: options(), ..Default::default() })
}

fn open_err(url: &str) -> Error {
    match open(url) {
        Ok(s) => panic!("{url} opened: {s:?}"),
        Err(e) => e,
    }
}

const STORE: &str = "dense-f32-zstd";

#[test]
fn server_ignoring_range_is_named() {
    let (url, _) = serve(
        STORE,
        Box::new(|req, _, _| {
            let whole = Req { range: None, file: req.file.clone(), if_match: None };
            good(&whole, Some(&fixture_file(&req.file)))
        }),
    );
    let e = open_err(&url);
    assert!(
        matches!(e, Error::Remote { .. }) && e.to_string().contains("does not support HTTP Range requests"),
        "{e}"
    );
}

/// A file of the served fixture store.
fn fixture_file(file: &str) -> Vec<u8> {
    std::fs::read(common::fixtures_dir().join(STORE).join(file)).unwrap()
}

#[test]
fn gzipped_responses_are_refused() {
    let (url, _) = serve(
        STORE,
        Box::new(|_, _, mut r| {
            r.headers.push(("Content-Encoding".into(), "gzip".into()));
            r
        }),
    );
    let e = open_err(&url);
    assert!(e.to_string().contains("Content-Encoding: gzip"), "{e}");
    assert!(e.to_string().contains("gzip off"), "{e}");
}

#[test]
fn wrong_content_range_is_refused() {
    let (url, _) = serve(
        STORE,
        Box::new(|_, _, mut r| {
            for (k, v) in &mut r.headers {
                if k == "Content-Range" {
                    *v = v.replacen("bytes 0-", "bytes 1-", 1);
                }
            }
            r
        }),
    );
    let e = open_err(&url);
    assert!(e.to_string().contains("Content-Range"), "{e}");
}

#[test]
fn truncated_body_is_refused() {
    // The open read is fine; data answers lose their last byte.
    let (url, _) = serve(
        STORE,
        Box::new(|req, _, mut r| {
            if req.file == "data.zr" {
                r.body.pop();
            }
            r
        }),
    );
    let store = open(&url).unwrap();
    let e = store.gather(&[0, 5]).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[test]
fn body_longer_than_asked_is_refused() {
    let (url, _) = serve(
        STORE,
        Box::new(|req, _, mut r| {
            if req.file == "data.zr" {
                r.body.extend_from_slice(&[0; 100]);
            }
            r
        }),
    );
    let store = open(&url).unwrap();
    let e = store.gather(&[3]).unwrap_err();
    assert!(e.to_string().contains("body has"), "{e}");
}

#[test]
fn etag_change_mid_session_is_store_changed() {
    let (url, count) = serve(
        STORE,
        Box::new(|_, n, mut r| {
            if n >= 2 {
                for (k, v) in &mut r.headers {
                    if k == "ETag" {
                        *v = "\"v2\"".into();
                    }
                }
            }
            r
        }),
    );
    let store = open(&url).unwrap(); // request 0
    store.gather(&[1]).unwrap(); // request 1: data.zr's ETag is "v1"
    let e = store.gather(&[2]).unwrap_err(); // request 2: "v2"
    assert!(matches!(e, Error::StoreChanged { .. }), "{e:?}");
    assert!(e.to_string().contains("ETag"), "{e}");
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[test]
fn size_change_mid_session_is_store_changed() {
    let (url, _) = serve(
        STORE,
        Box::new(|req, n, mut r| {
            if n >= 2 && req.file == "data.zr" {
                for (k, v) in &mut r.headers {
                    if k == "Content-Range" {
                        let (span, total) = v.split_once('/').unwrap();
                        *v = format!("{span}/{}", total.parse::<u64>().unwrap() + 10);
                    }
                }
            }
            r
        }),
    );
    let store = open(&url).unwrap();
    store.gather(&[1]).unwrap();
    let e = store.gather(&[2]).unwrap_err();
    assert!(matches!(e, Error::StoreChanged { .. }), "{e:?}");
}

#[test]
fn two_server_errors_then_success_is_retried() {
    let (url, count) = serve(
        STORE,
        Box::new(|_, n, r| {
            if n < 2 {
                Reply {
                    status: 500,
                    headers: vec![],
                    body: b"oops".to_vec(),
                    content_length: None,
                    delay: Duration::ZERO,
                }
            } else {
                r
            }
        }),
    );
    let store = open(&url).unwrap();
    let s = store.stats();
    assert_eq!((s.requests, s.retries), (3, 2), "{s:?}");
    assert_eq!(count.load(Ordering::SeqCst), 3);
    assert_eq!(store.len(), 33);
    // Persistent failure gives up after the bounded retries.
    let (url, count) = serve(
        STORE,
        Box::new(|_, _, mut r| {
            r.status = 503;
            r
        }),
    );
    let e = open_err(&url);
    assert!(e.to_string().contains("HTTP 503") && e.to_string().contains("4 attempts"), "{e}");
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

#[test]
fn timeouts_are_retried_then_reported() {
    let (url, count) = serve(
        STORE,
        Box::new(|_, n, mut r| {
            if n == 0 {
                r.delay = Duration::from_millis(1500);
            }
            r
        }),
    );
    let http = HttpOptions { timeout: Duration::from_millis(300), ..Default::default() };
    let store = zrecord::open::remote(
        &url,
        &zrecord::open::Options { remote: options(), http, ..Default::default() },
    )
    .unwrap();
    assert_eq!(store.stats().retries, 1);
    assert!(count.load(Ordering::SeqCst) >= 2);
}

#[test]
fn not_found_and_forbidden_name_the_url() {
    let (missing, _) = serve(STORE, Box::new(|req, _, _| good(req, None)));
    let e = open_err(&missing);
    assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
    assert!(e.to_string().contains(&format!("{missing}meta.zr")), "{e}");
    assert!(e.to_string().contains("not found"), "{e}");

    let (url, _) = serve(
        STORE,
        Box::new(|_, _, mut r| {
            r.status = 403;
            r.body = b"no".to_vec();
            r.headers.clear();
            r
        }),
    );
    let e = open_err(&url);
    assert!(e.to_string().contains("forbidden"), "{e}");
    assert!(e.to_string().contains(&format!("{url}meta.zr")), "{e}");
}

#[test]
fn missing_data_and_dict_files() {
    // data.zr gone: the store opens (one request), the first gather says so.
    let (url, _) =
        serve(STORE, Box::new(|req, _, r| if req.file == "data.zr" { good(req, None) } else { r }));
    let store = open(&url).unwrap();
    let e = store.gather(&[0]).unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }) && e.to_string().contains("data.zr"), "{e}");
    // dict.zr gone from a zstd_dict store: the format's own error.
    let (url, _) = serve(
        "dense-u8-img-zstd_dict",
        Box::new(|req, _, r| if req.file == "dict.zr" { good(req, None) } else { r }),
    );
    let e = open_err(&url);
    assert!(e.to_string().contains("dict.zr is missing"), "{e}");
}

#[test]
fn data_shorter_than_tail_offset_is_bad_format() {
    let (url, _) = serve(
        STORE,
        Box::new(|req, _, r| {
            if req.file == "data.zr" {
                let mut bytes = fixture_file("data.zr");
                bytes.truncate(bytes.len() - 1);
                good(req, Some(&bytes))
            } else {
                r
            }
        }),
    );
    let store = open(&url).unwrap();
    let e = store.gather(&[0]).unwrap_err();
    assert!(matches!(e, Error::BadFormat { .. }), "{e:?}");
    assert!(e.to_string().contains("shorter than tail_offset"), "{e}");
}

#[test]
fn empty_and_tiny_meta_files_are_bad_format() {
    // 0 bytes: the server answers 416 (bytes */0); 20 bytes: a short 206.
    for keep in [0usize, 20] {
        let (url, _) = serve(
            STORE,
            Box::new(move |req, _, r| {
                if req.file == "meta.zr" {
                    let mut bytes = fixture_file("meta.zr");
                    bytes.truncate(keep);
                    good(req, Some(&bytes))
                } else {
                    r
                }
            }),
        );
        let e = open_err(&url);
        assert!(matches!(e, Error::BadFormat { .. }), "{e:?}");
        assert!(e.to_string().contains("shorter than the 32-byte header"), "{e}");
    }
}

#[test]
fn hostile_meta_answers_fail_cleanly() {
    // A Content-Range claiming an absurd file size, and garbage headers.
    let (url, _) = serve(
        STORE,
        Box::new(|req, _, mut r| {
            if req.file == "meta.zr" {
                for (k, v) in &mut r.headers {
                    if k == "Content-Range" {
                        *v = "bytes 0-65535/18446744073709551615".into();
                    }
                }
            }
            r
        }),
    );
    let e = open_err(&url);
    assert!(e.to_string().contains("Content-Range") || e.to_string().contains("body"), "{e}");
    let (url, _) = serve(
        STORE,
        Box::new(|req, _, mut r| {
            if req.file == "meta.zr" {
                r.body.iter_mut().take(32).for_each(|b| *b = 0xFF);
            }
            r
        }),
    );
    let e = open_err(&url);
    assert!(matches!(e, Error::BadFormat { .. }), "{e:?}");
}

#[test]
fn if_match_is_off_by_default_and_sent_when_asked() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let (url, _) = serve(
        STORE,
        Box::new(move |req, _, r| {
            log.lock().unwrap().push(req.if_match.clone());
            r
        }),
    );
    let store = open(&url).unwrap();
    store.gather(&[0]).unwrap();
    let opts = RemoteOptions { if_match: true, ..options() };
    let store =
        zrecord::open::remote(&url, &zrecord::open::Options { remote: opts, ..Default::default() }).unwrap();
    store.gather(&[0]).unwrap();
    store.gather(&[1]).unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[..2], [None, None]);
    assert_eq!(seen[2..], [None, None, Some("\"v1\"".to_string())]);
}
