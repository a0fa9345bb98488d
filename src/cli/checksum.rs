//! `zrecord checksum STORE [--json]`: SHA-256 of each record's payload (the
//! item bytes as stored, C order, no Ragged shape prefix), one line per
//! record in index order, streamed. Equal lines mean equal records whatever
//! the codec, so comparing two stores' checksums checks a recode or a copy.
//!
//! Text lines are `INDEX SHAPE SHA256` with the shape as a spaceless JSON
//! array (`0 [3,16,16] 9f86…`); `--json` lines are
//! `{"i": 0, "shape": [3, 16, 16], "sha256": "9f86…"}`.

use super::common::{shape_json, CliResult, Ctx, Out};
use super::records::{self, for_each_chunk};
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
}

pub fn run(ctx: &Ctx, args: Args) -> CliResult {
    let store = records::open(&args.store)?;
    let bar = ctx.bar(store.len(), "checksum");
    let mut out = Out::new();
    for_each_chunk(store.as_ref(), 0..store.len(), |chunk| {
        let digests: Vec<String> =
            (0..chunk.len()).into_par_iter().map(|k| hex(&Sha256::digest(chunk.record(k).1))).collect();
        for (k, digest) in digests.iter().enumerate() {
            let i = chunk.range.start + k as u64;
            let shape = chunk.record(k).0;
            let line = if args.json {
                format!("{{\"i\": {i}, \"shape\": {}, \"sha256\": \"{digest}\"}}", shape_json(shape))
            } else {
                format!("{i} {} {digest}", shape_json(shape).replace(' ', ""))
            };
            out.line(&line)?;
        }
        bar.inc(chunk.len() as u64);
        Ok(())
    })?;
    bar.finish_and_clear();
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
