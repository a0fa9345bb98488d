//! `zrecord get STORE IDX… [--json] [--full]`: records for a quick look.
//!
//! Text: a heading per record, then its values as NumPy prints them, long
//! records summarised with a note. `--json`: one line per record,
//! `{"i": 3, "shape": [3, 16, 16], "dtype": "|u1", "values": [[…]]}` with
//! every value (see `values.rs` for each dtype).
//!
//! A dataset prints every column of each record (or the `--column` named):
//! text headings name the column, and JSON lines hold
//! `{"i": 3, "columns": {"x": {"shape", "dtype", "values"}, ...}}`.

use super::common::{shape_text, CliResult, Ctx, Out};
use super::records::{self, DatasetArgs, Target};
use super::values::{record_json, record_text, EDGE};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use zrecord::{Batch, DType};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// Record indices.
    #[arg(required = true, value_name = "IDX")]
    indices: Vec<u64>,
    /// One JSON object per record, with every value.
    #[arg(long)]
    json: bool,
    /// Print every value of long records too.
    #[arg(long)]
    full: bool,
    #[command(flatten)]
    dataset: DatasetArgs,
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    let target = records::open_target(&a.store, &a.dataset)?;
    let columns = target.columns(a.dataset.column.as_deref())?;
    let whole_dataset = matches!(target, Target::Dataset(_)) && a.dataset.column.is_none();
    // One gather per column: on a remote store, one round of requests for every index.
    let batches: Vec<(Option<&str>, DType, Batch)> = columns
        .iter()
        .map(|(name, store)| Ok((*name, store.dtype().clone(), store.gather_any(&a.indices)?)))
        .collect::<CliResult<_>>()?;
    let mut out = Out::new();
    for (n, &i) in a.indices.iter().enumerate() {
        if a.json {
            let one = |dtype: &DType, batch: &Batch| {
                let (shape, bytes) = batch.record(n);
                json!({"shape": shape, "dtype": dtype.as_str(), "values": record_json(dtype, shape, bytes)})
            };
            let v = if whole_dataset {
                let cols: Map<String, Value> =
                    batches.iter().map(|(name, d, b)| (name.unwrap_or("").to_string(), one(d, b))).collect();
                json!({"i": i, "columns": cols})
            } else {
                let (_, dtype, batch) = &batches[0];
                let mut v = json!({"i": i});
                v.as_object_mut()
                    .expect("an object")
                    .extend(one(dtype, batch).as_object().cloned().unwrap_or_default());
                v
            };
            out.line(&v.to_string())?;
            continue;
        }
        for (k, (name, dtype, batch)) in batches.iter().enumerate() {
            if n > 0 || k > 0 {
                out.line("")?;
            }
            let (shape, bytes) = batch.record(n);
            let column = name.map_or(String::new(), |c| format!(" column {c}:"));
            out.line(&format!("record {i}:{column} shape {}, dtype {dtype}", shape_text(shape)))?;
            let (text, cut) = record_text(dtype, shape, bytes, a.full);
            out.line(&text)?;
            if cut {
                let items = bytes.len() / dtype.itemsize();
                out.line(&format!(
                    "({items} values; showing {EDGE} at each end of every axis; --full or --json prints all)"
                ))?;
            }
        }
    }
    out.flush()
}
