//! Opening a dataset natively: from a directory, an HTTP prefix or a bucket
//! prefix, the manifest alone (shards open as gathers reach them).

use super::concat::Concat;
use super::layout;
use super::local::LocalColumn;
use super::manifest::{ColumnSpec, Manifest, MAX_MANIFEST_BYTES};
use super::remote::check_version;
use crate::format::batch::{Batch, DenseBatch, RaggedBatch};
use crate::format::{RecordLoc, StoreCore};
use crate::location::Location;
use crate::open::Options;
use crate::records::Records;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "http")]
use crate::remote::{block_on, AnyTransport};

/// How [`Dataset::open_with`] opens.
#[derive(Clone, Debug, Default)]
pub struct DatasetOptions {
    /// The version to read (`None`: the newest).
    pub version: Option<u64>,
    /// How each shard's store opens (backend, verify, remote options).
    pub open: Options,
}

/// Makes the transport of a store below a remote dataset's root.
#[cfg(feature = "http")]
type Opener = Box<dyn Fn(&str) -> Result<AnyTransport> + Send + Sync>;

/// A remote column behind the blocking [`Records`] API.
#[cfg(feature = "http")]
pub type BlockingColumn = super::remote::RemoteColumn<AnyTransport, Opener>;

/// One column of an open dataset, local or remote, behind [`Records`].
#[derive(Debug)]
pub enum Column {
    /// Shards on the local file system.
    Local(LocalColumn),
    /// Shards over HTTP or in a bucket.
    #[cfg(feature = "http")]
    Remote(BlockingColumn),
}

/// An open dataset: named columns over many shards, read as one.
///
/// ```
/// use zrecord::Records;
/// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dataset-v1");
/// let ds = zrecord::Dataset::open(dir)?;  // or "s3://bucket/datasets/train"
/// let tokens = ds.column("tokens")?;
/// let batch = tokens.gather_ragged(&[0, 5, 2])?;
/// assert_eq!(batch.len(), 3);
/// # Ok::<(), zrecord::Error>(())
/// ```
#[derive(Debug)]
pub struct Dataset {
    concat: Arc<Concat>,
    columns: Vec<Arc<Column>>,
    location: String,
}

impl Dataset {
    /// Open the newest version of the dataset at `target` (a directory or URL).
    ///
    /// # Errors
    /// `NotFound` when `target` holds no dataset, `BadDataset` for a damaged
    /// manifest, read errors.
    pub fn open(target: &str) -> Result<Dataset> {
        Dataset::open_with(target, &DatasetOptions::default())
    }

    /// Open the dataset at `target`.
    ///
    /// # Errors
    /// As [`Dataset::open`].
    pub fn open_with(target: &str, options: &DatasetOptions) -> Result<Dataset> {
        match Location::parse(target)? {
            Location::Path(path) => Dataset::open_local(Path::new(path), options),
            #[cfg(feature = "http")]
            remote => Dataset::open_remote(remote, options),
            #[cfg(not(feature = "http"))]
            remote => Err(Error::InvalidArgument {
                store: remote.url().unwrap_or_default().to_string(),
                why: "remote datasets need zrecord's `http` feature".into(),
            }),
        }
    }

    fn open_local(root: &Path, options: &DatasetOptions) -> Result<Dataset> {
        let name = root.display().to_string();
        let manifest = Arc::new(read_local_manifest(root, options.version)?);
        let concat = Arc::new(Concat::new(&name, manifest));
        let columns = (0..concat.manifest.columns.len())
            .map(|i| {
                LocalColumn::new(concat.clone(), i, root, options.open.local)
                    .map(|c| Arc::new(Column::Local(c)))
            })
            .collect::<Result<_>>()?;
        Ok(Dataset { concat, columns, location: name })
    }

