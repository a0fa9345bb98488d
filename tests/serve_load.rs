//! `zrecord serve` under load, on 127.0.0.1: a thousand keep-alive clients,
//! a thousand half-open connections beside real clients, and the native
//! remote reader reading every fixture. The clients are tokio + hyper.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{fixtures, fixtures_dir, Rng};
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::Barrier;
use zrecord::serve::{self, ServeConfig, ServerHandle};
use zrecord::Records;
use zrecord::{Geometry, Store};

const FILE_BYTES: usize = 8 << 20;
const RANGE: usize = 4096;

/// An 8 MB file of random bytes in a fresh directory, served.
fn serve_big_file(cfg: impl FnOnce(&mut ServeConfig)) -> (tempfile::TempDir, Arc<Vec<u8>>, ServerHandle) {
    let dir = tempfile::tempdir().unwrap();
    let data = Rng(7).bytes(FILE_BYTES);
    std::fs::write(dir.path().join("big.bin"), &data).unwrap();
    let mut c = ServeConfig::new(dir.path());
    cfg(&mut c);
    let server = serve::start(c).unwrap();
    (dir, Arc::new(data), server)
}

fn client_runtime() -> tokio::runtime::Runtime {
    // Server and clients share this process: a few thousand sockets.
    serve::raise_open_files(8192);
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A keep-alive client connection.
async fn connect(addr: SocketAddr) -> SendRequest<Empty<Bytes>> {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    send
}

/// GET `bytes=start-(start+RANGE-1)` of /big.bin: (status, body).
async fn range_get(send: &mut SendRequest<Empty<Bytes>>, start: usize) -> (u16, Vec<u8>) {
    let req = Request::get("/big.bin")
        .header("host", "test")
        .header("range", format!("bytes={start}-{}", start + RANGE - 1))
        .body(Empty::new())
        .unwrap();
    send.ready().await.unwrap();
    let resp = send.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, body)
}

#[test]
fn a_thousand_keep_alive_clients_get_only_correct_206s() {
    const CLIENTS: usize = 1000;
    const PER_CLIENT: usize = 10;
    let (_dir, data, server) = serve_big_file(|_| {});
    let addr = server.addr();
    let rt = client_runtime();
    let bad = rt.block_on(async {
        // Every client holds its connection before any starts: truly concurrent.
        let barrier = Arc::new(Barrier::new(CLIENTS));
        let mut tasks = tokio::task::JoinSet::new();
        for c in 0..CLIENTS {
            let (barrier, data) = (Arc::clone(&barrier), Arc::clone(&data));
            tasks.spawn(async move {
                let mut send = connect(addr).await;
                barrier.wait().await;
                let mut rng = Rng(c as u64);
                let mut bad = 0;
                for _ in 0..PER_CLIENT {
                    let start = rng.below(FILE_BYTES - RANGE);
                    let (status, body) = range_get(&mut send, start).await;
                    if status != 206 || body != data[start..start + RANGE] {
                        bad += 1;
                    }
                }
                bad
            });
        }
        let mut bad = 0;
        while let Some(r) = tasks.join_next().await {
            bad += r.unwrap();
        }
        bad
    });
    assert_eq!(bad, 0, "wrong answers out of {}", CLIENTS * PER_CLIENT);
    assert_eq!(server.stats().refused_busy, 0);
    assert!(server.stats().accepted >= CLIENTS as u64);
}

#[test]
fn idle_half_open_connections_lock_out_nobody() {
    const IDLE: usize = 1000;
    const REAL: usize = 50;
    const PER_CLIENT: usize = 20;
    let head_timeout = Duration::from_secs(5);
    let (_dir, data, server) = serve_big_file(|c| c.head_timeout = head_timeout);
    let addr = server.addr();
    let rt = client_runtime();
    rt.block_on(async {
        // A request head that never ends.
        let opened = Instant::now();
        let mut idle = Vec::with_capacity(IDLE);
        for _ in 0..IDLE {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: test\r\nX-Slow: ").await.unwrap();
            idle.push(s);
        }
        let mut tasks = tokio::task::JoinSet::new();
        for c in 0..REAL {
            let data = Arc::clone(&data);
            tasks.spawn(async move {
                let mut send = connect(addr).await;
                let mut rng = Rng(1000 + c as u64);
                let mut slowest = Duration::ZERO;
                for _ in 0..PER_CLIENT {
                    let start = rng.below(FILE_BYTES - RANGE);
                    let t = Instant::now();
                    let (status, body) = range_get(&mut send, start).await;
                    slowest = slowest.max(t.elapsed());
                    assert_eq!(status, 206);
                    assert!(body == data[start..start + RANGE]);
                }
                slowest
            });
        }
        let mut slowest = Duration::ZERO;
        while let Some(r) = tasks.join_next().await {
            slowest = slowest.max(r.unwrap());
        }
        assert!(slowest < Duration::from_secs(1), "slowest answer took {slowest:?}");
        assert!(
            opened.elapsed() < head_timeout,
            "the idle connections must still be open for this to test anything"
        );
        // The unfinished heads are cut off once the head timeout passes.
        for mut s in idle {
            let mut b = [0u8; 64];
            let closed = tokio::time::timeout(head_timeout + Duration::from_secs(5), s.read(&mut b)).await;
            assert!(matches!(closed, Ok(Ok(0) | Err(_))), "half-open connection not closed: {closed:?}");
        }
        assert!(opened.elapsed() >= head_timeout);
    });
    assert_eq!(server.stats().refused_busy, 0);
}

#[test]
fn the_remote_reader_reads_every_fixture_through_serve() {
    let server = serve::start(ServeConfig::new(fixtures_dir())).unwrap();
    let base = server.url();
    // Four readers at once, each with the reader's default concurrency.
    std::thread::scope(|scope| {
        for t in 0..4 {
            let base = &base;
            scope.spawn(move || {
                for f in fixtures() {
                    let url = format!("{base}{}/", f.name);
                    let remote = zrecord::open::remote(&url, &Default::default())
                        .unwrap_or_else(|e| panic!("{url}: {e}"));
                    let local = Store::open(Path::new(&f.path())).unwrap();
                    let order: Vec<u64> = (0..f.len).rev().chain((0..f.len).step_by(t + 1)).collect();
                    match local.geometry() {
                        Geometry::Dense { .. } => {
                            let got = remote.gather(&order).unwrap();
                            assert_eq!(got.bytes(), local.gather(&order).unwrap().bytes(), "{}", f.name);
                        }
                        Geometry::Ragged => {
                            let got = remote.gather_ragged(&order).unwrap();
                            let want = local.gather_ragged(&order).unwrap();
                            for k in 0..order.len() {
                                assert_eq!(got.record(k), want.record(k), "{} {k}", f.name);
                            }
                        }
                    }
                }
            });
        }
    });
    let stats = server.stats();
    assert_eq!(stats.refused_busy, 0, "{stats:?}");
    assert!(stats.accepted > 0);
}
