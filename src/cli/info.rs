//! `zrecord info STORE [--json]`.

use super::common::{shape_text, size, CliResult, Ctx, Out};
use super::records;
use serde_json::{json, Value};
use std::path::PathBuf;
use zrecord::format::Kind;
use zrecord::format::StoreFile;
use zrecord::Records;
use zrecord::{DType, Geometry};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(_ctx: &Ctx, args: Args) -> CliResult {
    let store = records::open(&args.store)?;
    let v = describe(store.as_ref())?;
    let mut out = Out::new();
    if args.json {
        out.line(&v.to_string())?;
    } else {
        for line in text(&v, store.dtype()) {
            out.line(&line)?;
        }
    }
    out.flush()
}

/// The JSON description (`--json`), also the source of the text form.
///
/// Keys: `path` (the directory, or the URL of a remote store), `kind`
/// (`dense`/`ragged`), `dtype` (as stored), `item_shape` (Dense only),
/// `codec`, `len`, `sizes` (`meta`, `data`, `dict` (null when absent),
/// `total`, `allocated` (bytes of disk blocks; null when unknown, and for a
/// remote store)),
/// `stored_bytes` (tail_offset), `logical_bytes` (sum of decoded record
/// lengths, Ragged shape prefixes included) and `compression_ratio`
/// (logical / stored, null for an empty store).
pub fn describe(store: &dyn Records) -> CliResult<Value> {
    let info = store.info();
    let sizes = store.sizes()?;
    let allocated = store.local_dir().map(|dir| {
        StoreFile::ALL
            .iter()
            .filter_map(|f| std::fs::metadata(dir.join(f.name())).ok())
            .map(|m| zrecord::local::sys::allocated_bytes(&m))
            .sum::<u64>()
    });
    let logical = store.logical_bytes()?;
    let stored = info.header.tail_offset;
    let mut v = json!({
        "path": store.name(),
        "kind": match store.geometry() { Geometry::Dense { .. } => "dense", Geometry::Ragged => "ragged" },
        "dtype": store.dtype().as_str(),
    });
    if let Geometry::Dense { item_shape } = store.geometry() {
        v["item_shape"] = json!(item_shape);
    }
    v["codec"] = json!(info.codec().name());
    v["len"] = json!(store.len());
    v["sizes"] = json!({
        "meta": sizes.meta,
        "data": sizes.data,
        "dict": sizes.dict,
        "total": sizes.meta + sizes.data + sizes.dict.unwrap_or(0),
        "allocated": allocated,
    });
    v["stored_bytes"] = json!(stored);
    v["logical_bytes"] = json!(logical);
    v["compression_ratio"] = if stored > 0 { json!(logical as f64 / stored as f64) } else { Value::Null };
    Ok(v)
}

fn text(v: &Value, dtype: &DType) -> Vec<String> {
    let u = |k: &str| v[k].as_u64().unwrap_or(0);
    let s = |k: &str| v["sizes"][k].as_u64();
    let mut lines = vec![
        format!("store        {}", v["path"].as_str().unwrap_or("")),
        format!("kind         {}", v["kind"].as_str().unwrap_or("")),
        format!("dtype        {} ({})", dtype, dtype_words(dtype)),
    ];
    if let Some(shape) = v.get("item_shape").and_then(Value::as_array) {
        let dims: Vec<u64> = shape.iter().filter_map(Value::as_u64).collect();
        let what = if dims.is_empty() { " (scalar records)" } else { "" };
        lines.push(format!("item_shape   {}{what}", shape_text(&dims)));
    }
    lines.push(format!("codec        {}", v["codec"].as_str().unwrap_or("")));
    lines.push(format!("records      {}", u("len")));
    lines.push(format!("logical      {}", size(u("logical_bytes"))));
    let ratio = v["compression_ratio"].as_f64().map_or("-".to_string(), |r| format!("{r:.2}x"));
    lines.push(format!("stored       {}, compression ratio {ratio}", size(u("stored_bytes"))));
    lines.push(format!("meta.zr      {}", size(s("meta").unwrap_or(0))));
    lines.push(format!("data.zr      {}", size(s("data").unwrap_or(0))));
    if let Some(d) = s("dict") {
        lines.push(format!("dict.zr      {}", size(d)));
    }
    lines.push(format!("total        {}", size(s("total").unwrap_or(0))));
    if let Some(a) = s("allocated") {
        lines.push(format!("on disk      {} allocated", size(a)));
    }
    lines
}

/// `uint8`, `int32, big-endian`, `bytes[5]`, `datetime64[ns]`...
pub fn dtype_words(d: &DType) -> String {
    let bits = d.itemsize() * 8;
    let base = match d.kind() {
        Kind::Bool => "bool".to_string(),
        Kind::Int => format!("int{bits}"),
        Kind::UInt => format!("uint{bits}"),
        Kind::Float => format!("float{bits}"),
        Kind::Complex => format!("complex{bits}"),
        Kind::Bytes => format!("bytes[{}]", d.itemsize()),
        Kind::Unicode => format!("str[{}]", d.itemsize() / 4),
        Kind::Void => format!("void[{}]", d.itemsize()),
        Kind::Datetime => format!("datetime64[{}]", d.unit().unwrap_or("generic")),
        Kind::Timedelta => format!("timedelta64[{}]", d.unit().unwrap_or("generic")),
    };
    match d.byte_order() {
        zrecord::format::ByteOrder::Big => format!("{base}, big-endian"),
        _ => base,
    }
}