    #[cfg(feature = "http")]
    fn open_remote(location: Location<'_>, options: &DatasetOptions) -> Result<Dataset> {
        let (root, open) = remote_root(location, &options.open)?;
        let name = root.name();
        let manifest = Arc::new(block_on(super::remote::load_manifest(&root, options.version))?);
        let concat = Arc::new(Concat::new(&name, manifest));
        let cache = options.open.clone();
        let open: Arc<Opener> = Arc::new(Box::new(move |path| crate::open::cached(open(path)?, &cache)));
        let columns = (0..concat.manifest.columns.len())
            .map(|i| {
                let open = open.clone();
                let opener: Opener = Box::new(move |path| open(path));
                BlockingColumn::new(concat.clone(), i, options.open.remote_options(), opener)
                    .map(|c| Arc::new(Column::Remote(c)))
            })
            .collect::<Result<_>>()?;
        Ok(Dataset { concat, columns, location: name })
    }

    /// Whether `target` holds a dataset (local directories only: a URL is
    /// opened to find out).
    pub fn is_local_dataset(target: &Path) -> bool {
        target.join(layout::MANIFEST).is_file()
    }

    /// The dataset's path or URL.
    pub fn location(&self) -> &str {
        &self.location
    }
    /// The committed version read.
    pub fn manifest(&self) -> &Manifest {
        &self.concat.manifest
    }
    /// The version read.
    pub fn version(&self) -> u64 {
        self.concat.manifest.version
    }
    /// Records in the dataset.
    pub fn len(&self) -> u64 {
        self.concat.len()
    }
    /// Whether the dataset holds no records.
    pub fn is_empty(&self) -> bool {
        self.concat.is_empty()
    }
    /// The columns' specs, in order.
    pub fn specs(&self) -> &[ColumnSpec] {
        &self.concat.manifest.columns
    }
    /// The columns, in order (shared, as [`Dataset::stream`] gives them).
    pub fn columns(&self) -> &[Arc<Column>] {
        &self.columns
    }
    /// The shard holding global record `index`, and the first global index
    /// of that shard.
    pub fn shard_of(&self, index: u64) -> Option<(usize, u64)> {
        (index < self.len()).then(|| {
            let (k, _) = self.concat.locate(index);
            (k, self.concat.start(k))
        })
    }

    /// Column `name`.
    ///
    /// # Errors
    /// `InvalidArgument` naming the columns there are.
    pub fn column(&self, name: &str) -> Result<&Column> {
        self.stream(name).map(|c| &**c)
    }

    /// Column `name`, shared: what a [`Loader`] takes (its workers share
    /// it).
    ///
    /// ```
    /// use zrecord::training::loader::Loader;
    /// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dataset-v1");
    /// let ds = zrecord::Dataset::open(dir)?;
    /// let mut loader = Loader::builder()
    ///     .stream("x", ds.stream("x")?.clone())
    ///     .stream("tokens", ds.stream("tokens")?.clone())
    ///     .batch_size(4)
    ///     .build()?;
    /// let step = loader.next_batch()?;
    /// assert_eq!(step.indices().len(), 4);
    /// # Ok::<(), zrecord::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Dataset::column`].
    ///
    /// [`Loader`]: crate::training::loader::Loader
    pub fn stream(&self, name: &str) -> Result<&Arc<Column>> {
        match self.concat.manifest.column_index(name) {
            Some(i) => Ok(&self.columns[i]),
            None => Err(Error::InvalidArgument {
                store: self.location.clone(),
                why: format!(
                    "no column {name:?} (the dataset has {})",
                    self.specs().iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }),
        }
    }

    /// Gather `indices` from every column (or those named), in column order.
    ///
    /// # Errors
    /// As the columns' gathers.
    pub fn gather(&self, indices: &[u64], columns: Option<&[&str]>) -> Result<Vec<(String, Batch)>> {
        let names: Vec<&str> = match columns {
            Some(names) => names.to_vec(),
            None => self.specs().iter().map(|c| c.name.as_str()).collect(),
        };
        names.into_iter().map(|n| Ok((n.to_string(), self.column(n)?.gather_any(indices)?))).collect()
    }
}

/// Read a local dataset's manifest: version `version`, or the newest.
fn read_local_manifest(root: &Path, version: Option<u64>) -> Result<Manifest> {
    let name = root.display().to_string();
    let read = |rel: &str| -> Result<Option<Manifest>> {
        let path: PathBuf = root.join(rel);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, "open", e)),
        };
        let len = file.metadata().map_err(|e| Error::io(&path, "stat", e))?.len();
        if len > MAX_MANIFEST_BYTES {
            return Err(Error::BadDataset {
                dataset: name.clone(),
                check: format!("{rel} is {len} bytes (at most {MAX_MANIFEST_BYTES})"),
            });
        }
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, "read", e))?;
        Manifest::parse(&name, &bytes).map(Some)
    };
    let manifest = match version {
        Some(v) => read(&layout::version_path(v))?.ok_or_else(|| Error::NotFound {
            store: name.clone(),
            what: format!("no version {v} ({} is missing)", layout::version_path(v)),
        })?,
        None => {
            let mut m = read(layout::MANIFEST)?.ok_or_else(|| Error::NotFound {
                store: name.clone(),
                what: format!("no dataset here ({} is missing)", layout::MANIFEST),
            })?;
            while let Some(newer) = read(&layout::version_path(m.version + 1))? {
                m = newer;
            }
            m
        }
    };
    check_version(&name, &manifest, version)?;
    Ok(manifest)
}

