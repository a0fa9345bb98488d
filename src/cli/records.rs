//! The store a command reads from: [`zrecord::open`] gives a local store or
//! a remote one behind the library's [`Records`] trait, so every command but
//! `verify` (which checks the stored bytes themselves) reads both alike.

use super::common::CliResult;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zrecord::dataset::{layout, DatasetOptions};
use zrecord::format::Verify;
use zrecord::location::Location;
use zrecord::open::{AnyStore, Options};
use zrecord::{Batch, Dataset, Error, Records};

/// The URL a STORE argument names, if it names one (the library's scheme
/// table decides; an unknown scheme is an error).
pub fn url_of(arg: &Path) -> CliResult<Option<&str>> {
    match arg.to_str() {
        Some(s) => Ok(Location::parse(s)?.url()),
        None => Ok(None),
    }
}

/// The directory a STORE argument names, for the commands that work on
/// local stores only (`file://` URLs become their paths; a caller refuses
/// other URLs first, with [`url_of`]).
pub fn local_path(arg: &Path) -> CliResult<PathBuf> {
    Ok(match arg.to_str().map(Location::parse).transpose()? {
        Some(Location::Path(p)) => PathBuf::from(p),
        _ => arg.to_path_buf(),
    })
}

/// Open the store a command names: a directory, or a bucket or `http(s)://`
/// URL. A sealed store's records are checked against its sidecar as they
/// are read, so no command hands on bytes that changed silently.
pub fn open(arg: &Path) -> CliResult<Box<dyn Records>> {
    Ok(Box::new(zrecord::open_with(arg, &Options::default().verify(Verify::IfSealed))?))
}

/// One batch of records to work on.
pub struct Chunk {
    /// Indices of the records, consecutive.
    pub range: Range<u64>,
    pub batch: Batch,
}

impl Chunk {
    /// `(shape, payload)` of the `k`-th record of the chunk.
    pub fn record(&self, k: usize) -> (&[u64], &[u8]) {
        self.batch.record(k)
    }
    pub fn len(&self) -> usize {
        (self.range.end - self.range.start) as usize
    }
}

/// Bytes of decoded records a chunk aims at: bounds memory, keeps threads busy.
pub const CHUNK_BYTES: u64 = 32 << 20;

/// Read `range` of the store in consecutive chunks of about [`CHUNK_BYTES`]
/// decoded bytes and hand each to `f`. Dense chunks are sized exactly; Ragged
/// chunks are sized from the mean record size seen so far (no location
/// reads up front, which would cost a request each on a remote store).
pub fn for_each_chunk(
    store: &dyn Records,
    range: Range<u64>,
    mut f: impl FnMut(Chunk) -> CliResult,
) -> CliResult {
    let dense_row = store.info().row_bytes();
    let (mut seen_records, mut seen_bytes) = (0u64, 0u64);
    let mut at = range.start;
    while at < range.end {
        let count = match dense_row {
            Some(row) => (CHUNK_BYTES / row.max(1)).max(1),
            None if seen_records == 0 => 64,
            None => (CHUNK_BYTES / (seen_bytes / seen_records).max(1)).clamp(1, 65_536),
        }
        .min(range.end - at);
        let indices: Vec<u64> = (at..at + count).collect();
        let batch = store.gather_any(&indices)?;
        if let Batch::Ragged(b) = &batch {
            seen_records += count;
            seen_bytes += b.values().len() as u64;
        }
        f(Chunk { range: at..at + count, batch })?;
        at += count;
    }
    Ok(())
}

/// What a STORE argument names: a store, or a dataset of columns.
pub enum Target {
    Store(Arc<AnyStore>),
    Dataset(Dataset),
}

