//! `zrecord train-dict SOURCE --tier fast|balanced|max -o DICT`: a zstd
//! dictionary trained as loaderx's `train_dict` trains one, from a store's
//! records or a `.npy` array's rows, for `--codec zstd_dict --dict DICT`.

use super::common::{parse_tier, size, tier_name, Cleanup, CliResult, Ctx, Out};
use super::npyfile::NpyIn;
use super::records::{self, url_of};
use std::io::Write;
use std::path::PathBuf;
use zrecord::training::dict::Tier;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A store directory, a store URL (s3://, gs://, az://, http(s)://), or a .npy file.
    source: PathBuf,
    /// Dictionary size and sample budget: fast (32 KiB / 4 MiB), balanced (128 KiB / 16 MiB), max (1 MiB / 64 MiB).
    #[arg(long, default_value = "balanced", value_parser = parse_tier)]
    tier: Tier,
    /// Where to write the dictionary (must not exist).
    #[arg(short, long, value_name = "DICT")]
    output: PathBuf,
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    let cleanup = Cleanup::file(&a.output)?;
    let from_npy = url_of(&a.source)?.is_none() && a.source.is_file();
    let spin = ctx.spinner(&format!("training a {} dictionary", tier_name(a.tier)));
    let dict = if from_npy {
        NpyIn::open(ctx, &a.source)?.train_dict(a.tier)
    } else {
        records::open(&a.source).and_then(|s| Ok(zrecord::training::dict::train_from_store(&*s, a.tier)?))
    };
    spin.finish_and_clear();
    let dict = dict?;
    let mut file = cleanup.create_file()?;
    file.write_all(&dict).map_err(|e| super::common::io_fail(&a.output, "write", e))?;
    cleanup.keep();
    Out::new().line(&format!(
        "{}: {} dictionary of {} trained from {}",
        a.output.display(),
        tier_name(a.tier),
        size(dict.len() as u64),
        a.source.display()
    ))
}
