//! Writing datasets: shards written by any number of workers, each invisible
//! until one commit names it in a new version of the manifest.
//!
//! A worker writes a shard with [`ShardWriter`] (one ordinary store per
//! column, under a name no other worker picks) and hands the small
//! [`ShardInfo`] it returns to whoever commits. [`commit`] writes the next
//! version's manifest with create-if-absent (a hard link locally,
//! `PutMode::Create` in buckets), so two committers never lose each other's
//! shards, then replaces the root's copy.

use super::layout;
use super::manifest::{ColumnSpec, DictDigest, Manifest, ShardEntry, ShardFiles, MAX_MANIFEST_BYTES};
use crate::format::files::{DATA, DICT, META, SUMS};
use crate::format::Geometry;
use crate::location::Location;
use crate::records::Records;
use crate::{CreateOptions, Error, Result, Store, Writer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a written shard is, for the commit: small, and serializable
/// (`to_json`) so it crosses process boundaries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardInfo {
    /// The shard's directory relative to the dataset (`shards/<name>`).
    pub path: String,
    /// Records in each column.
    pub length: u64,
    /// The columns as written, in order.
    pub columns: Vec<ColumnSpec>,
    /// Each column's file sizes.
    pub files: BTreeMap<String, ShardFiles>,
}

impl ShardInfo {
    /// As JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a shard info serializes")
    }
    /// From JSON made by [`ShardInfo::to_json`].
    ///
    /// # Errors
    /// `InvalidArgument` when it does not decode.
    pub fn from_json(text: &str) -> Result<ShardInfo> {
        serde_json::from_str(text)
            .map_err(|e| Error::InvalidArgument { store: "shard info".into(), why: e.to_string() })
    }
}

/// One column of a shard to write.
#[derive(Clone, Debug)]
pub struct ColumnDef {
    /// Its name (the store's directory in the shard).
    pub name: String,
    /// NumPy dtype string.
    pub dtype: String,
    /// `Dense { item_shape }` or `Ragged`.
    pub geometry: Geometry,
    /// Codec, dictionary, level, seal.
    pub options: CreateOptions,
}

/// A shard being written locally: one [`Writer`] per column.
#[derive(Debug)]
pub struct ShardWriter {
    root: PathBuf,
    path: String,
    columns: Vec<(String, Writer)>,
}

impl ShardWriter {
    /// Start a shard of `columns` in the dataset directory `root` (made if
    /// missing), under a new unique name.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad or repeated column name, the writers' errors.
    pub fn create(root: &Path, columns: Vec<ColumnDef>) -> Result<ShardWriter> {
        let bad = |why: String| Error::InvalidArgument { store: root.display().to_string(), why };
        if columns.is_empty() {
            return Err(bad("a shard needs at least one column".into()));
        }
        for (i, c) in columns.iter().enumerate() {
            layout::check_name("column", &c.name).map_err(bad)?;
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(bad(format!("column {:?} given twice", c.name)));
            }
        }
        let path = layout::new_shard_path(unix_millis(), random_u64());
        let dir = root.join(&path);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "create", e))?;
        let mut writers = Vec::with_capacity(columns.len());
        for c in columns {
            let at = dir.join(&c.name);
            let w = match &c.geometry {
                Geometry::Dense { item_shape } => Writer::create_dense(&at, &c.dtype, item_shape, c.options)?,
                Geometry::Ragged => Writer::create_ragged(&at, &c.dtype, c.options)?,
            };
            writers.push((c.name, w));
        }
        Ok(ShardWriter { root: root.to_path_buf(), path, columns: writers })
    }

    /// The shard's path relative to the dataset.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Column `name`'s writer.
    ///
    /// # Errors
    /// `InvalidArgument` for a column the shard does not have.
    pub fn column(&mut self, name: &str) -> Result<&mut Writer> {
        let root = self.root.display().to_string();
        self.columns.iter_mut().find(|(n, _)| n == name).map(|(_, w)| w).ok_or_else(|| {
            Error::InvalidArgument { store: root, why: format!("the shard has no column {name:?}") }
        })
    }

    /// Close every column's store and describe the shard for [`commit`].
    ///
    /// # Errors
    /// `InvalidArgument` when the columns hold different numbers of
    /// records (nothing is committed), the writers' close errors.
    pub fn finish(self) -> Result<ShardInfo> {
        let lengths: Vec<u64> = self.columns.iter().map(|(_, w)| w.len()).collect();
        if lengths.iter().any(|&l| l != lengths[0]) {
            let each: Vec<String> = self.columns.iter().map(|(n, w)| format!("{n}: {}", w.len())).collect();
            return Err(Error::InvalidArgument {
                store: self.root.join(&self.path).display().to_string(),
                why: format!("columns of one shard must hold as many records each ({})", each.join(", ")),
            });
        }
        let dir = self.root.join(&self.path);
        let mut specs = Vec::new();
        let mut files = BTreeMap::new();
        for (name, w) in self.columns {
            w.close()?;
            let (spec, f) = describe_store(&dir.join(&name), &name)?;
            specs.push(spec);
            files.insert(name, f);
        }
        Ok(ShardInfo { path: self.path, length: lengths[0], columns: specs, files })
    }
}