/// `--column` and `--version`, for the commands that also read datasets.
#[derive(clap::Args, Debug, Default)]
pub struct DatasetArgs {
    /// A dataset's column to read (default: every column, where the command can).
    #[arg(long, value_name = "NAME")]
    pub column: Option<String>,
    /// A dataset's committed version to read (default: the newest).
    #[arg(long, value_name = "N")]
    pub version: Option<u64>,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// `--cache` and `--cache-limit`: read remote stores through a node-local
/// cache shared by the machine's processes (docs/CACHE.md).
#[derive(clap::Args, Debug, Default)]
pub struct CacheArgs {
    /// Read a remote store (or dataset) through this cache directory, shared
    /// by every process of the machine: blocks fetched once, then read from disk.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Most the cache directory may hold (e.g. 512MiB, 20GiB) [default: no limit].
    #[arg(long, value_name = "SIZE", value_parser = super::common::parse_size, requires = "cache")]
    pub cache_limit: Option<u64>,
    /// Bytes fetched per request into the cache [default: 4MiB].
    #[arg(long, value_name = "SIZE", value_parser = super::common::parse_size, requires = "cache")]
    pub cache_block: Option<u64>,
}

impl CacheArgs {
    /// `opts` reading through the cache named, if any.
    pub fn apply(&self, mut opts: Options) -> Options {
        opts.cache = self.cache.as_ref().map(|dir| {
            let mut c =
                zrecord::remote::cache::CacheOptions::new(dir).limit(self.cache_limit.unwrap_or(u64::MAX));
            c.block = self.cache_block.unwrap_or(c.block);
            c
        });
        opts
    }
}

/// Open what `arg` names, a store or a dataset: a local directory is a
/// dataset when it holds `zrecord.json` and no `meta.zr`; a URL is opened as
/// a store first and, when no store is there, as a dataset.
pub fn open_target(arg: &Path, d: &DatasetArgs) -> CliResult<Target> {
    open_target_with(arg, d, &Options::default().verify(Verify::IfSealed))
}

/// [`open_target`] with the options stores (and a dataset's shards) open with.
pub fn open_target_with(arg: &Path, d: &DatasetArgs, opts: &Options) -> CliResult<Target> {
    let opts = &d.cache.apply(opts.clone());
    let ds_opts = DatasetOptions { version: d.version, open: opts.clone() };
    let as_dataset = |target: &str| -> zrecord::Result<Target> {
        Ok(Target::Dataset(Dataset::open_with(target, &ds_opts)?))
    };
    let target = match url_of(arg)? {
        None => {
            let dir = local_path(arg)?;
            if is_local_dataset(&dir) {
                as_dataset(&dir.to_string_lossy())?
            } else {
                Target::Store(Arc::new(zrecord::open_with(arg, opts)?))
            }
        }
        Some(url) if d.version.is_some() => as_dataset(url)?,
        Some(url) => match zrecord::open_with(arg, opts) {
            Ok(store) => Target::Store(Arc::new(store)),
            Err(store_err @ Error::NotFound { .. }) => match as_dataset(url) {
                Err(Error::NotFound { .. }) => {
                    return Err(format!(
                        "{store_err} (and no dataset manifest {} there either)",
                        layout::MANIFEST
                    )
                    .into())
                }
                other => other?,
            },
            Err(e) => return Err(e.into()),
        },
    };
    if let Target::Store(_) = &target {
        for (given, what) in [(d.column.is_some(), "--column"), (d.version.is_some(), "--version")] {
            if given {
                return Err(format!(
                    "{}: {what} is for datasets (a directory or URL holding {}), this is a store",
                    arg.display(),
                    layout::MANIFEST
                )
                .into());
            }
        }
    }
    Ok(target)
}

/// Whether the local directory `dir` is a dataset's root (and not a store).
pub fn is_local_dataset(dir: &Path) -> bool {
    Dataset::is_local_dataset(dir) && !dir.join(zrecord::format::files::META).exists()
}

impl Target {
    /// The columns to read, named (`None` for a store): `column` alone when
    /// given, else every column.
    pub fn columns<'a>(
        &'a self,
        column: Option<&'a str>,
    ) -> CliResult<Vec<(Option<&'a str>, &'a dyn Records)>> {
        Ok(match self {
            Target::Store(s) => vec![(None, s.records())],
            Target::Dataset(ds) => match column {
                Some(name) => vec![(Some(name), ds.column(name)? as &dyn Records)],
                None => ds
                    .specs()
                    .iter()
                    .map(|c| c.name.as_str())
                    .zip(ds.columns())
                    .map(|(n, c)| (Some(n), &**c as &dyn Records))
                    .collect(),
            },
        })
    }

    /// [`Target::one`], shared: what a loader's workers read.
    pub fn one_shared(&self, column: Option<&str>, command: &str) -> CliResult<Arc<dyn Records>> {
        self.one(column, command)?; // one column, or the error saying so
        Ok(match self {
            Target::Store(s) => s.clone(),
            Target::Dataset(ds) => {
                let name = self.columns(column)?.first().and_then(|c| c.0).unwrap_or_default();
                ds.stream(name)?.clone()
            }
        })
    }

    /// The one column a command needs: the store, the `column` named, or a
    /// dataset's only column.
    pub fn one<'a>(&'a self, column: Option<&'a str>, command: &str) -> CliResult<&'a dyn Records> {
        let cols = self.columns(column)?;
        match cols.as_slice() {
            [(_, r)] => Ok(*r),
            _ => Err(format!(
                "{command} reads one column of a dataset: add --column NAME ({})",
                cols.iter().filter_map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
            .into()),
        }
    }
}
