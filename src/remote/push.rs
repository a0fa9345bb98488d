//! Publishing a local store to a bucket in an order that keeps readers safe:
//! every file but `meta.zr` first (`data.zr`, `dict.zr`, a checksum sidecar,
//! ...), big ones as multipart uploads, then `meta.zr` — the header a reader
//! opens first — last, so no reader ever sees a header over missing data.
//! Afterwards each object's size and ETag are read back and checked.
//!
//! Each object carries the SHA-256 of its bytes as user metadata
//! (`x-amz-meta-zrecordsha256` on S3, `x-goog-meta-…` on GCS, `x-ms-meta-…`
//! on Azure), so pushing an unchanged store again uploads nothing.

use super::objstore::{convert, Bucket, BucketRetry};
use super::runtime;
use crate::format::StoreFile;
use crate::{Error, Result, Store};
use object_store::{
    Attribute, Attributes, GetOptions, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions,
    PutPayload, WriteMultipart,
};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Metadata key holding an object's SHA-256 (hex). Letters and digits
/// only: Azure refuses metadata names that are not C# identifiers (a `-`
/// is `400 InvalidMetadata`), and proxies such as nginx drop headers with
/// a `_` by default.
const SHA_KEY: &str = "zrecordsha256";
/// The key pushes before that fix wrote (S3 and GCS took it): still read,
/// so a store pushed then is not uploaded again.
const OLD_SHA_KEY: &str = "zrecord-sha256";

/// How to push.
#[derive(Clone, Copy, Debug)]
pub struct PushOptions {
    /// Files larger than this go up as multipart uploads in parts of this
    /// size (default 16 MiB; S3 wants at least 5 MiB).
    pub part_size: usize,
    /// Parts uploading at once (default 8).
    pub part_concurrency: usize,
}

impl Default for PushOptions {
    fn default() -> Self {
        PushOptions { part_size: 16 << 20, part_concurrency: 8 }
    }
}

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushAction {
    /// Uploaded in one request.
    Uploaded,
    /// Uploaded in this many parts.
    Multipart(usize),
    /// The bucket already held these bytes.
    Unchanged,
}

/// One pushed file.
#[derive(Clone, Debug)]
pub struct PushedFile {
    /// File name in the store directory.
    pub name: String,
    /// Its size, checked on the bucket after the push.
    pub size: u64,
    /// What was done.
    pub action: PushAction,
    /// The object's ETag after the push, checked against the upload's.
    pub e_tag: Option<String>,
    /// The object's URL.
    pub url: String,
}

