//! Serve a directory of stores with the web viewer at `/`, as `zrecord serve`
//! does (the viewer's end-to-end tests use it).
//!
//! ```text
//! cargo run --example serve_viewer -- DIR [PORT]
//! ```
//! Prints the viewer's URL on one line, then serves until killed.

use std::io::Write as _;

use zrecord::serve::{self, ServeConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = args.next().ok_or("usage: serve_viewer DIR [PORT]")?;
    let mut cfg = ServeConfig::new(root);
    cfg.port = args.next().map(|p| p.parse()).transpose()?.unwrap_or(0);
    cfg.assets = Some(zrecord::viewer_assets::viewer_assets());
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
