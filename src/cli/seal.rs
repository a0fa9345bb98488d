//! `zrecord seal STORE [--force]`: write the checksum sidecar `sums.zr` of a
//! store that exists (loaderx's included), so `verify` and checked reads can
//! tell when its bytes change silently. loaderx ignores the file.

use super::common::{size, CliResult, Ctx, Fail, Out};
use super::records::url_of;
use std::path::PathBuf;
use zrecord::format::sums::SUMS;
use zrecord::local::seal::{seal, Sealed};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory (a remote store is sealed before `zrecord push`).
    store: PathBuf,
    /// Replace a sidecar that disagrees with the store (it may be the only
    /// witness of a corruption: run `zrecord verify` first).
    #[arg(long)]
    force: bool,
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    if url_of(&a.store)?.is_some() {
        return Err(Fail::Msg(format!(
            "{}: seal a local copy of the store, then upload it with its {SUMS}",
            a.store.display()
        )));
    }
    let dir = super::records::local_path(&a.store)?;
    let spin = ctx.spinner("hashing every record");
    let done = seal(&dir, a.force);
    spin.finish_and_clear();
    let path = dir.join(SUMS);
    let line = match done? {
        Sealed::Written(n) => {
            let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            format!("{}: sealed {n} records ({} sidecar)", path.display(), size(bytes))
        }
        Sealed::UpToDate(n) => format!("{}: already sealed, up to date ({n} records)", path.display()),
    };
    let mut out = Out::new();
    out.line(&line)?;
    out.flush()
}
