//! The pure core: everything about the on-disk format that needs no I/O.
//!
//! Drivers (the native sync reader, the async HTTP reader) read bytes from
//! wherever they live and hand them to these functions; the format logic
//! exists once, here. Nothing in this module touches files, sockets or `cfg`.

pub mod batch;
mod coalesce;
pub(crate) mod decode;
pub mod dtype;
pub mod files;
pub mod header;
pub mod loc;
pub mod plan;
pub mod ragged;
pub mod schema;
pub mod store_core;
pub mod store_info;
pub mod sums;

pub use coalesce::{Fetch, Merge, Reads};
pub use decode::{zstd_declared_size, ZSTD_MAX_HEADER};
pub use dtype::{ByteOrder, DType, Kind};
pub use files::StoreFile;
pub use header::{Codec, Header};
pub use loc::RecordLoc;
pub use plan::GatherPlan;
pub use schema::{Geometry, Schema};
pub use store_core::StoreCore;
pub use store_info::{FileSizes, StoreInfo};
pub use sums::Verify;

/// Size of the static page at the start of `meta.zr` (Header + schema).
pub const PAGE_SIZE: u64 = 4096;
/// Size of the fixed Header at the start of `meta.zr`.
pub const HEADER_SIZE: usize = 32;
/// Largest schema that fits the static page after the Header.
pub const MAX_SCHEMA_LEN: u32 = 4064;
/// Size of one RecordLoc entry.
pub const LOC_SIZE: u64 = 16;
/// Largest decoded record the format allows (2^31 bytes).
pub const MAX_RECORD_BYTES: u64 = 1 << 31;
/// Largest `tail_offset` (and so data.zr size) the format allows.
pub const MAX_TAIL: u64 = i64::MAX as u64;
/// Magic number at the start of a trained zstd dictionary.
pub const DICT_MAGIC: [u8; 4] = [0x37, 0xA4, 0x30, 0xEC];
