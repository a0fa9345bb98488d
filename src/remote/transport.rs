//! The pluggable I/O edge of the remote reader: a plain range read.
//!
//! A transport reads bytes of one of a store's files and says how large the
//! file is and which version it read (an ETag). It knows nothing about the
//! format. HTTP servers plug in through [`super::HttpRanges`], which owns
//! every check of an HTTP answer; a browser `Blob`, a local file or an
//! object-store client implement this trait directly.
//!
//! Futures are boxed without `Send`: in the browser they hold JavaScript
//! values, and the native driver runs them on the calling thread.

use crate::format::StoreFile;
use crate::Result;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::time::Duration;

/// A boxed future that need not be `Send` (browser futures are not).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One range read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    /// Which file.
    pub file: StoreFile,
    /// Bytes wanted; never empty.
    pub range: Range<u64>,
    /// Read only this version of the file (an ETag seen before), when the
    /// transport can make the server check it (see `RemoteOptions::if_match`).
    pub if_version: Option<String>,
}

/// What a read returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranged {
    /// The bytes from the requested start: all of them, or fewer only where
    /// the file ends (`start + len == total`); none when the range starts at
    /// or past the end.
    pub bytes: Vec<u8>,
    /// Size of the whole file.
    pub total: u64,
    /// The file's version (an ETag), when the transport knows one.
    pub version: Option<String>,
}

/// What [`RangeRead::read_at_hand`] lends: a [`Ranged`] that borrows its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Lent<'a> {
    /// As [`Ranged::bytes`].
    pub bytes: &'a [u8],
    /// As [`Ranged::total`].
    pub total: u64,
    /// As [`Ranged::version`].
    pub version: Option<&'a str>,
}

/// Where a remote store's bytes come from.
///
/// ```
/// use zrecord::format::StoreFile;
/// use zrecord::remote::{LocalBoxFuture, RangeRead, Ranged, ReadRequest};
///
/// /// One store's files in memory.
/// struct InMemory([Vec<u8>; 4]);
///
/// impl RangeRead for InMemory {
///     fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, zrecord::Result<Ranged>> {
///         let file = &self.0[req.file as usize];
///         let total = file.len() as u64;
///         let (start, end) = (req.range.start.min(total), req.range.end.min(total));
///         let bytes = file[start as usize..end as usize].to_vec();
///         Box::pin(async move { Ok(Ranged { bytes, total, version: None }) })
///     }
///     fn locate(&self, file: StoreFile) -> String {
///         format!("memory:{file}")
///     }
///     fn name(&self) -> String {
///         "memory:".into()
///     }
/// }
/// ```
pub trait RangeRead {
    /// Read `req.range` of `req.file`.
    ///
    /// # Errors
    /// `NotFound` for a missing file, `Remote` for a failed read (after any
    /// retries the transport makes), `StoreChanged` when `if_version` no
    /// longer matches, `Cancelled`.
    fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>>;

    /// Where `file` is, as errors name it (a URL or a path).
    fn locate(&self, file: StoreFile) -> String;

    /// The store, as errors name it (its directory's URL or path).
    fn name(&self) -> String;

    /// Reads repeated after a transient failure, so far.
    fn retries(&self) -> u64 {
        0
    }

    /// A monotonic clock, for measuring what a request costs (latency and
    /// bandwidth, which decide range merging); `None` where the platform
    /// has none at hand (the browser build), and merging uses the options.
    fn now(&self) -> Option<Duration> {
        None
    }

    /// Bring `ranges` of `file` close ahead of their reads (a node-local
    /// cache's blocks) and answer how many bytes that fetched; the default,
    /// for transports with nothing to bring close, does nothing.
    ///
    /// # Errors
    /// As [`RangeRead::read`].
    fn prefetch(&self, file: StoreFile, ranges: Vec<Range<u64>>) -> LocalBoxFuture<'_, Result<u64>> {
        let _ = (file, ranges);
        Box::pin(async { Ok(0) })
    }

    /// Whether [`RangeRead::prefetch`] brings anything close: a loader
    /// spends a thread drawing its future steps only for readers that do.
    fn prefetches(&self) -> bool {
        false
    }

    /// Whether every byte of `file` is at hand (see
    /// [`RangeRead::read_at_hand`]), so that a look-ahead has nothing to
    /// bring close: a warm cache answers without the records' locations
    /// being looked up for each future step.
    fn holds_all(&self, file: StoreFile) -> bool {
        let _ = file;
        false
    }

    /// Lend each of `ranges` of `file` whose bytes are at hand with no
    /// waiting (a node-local cache's mapped blocks) to `with(k, bytes)`,
    /// and answer the others' `k`s, in order, for the caller to
    /// [`read`](RangeRead::read): no future, buffer or copy per range,
    /// which is most of what a hit costs. The default has nothing at hand.
    ///
    /// # Errors
    /// The first of `with`'s.
    fn read_at_hand(
        &self,
        file: StoreFile,
        ranges: &[Range<u64>],
        with: &mut dyn FnMut(usize, Lent<'_>) -> Result<()>,
    ) -> Result<Vec<usize>> {
        let _ = (file, with);
        Ok((0..ranges.len()).collect())
    }

    /// Read `range` of the file at `path` (`/`-separated, relative to the
    /// directory this transport reads): a dataset's manifest beside its
    /// shards. Transports that only know a store's own files refuse.
    ///
    /// # Errors
    /// As [`RangeRead::read`]; `InvalidArgument` where unsupported.
    fn read_path(&self, path: &str, range: Range<u64>) -> LocalBoxFuture<'_, Result<Ranged>> {
        let _ = range;
        let e = crate::Error::InvalidArgument {
            store: self.name(),
            why: format!("this transport reads only a store's own files, not {path}"),
        };
        Box::pin(async move { Err(e) })
    }
}

/// `RangeRead` through a pointer to a transport (`Arc`, `Box`).
macro_rules! forward_range_read {
    ($($p:ident)::+) => {
        impl<T: RangeRead + ?Sized> RangeRead for $($p)::+<T> {
            fn read(&self, req: ReadRequest) -> LocalBoxFuture<'_, Result<Ranged>> {
                (**self).read(req)
            }
            fn locate(&self, file: StoreFile) -> String {
                (**self).locate(file)
            }
            fn name(&self) -> String {
                (**self).name()
            }
            fn retries(&self) -> u64 {
                (**self).retries()
            }
            fn now(&self) -> Option<Duration> {
                (**self).now()
            }
            fn read_path(&self, path: &str, range: Range<u64>) -> LocalBoxFuture<'_, Result<Ranged>> {
                (**self).read_path(path, range)
            }
            fn prefetch(&self, file: StoreFile, ranges: Vec<Range<u64>>) -> LocalBoxFuture<'_, Result<u64>> {
                (**self).prefetch(file, ranges)
            }
            fn prefetches(&self) -> bool {
                (**self).prefetches()
            }
            fn holds_all(&self, file: StoreFile) -> bool {
                (**self).holds_all(file)
            }
            fn read_at_hand(
                &self,
                file: StoreFile,
                ranges: &[Range<u64>],
                with: &mut dyn FnMut(usize, Lent<'_>) -> Result<()>,
            ) -> Result<Vec<usize>> {
                (**self).read_at_hand(file, ranges, with)
            }
        }
    };
}
forward_range_read!(std::sync::Arc);
forward_range_read!(Box);
