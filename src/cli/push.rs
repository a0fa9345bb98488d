//! `zrecord push STORE URL`: publish a local store to a bucket, `meta.zr`
//! last, then check what the bucket holds; an unchanged store uploads
//! nothing (see `zrecord::remote::push`).
//!
//! `zrecord push DATASET_DIR URL`: every shard store a committed version
//! names (each pushed as above), then `versions/*.json`, then `zrecord.json`
//! last, so a reader of the bucket never meets a manifest naming a shard
//! that is not all there. Uncommitted shards stay behind. A bucket whose
//! dataset has a newer version, or a version of the same number with other
//! contents, is refused before anything is uploaded.

use super::common::{io_fail, size, CliResult, Ctx, Out};
use super::records::is_local_dataset;
use serde_json::json;
use std::path::{Path, PathBuf};
use zrecord::dataset::{layout, Manifest};
use zrecord::remote::push::{push, push_files_in_order, read_object, PushAction, PushOptions, PushedFile};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Local store directory, or dataset directory (holding zrecord.json).
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

pub fn run(ctx: &Ctx, a: Args) -> CliResult {
    if a.part_size < 5 {
        return Err("--part-size must be at least 5 (MiB; S3's smallest part)".into());
    }
    let options = PushOptions { part_size: a.part_size << 20, ..Default::default() };
    let (pushed, last) = if is_local_dataset(&a.store) {
        (push_dataset(ctx, &a.store, &a.url, options)?, layout::MANIFEST)
    } else {
        (push(&a.store, &a.url, options)?, "meta.zr")
    };
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
            "pushed {} files to {url}/ ({uploaded} uploaded, {} unchanged; {last} last)",
            pushed.len(),
            pushed.len() - uploaded
        ))?;
    }
    out.flush()
}

/// Refuse, before anything is uploaded, to push over a dataset in the
/// bucket whose history differs from this copy's: one with a newer version
/// (the push would roll its readers back), or a version of the same number
/// with other contents (another writer committed there; the push would
/// replace that commit). Costs one read per version the bucket has.
fn same_history(url: &str, versions: &[(u64, PathBuf)], newest: u64) -> CliResult<()> {
    let Some(theirs) = read_object(url, layout::MANIFEST)? else { return Ok(()) };
    let theirs = Manifest::parse(url, &theirs)?.version;
    let conflict =
        |version, why: String| zrecord::Error::CommitConflict { dataset: url.to_string(), version, why };
    if theirs > newest {
        return Err(conflict(
            theirs,
            format!(
                "the bucket's dataset is at version {theirs}, newer than this copy's {newest}: pushing would roll \
                 its readers back; push to a new prefix, or append to the bucket's dataset with commit"
            ),
        )
        .into());
    }
    for (n, path) in versions.iter().filter(|(n, _)| *n <= theirs) {
        let mine = std::fs::read(path).map_err(|e| io_fail(path, "read", e))?;
        match read_object(url, &layout::version_path(*n))? {
            Some(bytes) if bytes != mine => {
                return Err(conflict(
                    *n,
                    format!(
                        "the bucket's version {n} differs from this copy's: another writer committed to the \
                         bucket's dataset; push to a new prefix, or append to the bucket's dataset with commit"
                    ),
                )
                .into())
            }
            _ => {}
        }
    }
    Ok(())
}

/// Push the dataset at `root`: the shard stores every committed version
/// names, then the versions, then the manifest.
fn push_dataset(ctx: &Ctx, root: &Path, url: &str, options: PushOptions) -> CliResult<Vec<PushedFile>> {
    let url = url.trim_end_matches('/');
    let name = root.display().to_string();
    let versions_dir = root.join(layout::VERSIONS);
    let mut versions: Vec<(u64, PathBuf)> = std::fs::read_dir(&versions_dir)
        .map_err(|e| io_fail(&versions_dir, "list", e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((layout::version_of(e.file_name().to_str()?)?, e.path())))
        .collect();
    versions.sort();
    let mut manifests = Vec::with_capacity(versions.len() + 1);
    for (_, path) in &versions {
        let bytes = std::fs::read(path).map_err(|e| io_fail(path, "read", e))?;
        manifests.push(Manifest::parse(&name, &bytes)?);
    }
    let newest = root.join(layout::MANIFEST);
    let bytes = std::fs::read(&newest).map_err(|e| io_fail(&newest, "read", e))?;
    manifests.push(Manifest::parse(&name, &bytes)?);
    same_history(url, &versions, manifests.last().map_or(0, |m| m.version))?;
    // Each store once, in the order the versions name them.
    let mut stores: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for m in &manifests {
        for s in &m.shards {
            for column in s.columns.keys() {
                let rel = layout::store_path(&s.path, column);
                if seen.insert(rel.clone()) {
                    stores.push(rel);
                }
            }
        }
    }
    let spin = ctx.spinner("pushing shards");
    let mut pushed = Vec::new();
    for (k, rel) in stores.iter().enumerate() {
        spin.set_message(format!("pushing store {}/{} ({rel})", k + 1, stores.len()));
        for mut f in push(&root.join(rel), &format!("{url}/{rel}"), options)? {
            f.name = format!("{rel}/{}", f.name);
            pushed.push(f);
        }
    }
    spin.finish_and_clear();
    let mut files: Vec<(String, PathBuf)> =
        versions.iter().map(|(n, path)| (layout::version_path(*n), path.clone())).collect();
    files.push((layout::MANIFEST.to_string(), newest));
    pushed.extend(push_files_in_order(&files, url, options)?);
    Ok(pushed)
}
