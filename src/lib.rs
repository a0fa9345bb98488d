//! zrecord: random-access record stores for ML training data.
//!
//! Stores are byte-compatible with loaderx 2.0.1 (see `FORMAT.md`).
#![deny(unsafe_code)]

pub mod error;
#[cfg(feature = "native")]
pub mod serve;
pub use error::{Error, Result};