/// The files of a store directory in push order: `meta.zr` last.
fn files_in_order(dir: &Path) -> Result<Vec<(String, PathBuf, u64)>> {
    let io = |op: &'static str| move |source| Error::Io { path: dir.to_path_buf(), op, source };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io("listing the store directory"))? {
        let entry = entry.map_err(io("listing the store directory"))?;
        let meta = entry.metadata().map_err(io("reading a file's metadata"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Regular files only; dotfiles are lock files and editors' scratch.
        if !meta.is_file() || name.starts_with('.') {
            continue;
        }
        files.push((name, entry.path(), meta.len()));
    }
    // data.zr, dict.zr, then the rest by name; meta.zr last.
    let rank = |n: &str| match n {
        n if n == StoreFile::Data.name() => 0,
        n if n == StoreFile::Dict.name() => 1,
        n if n == StoreFile::Meta.name() => 3,
        _ => 2,
    };
    files.sort_by(|a, b| (rank(&a.0), &a.0).cmp(&(rank(&b.0), &b.0)));
    Ok(files)
}

fn sha256_of(path: &Path) -> Result<String> {
    let io = |op| move |source| Error::Io { path: path.to_path_buf(), op, source };
    let mut file = std::fs::File::open(path).map_err(io("opening"))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io("reading"))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The object's size, ETag and recorded SHA-256, or `None` if it is missing.
async fn remote_state(bucket: &Bucket, name: &str) -> Result<Option<(u64, Option<String>, Option<String>)>> {
    let at = format!("{}{name}", bucket.url);
    let options = GetOptions { head: true, ..Default::default() };
    match bucket.store.get_opts(&bucket.object(name), options).await {
        Ok(got) => {
            let sha = [SHA_KEY, OLD_SHA_KEY]
                .into_iter()
                .find_map(|k| got.attributes.get(&Attribute::Metadata(k.into())))
                .map(|v| v.to_string());
            Ok(Some((got.meta.size, got.meta.e_tag.clone(), sha)))
        }
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(convert(&at, e)),
    }
}

async fn upload(
    bucket: &Bucket,
    name: &str,
    path: &Path,
    size: u64,
    sha: &str,
    options: PushOptions,
) -> Result<(PushAction, Option<String>)> {
    let at = format!("{}{name}", bucket.url);
    let io = |op| move |source| Error::Io { path: path.to_path_buf(), op, source };
    let mut attributes = Attributes::new();
    attributes.insert(Attribute::Metadata(SHA_KEY.into()), sha.to_string().into());
    let location = bucket.object(name);
    let part = options.part_size.max(5 << 20);
    if size <= part as u64 {
        let bytes = std::fs::read(path).map_err(io("reading"))?;
        let put = PutOptions { attributes, ..Default::default() };
        let done = bucket
            .store
            .put_opts(&location, PutPayload::from(bytes), put)
            .await
            .map_err(|e| convert(&at, e))?;
        return Ok((PushAction::Uploaded, done.e_tag));
    }
    let opts = PutMultipartOptions { attributes, ..Default::default() };
    let upload = bucket.store.put_multipart_opts(&location, opts).await.map_err(|e| convert(&at, e))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, part);
    let mut file = std::fs::File::open(path).map_err(io("opening"))?;
    let mut buf = vec![0u8; part];
    let mut parts = 0;
    loop {
        let mut filled = 0;
        while filled < part {
            let n = file.read(&mut buf[filled..]).map_err(io("reading"))?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 {
            break;
        }
        if let Err(e) = writer.wait_for_capacity(options.part_concurrency.max(1)).await {
            return Err(convert(&at, e));
        }
        writer.write(&buf[..filled]);
        parts += 1;
        if filled < part {
            break;
        }
    }
    let done = writer.finish().await.map_err(|e| convert(&at, e))?;
    Ok((PushAction::Multipart(parts), done.e_tag))
}

async fn push_files(
    bucket: Bucket,
    files: Vec<(String, PathBuf, u64)>,
    options: PushOptions,
) -> Result<Vec<PushedFile>> {
    let mut out = Vec::with_capacity(files.len());
    for (name, path, size) in files {
        let sha = sha256_of(&path)?;
        let url = format!("{}{name}", bucket.url);
        let before = remote_state(&bucket, &name).await?;
        let (action, uploaded_tag) = match before {
            Some((s, tag, Some(remote_sha))) if s == size && remote_sha == sha => {
                (PushAction::Unchanged, tag)
            }
            _ => upload(&bucket, &name, &path, size, &sha, options).await?,
        };
        // Read back: the bucket must hold this size under the ETag the upload got.
        let Some((got_size, got_tag, _)) = remote_state(&bucket, &name).await? else {
            return Err(Error::Remote { url, why: "the object is missing right after its upload".into() });
        };
        if got_size != size {
            return Err(Error::Remote {
                url,
                why: format!("the bucket holds {got_size} bytes after the push, the local file {size}"),
            });
        }
        if let (Some(want), Some(got)) = (&uploaded_tag, &got_tag) {
            if want != got {
                return Err(Error::StoreChanged {
                    url,
                    why: format!(
                        "the upload got ETag {want} but the bucket now holds {got}: another writer?"
                    ),
                });
            }
        }
        out.push(PushedFile { name, size, action, e_tag: got_tag, url });
    }
    Ok(out)
}

/// The object `url/name` whole (`name` may hold `/`), or `None` when it is
/// missing: a dataset's manifests, read before a push replaces them.
///
/// # Errors
/// `Remote` (refused credentials named).
pub fn read_object(url: &str, name: &str) -> Result<Option<Vec<u8>>> {
    let bucket = Bucket::from_url(url, BucketRetry::default())?;
    let (at, object) = (format!("{}{name}", bucket.url), bucket.object_at(name));
    runtime::block_on(async move {
        let got = match bucket.store.get(&object).await {
            Ok(got) => got.bytes().await,
            Err(e) => Err(e),
        };
        match got {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(convert(&at, e)),
        }
    })
}

/// Push the store in `dir` to `url` (`s3://bucket/prefix/store`, ...),
/// blocking until done. The local store is opened (and so checked, and
/// locked against writers) for the whole push.
///
/// # Errors
/// The local store's open errors; `Io`; `Remote` (refused credentials
/// named), `StoreChanged` when the read-back disagrees with the upload.
pub fn push(dir: &Path, url: &str, options: PushOptions) -> Result<Vec<PushedFile>> {
    let store = Store::open(dir)?;
    let files = files_in_order(dir)?;
    let bucket = Bucket::from_url(url, BucketRetry::default())?;
    let pushed = runtime::block_on(push_files(bucket, files, options));
    drop(store);
    pushed
}

/// Push single files to `url`, one at a time in the order given: each
/// `(name, path)` becomes the object `url/name` (`name` may hold `/`),
/// skipped when the bucket holds the same bytes, then read back and
/// checked. For the files beside stores a dataset has (its versions and
/// manifest), which must go up after the stores they name.
///
/// # Errors
/// As [`push`], without the store's.
pub fn push_files_in_order(
    files: &[(String, PathBuf)],
    url: &str,
    options: PushOptions,
) -> Result<Vec<PushedFile>> {
    let root = url.trim_end_matches('/');
    let mut out = Vec::with_capacity(files.len());
    for (name, path) in files {
        let io = |source| Error::Io { path: path.clone(), op: "reading a file's metadata", source };
        let size = std::fs::metadata(path).map_err(io)?.len();
        let (dir, file) = match name.rsplit_once('/') {
            Some((dir, file)) => (format!("{root}/{dir}"), file),
            None => (root.to_string(), name.as_str()),
        };
        let bucket = Bucket::from_url(&dir, BucketRetry::default())?;
        let mut pushed =
            runtime::block_on(push_files(bucket, vec![(file.to_string(), path.clone(), size)], options))?;
        for p in &mut pushed {
            p.name = name.clone();
        }
        out.extend(pushed);
    }
    Ok(out)
}
