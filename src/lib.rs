//! zrecord: random-access record stores for ML training data.
//!
//! A store is a directory (`meta.zr`, `data.zr`, optional `dict.zr`) holding
//! an append-only sequence of NumPy-typed records, byte-compatible with the
//! Python package loaderx 2.0.1.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod codec;
pub mod convert;
pub mod dataset;
pub mod error;
pub mod format;
pub mod location;
pub mod records;
pub mod remote;
pub mod source;
pub mod training;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod local;
        pub mod open;
        pub use local::reader::{Backend, ColdReads, OpenOptions, Store};
        pub use open::{open, open_with, AnyStore};
        pub use local::writer::{CreateOptions, Writer};
        pub use dataset::Dataset;
    }
}

// The static server and what it serves: the viewer and the demo stores.
#[cfg(feature = "serve")]
pub mod serve;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{Error, Result};
pub use format::batch::{AlignedBytes, Batch, DenseBatch, Packed, RaggedBatch};
pub use format::{Codec, DType, Geometry, Kind};
pub use records::Records;

/// The README's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "native"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// docs/CACHE.md's examples, compiled as doc tests.
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../docs/CACHE.md")]
pub struct CacheDoctests;
