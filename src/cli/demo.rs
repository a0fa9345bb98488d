//! `zrecord demo [--dir D] [--no-serve]`: write the demo stores (see
//! `zrecord::serve::demo`), then serve them with the web viewer (as `zrecord serve`
//! does) and print the viewer's address first. With `--no-serve`, say what
//! was made and what to try next, and exit.

use super::common::{shape_text, size, CliResult, Ctx, Fail, Out};
use super::serve::{absolute, run_until_stopped, start, store_links, Net};
use std::path::PathBuf;
use zrecord::serve::{list_stores, ServeConfig};
use zrecord::Records;
use zrecord::{Geometry, Store};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory to write the stores into [default: a new directory under the system temp dir].
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// Only write the stores; do not serve them.
    #[arg(long, conflicts_with_all = ["port", "host", "open", "verbose"])]
    no_serve: bool,
    #[command(flatten)]
    net: Net,
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    let dir = match a.dir {
        Some(d) => d,
        None => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() % 1_000_000_000);
            std::env::temp_dir().join(format!("zrecord-demo-{}-{stamp}", std::process::id()))
        }
    };
    let stores = zrecord::serve::demo::write_demo_stores(&dir)
        .map_err(|e| Fail::Msg(format!("{e} (demo stores go into a new or empty directory)")))?;
    let server = if a.no_serve { None } else { Some(start(ctx, &dir, &a.net)?) };
    let mut out = Out::new();
    if let Some(server) = &server {
        out.line(&format!("viewer: {}", server.url()))?;
        out.line("")?;
    }
    out.line(&format!("demo stores in {}:", dir.display()))?;
    for path in &stores {
        let s = Store::open(path)?;
        let geometry = match s.geometry() {
            Geometry::Dense { item_shape } => format!("dense {}", shape_text(item_shape)),
            Geometry::Ragged => "ragged".to_string(),
        };
        out.line(&format!(
            "  {:<24} {:>4} records  {geometry:<18} {:<4} {:<9} {}",
            path.strip_prefix(&dir).unwrap_or(path).display().to_string(),
            s.len(),
            s.dtype().as_str(),
            s.codec().name(),
            size(s.stored_bytes()),
        ))?;
    }
    let Some(server) = server else {
        if let Some(first) = stores.first() {
            out.line("")?;
            out.line(&format!("try:  zrecord info {}", first.display()))?;
            out.line(&format!("      zrecord get {} 0", first.display()))?;
        }
        return out.flush();
    };
    let url = server.url();
    let listed = list_stores(&dir, ServeConfig::new(&dir).store_depth)?;
    out.line("")?;
    out.line("each in the viewer:")?;
    store_links(&mut out, &url, &listed)?;
    out.line("")?;
    out.line(&format!(
        "the dataset (image, label, caption, caption-tokens side by side): {}",
        zrecord::serve::viewer_assets::viewer_link(&url, "/dataset/", None)
    ))?;
    out.line(&format!(
        "  its tokenizer, to attach to caption-tokens: {}",
        absolute(&url, "/dataset/tokenizer.json")
    ))?;
    // The first demo store as the server lists it (the dataset's streams sort first).
    let first_listed = stores
        .first()
        .and_then(|p| p.strip_prefix(&dir).ok())
        .and_then(|rel| listed.iter().find(|l| std::path::Path::new(&l.path) == rel));
    if let (Some(first), Some(listed_first)) = (stores.first(), first_listed) {
        out.line("")?;
        out.line(&format!("try:  zrecord info {}", absolute(&url, &listed_first.url)))?;
        out.line(&format!("      zrecord get {} 0", first.display()))?;
    }
    out.line("")?;
    out.line(&format!("serving {} until Ctrl-C (the stores stay there)", dir.display()))?;
    out.flush()?;
    drop(out);
    run_until_stopped(ctx, server, &url, &a.net)
}
