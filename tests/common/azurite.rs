//! Azurite's blob service (npm package `azurite`, pinned in package.json and
//! installed by `.ci/install` with `npm ci`) on 127.0.0.1, in memory, with
//! one container; for the `az://` tests. Azurite checks Shared Key
//! signatures, so a wrong account key is refused as Azure would.
#![allow(dead_code)]

use crate::buckets::{free_port, installed, Emulator, Service};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Azurite's account and its well-known key (Azure's docs publish both).
pub const ACCOUNT: &str = "devstoreaccount1";
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// A running Azurite with the container `zrecord-test`; stopped when dropped.
pub struct Azurite {
    service: Service,
    pub container: String,
    _dir: tempfile::TempDir,
}

/// `node_modules/.bin/azurite-blob` of this checkout (`ZRECORD_AZURITE` overrides).
fn binary() -> PathBuf {
    std::env::var("ZRECORD_AZURITE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/azurite-blob"))
}

impl Azurite {
    pub fn start() -> Azurite {
        let bin = installed(&binary(), "Azurite with `npm ci`");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut cmd = Command::new(bin);
        cmd.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            .args(["--inMemoryPersistence", "--skipApiVersionCheck", "--disableTelemetry"])
            .current_dir(dir.path());
        let service = Service::start("Azurite", cmd, port);
        let azurite = Azurite { service, container: "zrecord-test".into(), _dir: dir };
        let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/azurite/setup.py");
        let out = Command::new("python3")
            .arg(setup)
            .args([&azurite.service.endpoint(), &azurite.container])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "creating the container failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            azurite.service.log()
        );
        azurite
    }

    /// As [`Emulator::env`], with `key` as the account key (right or not).
    pub fn env_with_key(&self, cmd: &mut Command, key: &str) {
        self.env(cmd);
        cmd.env("AZURE_STORAGE_ACCOUNT_KEY", key);
    }
}

impl Emulator for Azurite {
    fn url(&self, path: &str) -> String {
        format!("az://{}/{path}", self.container)
    }

    /// What a user sets for Azurite: `AZURE_STORAGE_USE_EMULATOR` (the
    /// well-known account and key) and `AZURITE_BLOB_STORAGE_URL`.
    fn env(&self, cmd: &mut Command) {
        for (var, _) in std::env::vars() {
            if var.starts_with("AZURE_") || var.starts_with("AZURITE_") {
                cmd.env_remove(var);
            }
        }
        cmd.env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env("AZURITE_BLOB_STORAGE_URL", self.service.endpoint());
    }

    /// The other way in: an explicit endpoint, account and key, as for any
    /// Azure-compatible service (the emulator switch reads its URL from
    /// the process environment, which tests share).
    fn config(&self) -> Vec<(String, String)> {
        [
            ("azure_storage_account_name", ACCOUNT.to_string()),
            ("azure_storage_account_key", KEY.to_string()),
            ("azure_storage_endpoint", format!("{}/{ACCOUNT}", self.service.endpoint())),
            ("azure_allow_http", "true".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}
