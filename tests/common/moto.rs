//! moto's S3 server on 127.0.0.1 with signature checking on, for the bucket
//! tests. `.ci/install` makes its venv (`ZRECORD_MOTO_VENV` overrides
//! where); a missing moto is a failure, never a skip.
//!
//! moto checks signatures once `INITIAL_NO_AUTH_ACTION_COUNT` unsigned
//! actions are spent: `tests/moto/setup.py` spends them creating a user,
//! its access key and a policy allowing S3, then creates the bucket with
//! that key. From then on every request must be signed with it.
#![allow(dead_code)]

use crate::buckets::{free_port, installed, Emulator, Service};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running moto server with one private bucket; stopped (by PID) when dropped.
pub struct Moto {
    service: Service,
    pub endpoint: String,
    pub key: String,
    pub secret: String,
    pub bucket: String,
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
        let server = installed(&venv.join("bin/moto_server"), "the moto venv");
        let port = free_port();
        let mut cmd = Command::new(server);
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()]).env("INITIAL_NO_AUTH_ACTION_COUNT", "3");
        let service = Service::start("moto", cmd, port);
        let endpoint = service.endpoint();
        let mut moto = Moto {
            service,
            endpoint,
            key: String::new(),
            secret: String::new(),
            bucket: "zrecord-test".into(),
        };
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
}

impl Emulator for Moto {
    /// `s3://zrecord-test/{path}`
    fn url(&self, path: &str) -> String {
        format!("s3://{}/{path}", self.bucket)
    }

    /// As [`Moto::env_with`], the right keys.
    fn env(&self, cmd: &mut Command) {
        self.env_with(cmd, &self.secret.clone());
    }

    /// The same settings as object_store configuration, for in-process clients.
    fn config(&self) -> Vec<(String, String)> {
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
