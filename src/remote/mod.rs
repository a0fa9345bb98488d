//! Stores read over HTTP Range requests, in browsers (wasm, ruzstd) and natively.
//!
//! One async driver ([`RemoteStore`]) runs the pure format core over a
//! pluggable transport ([`RangeClient`]): the native HTTP client
//! ([`HttpClient`], feature `http`), the browser's `fetch` and `Blob`s (in the
//! wasm module), or anything a test or an application plugs in.
//!
//! ```no_run
//! # #[cfg(feature = "http")] {
//! let store = zrecord::remote::RemoteStore::open_blocking("https://example.org/stores/train/")?;
//! let batch = store.gather(&[3, 1, 4])?;
//! println!("{:?} {}", batch.shape(), store.stats().requests);
//! # }
//! # Ok::<(), zrecord::Error>(())
//! ```

mod check;
pub mod client;
mod exec;
mod pages;
mod store;

pub use client::{LocalBoxFuture, RangeClient, RangeRequest, RangeResponse, TransportError};
pub use exec::{block_on, cancellable};
pub use pages::LOC_PAGE;
pub use store::{RemoteOptions, RemoteSizes, RemoteStats, RemoteStore};

/// The hint a browser transport gives when a request fails without an answer.
pub fn cors_hint() -> &'static str {
    check::network_hint()
}

cfg_if::cfg_if! {
    if #[cfg(feature = "http")] {
        mod native;
        pub use native::{BlockingStore, HttpClient, HttpOptions};
    }
}
