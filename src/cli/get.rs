//! `zrecord get STORE IDX… [--json] [--full]`: records for a quick look.
//!
//! Text: a heading per record, then its values as NumPy prints them, long
//! records summarised with a note. `--json`: one line per record,
//! `{"i": 3, "shape": [3, 16, 16], "dtype": "|u1", "values": [[…]]}` with
//! every value (see `values.rs` for each dtype).

use super::common::{shape_text, CliResult, Ctx, Out};
use super::records;
use super::values::{record_json, record_text, EDGE};
use serde_json::json;
use std::path::PathBuf;

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
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    let store = records::open(&a.store)?;
    let dtype = store.dtype().clone();
    let mut out = Out::new();
    // One gather: on a remote store, one round of requests for every index.
    let batch = store.gather_any(&a.indices)?;
    for (n, &i) in a.indices.iter().enumerate() {
        let (shape, bytes) = batch.record(n);
        if a.json {
            let v = json!({"i": i, "shape": shape, "dtype": dtype.as_str(), "values": record_json(&dtype, shape, bytes)});
            out.line(&v.to_string())?;
            continue;
        }
        if n > 0 {
            out.line("")?;
        }
        out.line(&format!("record {i}: shape {}, dtype {dtype}", shape_text(shape)))?;
        let (text, cut) = record_text(&dtype, shape, bytes, a.full);
        out.line(&text)?;
        if cut {
            let items = bytes.len() / dtype.itemsize();
            out.line(&format!(
                "({items} values; showing {EDGE} at each end of every axis; --full or --json prints all)"
            ))?;
        }
    }
    out.flush()
}