/// A closed store's column spec and file sizes.
fn describe_store(dir: &Path, name: &str) -> Result<(ColumnSpec, ShardFiles)> {
    let store = Store::open(dir)?;
    let size = |file: &str| -> Result<Option<u64>> {
        match std::fs::metadata(dir.join(file)) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(dir.join(file), "stat", e)),
        }
    };
    let files = ShardFiles {
        meta: size(META)?.unwrap_or_default(),
        data: size(DATA)?.unwrap_or_default(),
        dict: size(DICT)?,
        sums: size(SUMS)?,
    };
    Ok((ColumnSpec::of_store(name, store.info(), store.dict_bytes()), files))
}

/// Describe an existing store directory as a one-column shard's column (to
/// bring stores written elsewhere into a dataset).
///
/// # Errors
/// The store's open errors.
pub fn describe_shard(root: &Path, path: &str) -> Result<ShardInfo> {
    layout::check_shard_path(path).map_err(|why| Error::InvalidArgument { store: path.into(), why })?;
    let dir = root.join(path);
    let mut specs = Vec::new();
    let mut files = BTreeMap::new();
    let mut length = None;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, "list", e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(META).is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let (spec, f) = describe_store(&dir.join(&name), &name)?;
        let len = Store::open(dir.join(&name))?.len();
        if *length.get_or_insert(len) != len {
            return Err(Error::InvalidArgument {
                store: dir.display().to_string(),
                why: format!("column {name:?} holds {len} records, another {}", length.unwrap_or_default()),
            });
        }
        specs.push(spec);
        files.insert(name, f);
    }
    Ok(ShardInfo { path: path.to_string(), length: length.unwrap_or_default(), columns: specs, files })
}

/// Upload a shard written under the local `staging_root` to the dataset at
/// the bucket prefix `url`, one push per column store (`meta.zr` last, so a
/// store is whole once it is there). The shard stays invisible until a
/// commit names it; a failed upload leaves debris that `gc` removes.
///
/// # Errors
/// The pushes' errors (the staged store's open errors, bucket errors).
#[cfg(feature = "cloud")]
pub fn upload_shard(staging_root: &Path, info: &ShardInfo, url: &str) -> Result<()> {
    let base = url.trim_end_matches('/');
    for c in &info.columns {
        let dir = staging_root.join(&info.path).join(&c.name);
        let to = format!("{base}/{}/{}", info.path, c.name);
        crate::remote::push::push(&dir, &to, crate::remote::push::PushOptions::default())?;
    }
    Ok(())
}

