//! Serve a directory of stores with the web viewer at `/`, as `zrecord serve`
//! does (the viewer's end-to-end tests use it).
//!
//! ```text
//! cargo run --example serve_viewer -- DIR [PORT]
//! ```
//! Prints the viewer's URL on one line, then serves until killed.
//!
//! With `ZRECORD_VIEWER_DEV=1` the viewer's files are read from `www/` and
//! `pkg/` on every request instead of the copies embedded at build time, so
//! editing the viewer needs only a page reload.

use std::io::Write as _;

use zrecord::serve::{self, ServeConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = args.next().ok_or("usage: serve_viewer DIR [PORT]")?;
    let mut cfg = ServeConfig::new(root);
    cfg.port = args.next().map(|p| p.parse()).transpose()?.unwrap_or(0);
    cfg.assets = Some(if std::env::var_os("ZRECORD_VIEWER_DEV").is_some() {
        from_disk()
    } else {
        zrecord::viewer_assets::viewer_assets()
    });
    cfg.verbose = std::env::var_os("ZRECORD_SERVE_VERBOSE").is_some();
    if !zrecord::viewer_assets::has_wasm_reader() {
        eprintln!("serve_viewer: pkg/ was not built; run `wasm-pack build --target web` and rebuild");
    }
    let server = serve::start(cfg)?;
    println!("{}", server.url());
    std::io::stdout().flush()?;
    server.wait();
    Ok(())
}

/// The viewer's files straight from the source tree (development only).
fn from_disk() -> zrecord::serve::Assets {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let embedded = zrecord::viewer_assets::viewer_assets();
    Box::new(move |path: &str| {
        // Only names the embedded set knows (no path tricks), fresh from disk.
        let (_, ty) = embedded(path)?;
        let file = if let Some(rest) = path.strip_prefix("pkg/") {
            root.join("pkg").join(rest)
        } else {
            root.join("www").join(path)
        };
        std::fs::read(file).ok().map(|b| (std::borrow::Cow::Owned(b), ty))
    })
}
