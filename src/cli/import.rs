//! `zrecord import npy IN.npy OUT` and `zrecord import ragged VALUES.npy OFFSETS.npy OUT`.
//!
//! Inputs are memory-mapped and validated completely before the output is
//! created. The dtype is kept as the file has it (a big-endian array makes a
//! `>`-typed store; records are never byte-swapped); a Fortran-ordered array
//! is transposed into C-ordered rows.

use super::common::{shape_text, size, Cleanup, CliResult, CodecArgs, Ctx, Fail, Out};
use super::npyfile::NpyIn;
use super::records::CHUNK_BYTES;
use std::path::PathBuf;
use zrecord::format::{ByteOrder, Kind};
use zrecord::training::dict::{ragged_record_bytes, sample_indices, train_on, RAGGED_PREVIEW};
use zrecord::Writer;

#[derive(clap::Subcommand, Debug)]
pub enum Source {
    /// An array becomes a Dense store: one record per row of axis 0 (a 1-D array gives scalar records).
    Npy(NpyArgs),
    /// Flat 1-D values plus int64/uint64 boundaries become a Ragged store of 1-D records.
    Ragged(RaggedArgs),
}

#[derive(clap::Args, Debug)]
pub struct NpyArgs {
    /// The .npy file (any storable dtype, either byte order, C or Fortran order).
    input: PathBuf,
    /// The new store directory (must not exist, or be empty).
    out: PathBuf,
    #[command(flatten)]
    codec: CodecArgs,
}

#[derive(clap::Args, Debug)]
pub struct RaggedArgs {
    /// 1-D .npy of every record's values, back to back.
    values: PathBuf,
    /// 1-D int64 or uint64 .npy of len+1 boundaries: 0, then increasing, ending at len(VALUES).
    offsets: PathBuf,
    /// The new store directory (must not exist, or be empty).
    out: PathBuf,
    #[command(flatten)]
    codec: CodecArgs,
}

pub fn run(ctx: &Ctx, source: Source) -> CliResult {
    match source {
        Source::Npy(a) => run_npy(ctx, a),
        Source::Ragged(a) => run_ragged(ctx, a),
    }
}

fn run_npy(ctx: &Ctx, a: NpyArgs) -> CliResult {
    let arr = NpyIn::open(ctx, &a.input)?;
    let cleanup = Cleanup::store(&a.out)?;
    let options = a.codec.options(ctx, |tier| arr.train_dict(tier))?;
    let dtype = arr.header.dtype.as_str();
    let mut w = Writer::create_dense(&a.out, dtype, arr.item_shape(), options)?;
    let rows = arr.rows();
    let per = (CHUNK_BYTES / arr.row_bytes().max(1) as u64).max(1);
    let bar = ctx.bar(rows, "import");
    let mut buf = Vec::new();
    let mut at = 0;
    while at < rows {
        let end = (at + per).min(rows);
        w.append(arr.rows_c(at..end, &mut buf))?;
        bar.inc(end - at);
        at = end;
    }
    let stored = w.data_bytes();
    w.close()?;
    cleanup.keep();
    bar.finish_and_clear();
    let order = if arr.header.fortran_order { ", Fortran order transposed" } else { "" };
    Out::new().line(&format!(
        "{}: {rows} records of shape {} {dtype} from {}{order}; {} stored ({})",
        a.out.display(),
        shape_text(arr.item_shape()),
        a.input.display(),
        size(stored),
        a.codec.codec
    ))
}