/// How a commit treats the versions before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitMode {
    /// The first version; fails when the dataset exists.
    Create,
    /// The newest version's shards, then these (creates the dataset if
    /// missing). Retried on a conflict: appends commute.
    Append,
    /// Only these shards (the older versions stay readable by number).
    Overwrite,
}

impl std::str::FromStr for CommitMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "create" => Ok(CommitMode::Create),
            "append" => Ok(CommitMode::Append),
            "overwrite" => Ok(CommitMode::Overwrite),
            _ => Err(format!("unknown commit mode {s:?} (create, append or overwrite)")),
        }
    }
}

/// Times an append is retried on a conflict before giving up.
const APPEND_ATTEMPTS: u32 = 16;

/// Commit `shards` as the dataset's next version at `target` (a directory
/// or a bucket URL). Returns the manifest committed.
///
/// # Errors
/// `AlreadyExists` (create on an existing dataset), `BadShard` naming the
/// shard and column whose schema differs, `CommitConflict` when another
/// commit made the version first (create, overwrite; append after
/// retries), I/O and bucket errors.
pub fn commit(target: &str, shards: &[ShardInfo], mode: CommitMode) -> Result<Manifest> {
    let root = Root::parse(target)?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = root.newest()?;
        let manifest = next_version(target, current.as_ref(), shards, mode)?;
        let bytes = manifest.to_json();
        if root.create_if_absent(&layout::version_path(manifest.version), &bytes)? {
            root.replace(layout::MANIFEST, &bytes)?;
            return Ok(manifest);
        }
        if mode != CommitMode::Append || attempt >= APPEND_ATTEMPTS {
            return Err(Error::CommitConflict {
                dataset: target.to_string(),
                version: manifest.version,
                why: match mode {
                    CommitMode::Append => format!("gave up after {attempt} attempts"),
                    _ => "nothing was committed; open the new version and commit again".into(),
                },
            });
        }
        std::thread::sleep(Duration::from_millis(5 << attempt.min(6)));
    }
}

/// The manifest that commits `shards` over `current` in `mode`.
fn next_version(
    target: &str,
    current: Option<&Manifest>,
    shards: &[ShardInfo],
    mode: CommitMode,
) -> Result<Manifest> {
    let bad = |check: String| Error::BadDataset { dataset: target.to_string(), check };
    if mode == CommitMode::Create && current.is_some() {
        let what = "a committed dataset; commit in append mode to add shards".to_string();
        return Err(Error::AlreadyExists { store: target.to_string(), what });
    }
    let mut entries: Vec<ShardEntry> = match (mode, current) {
        (CommitMode::Append, Some(m)) => m.shards.clone(),
        _ => Vec::new(),
    };
    let mut columns: Vec<ColumnSpec> = match (mode, current) {
        (CommitMode::Append, Some(m)) => m.columns.clone(),
        _ => match shards.first() {
            Some(s) => s.columns.iter().map(|c| ColumnSpec { dict: None, ..c.clone() }).collect(),
            None => return Err(bad("nothing to commit: no shards, and no dataset to append to".into())),
        },
    };
    for s in shards {
        let refuse =
            |check: String| Error::BadShard { dataset: target.to_string(), shard: s.path.clone(), check };
        layout::check_shard_path(&s.path).map_err(refuse)?;
        let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
        for c in &columns {
            let Some(mine) = s.columns.iter().find(|m| m.name == c.name) else {
                return Err(refuse(format!(
                    "column {:?} is missing (the shard has {})",
                    c.name,
                    names.join(", ")
                )));
            };
            if let Some(why) = c.mismatch(mine) {
                return Err(refuse(format!("column {:?}: {why}", c.name)));
            }
            if c.arrow != mine.arrow {
                let (ours, theirs) =
                    (c.arrow.as_deref().unwrap_or("none"), mine.arrow.as_deref().unwrap_or("none"));
                return Err(refuse(format!(
                    "column {:?}: arrow type is {theirs}, the dataset's is {ours}",
                    c.name
                )));
            }
        }
        if let Some(extra) = s.columns.iter().find(|m| !columns.iter().any(|c| c.name == m.name)) {
            return Err(refuse(format!("column {:?} is not one of the dataset's", extra.name)));
        }
        if entries.iter().any(|e| e.path == s.path) {
            return Err(refuse("already committed (each shard is committed once)".into()));
        }
        entries.push(ShardEntry { path: s.path.clone(), length: s.length, columns: s.files.clone() });
    }
    // A dictionary every shard of a column shares is named once.
    let kept = match (mode, current) {
        (CommitMode::Append, Some(m)) if !m.shards.is_empty() => Some(m),
        _ => None,
    };
    for c in &mut columns {
        let digest = |s: &ShardInfo| s.columns.iter().find(|m| m.name == c.name).and_then(|m| m.dict.clone());
        let candidate: Option<DictDigest> = match kept {
            Some(_) => c.dict.clone(),
            None => shards.first().and_then(digest),
        };
        c.dict = candidate.filter(|d| shards.iter().all(|s| digest(s).as_ref() == Some(d)));
    }
    let version = current.map_or(1, |m| m.version + 1);
    let manifest = Manifest::new(version, columns, entries);
    manifest.validate().map_err(bad)?;
    Ok(manifest)
}

