//! `zrecord info STORE [--json]`, and of a dataset: its version, length,
//! shards and columns (or one column as a store, with `--column`).

use super::common::{shape_text, size, CliResult, Ctx, Out};
use super::records::{self, DatasetArgs, Target};
use serde_json::{json, Value};
use std::path::PathBuf;
use zrecord::dataset::ShardFiles;
use zrecord::format::Kind;
use zrecord::format::StoreFile;
use zrecord::{DType, Geometry};
use zrecord::{Dataset, Records};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Store directory, or its URL (s3://, gs://, az://, http(s)://).
    store: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dataset: DatasetArgs,
}

pub fn run(_ctx: &Ctx, args: Args) -> CliResult {
    let target = records::open_target(&args.store, &args.dataset)?;
    let mut out = Out::new();
    let lines = match (&target, args.dataset.column.as_deref()) {
        (Target::Dataset(ds), None) => {
            let v = describe_dataset(ds);
            if args.json {
                vec![v.to_string()]
            } else {
                dataset_text(&v)
            }
        }
        (target, column) => {
            let store = target.one(column, "info")?;
            let v = describe(store)?;
            if args.json {
                vec![v.to_string()]
            } else {
                text(&v, store.dtype())
            }
        }
    };
    for line in lines {
        out.line(&line)?;
    }
    out.flush()
}

/// The JSON description of a dataset (`--json`), also the source of its text.
///
/// Keys: `path`, `dataset` (true), `version`, `len`, `shards` (their
/// count), `columns` (each `name`, `kind`, `dtype`, `item_shape` (Dense
/// only), `codec`, `dict` (the shared dictionary's `size` and `xxh3`, or
/// null), `sealed_shards`, `sizes` (`meta`, `data`, `dict`, `sums`,
/// `total`: bytes over every shard, as committed)) and `total_bytes`.
pub fn describe_dataset(ds: &Dataset) -> Value {
    let m = ds.manifest();
    let columns: Vec<Value> = m
        .columns
        .iter()
        .map(|c| {
            let files: Vec<ShardFiles> = m.shards.iter().map(|s| s.columns[&c.name]).collect();
            let sum = |f: fn(&ShardFiles) -> u64| files.iter().map(f).sum::<u64>();
            let (meta, data) = (sum(|f| f.meta), sum(|f| f.data));
            let (dict, sums) = (sum(|f| f.dict.unwrap_or(0)), sum(|f| f.sums.unwrap_or(0)));
            let mut v = json!({"name": c.name, "kind": c.kind, "dtype": c.dtype});
            if let Some(shape) = &c.item_shape {
                v["item_shape"] = json!(shape);
            }
            v["codec"] = json!(c.codec);
            v["dict"] = json!(c.dict);
            v["sealed_shards"] = json!(files.iter().filter(|f| f.sums.is_some()).count());
            v["sizes"] = json!({"meta": meta, "data": data, "dict": dict, "sums": sums, "total": meta + data + dict + sums});
            v
        })
        .collect();
    let total: u64 = columns.iter().filter_map(|c| c["sizes"]["total"].as_u64()).sum();
    json!({
        "path": ds.location(),
        "dataset": true,
        "version": ds.version(),
        "len": ds.len(),
        "shards": m.shards.len(),
        "columns": columns,
        "total_bytes": total,
    })
}

fn dataset_text(v: &Value) -> Vec<String> {
    let u = |k: &str| v[k].as_u64().unwrap_or(0);
    let mut lines = vec![
        format!("dataset      {}", v["path"].as_str().unwrap_or("")),
        format!("version      {}", u("version")),
        format!("records      {}", u("len")),
        format!("shards       {}", u("shards")),
        format!("total        {}", size(u("total_bytes"))),
    ];
    let columns = v["columns"].as_array().cloned().unwrap_or_default();
    lines.push(format!("columns      {}", columns.len()));
    for c in &columns {
        let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
        let words = DType::parse(&s("dtype")).map(|d| dtype_words(&d)).unwrap_or_default();
        let mut line = format!("  {:<12} {:<6} {} ({words})", s("name"), s("kind"), s("dtype"));
        if let Some(shape) = c["item_shape"].as_array() {
            let dims: Vec<u64> = shape.iter().filter_map(Value::as_u64).collect();
            line.push_str(&format!(", item_shape {}", shape_text(&dims)));
        }
        line.push_str(&format!(", codec {}", s("codec")));
        if let Some(d) = c["dict"].as_object() {
            let xxh3 = d.get("xxh3").and_then(Value::as_str).unwrap_or("");
            line.push_str(&format!(
                " (shared dictionary, {} bytes, xxh3 {xxh3})",
                d.get("size").and_then(Value::as_u64).unwrap_or(0)
            ));
        }
        line.push_str(&format!(", {}", size(c["sizes"]["total"].as_u64().unwrap_or(0))));
        let sealed = c["sealed_shards"].as_u64().unwrap_or(0);
        if sealed > 0 {
            line.push_str(&format!(", {sealed} of {} shards sealed", u("shards")));
        }
        lines.push(line);
    }
    lines
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
