//! moto's S3 server on 127.0.0.1 with signature checking on, for the bucket
//! tests. `.ci/install` makes its venv (`ZRECORD_MOTO_VENV` overrides
//! where); a missing moto is a failure, never a skip.
//!
//! moto checks signatures once `INITIAL_NO_AUTH_ACTION_COUNT` unsigned
//! actions are spent: `tests/moto/setup.py` spends them creating a user,
//! its access key and a policy allowing S3, then creates the bucket with
//! that key. From then on every request must be signed with it.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server with one private bucket; stopped (by PID) when dropped.
pub struct Moto {
    child: Child,
    pub endpoint: String,
    pub key: String,
    pub secret: String,
    pub bucket: String,
    log: tempfile::NamedTempFile,
}

fn venv() -> PathBuf {
    match std::env::var("ZRECORD_MOTO_VENV") {
        Ok(v) => PathBuf::from(v),
        Err(_) => {
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
            Path::new(&home).join(".cache/zrecord/venv-moto")
        }
    }
}

impl Moto {
    /// Start moto on a free port, create the key and the bucket `zrecord-test`.
    pub fn start() -> Moto {
        let venv = venv();
        let server = venv.join("bin/moto_server");
        assert!(server.exists(), "{} missing: run .ci/install (it makes the moto venv)", server.display());
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("INITIAL_NO_AUTH_ACTION_COUNT", "3")
            .stdin(Stdio::null())
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", server.display()));
        let endpoint = format!("http://127.0.0.1:{port}");
        let mut moto = Moto {
            child,
            endpoint,
            key: String::new(),
            secret: String::new(),
            bucket: "zrecord-test".into(),
            log,
        };
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = moto.child.try_wait() {
                panic!(
                    "moto exited with {status}: {}",
                    std::fs::read_to_string(moto.log.path()).unwrap_or_default()
                );
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "moto did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/moto/setup.py");
        let out = Command::new(venv.join("bin/python"))
            .arg(setup)
            .args([&moto.endpoint, &moto.bucket])
            .output()
            .unwrap();
        assert!(out.status.success(), "moto setup failed: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        moto.key = v["key"].as_str().unwrap().to_string();
        moto.secret = v["secret"].as_str().unwrap().to_string();
        moto
    }

    /// `s3://zrecord-test/{path}`
    pub fn url(&self, path: &str) -> String {
        format!("s3://{}/{path}", self.bucket)
    }

    /// `http://127.0.0.1:PORT/zrecord-test/{path}`: the same object, unsigned.
    pub fn http_url(&self, path: &str) -> String {
        format!("{}/{}/{path}", self.endpoint, self.bucket)
    }

    /// The environment a process reads the bucket with (`secret` for the
    /// secret key: the right one or not).
    pub fn env_with(&self, cmd: &mut Command, secret: &str) {
        for var in ["AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE"] {
            cmd.env_remove(var);
        }
        cmd.env("AWS_ACCESS_KEY_ID", &self.key)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1");
    }

    /// As [`Moto::env_with`], the right keys.
    pub fn env(&self, cmd: &mut Command) {
        self.env_with(cmd, &self.secret.clone());
    }

    /// The same settings as object_store configuration, for in-process clients.
    pub fn config(&self) -> Vec<(String, String)> {
        [
            ("aws_access_key_id", self.key.as_str()),
            ("aws_secret_access_key", self.secret.as_str()),
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