/// Remove the shards of the dataset at `target` (a directory or a bucket
/// prefix) that no version names and that were created more than
/// `older_than` ago (a crashed or retried writer's); with `dry_run`, only
/// say which. Returns their paths. A shard's age is in its name, so a
/// bucket needs no object dates; it costs two listings and one per shard
/// removed.
///
/// # Errors
/// I/O and bucket errors; `BadDataset` for a damaged version, or when
/// `target` holds no `zrecord.json` (nothing there is known to be a
/// dataset's, so nothing is removed).
pub fn gc(target: &str, older_than: Duration, dry_run: bool) -> Result<Vec<String>> {
    let root = Root::parse(target)?;
    if root.read(layout::MANIFEST)?.is_none() {
        return Err(Error::BadDataset {
            dataset: root.name(),
            check: format!("no {} there: not a dataset (or nothing committed yet)", layout::MANIFEST),
        });
    }
    // Shards first, versions after: a commit landing between the two
    // listings names its shards in a version this gc reads.
    let now = unix_millis();
    let mut found = root.list(layout::SHARDS)?;
    let mut named = std::collections::HashSet::new();
    for file in root.list(layout::VERSIONS)? {
        if layout::version_of(&file).is_none() {
            continue;
        }
        let path = format!("{}/{file}", layout::VERSIONS);
        let Some(bytes) = root.read(&path)? else { continue };
        for s in Manifest::parse(&format!("{}/{path}", root.name()), &bytes)?.shards {
            named.insert(s.path);
        }
    }
    found.sort();
    let mut removed = Vec::new();
    for shard in found {
        let path = format!("{}/{shard}", layout::SHARDS);
        if named.contains(&path) {
            continue;
        }
        let Some(created) = layout::shard_created(&shard) else {
            continue; // not a shard name of ours: leave it alone
        };
        if u128::from(now.saturating_sub(created)) < older_than.as_millis() {
            continue;
        }
        if !dry_run {
            root.remove_tree(&path)?;
        }
        removed.push(path);
    }
    Ok(removed)
}

/// Where a commit writes: a directory, or a bucket prefix.
enum Root {
    Dir(PathBuf),
    #[cfg(feature = "cloud")]
    Bucket(crate::remote::objstore::Bucket),
}