/// Read and check the boundaries: len+1 entries, 0 first, strictly
/// increasing (records are never empty), ending at `values`.
fn read_offsets(off: &NpyIn, values: u64) -> CliResult<Vec<u64>> {
    let name = off.path.display();
    let d = &off.header.dtype;
    if off.header.shape.len() != 1 || !matches!(d.kind(), Kind::Int | Kind::UInt) || d.itemsize() != 8 {
        return Err(Fail::Msg(format!(
            "{name}: offsets must be a 1-D int64 or uint64 array, got shape {} of {d}",
            shape_text(&off.header.shape)
        )));
    }
    let big = d.byte_order() == ByteOrder::Big;
    let mut out = Vec::with_capacity(off.rows() as usize);
    for (k, b) in off.data().chunks_exact(8).enumerate() {
        let b: [u8; 8] = b.try_into().expect("8 bytes");
        let v = if big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) };
        if d.kind() == Kind::Int && (v as i64) < 0 {
            return Err(Fail::Msg(format!("{name}: offsets[{k}] is negative ({})", v as i64)));
        }
        if let Some(&prev) = out.last() {
            if v <= prev {
                let why = if v == prev {
                    format!("record {} would be empty (records are never empty)", k - 1)
                } else {
                    "offsets must increase".to_string()
                };
                return Err(Fail::Msg(format!(
                    "{name}: offsets[{k}] = {v} is not greater than offsets[{}] = {prev}: {why}",
                    k - 1
                )));
            }
        } else if v != 0 {
            return Err(Fail::Msg(format!("{name}: offsets[0] is {v}; offsets must start at 0")));
        }
        out.push(v);
    }
    match out.last() {
        None => Err(Fail::Msg(format!("{name}: offsets is empty; it needs len+1 entries starting at 0"))),
        Some(&last) if last != values => Err(Fail::Msg(format!(
            "{name}: offsets end at {last} but the values array holds {values} values; \
             the last offset must equal the number of values"
        ))),
        Some(_) => Ok(out),
    }
}

fn run_ragged(ctx: &Ctx, a: RaggedArgs) -> CliResult {
    let values = NpyIn::open(ctx, &a.values)?;
    if values.header.shape.len() != 1 {
        return Err(Fail::Msg(format!(
            "{}: values must be 1-D, got shape {}; flatten it and give offsets into the flat array",
            a.values.display(),
            shape_text(&values.header.shape)
        )));
    }
    let offsets = read_offsets(&NpyIn::open(ctx, &a.offsets)?, values.rows())?;
    let n = offsets.len() as u64 - 1;
    let item = values.header.dtype.itemsize();
    let data = values.data();
    let record = |i: usize| &data[offsets[i] as usize * item..offsets[i + 1] as usize * item];
    let cleanup = Cleanup::store(&a.out)?;
    // Sampled as loaderx's `train_dict` samples the Ragged store this becomes.
    let options = a.codec.options(ctx, |tier| {
        let preview = (0..n.min(RAGGED_PREVIEW) as usize).map(|i| record(i).len() as u64);
        let picks = sample_indices(n, ragged_record_bytes(preview), tier.budget() as u64);
        Ok(train_on(picks.into_iter().map(|i| record(i as usize)), tier)?)
    })?;
    let dtype = values.header.dtype.as_str();
    let mut w = Writer::create_ragged(&a.out, dtype, options)?;
    let bar = ctx.bar(n, "import");
    let mut start = 0usize;
    while start < n as usize {
        let mut end = start;
        let mut bytes = 0u64;
        while end < n as usize && (end == start || bytes < CHUNK_BYTES) {
            bytes += record(end).len() as u64;
            end += 1;
        }
        let shapes: Vec<[u64; 1]> = (start..end).map(|i| [offsets[i + 1] - offsets[i]]).collect();
        let batch: Vec<(&[u64], &[u8])> =
            (start..end).zip(&shapes).map(|(i, s)| (s.as_slice(), record(i))).collect();
        w.append_ragged(&batch)?;
        bar.inc((end - start) as u64);
        start = end;
    }
    let stored = w.data_bytes();
    w.close()?;
    cleanup.keep();
    bar.finish_and_clear();
    Out::new().line(&format!(
        "{}: {n} records of {dtype} from {} values; {} stored ({})",
        a.out.display(),
        values.rows(),
        size(stored),
        a.codec.codec
    ))
}
