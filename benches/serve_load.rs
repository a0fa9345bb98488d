//! Load benchmark: `zrecord serve` against nginx, side by side in one run.
//!
//! The load is a store reader's: random 4 KiB `Range` GETs on an 8 MB file,
//! 20 per keep-alive connection (then a new connection), from 50, 200 and
//! 1,000 concurrent clients. The client is tokio + hyper, on this process's
//! runtime; both servers run as their own processes on 127.0.0.1 (nginx with
//! 2 workers, CORS headers as in TOOLCHAIN.md, no access log; `zrecord
//! serve` with its defaults). Rounds alternate between the servers, so a
//! busy machine hurts both alike; req/s is the median over rounds, and the
//! ratio to nginx the median of per-round ratios. The servers' CPU time per
//! answer (from /proc) is reported too: on a shared machine it is steadier
//! than req/s. So is the client's own, which shows whether one server costs
//! the (identical) client more than the other. Every answer is checked: a
//! status other than 206, a wrong body or a failed connection is an error.
//!
//! Before the load, on fresh servers: the memory 1,000 idle connections cost
//! each, resident memory before and after 1,000 keep-alive connections that
//! made one request and went quiet, and 1,000 more that sent half a request
//! head.
//!
//! ```sh
//! cargo bench --bench serve_load              # 5 rounds x 2 s per row and server
//! cargo bench --bench serve_load -- --quick   # 2 rounds x 0.5 s
//! cargo bench --bench serve_load -- --secs 5 --rounds 2 --clients 50,1000
//! ```

#[path = "../tests/common/nginx.rs"]
mod nginx;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

const FILE_BYTES: usize = 8 << 20;
const RANGE: usize = 4096;
const PER_CONNECTION: usize = 20;
const IDLE_CONNECTIONS: usize = 1000;

struct Args {
    secs: f64,
    rounds: usize,
    clients: Vec<usize>,
}

fn parse_args() -> Args {
    let mut a = Args { secs: 2.0, rounds: 5, clients: vec![50, 200, 1000] };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => {
                a.secs = 0.5;
                a.rounds = 2;
            }
            "--secs" => a.secs = it.next().and_then(|v| v.parse().ok()).expect("--secs S"),
            "--rounds" => a.rounds = it.next().and_then(|v| v.parse().ok()).expect("--rounds N"),
            "--clients" => {
                a.clients = it
                    .next()
                    .expect("--clients 50,200")
                    .split(',')
                    .map(|c| c.parse().expect("--clients: numbers"))
                    .collect();
            }
            // `cargo bench` passes --bench; a test run passes nothing else.
            _ => {}
        }
    }
    a
}

/// A server process, stopped by its PID when dropped.
struct Server {
    name: &'static str,
    addr: SocketAddr,
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        nginx::terminate(&mut self.child);
    }
}

impl Server {
    /// The server's processes: itself and its children (nginx's workers).
    fn pids(&self) -> Vec<String> {
        let pid = self.child.id();
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        std::iter::once(pid.to_string()).chain(children.split_whitespace().map(str::to_owned)).collect()
    }

    /// CPU time the server has used (user + system, all threads), in seconds.
    fn cpu_secs(&self) -> f64 {
        self.pids().iter().map(|p| proc_cpu_secs(p)).sum()
    }

    /// Resident memory of the server, in bytes.
    fn rss(&self) -> u64 {
        self.pids()
            .iter()
            .map(|p| {
                let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                    .unwrap_or(0)
                    * 1024
            })
            .sum()
    }
}

/// CPU time (user + system, all threads) of process `pid` (`self` for this
/// one), in seconds, from `/proc/PID/stat`; 0 if it cannot be read.
fn proc_cpu_secs(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    ticks as f64 / 100.0
}

fn start_zrecord(root: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zrecord"))
        .args(["--quiet", "serve"])
        .arg(root)
        .args(["--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start zrecord serve");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    // Keep reading what it prints, so it never writes to a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let url = line.trim().strip_prefix("viewer: http://").expect("first line is `viewer: URL`");
    let addr = url.trim_end_matches('/').parse().unwrap();
    Server { name: "zrecord serve", addr, child }
}

fn nginx_binary() -> &'static str {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("nginx")
}

fn start_nginx(root: &Path, tmp: &Path) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let t = tmp.display();
    let conf = format!(
        r#"daemon off; pid {t}/nginx.pid; error_log {t}/error.log;
worker_processes 2;
events {{ worker_connections 8192; }}
http {{
  access_log off; client_body_temp_path {t}/body;
  gzip off;
  keepalive_requests 100000;
  types {{ application/octet-stream zr bin; application/wasm wasm; text/html html; application/javascript js; }}
  server {{ listen 127.0.0.1:{port} backlog=1024; root {root};
    location / {{
      add_header Access-Control-Allow-Origin "*" always;
      add_header Access-Control-Allow-Headers "Range" always;
      add_header Access-Control-Expose-Headers "Content-Range, Content-Length, ETag, Accept-Ranges" always;
      if ($request_method = OPTIONS) {{ return 204; }} }} }} }}
"#,
        root = root.display()
    );
    std::fs::write(tmp.join("nginx.conf"), conf).unwrap();
    let child = Command::new(nginx_binary())
        .args(["-p"])
        .arg(tmp)
        .args(["-e", &format!("{t}/error.log"), "-c"])
        .arg(tmp.join("nginx.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nginx (apt-get install nginx)");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "nginx did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { name: "nginx", addr, child }
}

