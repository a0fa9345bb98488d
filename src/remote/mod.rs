//! Stores away from the local disk: read over range reads from buckets and
//! HTTP servers natively and in browsers (wasm, ruzstd), and published to
//! buckets ([`push`], feature `cloud`).
//!
//! One async driver ([`RemoteStore`]) walks the core's gather plans over a
//! plain range-read transport ([`RangeRead`]): HTTP through [`HttpRanges`]
//! (which owns every check of an HTTP answer) over any [`HttpGet`] client —
//! the native one ([`HttpClient`], reqwest, feature `http`), the browser's
//! `fetch` — buckets through object_store ([`objstore::ObjectRanges`],
//! feature `cloud`: `s3://`, `gs://`, `az://`), or a transport with no
//! network in it, such as the browser's local `Blob`s. Natively every request
//! is a task on one tokio runtime ([`runtime`]) and 64 are in flight by
//! default; [`RemoteOptions::browser`] keeps a browser's 6.
//!
//! ```no_run
//! # #[cfg(feature = "http")] {
//! use zrecord::Records;
//! // Or "s3://bucket/stores/train", configured from AWS_* variables.
//! let store = zrecord::open::remote("https://example.org/stores/train/", &Default::default())?;
//! let batch = store.gather(&[3, 1, 4])?;
//! println!("{:?} {}", batch.shape(), store.stats().requests);
//! # }
//! # Ok::<(), zrecord::Error>(())
//! ```

mod cost;
pub(crate) mod exec;
mod files;
mod http;
mod options;
mod pages;
mod store;
mod transport;

pub use exec::{block_on, cancellable};
pub use http::{network_hint as cors_hint, HttpError, HttpGet, HttpRanges, HttpRequest, HttpResponse, Retry};
pub use options::{CacheStats, RemoteOptions, RemoteSizes, RemoteStats};
pub use pages::LOC_PAGE;
pub use store::RemoteStore;
pub use transport::{Lent, LocalBoxFuture, RangeRead, Ranged, ReadRequest};

cfg_if::cfg_if! {
    if #[cfg(feature = "http")] {
        mod blocking;
        pub mod cache;
        mod client;
        pub mod runtime;
        pub use blocking::{AnyTransport, BlockingStore};
        pub use client::{HttpClient, HttpOptions};
    }
}
#[cfg(feature = "cloud")]
pub mod objstore;
#[cfg(feature = "cloud")]
pub mod push;
