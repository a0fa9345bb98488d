//! `zrecord checksum STORE [--json]`: SHA-256 of each record's payload (the
//! item bytes as stored, C order, no Ragged shape prefix), one line per
//! record in index order, streamed. Equal lines mean equal records whatever
//! the codec, so comparing two stores' checksums checks a recode or a copy.
//!
//! Text lines are `INDEX SHAPE SHA256` with the shape as a spaceless JSON
//! array (`0 [3,16,16] 9f86…`); `--json` lines are
//! `{"i": 0, "shape": [3, 16, 16], "sha256": "9f86…"}`.
//!
//! A dataset gives every column's lines in turn (or the `--column` named):
//! text lines start with the column's name (`x 0 [2] 9f86…`), JSON lines
//! hold `"column": "x"` first.

use super::common::{shape_json, CliResult, Ctx, Out};
use super::records::{self, for_each_chunk, DatasetArgs, Target};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dataset: DatasetArgs,
}

pub fn run(ctx: &Ctx, args: Args) -> CliResult {
    let target = records::open_target(&args.store, &args.dataset)?;
    let columns = target.columns(args.dataset.column.as_deref())?;
    // A dataset's lines name their column, even with --column: lines of two
    // runs compare alike.
    let named = matches!(target, Target::Dataset(_));
    let mut out = Out::new();
    for (name, store) in columns {
        let name = name.filter(|_| named);
        let bar = ctx.bar(store.len(), name.unwrap_or("checksum"));
        for_each_chunk(store, 0..store.len(), |chunk| {
            let digests: Vec<String> =
                (0..chunk.len()).into_par_iter().map(|k| hex(&Sha256::digest(chunk.record(k).1))).collect();
            for (k, digest) in digests.iter().enumerate() {
                let i = chunk.range.start + k as u64;
                let shape = chunk.record(k).0;
                let line = match (args.json, name) {
                    (true, None) => {
                        format!("{{\"i\": {i}, \"shape\": {}, \"sha256\": \"{digest}\"}}", shape_json(shape))
                    }
                    (true, Some(c)) => format!(
                        "{{\"column\": {}, \"i\": {i}, \"shape\": {}, \"sha256\": \"{digest}\"}}",
                        serde_json::Value::from(c),
                        shape_json(shape)
                    ),
                    (false, None) => format!("{i} {} {digest}", shape_json(shape).replace(' ', "")),
                    (false, Some(c)) => format!("{c} {i} {} {digest}", shape_json(shape).replace(' ', "")),
                };
                out.line(&line)?;
            }
            bar.inc(chunk.len() as u64);
            Ok(())
        })?;
        bar.finish_and_clear();
    }
    out.flush()
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}
