//! One way to open anything: a local path, `http(s)://`, or a bucket URL
//! (`s3://`, `gs://`, `az://`, `abfss://`, ...; the table is
//! [`crate::location::SCHEMES`]) gives the right reader. The CLI and the
//! Python package open through here; the browser reads the same table.
//!
//! ```
//! use zrecord::Records;
//! # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loaderx-2.0.1/dense-f32-zstd");
//! let store = zrecord::open(dir)?; // or "s3://bucket/stores/train", "https://host/stores/train/"
//! assert_eq!(store.gather(&[3, 0])?.shape(), &[2, 2, 5]);
//! # Ok::<(), zrecord::Error>(())
//! ```

use crate::format::Verify;
use crate::location::Location;
use crate::records::Records;
use crate::{Error, OpenOptions, Result, Store};
use std::ffi::OsStr;
use std::path::Path;

#[cfg(feature = "http")]
use crate::remote::{AnyTransport, BlockingStore, HttpClient, HttpOptions, HttpRanges, RemoteOptions, Retry};

/// How [`open_with`] opens: each kind of store's options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// For a local store.
    pub local: OpenOptions,
    /// For a remote store.
    #[cfg(feature = "http")]
    pub remote: RemoteOptions,
    /// For the HTTP client of an `http(s)://` store.
    #[cfg(feature = "http")]
    pub http: HttpOptions,
    /// Read remote stores (and a dataset's shards) through a node-local
    /// cache directory shared by the machine's processes (default none).
    #[cfg(feature = "http")]
    pub cache: Option<crate::remote::cache::CacheOptions>,
}

impl Options {
    /// Check records against the store's `sums.zr` sidecar, wherever it lives.
    #[must_use]
    pub fn verify(mut self, verify: Verify) -> Self {
        self.local.verify = verify;
        #[cfg(feature = "http")]
        {
            self.remote.verify = verify;
        }
        self
    }
}

impl Options {
    /// The remote reader's options. Through a cache a read is a `pread` of
    /// a local file, not a request: ranges merge only across gaps smaller
    /// than a page (merging by request cost would read megabytes of gaps).
    #[cfg(feature = "http")]
    pub(crate) fn remote_options(&self) -> RemoteOptions {
        let mut remote = self.remote.clone();
        if self.cache.is_some() {
            remote.max_gap = remote.max_gap.min(CACHED_GAP);
        }
        remote
    }
}

/// The most bytes between two records read as one through a cache.
#[cfg(feature = "http")]
const CACHED_GAP: u64 = 4 << 10;

/// An open store of any kind, behind [`Records`]; match on it for what only
/// one kind has.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // opened once and kept: never moved on a hot path
pub enum AnyStore {
    /// A store directory on the local file system.
    Local(Store),
    /// A store over HTTP or in a bucket.
    #[cfg(feature = "http")]
    Remote(BlockingStore),
}

/// Open the store at `target` (a path or a URL) with the default options.
///
/// # Errors
/// `InvalidArgument` for an unknown URL scheme, and what the reader's own
/// open gives (`NotFound`, `BadFormat`, `Remote`, ...).
pub fn open(target: impl AsRef<OsStr>) -> Result<AnyStore> {
    open_with(target, &Options::default())
}

/// Open the store at `target` (a path or a URL).
///
/// # Errors
/// As [`open`].
pub fn open_with(target: impl AsRef<OsStr>, options: &Options) -> Result<AnyStore> {
    let target = target.as_ref();
    // A path that is not UTF-8 is no URL.
    let location = match target.to_str() {
        Some(s) => Location::parse(s)?,
        None => return Ok(AnyStore::Local(Store::open_with(target, options.local)?)),
    };
    match location {
        Location::Path(path) => Ok(AnyStore::Local(Store::open_with(Path::new(path), options.local)?)),
        #[cfg(feature = "http")]
        remote => {
            Ok(AnyStore::Remote(BlockingStore::open(transport(remote, options)?, options.remote_options())?))
        }
        #[cfg(not(feature = "http"))]
        remote => Err(Error::InvalidArgument {
            store: remote.url().unwrap_or_default().to_string(),
            why: "remote stores need zrecord's `http` feature (buckets: `cloud`)".into(),
        }),
    }
}

