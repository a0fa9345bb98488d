//! `zrecord push STORE URL`: publish a local store to a bucket, `meta.zr`
//! last, then check what the bucket holds; an unchanged store uploads
//! nothing (see `zrecord::remote::push`).

use super::common::{size, CliResult, Ctx, Out};
use serde_json::json;
use std::path::PathBuf;
use zrecord::remote::push::{push, PushAction, PushOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Local store directory.
    store: PathBuf,
    /// Where to put it: s3://bucket/prefix/store, gs://…, az://….
    url: String,
    /// Files larger than this many MiB go up in parts of this size (at least 5).
    #[arg(long, default_value_t = 16, value_name = "MIB")]
    part_size: usize,
    /// One JSON object per file instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    if a.part_size < 5 {
        return Err("--part-size must be at least 5 (MiB; S3's smallest part)".into());
    }
    let options = PushOptions { part_size: a.part_size << 20, ..Default::default() };
    let pushed = push(&a.store, &a.url, options)?;
    let mut out = Out::new();
    let mut uploaded = 0;
    for f in &pushed {
        let (what, parts) = match f.action {
            PushAction::Uploaded => ("uploaded", 1),
            PushAction::Multipart(n) => ("uploaded", n),
            PushAction::Unchanged => ("unchanged", 0),
        };
        if parts > 0 {
            uploaded += 1;
        }
        if a.json {
            let v = json!({"file": f.name, "url": f.url, "size": f.size, "action": what, "parts": parts, "etag": f.e_tag});
            out.line(&v.to_string())?;
        } else {
            let how = match f.action {
                PushAction::Multipart(n) => format!(" in {n} parts"),
                _ => String::new(),
            };
            out.line(&format!(
                "{what:<10} {:<9} {:>12}{how}  etag {}  size and etag checked",
                f.name,
                size(f.size),
                f.e_tag.as_deref().unwrap_or("-")
            ))?;
        }
    }
    if !a.json {
        let url = a.url.trim_end_matches('/');
        out.line(&format!(
            "pushed {} files to {url}/ ({uploaded} uploaded, {} unchanged; meta.zr last)",
            pushed.len(),
            pushed.len() - uploaded
        ))?;
    }
    out.flush()
}