/// The transport of a remote dataset's root, and the maker of its stores'.
#[cfg(feature = "http")]
fn remote_root(location: Location<'_>, options: &Options) -> Result<(AnyTransport, Opener)> {
    use crate::remote::{HttpClient, HttpRanges, Retry};
    match location {
        Location::Http(url) => {
            let retry = Retry { retries: options.remote.retries, backoff: options.remote.backoff };
            let root = Arc::new(HttpRanges::new(HttpClient::new(options.http.clone())?, url, retry));
            let maker = root.clone();
            let open: Opener = Box::new(move |path| Ok(Box::new(maker.child(path)) as AnyTransport));
            Ok((Box::new(root), open))
        }
        #[cfg(feature = "cloud")]
        Location::Bucket { url, .. } => {
            use crate::remote::objstore::{BucketRetry, ObjectRanges};
            let root = Arc::new(ObjectRanges::new(url, BucketRetry::default())?);
            let maker = root.clone();
            let open: Opener = Box::new(move |path| Ok(Box::new(maker.child(path)) as AnyTransport));
            Ok((Box::new(root), open))
        }
        other => Err(Error::InvalidArgument {
            store: other.url().unwrap_or_default().to_string(),
            why: "bucket URLs need zrecord's `cloud` feature".into(),
        }),
    }
}

impl Column {
    /// The reader, whatever its kind.
    pub fn records(&self) -> &dyn Records {
        match self {
            Column::Local(c) => c,
            #[cfg(feature = "http")]
            Column::Remote(c) => c,
        }
    }
    /// The column's spec in the manifest.
    pub fn spec(&self) -> &ColumnSpec {
        match self {
            Column::Local(c) => c.spec(),
            #[cfg(feature = "http")]
            Column::Remote(c) => c.spec(),
        }
    }
    /// How many of its shards are open now.
    pub fn open_shards(&self) -> usize {
        match self {
            Column::Local(c) => c.open_shards(),
            #[cfg(feature = "http")]
            Column::Remote(c) => c.open_shards(),
        }
    }
}

#[cfg(feature = "http")]
impl Records for BlockingColumn {
    fn core(&self) -> &StoreCore {
        self.core()
    }
    fn raw_locs(&self, indices: &[u64]) -> Result<Vec<RecordLoc>> {
        block_on(self.raw_locs(indices))
    }
    fn gather_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        block_on(self.gather_into(indices, out))
    }
    fn gather_dense_batch(&self, indices: &[u64], batch: &mut DenseBatch) -> Result<()> {
        block_on(self.gather_dense_batch(indices, batch))
    }
    fn gather_ragged_into(&self, indices: &[u64], batch: &mut RaggedBatch) -> Result<()> {
        block_on(self.gather_ragged_into(indices, batch))
    }
    fn prefetch(&self, indices: &[u64]) -> Result<u64> {
        block_on(self.prefetch(indices))
    }
    fn prefetches(&self) -> bool {
        self.prefetches()
    }
}

crate::records::forward_records!(Column);
