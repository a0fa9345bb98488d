//! Datasets: named columns × many shards, each (shard, column) an ordinary
//! store, committed by one manifest and read as one store per column.
//!
//! The format is in `docs/FORMAT.md` ("Datasets"). The pure parts (the
//! manifest, the layout, the concatenation plan) sit beside two drivers:
//! the native one over local shards ([`local`]) and the async one over
//! remote shards, natively and in the browser ([`remote`]).

pub mod concat;
pub mod layout;
pub mod manifest;
pub mod remote;

cfg_if::cfg_if! {
    if #[cfg(feature = "native")] {
        pub mod local;
        pub mod reader;
        pub mod writer;
        pub use reader::{Column, Dataset, DatasetOptions};
        pub use writer::{commit, CommitMode, ShardInfo, ShardWriter};
    }
}

pub use manifest::{ColumnKind, ColumnSpec, Manifest, ShardEntry, ShardFiles};
