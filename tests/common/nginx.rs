//! nginx on 127.0.0.1 serving a directory, for HTTP tests and benches.
//! A missing nginx is a failure, never a skip: CI installs it.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running nginx; stopped (by PID) when dropped.
pub struct Nginx {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

fn nginx_binary() -> &'static str {
    for candidate in ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(candidate).exists() {
            return candidate;
        }
    }
    "nginx"
}

impl Nginx {
    /// Serve `root` on a free loopback port and wait until it answers.
    pub fn start(root: &Path) -> Nginx {
        let root = root.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", root.display()));
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let tmp = dir.path().display().to_string();
        let conf = include_str!("../../scripts/nginx.conf.in")
            .replace("@TMP@", &tmp)
            .replace("@PORT@", &port.to_string())
            .replace("@ROOT@", &root.display().to_string());
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx_binary())
            .args(["-p", &tmp, "-e", &format!("{tmp}/error.log"), "-c"])
            .arg(dir.path().join("nginx.conf"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start nginx ({e}); install it (apt-get install nginx, see .ci/install)")
            });
        let mut server = Nginx { child, port, dir };
        let t0 = Instant::now();
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                let log = std::fs::read_to_string(server.dir.path().join("error.log")).unwrap_or_default();
                panic!("nginx exited with {status}: {log}");
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "nginx did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:PORT/{path}`
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Requests nginx logged so far. nginx logs a request after answering
    /// it, so a client can be faster than the log: the count is read until
    /// it stays the same for 50 ms (at most 2 s).
    pub fn logged_requests(&self) -> usize {
        let count = || {
            std::fs::read_to_string(self.dir.path().join("access.log"))
                .map(|s| s.lines().count())
                .unwrap_or(0)
        };
        let t0 = Instant::now();
        let mut last = count();
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let now = count();
            if now == last && now > 0 || t0.elapsed() > Duration::from_secs(2) {
                return now;
            }
            last = now;
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// Stop a server process: SIGTERM, which lets nginx's master stop its
/// workers (SIGKILL would orphan them), then SIGKILL after 5 s.
pub fn terminate(child: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}
