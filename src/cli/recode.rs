//! `zrecord recode SRC DST --codec raw|zstd|zstd_dict`: the same records,
//! another codec. Reads through the ordinary gather path and writes through
//! the ordinary append path, a chunk of about 32 MiB at a time.

use super::common::{size, Cleanup, CliResult, CodecArgs, Ctx, Out};
use super::records::{self, for_each_chunk};
use std::path::PathBuf;
use zrecord::{Batch, Geometry, Writer};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source store: a directory, or a URL (s3://, gs://, az://, http(s)://).
    src: PathBuf,
    /// New store directory (must not exist, or be empty).
    dst: PathBuf,
    #[command(flatten)]
    codec: CodecArgs,
}

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    let src = records::open(&a.src)?;
    let cleanup = Cleanup::store(&a.dst)?;
    let options = a.codec.options(ctx, |tier| Ok(zrecord::training::dict::train_from_store(&*src, tier)?))?;
    let dtype = src.dtype().as_str();
    let mut w = match src.geometry() {
        Geometry::Dense { item_shape } => Writer::create_dense(&a.dst, dtype, item_shape, options)?,
        Geometry::Ragged => Writer::create_ragged(&a.dst, dtype, options)?,
    };
    let bar = ctx.bar(src.len(), "recode");
    for_each_chunk(src.as_ref(), 0..src.len(), |chunk| {
        match &chunk.batch {
            Batch::Dense(b) => w.append(b.bytes())?,
            Batch::Ragged(b) => w.append_ragged(&b.iter().collect::<Vec<_>>())?,
        }
        bar.inc(chunk.len() as u64);
        Ok(())
    })?;
    let stored = w.data_bytes();
    w.close()?;
    cleanup.keep();
    bar.finish_and_clear();
    Out::new().line(&format!(
        "{}: {} records, {} -> {}; data {} -> {}",
        a.dst.display(),
        src.len(),
        src.info().codec(),
        a.codec.codec,
        size(src.info().header.tail_offset),
        size(stored)
    ))
}