/// Splitmix64, for request offsets.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

async fn connect(
    addr: SocketAddr,
) -> Result<SendRequest<Empty<Bytes>>, Box<dyn std::error::Error + Send + Sync>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    Ok(send)
}

/// One checked range GET; `Ok(true)` for a correct 206.
async fn range_get(
    send: &mut SendRequest<Empty<Bytes>>,
    data: &[u8],
    start: usize,
) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let req = Request::get("/big.bin")
        .header("host", "127.0.0.1")
        .header("range", format!("bytes={start}-{}", start + RANGE - 1))
        .body(Empty::new())?;
    send.ready().await?;
    let resp = send.send_request(req).await?;
    let ok = resp.status().as_u16() == 206;
    let body = resp.into_body().collect().await?.to_bytes();
    Ok(ok && body[..] == data[start..start + RANGE])
}

#[derive(Default)]
struct Sample {
    ok: u64,
    errors: u64,
    secs: f64,
    /// Server CPU seconds spent.
    cpu: f64,
    /// CPU seconds the load client (this process) spent.
    client_cpu: f64,
    /// req/s of each round.
    rounds: Vec<f64>,
    /// Latency of every correct answer, in microseconds.
    lat_us: Vec<u32>,
}

impl Sample {
    fn add(&mut self, o: Sample) {
        self.rounds.push(o.rps());
        self.ok += o.ok;
        self.errors += o.errors;
        self.secs += o.secs;
        self.cpu += o.cpu;
        self.client_cpu += o.client_cpu;
        self.lat_us.extend(o.lat_us);
    }

    fn rps(&self) -> f64 {
        self.ok as f64 / self.secs
    }

    /// Median over rounds of req/s.
    fn median_rps(&self) -> f64 {
        median(self.rounds.clone())
    }

    /// Server CPU time per answer, in microseconds.
    fn cpu_us(&self) -> f64 {
        self.cpu * 1e6 / self.ok as f64
    }

    /// The load client's CPU time per answer, in microseconds.
    fn client_cpu_us(&self) -> f64 {
        self.client_cpu * 1e6 / self.ok as f64
    }