impl Root {
    fn parse(target: &str) -> Result<Root> {
        match Location::parse(target)? {
            Location::Path(p) => Ok(Root::Dir(PathBuf::from(p))),
            #[cfg(feature = "cloud")]
            Location::Bucket { url, .. } => Ok(Root::Bucket(crate::remote::objstore::Bucket::from_url(
                url,
                crate::remote::objstore::BucketRetry::default(),
            )?)),
            other => Err(Error::InvalidArgument {
                store: target.to_string(),
                why: format!(
                    "datasets are committed to a directory or a bucket, not {}",
                    other.url().unwrap_or_default()
                ),
            }),
        }
    }

    /// The newest committed version, if any.
    fn newest(&self) -> Result<Option<Manifest>> {
        let Some(bytes) = self.read(layout::MANIFEST)? else {
            return Ok(None);
        };
        let mut m = Manifest::parse(&self.name(), &bytes)?;
        while let Some(next) = self.read(&layout::version_path(m.version + 1))? {
            m = Manifest::parse(&self.name(), &next)?;
        }
        Ok(Some(m))
    }

    fn name(&self) -> String {
        match self {
            Root::Dir(d) => d.display().to_string(),
            #[cfg(feature = "cloud")]
            Root::Bucket(b) => b.url.clone(),
        }
    }

    fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        match self {
            Root::Dir(d) => match std::fs::read(d.join(path)) {
                Ok(b) if b.len() as u64 > MAX_MANIFEST_BYTES => Err(Error::BadDataset {
                    dataset: self.name(),
                    check: format!("{path} is {} bytes (at most {MAX_MANIFEST_BYTES})", b.len()),
                }),
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::io(d.join(path), "read", e)),
            },
            #[cfg(feature = "cloud")]
            Root::Bucket(b) => bucket::read(b, path),
        }
    }

    /// Create `path` holding `bytes` unless it exists (atomically: readers
    /// see all of it or nothing). `false` when it existed.
    fn create_if_absent(&self, path: &str, bytes: &[u8]) -> Result<bool> {
        match self {
            Root::Dir(d) => {
                let target = d.join(path);
                let tmp = write_beside(&target, bytes)?;
                let linked = std::fs::hard_link(&tmp, &target);
                let _ = std::fs::remove_file(&tmp);
                match linked {
                    Ok(()) => {
                        sync_dir(target.parent().unwrap_or(d));
                        Ok(true)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(Error::io(&target, "link", e)),
                }
            }
            #[cfg(feature = "cloud")]
            Root::Bucket(b) => bucket::create_if_absent(b, path, bytes),
        }
    }

    /// The names in folder `dir` (files and folders; none when missing).
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        match self {
            Root::Dir(d) => {
                let at = d.join(dir);
                match std::fs::read_dir(&at) {
                    Ok(entries) => {
                        Ok(entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                    Err(e) => Err(Error::io(&at, "list", e)),
                }
            }
            #[cfg(feature = "cloud")]
            Root::Bucket(b) => bucket::list(b, dir),
        }
    }

    /// Remove folder `path` and everything in it.
    fn remove_tree(&self, path: &str) -> Result<()> {
        match self {
            Root::Dir(d) => {
                let at = d.join(path);
                std::fs::remove_dir_all(&at).map_err(|e| Error::io(&at, "remove", e))
            }
            #[cfg(feature = "cloud")]
            Root::Bucket(b) => bucket::remove_tree(b, path),
        }
    }

    /// Replace `path` with `bytes` atomically.
    fn replace(&self, path: &str, bytes: &[u8]) -> Result<()> {
        match self {
            Root::Dir(d) => {
                let target = d.join(path);
                let tmp = write_beside(&target, bytes)?;
                std::fs::rename(&tmp, &target).map_err(|e| Error::io(&target, "rename", e))?;
                sync_dir(target.parent().unwrap_or(d));
                Ok(())
            }
            #[cfg(feature = "cloud")]
            Root::Bucket(b) => bucket::put(b, path, bytes),
        }
    }
}

/// Write `bytes` to a new temporary file beside `target` (its directory
/// made if missing), synced; returns its path.
fn write_beside(target: &Path, bytes: &[u8]) -> Result<PathBuf> {
    use std::io::Write;
    let dir = target.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create", e))?;
    let tmp = dir.join(format!(".tmp-{:016x}", random_u64()));
    let mut f = std::fs::File::create_new(&tmp).map_err(|e| Error::io(&tmp, "create", e))?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(|e| Error::io(&tmp, "write", e))?;
    Ok(tmp)
}

/// Make a rename or link in `dir` durable (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

#[cfg(feature = "cloud")]
mod bucket {
    use super::super::manifest::MAX_MANIFEST_BYTES;
    use crate::remote::objstore::{convert, Bucket};
    use crate::remote::runtime;
    use crate::{Error, Result};
    use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

    pub(super) fn read(b: &Bucket, path: &str) -> Result<Option<Vec<u8>>> {
        let at = format!("{}{path}", b.url);
        let (store, object) = (b.store.clone(), b.object_at(path));
        runtime::block_on(async move {
            match store.get(&object).await {
                Ok(got) => {
                    if got.meta.size > MAX_MANIFEST_BYTES {
                        return Err(Error::BadDataset {
                            dataset: at,
                            check: format!("{} bytes (at most {MAX_MANIFEST_BYTES})", got.meta.size),
                        });
                    }
                    Ok(Some(got.bytes().await.map_err(|e| convert(&at, e))?.to_vec()))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(convert(&at, e)),
            }
        })
    }

    pub(super) fn create_if_absent(b: &Bucket, path: &str, bytes: &[u8]) -> Result<bool> {
        let at = format!("{}{path}", b.url);
        let (store, object) = (b.store.clone(), b.object_at(path));
        let payload = PutPayload::from(bytes.to_vec());
        runtime::block_on(async move {
            let options = PutOptions { mode: PutMode::Create, ..Default::default() };
            match store.put_opts(&object, payload, options).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                    Ok(false)
                }
                Err(e) => Err(convert(&at, e)),
            }
        })
    }

    /// The names right under `dir/` (objects and common prefixes).
    pub(super) fn list(b: &Bucket, dir: &str) -> Result<Vec<String>> {
        let at = format!("{}{dir}/", b.url);
        let (store, prefix) = (b.store.clone(), b.object_at(dir));
        runtime::block_on(async move {
            let got = store.list_with_delimiter(Some(&prefix)).await.map_err(|e| convert(&at, e))?;
            let last = |p: &object_store::path::Path| p.filename().map(str::to_string);
            Ok(got
                .common_prefixes
                .iter()
                .chain(got.objects.iter().map(|o| &o.location))
                .filter_map(last)
                .collect())
        })
    }

    /// Delete every object under `path/`.
    pub(super) fn remove_tree(b: &Bucket, path: &str) -> Result<()> {
        let at = format!("{}{path}/", b.url);
        let (store, prefix) = (b.store.clone(), b.object_at(path));
        runtime::block_on(async move {
            // Folder by folder (a shard is `column/file`).
            let mut folders = vec![prefix];
            while let Some(folder) = folders.pop() {
                let got = store.list_with_delimiter(Some(&folder)).await.map_err(|e| convert(&at, e))?;
                for o in got.objects {
                    store.delete(&o.location).await.map_err(|e| convert(&at, e))?;
                }
                folders.extend(got.common_prefixes);
            }
            Ok(())
        })
    }

    pub(super) fn put(b: &Bucket, path: &str, bytes: &[u8]) -> Result<()> {
        let at = format!("{}{path}", b.url);
        let (store, object) = (b.store.clone(), b.object_at(path));
        let payload = PutPayload::from(bytes.to_vec());
        runtime::block_on(async move {
            store.put(&object, payload).await.map(|_| ()).map_err(|e| convert(&at, e))
        })
    }
}

/// Milliseconds since the Unix epoch.
fn unix_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// 64 random bits: std's per-process random hash keys, the process, the
/// time and a counter (unique across processes and calls, not secret).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}
