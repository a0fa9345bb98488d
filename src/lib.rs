//! zrecord: random-access record stores for ML training data.
//!
//! A store is a directory (`meta.zr`, `data.zr`, optional `dict.zr`) holding
//! an append-only sequence of NumPy-typed records, byte-compatible with the
//! Python package loaderx 2.0.1.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod batch;
mod checksum;
pub mod codec;
pub mod error;
pub mod format;
pub mod npy;
pub mod records;
pub mod remote;
pub mod sampler;
pub mod source;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod loader;
        pub mod reader;
        pub mod seal;
        pub mod sys;
        pub mod writer;
        pub mod train;
        mod work;
        pub use reader::{Backend, OpenOptions, Store};
        pub use writer::{CreateOptions, Writer};
    }
}

// The static server and what it serves: the viewer and the demo stores.
#[cfg(feature = "serve")]
pub mod demo;
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "serve")]
pub mod viewer_assets;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use batch::{AlignedBytes, Batch, DenseBatch, RaggedBatch};
pub use error::{Error, Result};
pub use format::{Codec, DType, Geometry, Kind};
pub use records::Records;

/// The README's examples, compiled and run as doc tests.
#[cfg(all(doctest, feature = "native"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