    fn pct_ms(&mut self, p: f64) -> f64 {
        self.lat_us.sort_unstable();
        if self.lat_us.is_empty() {
            return f64::NAN;
        }
        let i = ((self.lat_us.len() - 1) as f64 * p).round() as usize;
        f64::from(self.lat_us[i]) / 1e3
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `clients` clients for `secs`: each a loop of keep-alive connections of
/// [`PER_CONNECTION`] checked range GETs.
async fn drive(addr: SocketAddr, clients: usize, secs: f64, data: Arc<Vec<u8>>, seed: u64) -> Sample {
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(secs);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let data = Arc::clone(&data);
        tasks.spawn(async move {
            let mut s = Sample::default();
            let mut rng = Rng(seed ^ (c as u64) << 20);
            while Instant::now() < deadline {
                let mut send = match connect(addr).await {
                    Ok(x) => x,
                    Err(_) => {
                        s.errors += 1;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                for _ in 0..PER_CONNECTION {
                    if Instant::now() >= deadline {
                        break;
                    }
                    let start = rng.below(FILE_BYTES - RANGE);
                    let t = Instant::now();
                    match range_get(&mut send, &data, start).await {
                        Ok(true) => {
                            s.ok += 1;
                            s.lat_us.push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                        }
                        Ok(false) => s.errors += 1,
                        Err(_) => {
                            s.errors += 1;
                            break;
                        }
                    }
                }
            }
            s
        });
    }
    let mut total = Sample::default();
    while let Some(s) = tasks.join_next().await {
        total.add(s.expect("client task"));
    }
    total.secs = t0.elapsed().as_secs_f64();
    total
}

/// Resident memory of `server` with 1,000 idle keep-alive connections, then
/// 1,000 more half-open ones: (baseline, +keep-alive, +half-open) in bytes.
async fn idle_memory(server: &Server, data: Arc<Vec<u8>>) -> (u64, u64, u64) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = server.rss();
    let mut keep = Vec::with_capacity(IDLE_CONNECTIONS);
    for i in 0..IDLE_CONNECTIONS {
        let mut send = connect(server.addr).await.expect("connect");
        assert!(range_get(&mut send, &data, i * RANGE).await.unwrap_or(false), "idle set-up request");
        keep.push(send);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let with_keep = server.rss();
    let mut half = Vec::with_capacity(IDLE_CONNECTIONS);
    for _ in 0..IDLE_CONNECTIONS {
        let mut s = TcpStream::connect(server.addr).await.expect("connect");
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: x\r\nX-Slow: ").await.unwrap();
        half.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let with_half = server.rss();
    drop((keep, half));
    (base, with_keep, with_half)
}

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut rng = Rng(42);
    let data: Arc<Vec<u8>> = Arc::new((0..FILE_BYTES).map(|_| rng.below(256) as u8).collect());
    std::fs::write(root.join("big.bin"), &*data).unwrap();
    let nginx_tmp = dir.path().join("nginx");
    std::fs::create_dir_all(&nginx_tmp).unwrap();
    // The client side holds thousands of sockets too (the memory probe 2,000).
    zrecord::serve::raise_open_files(8192);

    let servers = [start_zrecord(&root), start_nginx(&root, &nginx_tmp)];
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!(
        "serve_load: random {RANGE}-byte Range GETs on an {} MiB file, {PER_CONNECTION} per keep-alive connection; \
         {} round(s) x {} s per row; {} cores",
        FILE_BYTES >> 20,
        args.rounds,
        args.secs,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // Memory first, on fresh servers (after the load, freed buffers the
    // allocator kept would hide what new connections cost).
    let mut mem_rows = Vec::new();
    for s in &servers {
        mem_rows.push(rt.block_on(idle_memory(s, Arc::clone(&data))));
    }
    // Warm both (page cache, nginx's open-file state, lazy allocations).
    for s in &servers {
        rt.block_on(drive(s.addr, 50, 0.3, Arc::clone(&data), 1));
    }

    let mut rows = Vec::new();
    for &clients in &args.clients {
        let mut samples = [Sample::default(), Sample::default()];
        for round in 0..args.rounds {
            // Alternate which server goes first.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let seed = (clients * 1000 + round) as u64;
                let (cpu0, client0) = (servers[k].cpu_secs(), proc_cpu_secs("self"));
                let mut s = rt.block_on(drive(servers[k].addr, clients, args.secs, Arc::clone(&data), seed));
                s.cpu = servers[k].cpu_secs() - cpu0;
                s.client_cpu = proc_cpu_secs("self") - client0;
                samples[k].add(s);
            }
        }
        rows.push((clients, samples));
    }

    println!();
    println!(
        "| clients | server | req/s | p50 ms | p99 ms | errors | server CPU µs/req | client CPU µs/req | req/s vs nginx | p99 vs nginx | CPU/req vs nginx |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut failed = Vec::new();
    let mut wrong = 0;
    for (clients, mut samples) in rows {
        wrong += samples[0].errors;
        // Ratios are medians of per-round ratios: a busy moment on a shared
        // machine hits one round of both servers, not one server.
        let r_rps = median(samples[0].rounds.iter().zip(&samples[1].rounds).map(|(a, b)| a / b).collect());
        let nginx_p99 = samples[1].pct_ms(0.99);
        let nginx_cpu = samples[1].cpu_us();
        for (k, s) in samples.iter_mut().enumerate() {
            let (p50, p99) = (s.pct_ms(0.5), s.pct_ms(0.99));
            let (r_p99, r_cpu) = (p99 / nginx_p99, s.cpu_us() / nginx_cpu);
            let ratios = if k == 0 {
                [format!("{r_rps:.2}x"), format!("{r_p99:.2}x"), format!("{r_cpu:.2}x")]
            } else {
                ["–".into(), "–".into(), "–".into()]
            };
            println!(
                "| {clients} | {} | {:.0} | {p50:.2} | {p99:.2} | {} | {:.1} | {:.1} | {} | {} | {} |",
                servers[k].name,
                s.median_rps(),
                s.errors,
                s.cpu_us(),
                s.client_cpu_us(),
                ratios[0],
                ratios[1],
                ratios[2]
            );
            if k == 0 {
                if s.errors > 0 {
                    failed.push(format!("{clients} clients: {} errors", s.errors));
                }
                if clients <= 200 && r_rps < 0.9 {
                    failed.push(format!("{clients} clients: req/s {r_rps:.2}x nginx (target >= 0.9x)"));
                }
                if r_p99 > 1.5 {
                    failed.push(format!("{clients} clients: p99 {r_p99:.2}x nginx (target <= 1.5x)"));
                }
            }
        }
    }

    println!();
    println!("| server | resident, baseline | + {IDLE_CONNECTIONS} idle keep-alive | + {IDLE_CONNECTIONS} half-open | per idle connection |");
    println!("|---|---:|---:|---:|---:|");
    for (s, &(base, keep, half)) in servers.iter().zip(&mem_rows) {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let per = (half.saturating_sub(base)) as f64 / (2 * IDLE_CONNECTIONS) as f64 / 1024.0;
        println!(
            "| {} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {per:.1} KiB |",
            s.name,
            mib(base),
            mib(keep),
            mib(half)
        );
    }
    println!();
    if wrong > 0 {
        // Wrong answers are a bug, not a slow machine: fail the run (and the
        // smoke run in scripts/test).
        eprintln!("serve_load: zrecord serve gave {wrong} wrong answers");
        std::process::exit(1);
    }
    if failed.is_empty() {
        println!("targets met: 0 errors, req/s >= 0.9x nginx at <= 200 clients, p99 <= 1.5x nginx");
    } else {
        println!("targets missed:");
        for f in &failed {
            println!("  {f}");
        }
    }
}
