//! Lists the web viewer's files (`www/`, and the wasm reader in `pkg/` built
//! by `wasm-pack build --target web`) for `src/viewer_assets.rs` to embed.
//!
//! Only the `serve` feature embeds them; other builds (a library user
//! reading stores, wasm32) get an empty list and watch no viewer files.
//! `pkg/` is a build product and may be missing: the list then holds `www/`
//! alone and the viewer page explains how to build the reader.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=build.rs");

    let mut files: Vec<(String, PathBuf)> = Vec::new();
    if std::env::var_os("CARGO_FEATURE_SERVE").is_some() {
        println!("cargo:rerun-if-changed=www");
        collect(&root.join("www"), "", &mut files);
        let pkg = root.join("pkg");
        // Cargo reruns a build script on every build while a watched path is
        // missing (and then recompiles the crate). An empty `pkg/` is watched
        // cheaply, and wasm-pack's files appearing in it trigger a rerun.
        let _ = std::fs::create_dir_all(&pkg);
        println!("cargo:rerun-if-changed=pkg");
        collect(&pkg, "pkg/", &mut files);
    }
    files.sort();

    let mut code = String::from("&[\n");
    for (name, path) in &files {
        let _ = writeln!(code, "    ({name:?}, include_bytes!({:?})),", path.display().to_string());
    }
    code.push(']');
    std::fs::write(out.join("viewer_assets.rs"), code).expect("write OUT_DIR/viewer_assets.rs");
}

/// Every servable file under `dir` (recursively, hidden files skipped), named
/// `prefix` + its path relative to `dir` with `/` separators.
fn collect(dir: &Path, prefix: &str, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            collect(&path, &format!("{prefix}{name}/"), files);
        } else if servable(&name) {
            files.push((format!("{prefix}{name}"), path));
        }
    }
}

/// Files a browser loads; wasm-pack's `package.json`, README and `.d.ts`
/// typings are left out.
fn servable(name: &str) -> bool {
    [".html", ".js", ".css", ".wasm", ".svg", ".png", ".ico"].iter().any(|ext| name.ends_with(ext))
}
