//! `zrecord demo [--dir D]`: write the demo stores (see `zrecord::demo`)
//! and say what was made and what to try next.

use super::common::{shape_text, size, CliResult, Ctx, Fail, Out};
use std::path::PathBuf;
use zrecord::{Geometry, Store};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory to write the stores into [default: a new directory under the system temp dir].
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    let dir = match a.dir {
        Some(d) => d,
        None => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() % 1_000_000_000);
            std::env::temp_dir().join(format!("zrecord-demo-{}-{stamp}", std::process::id()))
        }
    };
    let stores = zrecord::demo::write_demo_stores(&dir)
        .map_err(|e| Fail::Msg(format!("{e} (demo stores go into a new or empty directory)")))?;
    let mut out = Out::new();
    out.line(&format!("demo stores in {}:", dir.display()))?;
    for path in &stores {
        let s = Store::open(path)?;
        let geometry = match s.geometry() {
            Geometry::Dense { item_shape } => format!("dense {}", shape_text(item_shape)),
            Geometry::Ragged => "ragged".to_string(),
        };
        out.line(&format!(
            "  {:<20} {:>4} records  {geometry:<18} {:<4} {:<9} {}",
            path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
            s.len(),
            s.dtype().as_str(),
            s.codec().name(),
            size(s.stored_bytes()),
        ))?;
    }
    if let Some(first) = stores.first() {
        out.line("")?;
        out.line(&format!("try:  zrecord info {}", first.display()))?;
        out.line(&format!("      zrecord get {} 0", first.display()))?;
    }
    out.flush()
}