/// Open the remote store at `url`, for a caller that needs what only a remote
/// store has (its request counts, its stored bytes).
///
/// # Errors
/// `InvalidArgument` for a local path or an unknown scheme, and as [`open`].
#[cfg(feature = "http")]
pub fn remote(url: &str, options: &Options) -> Result<BlockingStore> {
    BlockingStore::open(remote_dir(url, options)?, options.remote_options())
}

/// The transport that reads the remote directory at `url` (http(s)://,
/// s3://, gs://, az://): a store's, a dataset's, or any prefix whose files
/// are then read by path ([`crate::remote::RangeRead::read_path`]).
///
/// # Errors
/// `InvalidArgument` for a local path, an unknown scheme or a bucket
/// configuration the client refuses.
#[cfg(feature = "http")]
pub fn remote_dir(url: &str, options: &Options) -> Result<AnyTransport> {
    match Location::parse(url)? {
        Location::Path(_) => Err(Error::InvalidArgument {
            store: url.to_string(),
            why: "not a URL (http(s)://, s3://, gs://, az://, ...)".into(),
        }),
        remote => transport(remote, options),
    }
}

/// The transport that reads a remote location, through the cache when the
/// options name one.
#[cfg(feature = "http")]
fn transport(location: Location<'_>, options: &Options) -> Result<AnyTransport> {
    cached(direct(location, options)?, options)
}

/// `transport` read through the cache the options name, if any.
#[cfg(feature = "http")]
pub(crate) fn cached(transport: AnyTransport, options: &Options) -> Result<AnyTransport> {
    match &options.cache {
        Some(cache) => Ok(Box::new(crate::remote::cache::CachedSource::new(transport, cache.clone())?)),
        None => Ok(transport),
    }
}

/// The transport that reads a remote location straight from it.
#[cfg(feature = "http")]
fn direct(location: Location<'_>, options: &Options) -> Result<AnyTransport> {
    match location {
        Location::Http(url) => {
            let retry = Retry { retries: options.remote.retries, backoff: options.remote.backoff };
            Ok(Box::new(HttpRanges::new(HttpClient::new(options.http.clone())?, url, retry)))
        }
        #[cfg(feature = "cloud")]
        Location::Bucket { url, .. } => {
            let retry = crate::remote::objstore::BucketRetry::default();
            Ok(Box::new(crate::remote::objstore::ObjectRanges::new(url, retry)?))
        }
        other => Err(Error::InvalidArgument {
            store: other.url().unwrap_or_default().to_string(),
            why: "bucket URLs need zrecord's `cloud` feature".into(),
        }),
    }
}

impl AnyStore {
    /// The reader, whatever its kind.
    pub fn records(&self) -> &dyn Records {
        match self {
            AnyStore::Local(s) => s,
            #[cfg(feature = "http")]
            AnyStore::Remote(s) => s,
        }
    }
    /// The local store, when it is one.
    pub fn as_local(&self) -> Option<&Store> {
        match self {
            AnyStore::Local(s) => Some(s),
            #[cfg(feature = "http")]
            AnyStore::Remote(_) => None,
        }
    }
    /// The remote store, when it is one.
    #[cfg(feature = "http")]
    pub fn as_remote(&self) -> Option<&BlockingStore> {
        match self {
            AnyStore::Remote(s) => Some(s),
            AnyStore::Local(_) => None,
        }
    }
}

crate::records::forward_records!(AnyStore);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_file_urls_open_locally() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loaderx-2.0.1/dense-f32-zstd");
        for target in [dir.to_string(), format!("file://{dir}")] {
            let store = open(&target).unwrap_or_else(|e| panic!("{target}: {e}"));
            assert!(store.as_local().is_some(), "{target}");
            assert_eq!(store.len(), 33);
        }
    }

    #[test]
    fn unknown_schemes_are_refused_before_any_io() {
        let e = open("ftp://host/store").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }
}
