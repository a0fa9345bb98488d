//! Stores read over HTTP Range requests, in browsers (wasm, ruzstd) and natively.
//!
//! One async driver ([`RemoteStore`]) walks the core's gather plans over a
//! plain range-read transport ([`RangeRead`]): HTTP through [`HttpRanges`]
//! (which owns every check of an HTTP answer) over any [`HttpGet`] client —
//! the native one ([`HttpClient`], feature `http`), the browser's `fetch` —
//! or a transport with no HTTP in it, such as the browser's local `Blob`s.
//!
//! ```no_run
//! # #[cfg(feature = "http")] {
//! use zrecord::Records;
//! let store = zrecord::remote::RemoteStore::open_blocking("https://example.org/stores/train/")?;
//! let batch = store.gather(&[3, 1, 4])?;
//! println!("{:?} {}", batch.shape(), store.stats().requests);
//! # }
//! # Ok::<(), zrecord::Error>(())
//! ```

mod cost;
mod exec;
mod files;
mod http;
mod pages;
mod store;
mod transport;

pub use exec::{block_on, cancellable};
pub use http::{network_hint as cors_hint, HttpError, HttpGet, HttpRanges, HttpRequest, HttpResponse, Retry};
pub use pages::LOC_PAGE;
pub use store::{RemoteOptions, RemoteSizes, RemoteStats, RemoteStore};
pub use transport::{LocalBoxFuture, RangeRead, Ranged, ReadRequest};

cfg_if::cfg_if! {
    if #[cfg(feature = "http")] {
        mod native;
        pub mod runtime;
        pub use native::{transport_for, AnyTransport, BlockingStore, HttpClient, HttpOptions};
    }
}
#[cfg(feature = "cloud")]
pub mod objstore;
#[cfg(feature = "cloud")]
pub mod push;
